package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// laneStates returns the states of the lanes of d's own message id in
// its conversation with peer, by recipient.
func laneStates(t *testing.T, d, peer *device, id wire.LogicalID) map[string]engine.LaneState {
	t.Helper()
	ls, err := d.c.PersonLanes(d.w.ctx, peer.addr, id)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]engine.LaneState, len(ls))
	for _, l := range ls {
		out[l.Recipient.String()] = l.State
	}
	return out
}

// TestReactionReachesEveryDeviceOfPerson: alice reacts to the message
// bob/1 sent her. The reaction goes, as a text would, on a lane to each of
// bob's devices under one ID: bob/1 shows it on its message, bob/2 on its
// sent copy of it, each once, and both of alice's lanes end acknowledged.
// Before the fix the reaction went to bob/1 alone: bob/2 never showed it.
func TestReactionReachesEveryDeviceOfPerson(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2 := twoDeviceBob(t)
	id := bob.enqueue(alice, "from the phone")
	settle(t, 6, alice, bob, bob2)
	r := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: thumbs})
	settle(t, 6, alice, bob, bob2)
	want := []string{"alice/1 " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := reactionsOf(d.entry(alice, id)); !slices.Equal(got, want) {
			t.Fatalf("%s's entry of bob's message shows reactions %v, want %v", d.addr, got, want)
		}
		if n := d.pendingIn(); n != 0 {
			t.Fatalf("%s holds %d messages, want none", d.addr, n)
		}
	}
	if got := reactionsOf(alice.entry(bob, id)); !slices.Equal(got, want) {
		t.Fatalf("alice's own entry shows reactions %v, want %v", got, want)
	}
	lanes := laneStates(t, alice, bob, r)
	if len(lanes) != 2 || lanes["bob/1"] != engine.LaneAcknowledged || lanes["bob/2"] != engine.LaneAcknowledged {
		t.Fatalf("alice's lanes of her reaction: %v, want bob/1 and bob/2 acknowledged", lanes)
	}
}

// TestEditReachesEveryDeviceOfPerson: alice's message went to both of
// bob's devices; her edit of it goes to both too, and applies on each
// (each holds its own record of her message). Before the fix bob/2 kept
// the first text.
func TestEditReachesEveryDeviceOfPerson(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "to both")
	settle(t, 6, alice, bob, bob2)
	edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: id, Text: []byte("to both, edited")})
	settle(t, 6, alice, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		if e := d.entry(alice, id); string(e.Body) != "to both, edited" || e.Edits != 1 {
			t.Fatalf("%s's entry of alice's message: %q, %d edits; want her edit applied", d.addr, e.Body, e.Edits)
		}
	}
	if e := alice.entry(bob, id); string(e.Body) != "to both, edited" || e.Edits != 1 {
		t.Fatalf("alice's own entry: %q, %d edits; want her edit", e.Body, e.Edits)
	}
	lanes := laneStates(t, alice, bob, edit)
	if len(lanes) != 2 || lanes["bob/1"] != engine.LaneAcknowledged || lanes["bob/2"] != engine.LaneAcknowledged {
		t.Fatalf("alice's lanes of her edit: %v, want bob/1 and bob/2 acknowledged", lanes)
	}
}

// TestActionDecidedOnOneDeviceFinalizesOnTheOther: alice's reaction
// reaches both of bob's devices; bob/1 commits it, and bob/2, which
// never commits anything itself, learns of the decision from bob/1 and
// finalizes its own copy without asking. Before the fix bob/2 never had
// the reaction.
func TestActionDecidedOnOneDeviceFinalizesOnTheOther(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "to both")
	settle(t, 6, alice, bob, bob2)
	r := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: heart})
	bob2.sync()
	if n := bob2.pendingIn(); n != 1 {
		t.Fatalf("bob/2 holds %d messages before bob/1 decides, want alice's reaction waiting", n)
	}
	for round := 0; round < 8; round++ {
		alice.sync()
		bob.sync()
		bob.commitAll()
		bob2.sync()
		if bob.pendingOut() > 0 {
			bob.retry(bob2)
		}
	}
	want := []string{"alice/1 " + heart}
	for _, d := range []*device{bob, bob2} {
		if got := reactionsOf(d.entry(alice, id)); !slices.Equal(got, want) {
			t.Fatalf("%s's entry of alice's message shows reactions %v, want %v", d.addr, got, want)
		}
		if n := d.pendingIn(); n != 0 {
			t.Fatalf("%s holds %d messages, want none (bob/1 decided)", d.addr, n)
		}
	}
	lanes := laneStates(t, alice, bob, r)
	if len(lanes) != 2 || lanes["bob/1"] != engine.LaneAcknowledged || lanes["bob/2"] != engine.LaneAcknowledged {
		t.Fatalf("alice's lanes of her reaction: %v, want bob/1 and bob/2 acknowledged", lanes)
	}
}

// TestActionOnAMessageKeptUnderADevice: alice wrote to bob/2 before she
// held bob's list, so that message is kept under bob/2's address; once
// she holds the list, bob's conversation is bob/1's. Her reaction to it,
// named at bob/2 (as the command line and a pane on bob/2 name it), goes
// to both of bob's devices and shows on her message where it is kept.
// Before the fix its apply was filed under bob/1, where no such message
// is: the reaction never showed (review).
func TestActionOnAMessageKeptUnderADevice(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	holdInWorld(t, bob2, linkInWorld(t, bob, bob2))
	id := alice.enqueue(bob2, "to the laptop, before the list")
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if _, held, err := alice.c.PeerAccount(w.ctx, "bob"); err != nil || !held {
		t.Fatalf("alice holds no list of bob's (%v)", err)
	}
	settle(t, 6, alice, bob, bob2)
	alice.act(bob2, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: thumbs})
	if got := reactionsOf(alice.entry(bob2, id)); len(got) != 1 {
		t.Fatalf("alice's message to bob/2 shows %v after her reaction, want hers", got)
	}
}
