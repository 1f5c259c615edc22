package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingsHeldGroupActionIsNoDecision: bob/1 commits alice's group
// message and reacts to it in the group before bob/2 holds the message.
// bob/2 keeps bob/1's decision and holds bob/1's reaction for its target;
// once the message comes, the decision finalizes it (decided, on bob/1)
// and the hold's pass commits the reaction as bob's own (applied). The
// reaction is never reported as a decision (decided or heard): it is
// nobody's decision, and no device tells one on it; one a hostile or
// buggy bob/1 sends is refused (ErrDecisionOwnMessage). Before the fix
// that decision was kept and discarded the waiting reaction, reported as
// decided.
func TestSiblingsHeldGroupActionIsNoDecision(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, id := groupTwoDeviceBob(t, "lunch?", true)
	staged := archived(t, bob, stagedRecord(id))
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	react := bob.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: thumbs})
	// A decision on the reaction, as a hostile or buggy bob/1 might send
	// one (no device tells any): refused, never kept.
	dec, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd0, 0x02}, Sender: bob.addr.String(), Message: react,
		Outcome: wire.DecisionDiscarded})
	if err != nil {
		t.Fatal(err)
	}
	bob.raw(bob2, dec)
	var res []engine.ReceiveResult
	res = append(res, bob2.sync()...)
	importRecords(t, bob2, staged)
	bob2.reopen()
	for range 2 {
		res = append(res, bob2.sync()...)
	}
	decided, applied := 0, 0
	for _, r := range res {
		switch {
		case r.Kind == engine.ResultDecisionHeard && r.Decided != nil && r.Decided.ID == react && errors.Is(r.Err, engine.ErrDecisionOwnMessage):
			// The forged decision, heard and refused.
		case (r.Kind == engine.ResultDecided || r.Kind == engine.ResultDecisionHeard) && (r.ID == react || r.Decided != nil && r.Decided.ID == react):
			t.Errorf("bob/2 reported bob/1's reaction as a decision: %+v", r)
		case r.Kind == engine.ResultDecided && r.ID == id:
			decided++
		case r.Kind == engine.ResultApplied && r.ID == react:
			applied++
		}
	}
	if decided != 1 || applied != 1 {
		t.Fatalf("bob/2's rounds: %v; want alice's message decided once and bob/1's reaction applied once", kinds(res))
	}
	if got, want := groupReactionsOf(bob2.groupEntry(g, id)), []string{"bob/1 " + thumbs}; !slices.Equal(got, want) {
		t.Fatalf("bob/2's entry of alice's message shows %v, want %v", got, want)
	}
}
