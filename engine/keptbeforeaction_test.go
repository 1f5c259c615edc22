package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestGroupDecisionBeforeItsActionIsKept: bob/2 discards alice's group
// text, which bob/1 commits (its decision to bob/2 lost on the way). bob/1
// commits alice's reaction to the text too, and that decision reaches
// bob/2 before the reaction does: kept, the reaction unseen. The reaction
// then arrives on bob/2 and is discarded there because its target is
// (target_discarded): the kept commit is kept with the reaction, not
// forgotten, so the text's decision, sent again, takes the text back and
// the reaction with it. Before the change the kept decision went with the
// reaction's discard, and the reaction stayed discarded on bob/2 for good
// while bob/1 showed it.
func TestGroupDecisionBeforeItsActionIsKept(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
	if _, err := bob2.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(alice.addr, bob2.addr, 1)
	r := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if ids := bob.pendingIDs(); !slices.Equal(ids, []wire.LogicalID{r}) {
		t.Fatalf("bob/1 holds %x pending, want alice's reaction", ids)
	}
	reaction := archived(t, bob, stagedRecord(r)) // reaches bob/2 later
	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's record of the reaction before it arrives: %+v, %v; want none", s, err)
	}
	importRecords(t, bob2, reaction)
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob.addr {
		t.Fatalf("bob/2's kept group actions waiting for the text: %+v, %v; want bob/1's decision on the reaction", kept, err)
	}
	settleSiblings(t, bob, bob2)
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want committed with its target", s, err)
	}
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 0 {
		t.Fatalf("bob/2 still keeps %+v, %v after the take-back, want nothing", kept, err)
	}
}
