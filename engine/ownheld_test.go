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
// hold commits the reaction, so both devices show it. While it waits the
// lists of what bob decides leave it out. Before, the discard
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
	// The reaction waits on bob/2, held: a peer's count holds it, the
	// person's lists and count leave it out, as a sibling's sent copy.
	if n, err := bob2.c.CountInbound(w.ctx, &bob.addr); err != nil || n != 1 {
		t.Fatalf("bob/2 holds %d messages from bob/1 (%v), want its reaction waiting for its target", n, err)
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 counts %d messages for bob to decide, want none (the reaction is the hold's)", n)
	}
	if l, err := bob2.c.PendingInbound(w.ctx, engine.PageQuery{}); err != nil || len(l) != 0 {
		t.Fatalf("bob/2 lists %d pending messages (%v), want none", len(l), err)
	}
	_, err := bob2.c.Discard(w.ctx, bob.addr, r, engine.DiscardRejected)
	if !errors.Is(err, engine.ErrHeldCopy) {
		t.Fatalf("bob/2 discards bob/1's own waiting reaction: %v, want %v", err, engine.ErrHeldCopy)
	}
	if name := engine.ErrorName(err); name != "held_copy" {
		t.Fatalf("the refusal is named %q, want held_copy", name)
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
