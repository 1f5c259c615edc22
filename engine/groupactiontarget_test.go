package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestGroupReactionToADiscardedMessageOfAnotherDevice: bob/2, a device of
// bob's that is not his entry in the group's roster, sends a group text,
// which alice discards; bob/2 then reacts to it. The reaction's target is
// discarded on alice's device, so her engine discards the reaction there
// and then (target_discarded) and acknowledges it. Before the change the
// target was looked for under the roster's entries only (bob/1), the
// discard of bob/2's text was not found, and the reaction waited
// ActionHold (7 days) pending, bob/2's lane open, until target_missing
// (found by TestAdversaryPeopleGroups).
func TestGroupReactionToADiscardedMessageOfAnotherDevice(t *testing.T) {
	oneGoroutine(t)
	w, alice, _, bob2, g, _ := groupTwoDeviceBob(t, "lunch at noon", false)
	sent, err := bob2.c.SendGroup(w.ctx, g, []byte("or at one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	if _, err := alice.c.Discard(w.ctx, bob2.addr, sent.ID, engine.DiscardRejected); err != nil {
		t.Fatalf("alice discards bob/2's group text: %v", err)
	}
	r := bob2.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: sent.ID, Emoji: thumbs})
	alice.sync()
	s, err := alice.st.Seen(w.ctx, bob2.addr, r)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Finalized || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("alice's record of bob/2's reaction to the text she discarded: %+v; want discarded, target_discarded", s)
	}
}
