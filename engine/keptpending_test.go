package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// keptWhileTargetPending sets up the divergence the people-in-groups
// adversary found (seed 1796664555521825216): alice's group text T is
// pending on both of bob's devices; carol commits it and reacts to it (R),
// pending on both of bob's devices too (waiting for T); bob/2's person
// discards R; bob/1 commits T (its decision to bob/2 lost on the way, sent
// again on a retry) and R, whose decision reaches bob/2 while T is still
// pending there. bob/2 keeps that decision with its action, waiting for T.
func keptWhileTargetPending(t *testing.T) (w *world, alice, bob, bob2, carol *device, g wire.GroupID, m, r wire.LogicalID) {
	t.Helper()
	w, g, alice, bob, bob2, carol = groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	m = sent.ID
	for _, d := range []*device{bob, bob2, carol} {
		d.sync()
	}
	if _, err := carol.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	r = carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	if _, err := bob2.c.Discard(w.ctx, carol.addr, r, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/2 discards carol's reaction while its target is pending: %v", err)
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again later
	if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, carol.addr, r); err != nil {
		t.Fatalf("bob/1 commits carol's reaction: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, m); err != nil || !s.Pending {
		t.Fatalf("bob/2's alice's text: %+v, %v; want still pending", s, err)
	}
	if s, err := bob2.st.Seen(w.ctx, carol.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/2's carol's reaction: %+v, %v; want discarded by the person", s, err)
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob.addr {
		t.Fatalf("bob/2's kept group actions waiting for the pending text: %+v, %v; want bob/1's commit of carol's reaction", kept, err)
	}
	return w, alice, bob, bob2, carol, g, m, r
}

// checkReactionWithTarget checks that both of bob's devices show carol's
// reaction on alice's text, bob/2 having taken its discard back.
func checkReactionWithTarget(t *testing.T, w *world, bob, bob2, carol *device, g wire.GroupID, m, r wire.LogicalID) {
	t.Helper()
	if s, err := bob2.st.Seen(w.ctx, carol.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of carol's reaction: %+v, %v; want committed with its target", s, err)
	}
	want := []string{carol.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 0 {
		t.Fatalf("bob/2 still keeps %+v, %v after the text's commit, want nothing", kept, err)
	}
}

// TestKeptGroupActionAppliedByTheTargetsCommit: bob/2 kept bob/1's
// commit of carol's reaction, which it discarded while alice's text was
// pending; the person then commits the text on bob/2, and the commit
// takes the reaction's discard back and applies it in its transaction.
func TestKeptGroupActionAppliedByTheTargetsCommit(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, carol, g, m, r := keptWhileTargetPending(t)
	if _, err := bob2.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	checkReactionWithTarget(t, w, bob, bob2, carol, g, m, r)
	settleSiblings(t, bob, bob2)
	checkReactionWithTarget(t, w, bob, bob2, carol, g, m, r)
}

// TestKeptGroupActionAppliedByAKeptCommit: as
// TestKeptGroupActionAppliedByTheTargetsCommit, the text committed on
// bob/2 by bob/1's decision on it, heard again after the reaction's and
// applied after its batch (a kept decision's Finalize).
func TestKeptGroupActionAppliedByAKeptCommit(t *testing.T) {
	oneGoroutine(t)
	w, _, bob, bob2, carol, g, m, r := keptWhileTargetPending(t)
	settleSiblings(t, bob, bob2)
	if on, found := decidedOnOf(t, bob2, g, m); !found || on != bob.addr.String() {
		t.Fatalf("bob/2's entry of alice's text: decided on %q (found %v), want bob/1's decision", on, found)
	}
	checkReactionWithTarget(t, w, bob, bob2, carol, g, m, r)
}

// TestKeptGroupActionAppliedByAnArrivalCommit: bob/1's own group text T
// does not reach bob/2 at first (its lane lost, sent again on a retry);
// carol commits T and reacts to it (R), and R reaches bob/2 before T.
// bob/2's person discards R, its target absent; bob/1 commits R, whose
// decision bob/2 keeps with its action. When T comes, bob/2 commits it
// as it arrives (a sibling's own message), and that commit takes R's
// discard back and applies it in the receive's transaction
// (CommitEffect.WithKept).
func TestKeptGroupActionAppliedByAnArrivalCommit(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	w.net.DropNext(bob.addr, bob2.addr, 1) // T's lane to bob/2, sent again later
	sent, err := bob.c.SendGroup(w.ctx, g, []byte("lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	m := sent.ID
	carol.sync()
	if _, err := carol.c.Commit(w.ctx, bob.addr, m); err != nil {
		t.Fatal(err)
	}
	r := carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, bob.addr, m); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's bob/1's text: %+v, %v; want not there yet", s, err)
	}
	if _, err := bob2.c.Discard(w.ctx, carol.addr, r, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/2 discards carol's reaction while its target is absent: %v", err)
	}
	if _, err := bob.c.Commit(w.ctx, carol.addr, r); err != nil {
		t.Fatalf("bob/1 commits carol's reaction: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob.addr {
		t.Fatalf("bob/2's kept group actions waiting for the absent text: %+v, %v; want bob/1's commit of carol's reaction", kept, err)
	}
	bob.retry(bob2)
	bob2.sync()
	if _, found := decidedOnOf(t, bob2, g, m); !found {
		t.Fatalf("bob/2 does not hold bob/1's text once it was sent again")
	}
	checkReactionWithTarget(t, w, bob, bob2, carol, g, m, r)
}

// keptGroupInOneBatch is keptPeerInOneBatch in a group, as
// TestKeptGroupActionAppliedByAnArrivalCommit: bob/1's own group text T,
// sent again on a retry, and bob/1's decision on carol's reaction R to
// it, which bob/2 discarded while T was absent, reach bob/2 in one
// batch. With decisionFirst, the decision comes first (kept in the
// batch, T then committed as it arrives, WithKept from this batch);
// otherwise T does (committed as it arrives, the decision after it
// finding T committed in the batch).
func keptGroupInOneBatch(t *testing.T, decisionFirst bool) {
	oneGoroutine(t)
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	w.net.DropNext(bob.addr, bob2.addr, 1) // T's lane to bob/2, sent again later
	sent, err := bob.c.SendGroup(w.ctx, g, []byte("lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	m := sent.ID
	carol.sync()
	if _, err := carol.c.Commit(w.ctx, bob.addr, m); err != nil {
		t.Fatal(err)
	}
	r := carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, bob.addr, m); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's bob/1's text: %+v, %v; want not there yet", s, err)
	}
	if _, err := bob2.c.Discard(w.ctx, carol.addr, r, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/2 discards carol's reaction while its target is absent: %v", err)
	}
	w.net.Hold(bob2.addr)
	if !decisionFirst {
		bob.retry(bob2)
	}
	if _, err := bob.c.Commit(w.ctx, carol.addr, r); err != nil {
		t.Fatalf("bob/1 commits carol's reaction: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if decisionFirst {
		bob.retry(bob2)
	}
	w.net.Release(bob2.addr)
	bob2.sync()
	if _, found := decidedOnOf(t, bob2, g, m); !found {
		t.Fatalf("bob/2 does not hold bob/1's text once it was sent again")
	}
	checkReactionWithTarget(t, w, bob, bob2, carol, g, m, r)
}

// TestKeptGroupActionAppliedByAnArrivalCommitInItsBatch: as
// TestKeptGroupActionAppliedByAnArrivalCommit, bob/1's decision on the
// reaction and its text, sent again, reach bob/2 in one batch, the
// decision first: kept in the batch, it applies with the text's commit
// on arrival (keptForCommit reads this batch's kept actions too).
func TestKeptGroupActionAppliedByAnArrivalCommitInItsBatch(t *testing.T) {
	keptGroupInOneBatch(t, true)
}

// TestKeptGroupActionAfterAnArrivalCommitInItsBatch: as
// TestKeptGroupActionAppliedByAnArrivalCommitInItsBatch, the text first:
// its commit on arrival names it committed in the batch
// (bs.groupTakenBack), and the reaction's decision after it applies
// there, not kept for a commit that already happened.
func TestKeptGroupActionAfterAnArrivalCommitInItsBatch(t *testing.T) {
	keptGroupInOneBatch(t, false)
}
