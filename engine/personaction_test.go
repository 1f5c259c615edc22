package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingReactsToOwnPersonsMessage: bob/2 reacts to and replies to
// the message bob/1 sent alice, which bob/2 holds as a sent copy. alice
// keeps bob's messages in one conversation, whatever device sent them:
// she finds the target there and applies the reaction, and shows the
// reply quoting it. Before the fix she looked for the target among
// bob/2's own messages, found none, and held the reaction (for
// ActionHold, then discarded it); the reply lost its quote.
func TestSiblingReactsToOwnPersonsMessage(t *testing.T) {
	_, alice, bob, bob2 := twoDeviceBob(t)
	id := bob.enqueue(alice, "from the phone")
	settle(t, 6, alice, bob, bob2)
	bob2.act(alice, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: thumbs})
	reply := bob2.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: id, Text: []byte("and from the laptop")})
	settle(t, 6, alice, bob, bob2)
	if n := alice.pendingIn(); n != 0 {
		t.Fatalf("alice holds %d of bob's messages, want none", n)
	}
	if got := reactionsOf(alice.entry(bob, id)); !slices.Equal(got, []string{"bob/2 " + thumbs}) {
		t.Fatalf("alice's entry of bob/1's message shows reactions %v, want bob/2's", got)
	}
	if e := alice.entry(bob, reply); e.ReplyTo == nil || *e.ReplyTo != id {
		t.Fatalf("alice's entry of bob/2's reply quotes %v, want bob/1's message %x", e.ReplyTo, id[:4])
	}
	if got := reactionsOf(bob2.entry(alice, id)); !slices.Equal(got, []string{"bob/2 " + thumbs}) {
		t.Fatalf("bob/2's own entry shows reactions %v, want its own", got)
	}
}

// TestSiblingReactsToPersonsMessage: alice's message to bob goes on a lane
// to each of bob's devices under one ID; bob/2's reaction to it and its
// reply reach alice, who finds her message in bob's one conversation.
// Before the fix she looked for it among the messages she exchanged with
// bob/2's address alone and held the reaction.
func TestSiblingReactsToPersonsMessage(t *testing.T) {
	_, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "to both")
	settle(t, 6, alice, bob, bob2)
	bob2.entry(alice, id)
	bob2.act(alice, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: heart})
	reply := bob2.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: id, Text: []byte("seen on the laptop")})
	bob.act(alice, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: thumbs})
	settle(t, 6, alice, bob, bob2)
	if n := alice.pendingIn(); n != 0 {
		t.Fatalf("alice holds %d of bob's messages, want none", n)
	}
	got := reactionsOf(alice.entry(bob, id))
	slices.Sort(got)
	if want := []string{"bob/1 " + thumbs, "bob/2 " + heart}; !slices.Equal(got, want) {
		t.Fatalf("alice's entry of her message shows reactions %v, want %v", got, want)
	}
	if e := alice.entry(bob, reply); e.ReplyTo == nil || *e.ReplyTo != id {
		t.Fatalf("alice's entry of bob/2's reply quotes %v, want her message %x", e.ReplyTo, id[:4])
	}
}
