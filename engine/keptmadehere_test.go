package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// commitTurnedForItsTarget commits action id from sender on d, as the
// person does, and checks that the rules turned the commit into a discard
// because its target is discarded there (target_discarded).
func commitTurnedForItsTarget(t *testing.T, d, sender *device, id wire.LogicalID) {
	t.Helper()
	res, err := d.c.FinalizeBatch(d.w.ctx, []engine.FinalizeRequest{{Sender: sender.addr, ID: id, Outcome: engine.OutcomeCommitted}})
	if err != nil || res[0].Err != nil || res[0].Discarded != engine.DiscardTargetDiscarded {
		t.Fatalf("%s commits %x: %+v, %v; want it turned into target_discarded", d.addr, id[:4], res, err)
	}
}

// checkToldWithAction checks that d told its sibling the person's commit
// turned into target_discarded (commitTurnedForItsTarget) with its
// action: a lane to sibling carries a commit's decision with the action
// (frame kind 18), so that a sibling whose copy is discarded for the same
// target keeps it with its action and applies it with the target.
func checkToldWithAction(t *testing.T, d, sibling *device) {
	t.Helper()
	outs, err := d.c.PendingOutbound(d.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []int
	for _, o := range outs {
		if o.Recipient == sibling.addr {
			kinds = append(kinds, frameKind(o.Frame))
		}
	}
	if !slices.Contains(kinds, int(wire.FrameDecisionAction)) {
		t.Fatalf("%s's lanes to %s carry frame kinds %v, want the commit's decision with its action (%d)", d.addr, sibling.addr, kinds, wire.FrameDecisionAction)
	}
}

// checkMadeHere checks that d's commit of action id from sender, taken
// back with its target, is d's own decision as a commit made there is:
// committed, its record keeping the action body and naming no other
// device, so that the catch-up and an answer carry the action.
func checkMadeHere(t *testing.T, d, sender *device, id wire.LogicalID, content wire.ContentType) {
	t.Helper()
	if s, err := d.st.Seen(d.w.ctx, sender.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("%s's record of the action: %+v, %v; want committed with its target", d.addr, s, err)
	}
	m, ok, err := d.st.MadeDecision(d.w.ctx, sender.addr, id)
	if err != nil || !ok || m.Outcome != engine.OutcomeCommitted || m.DecidedOn != nil || m.ActionBody == nil || m.Content != content {
		t.Fatalf("%s's decision on the action: %+v (%v), %v; want its own commit, keeping the action body", d.addr, m, ok, err)
	}
}

// TestOwnCommitTurnedForItsTargetIsKept: alice's group text m and her
// reaction to it reach both of bob's devices, the reaction waiting for m.
// On bob/1 the person discards m, then commits the reaction: the rules
// turn that commit into a discard (target_discarded). bob/2 commits m
// before it hears of bob/1's discard; its decision takes m back on bob/1,
// and with it the person's commit of the reaction, kept with its action:
// the reaction applies there in the take-back's transaction, as bob/1's
// own decision (the catch-up and an answer carry it). bob/2 commits the
// reaction by bob/1's decision. Both devices show it. Before the change
// bob/1 kept the rules' discard for good while bob/2 showed the reaction
// (people-in-groups adversary, seed 1796665046715106593).
func TestOwnCommitTurnedForItsTargetIsKept(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
	r := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	for _, d := range []*device{bob, bob2} {
		if ids := d.pendingIDs(); !slices.Contains(ids, r) {
			t.Fatalf("%s holds %x pending, want alice's reaction among them", d.addr, ids)
		}
	}
	discardAs(t, bob, alice, m)
	commitTurnedForItsTarget(t, bob, alice, r)
	if kept, err := bob.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob.addr {
		t.Fatalf("bob/1's kept group actions waiting for the text: %+v, %v; want its own commit of the reaction", kept, err)
	}
	checkToldWithAction(t, bob, bob2)
	if _, err := bob2.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	settleSiblings(t, bob, bob2)
	bob2.commitAll()
	settleSiblings(t, bob, bob2)
	checkMadeHere(t, bob, alice, r, wire.ContentReaction)
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
		if s, err := d.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
			t.Errorf("%s's record of the reaction: %+v, %v; want committed", d.addr, s, err)
		}
	}
	if kept, err := bob.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 0 {
		t.Fatalf("bob/1 still keeps %+v, %v after the take-back, want nothing", kept, err)
	}
}

// TestOwnCommitTurnedForItsTargetIsKeptOneToOne is the same one to one:
// alice's message x and her reaction to it reach both of bob's devices;
// on bob/1 the person discards x and commits the reaction (turned into
// target_discarded); bob/2's commit of x takes x back on bob/1 and
// applies the kept commit of the reaction with it.
func TestOwnCommitTurnedForItsTargetIsKeptOneToOne(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, _, _ := actionBob(t)
	x := alice.enqueue(bob, "the code is 4711")
	r := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: x, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	discardAs(t, bob, alice, x)
	commitTurnedForItsTarget(t, bob, alice, r)
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob.addr {
		t.Fatalf("bob/1's kept actions waiting for x: %+v, %v; want its own commit of the reaction", kept, err)
	}
	checkToldWithAction(t, bob, bob2)
	if _, err := bob2.c.Commit(w.ctx, alice.addr, x); err != nil {
		t.Fatal(err)
	}
	settleSiblings(t, bob, bob2)
	bob2.commitAll()
	settleSiblings(t, bob, bob2)
	checkMadeHere(t, bob, alice, r, wire.ContentReaction)
	for _, d := range []*device{bob, bob2} {
		if got := reactionsOf(d.entry(alice, x)); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Errorf("%s shows x's reactions %q, want alice's", d.addr, got)
		}
	}
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 0 {
		t.Fatalf("bob/1 still keeps %+v, %v after the take-back, want nothing", kept, err)
	}
}
