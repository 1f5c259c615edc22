package engine_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// staged counts d's staged rows.
func (d *device) staged() int {
	d.w.t.Helper()
	n, err := d.c.StagedCount(d.w.ctx)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return n
}

// notAMembers counts the results of res that end a lane of id as
// not_a_member.
func notAMembers(res []engine.ReceiveResult, id wire.LogicalID) int {
	n := 0
	for _, r := range res {
		if r.Kind == engine.ResultNotAMember && r.ID == id {
			n++
		}
	}
	return n
}

// TestAddedLaneToADeviceWithoutTheGroupEnds: bob links bob/2 without the
// group (a message starts none) while alice's message to the group is
// pending; alice's added lane to bob/2 is held there. Once the hold runs
// out (MaxGroupHold), bob/2 answers not_a_member and alice's lane to it
// ends, while her lanes to bob/1 and to carol (away) stay as they were and
// her roster does not change.
func TestAddedLaneToADeviceWithoutTheGroupEnds(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	checkPeers(t, alice, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "trio", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, carol)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("to a device without the group"))
	if err != nil {
		t.Fatal(err)
	}
	bob2 := w.linkDevice(bob)
	// bob/2 writes to alice first, so that alice's frames reach it on a
	// session (a frame that is a session's first is held as an
	// initiation, whose signed prekey expires before MaxGroupHold does).
	bob2.send(alice, "hello from bob/2")
	bob2.sync()
	alice.reopen()
	checkPeers(t, alice, bob)
	for range 3 {
		alice.sync()
		bob.sync()
		bob.commitAll()
		bob2.sync()
		bob2.commitAll()
	}
	before := alice.lanes(g, sent.ID)
	if got := before["bob/2"]; got != "pending" && got != "relay_accepted" {
		t.Fatalf("alice's lane to bob/2 is %q, want it open while bob/2 holds the message", got)
	}
	if got := before["carol/1"]; got != "pending" && got != "relay_accepted" {
		t.Fatalf("alice's lane to carol/1 is %q, want it open (carol is away)", got)
	}
	gen, members := alice.members(g)

	w.clock.Advance(engine.MaxGroupHold + time.Hour)
	var answered int
	for range 3 {
		bob2.sync()
		bob2.commitAll()
		answered += notAMembers(alice.sync(), sent.ID)
	}
	after := alice.lanes(g, sent.ID)
	if after["bob/2"] != "not_a_member" {
		t.Fatalf("alice's lane to bob/2 is %q after the hold ran out, want not_a_member", after["bob/2"])
	}
	if answered != 1 {
		t.Fatalf("alice heard not_a_member of the message %d times, want once", answered)
	}
	delete(before, "bob/2")
	delete(after, "bob/2")
	if !maps.Equal(before, after) {
		t.Fatalf("alice's other lanes went from %v to %v, want them unchanged", before, after)
	}
	if n := alice.laneSeq("bob/2", sent.ID); n != 0 {
		t.Fatalf("alice still has the message to bob/2 outbound (seq %d)", n)
	}
	if g2, m2 := alice.members(g); g2 != gen || !slices.Equal(m2, members) {
		t.Fatalf("alice's roster went from %d %v to %d %v, want it unchanged", gen, members, g2, m2)
	}
	if gs, err := bob2.c.Groups(w.ctx); err != nil || len(gs) != 0 {
		t.Fatalf("bob/2 holds groups %v (%v), want none", gs, err)
	}
	if n := bob2.staged(); n != 0 {
		t.Fatalf("bob/2 still holds %d staged rows", n)
	}
}

// TestStrangerGroupFrameGetsOneAnswer: a peer sends bob a message and a
// roster change of groups that do not exist. bob holds both; once the hold
// runs out each is answered not_a_member once, to that peer alone, and
// nothing stays held.
func TestStrangerGroupFrameGetsOneAnswer(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	mallory, bob, carol := w.device("mallory/1"), w.device("bob/1"), w.device("carol/1")
	checkPeers(t, mallory, bob)
	checkPeers(t, carol, bob)
	mallory.send(bob, "hello")
	carol.send(bob, "hello")
	settle(t, 6, mallory, bob, carol)

	var mid wire.LogicalID
	mid[0] = 0x42
	madeUp := wire.GroupID{1, 2, 3}
	frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: mid, Group: madeUp, Generation: 2, Content: wire.ContentText, Body: []byte("made up")})
	if err != nil {
		t.Fatal(err)
	}
	mallory.raw(bob, frame)
	cid := mallory.forge(bob, wire.GroupID{4, 5, 6}, 2, "+carol/1", "mallory/1* carol/1")
	for range 2 {
		bob.sync()
		bob.commitAll()
	}
	if n := notAMembers(mallory.sync(), mid) + notAMembers(mallory.sync(), cid); n != 0 {
		t.Fatalf("mallory heard %d answers while bob holds the frames, want none", n)
	}
	if bob.staged() == 0 {
		t.Fatal("bob holds nothing, want the two frames held")
	}

	w.clock.Advance(engine.MaxGroupHold + time.Hour)
	var toMallory, toCarol []engine.ReceiveResult
	for range 3 {
		bob.sync()
		bob.commitAll()
		toMallory = append(toMallory, mallory.sync()...)
		toCarol = append(toCarol, carol.sync()...)
	}
	if n := notAMembers(toMallory, mid); n != 1 {
		t.Fatalf("mallory heard not_a_member of the message %d times, want once", n)
	}
	if n := notAMembers(toMallory, cid); n != 1 {
		t.Fatalf("mallory heard not_a_member of the change %d times, want once", n)
	}
	for _, r := range toCarol {
		if r.Kind == engine.ResultNotAMember {
			t.Fatalf("carol heard %v, want nothing of mallory's frames", r)
		}
	}
	if n := bob.staged(); n != 0 {
		t.Fatalf("bob still holds %d staged rows", n)
	}
	if gs, err := bob.c.Groups(w.ctx); err != nil || len(gs) != 0 {
		t.Fatalf("bob holds groups %v (%v), want none", gs, err)
	}
}
