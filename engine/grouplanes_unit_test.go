package engine_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The unit of a newer list's added group lanes (a message and the pending
// changes it needs), its bound, and the rows lanes are copied from.

// moveRowLast closes d, gives its outbound row of id to the device to the
// next sequence number (stored after every other row, as a restated or
// forwarded change at a past generation is), and opens d again.
func (d *device) moveRowLast(to string, id wire.LogicalID) {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db"))
	if err != nil {
		d.w.t.Fatal(err)
	}
	res, err := db.Exec("UPDATE outbound SET seq = (SELECT max(seq) + 1 FROM outbound) WHERE recipient = ? AND id = ?", to, id[:])
	if err != nil {
		d.w.t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		d.w.t.Fatalf("%s: moved %d rows of %x to %s (%v), want 1", d.addr, n, id[:4], to, err)
	}
	if err := db.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	d.open()
}

// listOf is a list of user naming the devices active and revoked (what
// addedGroupLanes reads of it: the user and the entries' states).
func listOf(user string, active, revoked []uint32) wire.DeviceList {
	l := wire.DeviceList{User: user}
	for _, n := range active {
		l.Entries = append(l.Entries, wire.DeviceEntry{Number: n, State: wire.DeviceActive})
	}
	for _, n := range revoked {
		l.Entries = append(l.Entries, wire.DeviceEntry{Number: n, State: wire.DeviceRevoked})
	}
	return l
}

// TestAddedLanesPullAChangeAheadOfItsMessage: alice's change adding dave
// is pending to bob/1, but its row is stored after her message at its
// generation (as a restated or forwarded change's is). The list naming
// bob/2 still gives bob/2 the change ahead of the message: bob/2 merges
// the generation, takes the message once, and every lane ends.
func TestAddedLanesPullAChangeAheadOfItsMessage(t *testing.T) {
	oneGoroutine(t)
	_, g, change, sent, alice, bob, bob2, carol, dave := changeWhileBobIsAway(t, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, false)
	alice.moveRowLast("bob/1", change)
	if cs, ms := alice.laneSeq("bob/1", change), alice.laneSeq("bob/1", sent); cs < ms {
		t.Fatalf("alice's rows to bob/1: change at %d, message at %d; want the change after", cs, ms)
	}
	checkPeers(t, alice, bob)
	cs, ms := alice.laneSeq("bob/2", change), alice.laneSeq("bob/2", sent)
	if cs == 0 || ms == 0 || cs > ms {
		t.Fatalf("alice's rows to bob/2: change at %d, message at %d; want the change first", cs, ms)
	}
	settle(t, 8, alice, bob, bob2, carol, dave)
	if gen, members := bob2.members(g); gen != 2 || len(members) != 4 {
		t.Fatalf("bob/2 holds generation %d with %v, want 2 with dave", gen, members)
	}
	if n := bob2.countEntry(g, "alice/1:after the change"); n != 1 {
		t.Fatalf("bob/2 holds alice's message %d times: %v", n, bob2.groupHistory(g))
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open, want none", n)
	}
}

// TestAddedLanesTakeChangesInGenerationOrder: two changes of alice's are
// pending to bob/1, the one at generation 3 stored before the one at 2
// (and her message at 2 after both). bob/2 gets them in generation order,
// then the message, and ends at generation 3.
func TestAddedLanesTakeChangesInGenerationOrder(t *testing.T) {
	oneGoroutine(t)
	w, g, first, sent, alice, bob, bob2, carol, dave := changeWhileBobIsAway(t, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, false)
	res, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "carol/1"}})
	if err != nil {
		t.Fatal(err)
	}
	second := res.ID
	alice.moveRowLast("bob/1", first)
	alice.moveRowLast("bob/1", sent)
	checkPeers(t, alice, bob)
	s1, s2, ms := alice.laneSeq("bob/2", first), alice.laneSeq("bob/2", second), alice.laneSeq("bob/2", sent)
	if s1 == 0 || s2 == 0 || ms == 0 || s1 > s2 || s2 > ms {
		t.Fatalf("alice's rows to bob/2: generation 2 at %d, 3 at %d, the message at %d; want them in that order", s1, s2, ms)
	}
	settle(t, 8, alice, bob, bob2, carol, dave)
	if gen, members := bob2.members(g); gen != 3 || len(members) != 3 || slices.Contains(members, "carol/1") {
		t.Fatalf("bob/2 holds generation %d with %v, want 3 with dave, without carol", gen, members)
	}
	if n := bob2.countEntry(g, "alice/1:after the change"); n != 1 {
		t.Fatalf("bob/2 holds alice's message %d times: %v", n, bob2.groupHistory(g))
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open, want none", n)
	}
}

// laneKey names an added lane by its message and recipient.
type laneKey struct {
	id wire.LogicalID
	to string
}

