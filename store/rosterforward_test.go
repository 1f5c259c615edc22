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

// TestForwardOfATakenIDIsSkipped: a forward whose change ID is taken on
// the lanes to the sibling already, by a lane of another group (a hostile
// change recorded first under a genuine change's ID) or by a pending
// outbound row of that ID, stores nothing to that sibling and is reported
// in the receipt (Receipt.Unforwarded); the receive itself is applied. A
// lane of the same change in its own group is skipped unreported.
func TestForwardOfATakenIDIsSkipped(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	f.apply(t, accountPlan(t))
	f.apply(t, engine.UpdateDeviceList{From: accountPlan(t).List, List: secondListPlan(t), At: planAt})
	a2 := engine.MustParseAddress("alice/2")
	change := func(author string, g wire.GroupID, id wire.LogicalID) engine.Receive {
		t.Helper()
		frame, err := wire.EncodeSignedRoster(wire.SignedRoster{Roster: wire.Roster{ID: id, Group: g, Generation: 1, Name: "crew",
			Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: "alice/1"}, {Op: wire.RosterAdd, Address: author}},
			Members: []wire.RosterMember{{Address: "alice/1"}, {Address: author, Admin: true}}}, Author: author})
		if err != nil {
			t.Fatal(err)
		}
		from := engine.MustParseAddress(author)
		p := receivePlan(f.stage(t), from, 0, engine.RosterEffect{Group: g, Change: engine.RosterChange{ID: id, Author: author, Generation: 1, Name: "crew"},
			Frame: frame, Start: &engine.GroupStart{Change: id}, Forward: []engine.Address{a2}})
		k := identityKey(from.User[0])
		p.Handshake = &engine.Handshake{Pin: &k}
		return p
	}
	genuine, hostile := wire.GroupID{7}, wire.GroupID{8}
	cid := wire.LogicalID{0x45}
	if r := f.apply(t, change("mallory/1", hostile, cid)); len(r.Unforwarded) != 0 {
		t.Fatalf("the first forward of %x was reported unforwarded: %+v", cid[:], r.Unforwarded)
	}
	r := f.apply(t, change("carol/1", genuine, cid))
	if want := []engine.Unforwarded{{To: a2, Group: genuine, Change: cid}}; len(r.Unforwarded) != 1 || r.Unforwarded[0] != want[0] {
		t.Fatalf("the forward of a taken ID reported %+v, want %+v", r.Unforwarded, want)
	}
	if grp, found, err := f.db.LaneGroup(ctx, a2, cid); err != nil || !found || grp != hostile {
		t.Fatalf("the lane of %x to alice/2: %x, %v, %v; want the first one's, unchanged", cid[:], grp[:], found, err)
	}
	// A pending outbound row of the ID to alice/2 (no lane): the receive
	// is applied, nothing is forwarded.
	sent := wire.LogicalID{0x46}
	f.apply(t, sendPlan(t, a2, sent, "to my other device", 0))
	r = f.apply(t, change("dave/1", wire.GroupID{9}, sent))
	if len(r.Unforwarded) != 1 || r.Unforwarded[0].To != a2 || r.Unforwarded[0].Change != sent {
		t.Fatalf("the forward of an ID pending to alice/2 reported %+v, want it unforwarded", r.Unforwarded)
	}
	if _, found, err := f.db.LaneGroup(ctx, a2, sent); err != nil || found {
		t.Fatalf("a lane of %x to alice/2 stored beside its pending message (%v, %v)", sent[:], found, err)
	}
}
