package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// keptPeerWhileTargetPending is keptWhileTargetPending one to one:
// alice's text x is pending on both of bob's devices; alice edits it (e),
// pending on both too (waiting for x); bob/2's person discards e; bob/1
// commits x (its decision to bob/2 lost on the way, sent again on a
// retry) and e, whose decision reaches bob/2 while x is still pending
// there. bob/2 keeps that decision with its action, waiting for x.
func keptPeerWhileTargetPending(t *testing.T) (w *world, alice, bob, bob2 *device, x, e wire.LogicalID) {
	t.Helper()
	w, alice, bob, bob2, _, _ = actionBob(t)
	x = alice.enqueue(bob, "the plan")
	bob.sync()
	bob2.sync()
	e = alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("the new plan")})
	bob.sync()
	bob2.sync()
	if _, err := bob2.c.Discard(w.ctx, alice.addr, e, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/2 discards alice's edit while its target is pending: %v", err)
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // x's decision, sent again later
	if _, err := bob.c.Commit(w.ctx, alice.addr, x); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, e); err != nil {
		t.Fatalf("bob/1 commits alice's edit: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || !s.Pending {
		t.Fatalf("bob/2's alice's text: %+v, %v; want still pending", s, err)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, e); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/2's alice's edit: %+v, %v; want discarded by the person", s, err)
	}
	if kept, err := bob2.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 1 || kept[0].ID != e || kept[0].On != bob.addr {
		t.Fatalf("bob/2's kept actions waiting for the pending text: %+v, %v; want bob/1's commit of alice's edit", kept, err)
	}
	return w, alice, bob, bob2, x, e
}

// checkEditWithTarget checks that both of bob's devices show alice's
// text x edited by e, bob/2 having taken e's discard back.
func checkEditWithTarget(t *testing.T, w *world, alice, bob, bob2 *device, x, e wire.LogicalID) {
	t.Helper()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, e); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of alice's edit: %+v, %v; want committed with its target", s, err)
	}
	for _, d := range []*device{bob, bob2} {
		if en := d.entry(alice, x); string(en.Body) != "the new plan" || en.Edits != 1 {
			t.Errorf("%s shows x as %q, edit %d; want it edited", d.addr, en.Body, en.Edits)
		}
	}
	if kept, err := bob2.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 0 {
		t.Fatalf("bob/2 still keeps %+v, %v after the text's commit, want nothing", kept, err)
	}
}

// TestKeptActionAppliedByTheTargetsCommit: bob/2 kept bob/1's commit of
// alice's edit, which it discarded while alice's text was pending; the
// person then commits the text on bob/2, and the commit takes the edit's
// discard back and applies it in its transaction (Finalize.WithKept, one
// to one).
func TestKeptActionAppliedByTheTargetsCommit(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, x, e := keptPeerWhileTargetPending(t)
	if _, err := bob2.c.Commit(w.ctx, alice.addr, x); err != nil {
		t.Fatal(err)
	}
	checkEditWithTarget(t, w, alice, bob, bob2, x, e)
	settleSiblings(t, bob, bob2)
	checkEditWithTarget(t, w, alice, bob, bob2, x, e)
}

// TestKeptActionAppliedByAKeptCommit: as
// TestKeptActionAppliedByTheTargetsCommit, the text committed on bob/2 by
// bob/1's decision on it, heard again after the edit's and applied after
// its batch (a kept decision's Finalize).
func TestKeptActionAppliedByAKeptCommit(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, x, e := keptPeerWhileTargetPending(t)
	settleSiblings(t, bob, bob2)
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's alice's text: %+v, %v; want committed by bob/1's decision", s, err)
	}
	checkEditWithTarget(t, w, alice, bob, bob2, x, e)
}

