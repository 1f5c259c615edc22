package store

import (
	"context"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// pinOf is k as a pin record holds it.
func pinOf(a string, k engine.IdentityKey) wire.ArchivePin {
	return wire.ArchivePin{Address: a, Identity: encodeIdentityKey(k), PinnedAt: 5}
}

// TestGroupStateIsChecked: a received group state (engine.GroupStateEffect)
// stores the group and the pins not held; another one of the held group
// changes nothing. Group state lanes to a linked device
// (engine.GroupStateSend) go only to a device the account's list names
// active, never to this device, each frame the group state of its lane's
// ID and group: anything else refuses the plan and nothing changes. A good
// plan stores one pending lane per group.
func TestGroupStateIsChecked(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	f.apply(t, accountPlan(t))
	f.apply(t, engine.UpdateDeviceList{From: accountPlan(t).List, List: secondListPlan(t), At: planAt})
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
	group := wire.ArchiveGroup{ID: g, Name: "crew", CreatedAt: planAt.UnixNano(), Start: &cid,
		Changes: []wire.ArchiveChange{{ID: cid, Author: "carol/1", Generation: 1, At: planAt.UnixNano(), Frame: frame}}}
	// Receive side: the group and carol's pin, from alice/2 (the store
	// does not judge the sender: the engine does).
	a2 := engine.MustParseAddress("alice/2")
	carolKey := identityKey('c')
	first := receivePlan(f.stage(t), a2, 0, engine.GroupStateEffect{Group: group, Pins: []wire.ArchivePin{pinOf("carol/1", carolKey)}})
	a2Key := identityKey('e')
	first.Handshake = &engine.Handshake{Pin: &a2Key}
	f.apply(t, first)
	info, err := f.db.Group(ctx, g)
	if err != nil || info.Roster.Name != "crew" || len(info.Changes) != 1 {
		t.Fatalf("the group stored: %+v, %v", info, err)
	}
	if ps, err := f.db.Peer(ctx, engine.MustParseAddress("carol/1")); err != nil || ps.Pinned == nil || *ps.Pinned != carolKey {
		t.Fatalf("carol's pin: %+v, %v", ps, err)
	}
	other := group
	other.Name, other.Changes = "forged", nil
	f.apply(t, receivePlan(f.stage(t), a2, 1, engine.GroupStateEffect{Group: other, Pins: []wire.ArchivePin{pinOf("carol/1", identityKey('x'))}}))
	if info2, err := f.db.Group(ctx, g); err != nil || info2.Roster.Name != "crew" || len(info2.Changes) != 1 {
		t.Fatalf("a second group state of the held group changed it: %+v, %v", info2, err)
	}
	if ps, err := f.db.Peer(ctx, engine.MustParseAddress("carol/1")); err != nil || *ps.Pinned != carolKey {
		t.Fatalf("a second group state changed carol's pin: %+v, %v", ps, err)
	}
	bad := group
	bad.Changes = []wire.ArchiveChange{{ID: cid, Author: "Carol/1", Generation: 1, Frame: frame}}
	if _, err := f.db.Apply(ctx, receivePlan(f.stage(t), a2, 2, engine.GroupStateEffect{Group: bad})); !errors.Is(err, engine.ErrInvalidAddress) && !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a group state with an author that is no address = %v, want refused", err)
	}

	// Send side.
	lane := func(id wire.LogicalID, grp wire.ArchiveGroup) engine.GroupStateLane {
		b, err := wire.EncodeGroupState(wire.GroupState{ID: id, Group: grp})
		if err != nil {
			t.Fatal(err)
		}
		return engine.GroupStateLane{ID: id, Group: grp.ID, Frame: b}
	}
	good := lane(wire.LogicalID{0x50}, group)
	wrongID := good
	wrongID.ID = wire.LogicalID{0x51}
	wrongGroup := good
	wrongGroup.Group = wire.GroupID{8}
	garbage := good
	garbage.Frame = []byte{1, 19, 0}
	a3 := engine.MustParseAddress("alice/3")
	before := f.state(t)
	for name, p := range map[string]engine.GroupStateSend{
		"to a device the list names revoked": {To: a3, Lanes: []engine.GroupStateLane{good}, At: planAt},
		"to a device the list does not name": {To: engine.MustParseAddress("alice/4"), Lanes: []engine.GroupStateLane{good}, At: planAt},
		"to this device itself":              {To: engine.MustParseAddress("alice/1"), Lanes: []engine.GroupStateLane{good}, At: planAt},
		"to a device of another person":      {To: engine.MustParseAddress("bob/2"), Lanes: []engine.GroupStateLane{good}, At: planAt},
		"with no lane":                       {To: a2, At: planAt},
		"with a frame of another ID":         {To: a2, Lanes: []engine.GroupStateLane{wrongID}, At: planAt},
		"with a frame of another group":      {To: a2, Lanes: []engine.GroupStateLane{wrongGroup}, At: planAt},
		"with a frame that does not decode":  {To: a2, Lanes: []engine.GroupStateLane{garbage}, At: planAt},
		"with one group twice":               {To: a2, Lanes: []engine.GroupStateLane{good, lane(wire.LogicalID{0x52}, group)}, At: planAt},
	} {
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("group state %s = %v, want refused", name, err)
		}
		if f.state(t) != before {
			t.Fatalf("a refused group state %s changed the store", name)
		}
	}
	f.apply(t, engine.GroupStateSend{To: a2, Lanes: []engine.GroupStateLane{good}, At: planAt})
	if grp, found, err := f.db.LaneGroup(ctx, a2, good.ID); err != nil || !found || grp != g {
		t.Fatalf("the group state lane to alice/2: %x, %v, %v; want it pending in its group", grp[:], found, err)
	}
	if out, err := f.db.PendingToPerson(ctx, "alice", 10); err != nil || len(out) != 1 || out[0].Recipient != a2 || out[0].ID != good.ID {
		t.Fatalf("pending to alice's devices: %+v, %v; want the group state to alice/2 once", out, err)
	}
}

// TestPinAgainKept: a handshake that pins the identity held already (a
// group state or a link's archive pinned it since the engine read the
// peer) is applied; one that pins another identity is refused.
func TestPinAgainKept(t *testing.T) {
	f := newFixture(t, false)
	withSession(t, f) // bob pinned as identityKey('b')
	p := receivePlan(f.stage(t), bob, 1, deliver(t, idRecv, "again"))
	k := identityKey('b')
	p.Handshake = &engine.Handshake{Pin: &k}
	f.apply(t, p)
	p = receivePlan(f.stage(t), bob, 2, deliver(t, logicalID(8), "other"))
	other := identityKey('z')
	p.Handshake = &engine.Handshake{Pin: &other}
	if _, err := f.db.Apply(context.Background(), p); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("pin another identity = %v, want refused", err)
	}
}
