package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingsOwnWaitingGroupActionIsTheHolds: bob/1 commits alice's
// group text and reacts to it; the reaction reaches bob/2 before the text
// does, so it waits there for its target. It is bob's own reaction, made
// on bob/1: a person's discard of it on bob/2 is refused (ErrHeldCopy), as
// for a sibling's sent copy, and once the text is committed on bob/2 the
// hold commits the reaction, so both devices show it. Before, the discard
// was taken and bob/2 showed the text without bob's reaction for good
// (people-in-groups adversary, seed 1796666830844202532).
func TestSiblingsOwnWaitingGroupActionIsTheHolds(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", true)
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	r := bob.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob2.sync()
	if n := bob2.pendingIn(); n != 1 {
		t.Fatalf("bob/2 holds %d messages pending, want bob/1's reaction waiting for its target", n)
	}
	if _, err := bob2.c.Discard(w.ctx, bob.addr, r, engine.DiscardRejected); !errors.Is(err, engine.ErrHeldCopy) {
		t.Fatalf("bob/2 discards bob/1's own waiting reaction: %v, want %v", err, engine.ErrHeldCopy)
	}
	// alice's text comes to bob/2, then bob/1's decision on it; alice
	// commits bob's reaction.
	for range 4 {
		for _, d := range []*device{alice, bob, bob2} {
			d.sync()
		}
		alice.commitAll()
		alice.retry(bob2)
		bob.retry(bob2)
		bob.retry(alice)
	}
	settleDevices(t, alice, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, []string{bob.addr.String() + " " + thumbs}) {
			t.Fatalf("%s shows reactions %q on alice's text, want bob/1's", d.addr, got)
		}
	}
	if s, err := bob2.st.Seen(w.ctx, bob.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of bob/1's reaction: %+v, %v; want committed", s, err)
	}
}