// TestKeptActionAppliedByAnArrivalCommit: alice's text x does not reach
// bob/2 at first (its lane lost, sent again on a retry); alice's edit of
// it (e) does. bob/2's person discards e, its target absent; bob/1
// commits x and e, e's decision reaching bob/2, which keeps it with its
// action. When x comes, bob/2 (committing on arrival) commits it as it
// arrives, and that commit takes e's discard back and applies it in the
// receive's transaction (CommitEffect.WithKept, one to one).
func TestKeptActionAppliedByAnArrivalCommit(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, _, _ := actionBob(t)
	w.net.DropNext(alice.addr, bob2.addr, 1) // x's lane to bob/2, sent again later
	x := alice.enqueue(bob, "the plan")
	bob.sync()
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's alice's text: %+v, %v; want not there yet", s, err)
	}
	e := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("the new plan")})
	bob.sync()
	bob2.sync()
	if _, err := bob2.c.Discard(w.ctx, alice.addr, e, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/2 discards alice's edit while its target is absent: %v", err)
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // x's decision, never sent again before x comes
	if _, err := bob.c.Commit(w.ctx, alice.addr, x); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, e); err != nil {
		t.Fatalf("bob/1 commits alice's edit: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if kept, err := bob2.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 1 || kept[0].ID != e || kept[0].On != bob.addr {
		t.Fatalf("bob/2's kept actions waiting for the absent text: %+v, %v; want bob/1's commit of alice's edit", kept, err)
	}
	bob2.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	alice.retry(bob2)
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's alice's text once sent again: %+v, %v; want committed as it arrived", s, err)
	}
	checkEditWithTarget(t, w, alice, bob, bob2, x, e)
}

// keptPeerInOneBatch sets up TestKeptActionAppliedByAnArrivalCommit with
// both frames for bob/2 held, so that one sync receives them in one
// batch: alice's text x, sent again on a retry, and bob/1's decision on
// alice's edit e of it, which bob/2 discarded while x was absent. With
// decisionFirst, the decision comes first (kept in the batch, x then
// committed as it arrives, WithKept from this batch); otherwise x does
// (committed as it arrives, the decision after it finding x committed
// in the batch). bob/2 commits on arrival.
func keptPeerInOneBatch(t *testing.T, decisionFirst bool) {
	oneGoroutine(t)
	w, alice, bob, bob2, _, _ := actionBob(t)
	w.net.DropNext(alice.addr, bob2.addr, 1) // x's lane to bob/2, sent again later
	x := alice.enqueue(bob, "the plan")
	bob.sync()
	bob2.sync()
	e := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("the new plan")})
	bob.sync()
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's alice's text: %+v, %v; want not there yet", s, err)
	}
	if _, err := bob2.c.Discard(w.ctx, alice.addr, e, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/2 discards alice's edit while its target is absent: %v", err)
	}
	bob2.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	w.net.Hold(bob2.addr)
	if !decisionFirst {
		alice.retry(bob2)
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // x's decision, never sent again before x comes
	if _, err := bob.c.Commit(w.ctx, alice.addr, x); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, e); err != nil {
		t.Fatalf("bob/1 commits alice's edit: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if decisionFirst {
		alice.retry(bob2)
	}
	w.net.Release(bob2.addr)
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's alice's text once sent again: %+v, %v; want committed as it arrived", s, err)
	}
	checkEditWithTarget(t, w, alice, bob, bob2, x, e)
	settleSiblings(t, bob, bob2)
	checkEditWithTarget(t, w, alice, bob, bob2, x, e)
}

// TestKeptActionAppliedByAnArrivalCommitInItsBatch: as
// TestKeptActionAppliedByAnArrivalCommit, bob/1's decision on the edit
// and the text, sent again, reach bob/2 in one batch, the decision
// first: kept in the batch, it applies with the text's commit on
// arrival (keptForPeerCommit reads this batch's kept actions too).
func TestKeptActionAppliedByAnArrivalCommitInItsBatch(t *testing.T) {
	keptPeerInOneBatch(t, true)
}

// TestKeptActionAfterAnArrivalCommitInItsBatch: as
// TestKeptActionAppliedByAnArrivalCommitInItsBatch, the text first: its
// commit on arrival names it committed in the batch (bs.takenBack), and
// the edit's decision after it applies there, not kept for a commit that
// already happened.
func TestKeptActionAfterAnArrivalCommitInItsBatch(t *testing.T) {
	keptPeerInOneBatch(t, false)
}