// TestAddedGroupLanesBoundCountsUnits: a list naming two new devices of
// bob's at once, with alice's messages pending to bob/1 and then a unit
// (a change and the message at its generation, the change's row after
// the message's) that would pass maxAddedGroupLanes: every message before
// the unit gets a lane to each new device, and the unit none. A list
// naming one new device fits the unit, the change ahead.
func TestAddedGroupLanesBoundCountsUnits(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, dave := w.device("alice/1"), w.device("bob/1"), w.device("dave/1")
	publishLists(t, alice, bob, dave)
	checkPeers(t, alice, bob, dave)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	before := engine.MaxAddedGroupLanes/2 - 1 // two lanes each: two short of the bound
	var ids []wire.LogicalID
	for range before {
		res, err := alice.c.EnqueueGroup(w.ctx, g, []byte("before"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	ch, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := alice.c.EnqueueGroup(w.ctx, g, []byte("at the change"))
	if err != nil {
		t.Fatal(err)
	}
	alice.moveRowLast("bob/1", ch.ID)

	prev := listOf("bob", []uint32{1}, nil)
	got, err := alice.c.AddedGroupLanes(w.ctx, &prev, listOf("bob", []uint32{1, 2, 3}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var want []laneKey
	for _, id := range ids {
		want = append(want, laneKey{id, "bob/2"}, laneKey{id, "bob/3"})
	}
	if keys := addedKeys(got); !slices.Equal(keys, want) {
		t.Fatalf("two new devices: %d lanes, want the %d of the messages before the unit (last %v)", len(keys), len(want), keys[max(len(keys)-4, 0):])
	}

	got, err = alice.c.AddedGroupLanes(w.ctx, &prev, listOf("bob", []uint32{1, 2}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want = want[:0]
	for _, id := range ids {
		want = append(want, laneKey{id, "bob/2"})
	}
	want = append(want, laneKey{ch.ID, "bob/2"}, laneKey{msg.ID, "bob/2"})
	if keys := addedKeys(got); !slices.Equal(keys, want) {
		t.Fatalf("one new device: %d lanes, want the %d of every message, the change ahead of its message", len(keys), len(want))
	}
}

// addedKeys names each added lane by message and recipient, in order.
func addedKeys(ls []engine.AddedGroupLane) []laneKey {
	var out []laneKey
	for _, l := range ls {
		out = append(out, laneKey{l.ID, l.Recipient.String()})
	}
	return out
}

// TestAddedLanesCopyFromAKeptDevice: alice's change, group message and
// one-to-one message are pending to bob/1 and bob/2 (bob/1's rows first)
// when a list of bob's revokes bob/1 and names bob/3. Every lane to bob/3
// is copied from bob/2's row: the list's transaction ends bob/1's lanes
// before it adds the copies, and a copy of an ended lane is skipped.
func TestAddedLanesCopyFromAKeptDevice(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, dave := w.device("alice/1"), w.device("bob/1"), w.device("dave/1")
	publishLists(t, alice, bob, dave)
	checkPeers(t, alice, bob, dave)
	w.linkDevice(bob)
	alice.reopen()
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	ch, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := alice.c.EnqueueGroup(w.ctx, g, []byte("to bob"))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := alice.c.Enqueue(w.ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("one to one")}})
	if err != nil || sent[0].Err != nil {
		t.Fatal(err, sent)
	}
	text := sent[0].ID
	for _, id := range []wire.LogicalID{ch.ID, msg.ID, text} {
		if s1, s2 := alice.laneSeq("bob/1", id), alice.laneSeq("bob/2", id); s1 == 0 || s2 == 0 || s1 > s2 {
			t.Fatalf("alice's rows of %x: to bob/1 at %d, to bob/2 at %d; want both, bob/1's first", id[:4], s1, s2)
		}
	}
	prev := listOf("bob", []uint32{1, 2}, nil)
	next := listOf("bob", []uint32{2, 3}, []uint32{1})
	got, err := alice.c.AddedGroupLanes(w.ctx, &prev, next)
	if err != nil {
		t.Fatal(err)
	}
	want := []laneKey{{ch.ID, "bob/3"}, {msg.ID, "bob/3"}}
	if keys := addedKeys(got); !slices.Contains(keys, want[0]) || !slices.Contains(keys, want[1]) {
		t.Fatalf("added group lanes %v, want the change's and the message's to bob/3", keys)
	}
	for _, l := range got {
		if l.From.String() != "bob/2" {
			t.Fatalf("the group lane of %x to %s is copied from %s, want bob/2 (bob/1 is revoked)", l.ID[:4], l.Recipient, l.From)
		}
	}
	one, err := alice.c.AddedLanes(w.ctx, &prev, next, bob.addr)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range one {
		found = found || (l.ID == text && l.Recipient.String() == "bob/3")
		if l.From.String() != "bob/2" {
			t.Fatalf("the lane of %x to %s is copied from %s, want bob/2 (bob/1 is revoked)", l.ID[:4], l.Recipient, l.From)
		}
	}
	if !found {
		t.Fatalf("added lanes %v, want the message's to bob/3", one)
	}
}
