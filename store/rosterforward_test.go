package store

import (
	"context"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestForwardedRosterChangeIsChecked: a received roster change forwarded
// to this person's other devices (engine.RosterEffect.Forward) goes only
// to devices the account's list names active: one the list does not name,
// one it names revoked, this device itself,
// a device of another person, the device it came from, a device named
// twice or devices of two people refuse the whole receive, and nothing
// changes. A good forward stores one pending lane of the change's group
// carrying its frame.
func TestForwardedRosterChangeIsChecked(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	f.apply(t, accountPlan(t))
	f.apply(t, engine.UpdateDeviceList{From: accountPlan(t).List, List: secondListPlan(t), At: planAt})
	// alice/3 named, and revoked.
	third, err := wire.EncodeDeviceList(wire.DeviceList{User: "alice", Generation: 3, Parent: [32]byte{2}, Entries: []wire.DeviceEntry{
		{Number: 1, Linked: 100, State: wire.DeviceActive}, {Number: 2, Linked: 200, State: wire.DeviceActive},
		{Number: 3, Linked: 300, State: wire.DeviceRevoked}}})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, engine.UpdateDeviceList{From: secondListPlan(t), List: third, At: planAt})
	g, cid := wire.GroupID{7}, wire.LogicalID{0x45}
	frame, err := wire.EncodeSignedRoster(wire.SignedRoster{Roster: wire.Roster{ID: cid, Group: g, Generation: 1, Name: "crew",
		Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: "alice/1"}, {Op: wire.RosterAdd, Address: "carol/1"}},
		Members: []wire.RosterMember{{Address: "alice/1"}, {Address: "carol/1", Admin: true}}}, Author: "carol/1"})
	if err != nil {
		t.Fatal(err)
	}
	row := f.stage(t)
	carol := engine.MustParseAddress("carol/1")
	receive := func(to ...engine.Address) engine.Receive {
		p := receivePlan(row, carol, 0, engine.RosterEffect{Group: g, Change: engine.RosterChange{ID: cid, Author: "carol/1", Generation: 1, Name: "crew"},
			Frame: frame, Start: &engine.GroupStart{Change: cid}, Forward: to})
		k := identityKey('c')
		p.Handshake = &engine.Handshake{Pin: &k}
		return p
	}
	a2, a3 := engine.MustParseAddress("alice/2"), engine.MustParseAddress("alice/3")
	before := f.state(t)
	for name, bad := range map[string][]engine.Address{
		"to a device the list names revoked":  {a3},
		"to a device the list does not name":  {engine.MustParseAddress("alice/4")},
		"to this device itself":               {engine.MustParseAddress("alice/1")},
		"to a device of another person":       {engine.MustParseAddress("bob/2")},
		"back to the device it came from":     {carol},
		"to one device twice":                 {a2, a2},
		"to devices of two people":            {a2, engine.MustParseAddress("bob/1")},
		"to a device the list names, and not": {a2, a3},
	} {
		if _, err := f.db.Apply(ctx, receive(bad...)); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a roster change forwarded %s = %v, want refused", name, err)
		}
		if f.state(t) != before {
			t.Fatalf("a refused forward %s changed the store", name)
		}
	}
	if err := checkForward(engine.RosterEffect{Change: engine.RosterChange{ID: cid, Author: "alice/2"}, Forward: []engine.Address{a2}}, carol); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a roster change forwarded to its author = %v, want refused", err)
	}
	f.apply(t, receive(a2))
	if grp, found, err := f.db.LaneGroup(ctx, a2, cid); err != nil || !found || grp != g {
		t.Fatalf("the forwarded lane to alice/2: %x, %v, %v; want it pending in its group", grp[:], found, err)
	}
	if out, err := f.db.PendingToPerson(ctx, "alice", 10); err != nil || len(out) != 1 || out[0].Recipient != a2 || out[0].ID != cid {
		t.Fatalf("pending to alice's devices: %+v, %v; want the change to alice/2 once", out, err)
	}
}
