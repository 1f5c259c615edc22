package engine_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestKeptGroupActionsOverTheBound: three of alice's group reactions to
// her text are kept on bob/2 with bob/1's decisions (the text discarded
// there, its decision lost on the way), over a bound of two kept actions
// per take-back (MaxKeptDecisions, lowered for the test: the store's
// validator refuses a take-back that applies more). The text's decision,
// sent again, takes the text back and the two oldest reactions with it;
// the newest stays kept and discarded. Before the change the take-back
// carried all three, and at the real bound the store refused the plan:
// the text's take-back was lost with them.
func TestKeptGroupActionsOverTheBound(t *testing.T) {
	oneGoroutine(t)
	defer engine.SetKeptWithTargetBound(2)()
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
	if _, err := bob2.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(alice.addr, bob2.addr, 3)
	var rs []wire.LogicalID
	for _, emoji := range []string{thumbs, heart, thumbs} {
		rs = append(rs, alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: emoji}))
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	shareFromSibling(t, bob, bob2, func(r wire.ArchiveRecord) bool {
		return stagedRecord(rs[0])(r) || stagedRecord(rs[1])(r) || stagedRecord(rs[2])(r)
	})
	bob2.sync()
	for _, r := range rs {
		if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.c.Pump(w.ctx); err != nil {
			t.Fatal(err)
		}
		bob2.sync() // each decision kept in its own batch, at its own time
		w.clock.Advance(time.Second)
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 3 {
		t.Fatalf("bob/2's kept group actions waiting for the text: %+v, %v; want the three reactions'", kept, err)
	}
	settleSiblings(t, bob, bob2)
	if _, found := decidedOnOf(t, bob2, g, m); !found {
		t.Fatalf("bob/2 did not take the text back once its decision came again")
	}
	for i, r := range rs {
		s, err := bob2.st.Seen(w.ctx, alice.addr, r)
		want := engine.OutcomeCommitted
		if i == 2 {
			want = engine.OutcomeDiscarded
		}
		if err != nil || !s.Finalized || s.Outcome != want {
			t.Errorf("bob/2's record of reaction %d: %+v, %v; want outcome %v", i, s, err, want)
		}
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != rs[2] {
		t.Fatalf("bob/2 keeps %+v, %v after the take-back; want the newest reaction's decision, over the bound", kept, err)
	}
}
