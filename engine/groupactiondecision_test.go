package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// groupActionBob is groupTwoDeviceBob with alice's group text committed on
// both of bob's devices, then alice's group reaction to it pending on
// both: the reaction's ID is returned with the text's.
func groupActionBob(t *testing.T) (w *world, alice, bob, bob2 *device, g wire.GroupID, m, r wire.LogicalID) {
	t.Helper()
	return groupActionBobIn(t, newWorld(t))
}

// groupActionBobIn is groupActionBob in w (made with newWorld, set up
// before its devices open).
func groupActionBobIn(t *testing.T, w *world) (_ *world, alice, bob, bob2 *device, g wire.GroupID, m, r wire.LogicalID) {
	t.Helper()
	w, alice, bob, bob2, g, m = groupTwoDeviceBobIn(t, w, "lunch at noon", false)
	for _, d := range []*device{bob, bob2} {
		if _, err := d.c.Commit(w.ctx, alice.addr, m); err != nil {
			t.Fatalf("%s commits alice's group text: %v", d.addr, err)
		}
	}
	settleSiblings(t, bob, bob2)
	w.net.DropNext(alice.addr, bob2.addr, 1)
	r = alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	shareFromSibling(t, bob, bob2, stagedRecord(r))
	for _, d := range []*device{bob, bob2} {
		if ids := d.pendingIDs(); !slices.Equal(ids, []wire.LogicalID{r}) {
			t.Fatalf("%s holds %x pending, want alice's reaction only", d.addr, ids)
		}
	}
	return w, alice, bob, bob2, g, m, r
}

// TestGroupActionDecisionTakesBackADiscard: alice reacts in the group to
// her text, which both of bob's devices committed; bob/2 discards the
// reaction while bob/1 commits it. bob/1's decision carries the action
// (kind 18), so bob/2 takes its discard back and applies the reaction by
// the group's rules: both devices show it, committed, decided on bob/1.
// Before the change a group action's commit told its siblings without its
// action (kind 15), and bob/2's discard stood.
func TestGroupActionDecisionTakesBackADiscard(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m, r := groupActionBob(t)
	if _, err := bob2.c.Discard(w.ctx, alice.addr, r, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, res := range bob2.sync() {
		if res.Kind == engine.ResultDecisionHeard && res.TakenBack && res.Decided.ID == r {
			taken++
		}
	}
	if taken != 1 {
		t.Fatalf("bob/2 took back %d group actions, want alice's reaction once", taken)
	}
	settleSiblings(t, bob, bob2)
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
		if s, err := d.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
			t.Errorf("%s's record of the reaction: %+v, %v; want committed", d.addr, s, err)
		}
	}
}

// TestGroupActionDecisionMismatchTakesNothing: bob/2 discards alice's
// group reaction; a decision from bob/1 (an own device, hostile or buggy)
// carries another reaction under its ID (another emoji): its digest is not
// the one bob/2 recorded, so nothing is taken back and the result says
// why (ErrDecisionMismatch). bob/1's real commit then takes the discard
// back, the reaction alice sent applied.
func TestGroupActionDecisionMismatchTakesNothing(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m, r := groupActionBob(t)
	in, err := bob2.st.Inbound(w.ctx, alice.addr, r)
	if err != nil {
		t.Fatal(err)
	}
	a, err := wire.DecodeAction(wire.ContentReaction, in.Body)
	if err != nil {
		t.Fatal(err)
	}
	a.Emoji = heart
	forged, err := wire.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Discard(w.ctx, alice.addr, r, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	bob.raw(bob2, decisionFrame(t, alice, 0xd1, r, wire.ContentReaction, forged))
	res := bob2.sync()
	refused := false
	for _, x := range res {
		if x.TakenBack {
			t.Errorf("bob/2 took back %+v on a forged action", x.Decided)
		}
		refused = refused || x.Kind == engine.ResultDecisionHeard && errors.Is(x.Err, engine.ErrDecisionMismatch)
	}
	if !refused {
		t.Errorf("bob/2's round %+v; want the forged action refused as a mismatch", res)
	}
	if got := groupReactionsOf(bob2.groupEntry(g, m)); len(got) != 0 {
		t.Fatalf("bob/2 shows reactions %q after a forged decision, want none", got)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want still discarded", s, err)
	}

	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	want := []string{alice.addr.String() + " " + thumbs}
	if got := groupReactionsOf(bob2.groupEntry(g, m)); !slices.Equal(got, want) {
		t.Fatalf("bob/2 shows reactions %q after bob/1's commit, want %q", got, want)
	}
}

// TestGroupActionDecisionTakesBackWithItsTarget: bob/2 discards alice's
// group text, so its engine discards her reaction to it (target_discarded),
// while bob/1 commits both. bob/1's decisions reach bob/2 text first: the
// text's takes the text back, and the reaction's (kind 18) then finds its
// target committed and takes the reaction back too, whether the two come
// in one batch (the text taken back earlier in the batch counts as
// committed) or in two. Before the change the reaction stayed discarded
// on bob/2 for good while bob/1 showed it.
func TestGroupActionDecisionTakesBackWithItsTarget(t *testing.T) {
	oneGoroutine(t)
	for _, twoBatches := range []bool{false, true} {
		name := "one batch"
		if twoBatches {
			name = "two batches"
		}
		t.Run(name, func(t *testing.T) {
			w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
			if _, err := bob2.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
				t.Fatal(err)
			}
			w.net.DropNext(alice.addr, bob2.addr, 1)
			r := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
			// bob/1 commits the text before it hears bob/2's discard;
			// what it sends bob/2 waits on the way.
			w.net.Hold(bob2.addr)
			if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
				t.Fatal(err)
			}
			bob.sync()
			if ids := bob.pendingIDs(); !slices.Equal(ids, []wire.LogicalID{r}) {
				t.Fatalf("bob/1 holds %x pending, want alice's reaction", ids)
			}
			shareFromSibling(t, bob, bob2, stagedRecord(r))
			bob2.sync()
			if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded ||
				s.Reason != engine.DiscardTargetDiscarded {
				t.Fatalf("bob/2's record of the reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
			}
			taken := map[wire.LogicalID]int{}
			count := func(res []engine.ReceiveResult) {
				for _, x := range res {
					if x.Kind == engine.ResultDecisionHeard && x.TakenBack && x.Decided != nil {
						taken[x.Decided.ID]++
					}
				}
			}
			if twoBatches {
				w.net.Release(bob2.addr)
				count(bob2.sync())
				if taken[m] != 1 {
					t.Fatalf("bob/2 took back %v, want the text", taken)
				}
			}
			if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
				t.Fatal(err)
			}
			if _, err := bob.c.Pump(w.ctx); err != nil {
				t.Fatal(err)
			}
			w.net.Release(bob2.addr) // in one batch: the text's decision, then the reaction's
			count(bob2.sync())
			if taken[m] != 1 || taken[r] != 1 {
				t.Fatalf("bob/2 took back %v, want the text and the reaction once each", taken)
			}
			settleSiblings(t, bob, bob2)
			want := []string{alice.addr.String() + " " + thumbs}
			for _, d := range []*device{bob, bob2} {
				if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
					t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
				}
				if s, err := d.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
					t.Errorf("%s's record of the reaction: %+v, %v; want committed", d.addr, s, err)
				}
			}
		})
	}
}

// TestGroupActionDecisionBeforeItsTargetIsKept: as in
// TestGroupActionDecisionTakesBackWithItsTarget, but bob/1's decision on
// the text is lost on the way, so the reaction's comes first, its target
// still discarded on bob/2: the reaction stays discarded for now, its
// decision kept with its action (a group's, named by group and target),
// and the text's decision, sent again, takes the text back and the kept
// reaction with it, in one transaction: bob/2 shows the reaction on the
// text, committed, decided on bob/1. Before the change nothing was kept
// for a group action, and the reaction stayed discarded on bob/2 for good.
func TestGroupActionDecisionBeforeItsTargetIsKept(t *testing.T) {
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
	w.net.Hold(bob2.addr)
	bob.sync()
	shareFromSibling(t, bob, bob2, stagedRecord(r))
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.net.Release(bob2.addr)
	heard := false
	for _, x := range bob2.sync() {
		if x.Kind == engine.ResultDecisionHeard && x.Decided != nil && x.Decided.ID == r {
			heard = true
			if x.TakenBack {
				t.Errorf("bob/2 took back the reaction onto a discarded target: %+v", x)
			}
		}
	}
	if !heard {
		t.Fatalf("bob/2 did not hear bob/1's decision on the reaction while the text was discarded there")
	}
	if got := bob2.groupHistory(g); len(got) != 0 {
		t.Fatalf("bob/2's group history %q before the text's decision, want none", got)
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob.addr {
		t.Fatalf("bob/2's kept group actions waiting for the text: %+v, %v; want bob/1's decision on the reaction", kept, err)
	}
	settleSiblings(t, bob, bob2)
	if _, found := decidedOnOf(t, bob2, g, m); !found {
		t.Fatalf("bob/2 did not take the text back once its decision came again")
	}
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

// TestKeptGroupActionOfAnotherMember: the kept group action is carol's
// reaction to alice's text, so the text's take-back finds it by group and
// target, not by its sender. bob/1 commits alice's text (its decision to
// bob/2 lost on the way) while bob/2 discards it, so bob/2's engine
// discards carol's reaction to it (target_discarded); bob/1 commits the
// reaction, whose decision reaches bob/2 first and is kept; the text's,
// sent again, takes the text back and carol's reaction with it.
func TestKeptGroupActionOfAnotherMember(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	m := sent.ID
	for _, d := range []*device{bob, bob2, carol} {
		d.sync()
	}
	if _, err := carol.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	r := carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, carol.addr, r); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/2's record of carol's reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
	}
	if _, err := bob.c.Commit(w.ctx, carol.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].Sender != carol.addr {
		t.Fatalf("bob/2's kept group actions waiting for alice's text: %+v, %v; want carol's reaction", kept, err)
	}
	settleSiblings(t, bob, bob2)
	if s, err := bob2.st.Seen(w.ctx, carol.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of carol's reaction: %+v, %v; want committed with its target", s, err)
	}
	want := []string{carol.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
}

// TestKeptGroupActionOnAReply: as TestGroupActionDecisionBeforeItsTargetIsKept
// with alice's group reply as the reaction's target: bob/2 discarded the
// reply, the reaction's decision comes first and is kept, and the reply's
// decision (kind 18, a group action itself) takes the reply back and the
// kept reaction with it.
func TestKeptGroupActionOnAReply(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
	for _, d := range []*device{bob, bob2} {
		if _, err := d.c.Commit(w.ctx, alice.addr, m); err != nil {
			t.Fatal(err)
		}
	}
	settleSiblings(t, bob, bob2)
	w.net.DropNext(alice.addr, bob2.addr, 1)
	x := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("or one")})
	bob.sync()
	shareFromSibling(t, bob, bob2, stagedRecord(x))
	if _, err := bob2.c.Discard(w.ctx, alice.addr, x, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(alice.addr, bob2.addr, 1)
	r := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: x, Emoji: thumbs})
	w.net.DropNext(bob.addr, bob2.addr, 1) // the reply's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, alice.addr, x); err != nil {
		t.Fatal(err)
	}
	w.net.Hold(bob2.addr)
	bob.sync()
	shareFromSibling(t, bob, bob2, stagedRecord(r))
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.net.Release(bob2.addr)
	bob2.sync()
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, x); err != nil || len(kept) != 1 || kept[0].ID != r {
		t.Fatalf("bob/2's kept group actions waiting for the reply: %+v, %v; want the reaction", kept, err)
	}
	settleSiblings(t, bob, bob2)
	if s, err := bob2.st.Seen(w.ctx, alice.addr, x); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the reply: %+v, %v; want taken back", s, err)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want committed with its target", s, err)
	}
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, x)); !slices.Equal(got, want) {
			t.Errorf("%s shows the reply's reactions %q, want %q", d.addr, got, want)
		}
	}
}

// TestSiblingsOwnGroupActionKeptForItsTarget: bob/2 commits alice's group
// text (its decision to bob/1 lost on the way) and reacts to it; bob/1
// discarded the text, so its engine discards bob/2's reaction, which
// reaches it first, as target_discarded. The reaction is bob's own: no
// decision about it ever comes, so the discard keeps it as bob/2's commit
// with its action, and the text's decision, sent again, takes the text
// back and the reaction with it: bob/1 shows bob's reaction on the text,
// its record committed. Before the change nothing was kept for it (no
// sibling's commit was heard), and bob/1 showed the text without bob's
// reaction for good (adversary seed 1796666887868553873).
func TestSiblingsOwnGroupActionKeptForItsTarget(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
	w.net.DropNext(bob2.addr, bob.addr, 1) // the text's decision, sent again below
	if _, err := bob2.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	r := bob2.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	if s, err := bob.st.Seen(w.ctx, bob2.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded ||
		s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/1's record of bob/2's reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
	}
	if _, found := decidedOnOf(t, bob, g, m); found {
		t.Fatalf("bob/1 took the text back before its decision came")
	}
	if kept, err := bob.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].On != bob2.addr {
		t.Fatalf("bob/1's kept group actions waiting for the text: %+v, %v; want bob/2's own reaction", kept, err)
	}
	alice.sync()
	if _, err := alice.c.Commit(w.ctx, bob2.addr, r); err != nil { // acknowledges bob/2's reaction
		t.Fatalf("alice commits bob/2's reaction: %v", err)
	}
	settleSiblings(t, bob, bob2)
	if _, found := decidedOnOf(t, bob, g, m); !found {
		t.Fatalf("bob/1 did not take the text back once its decision came again")
	}
	if s, err := bob.st.Seen(w.ctx, bob2.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/1's record of bob/2's reaction: %+v, %v; want committed with its target", s, err)
	}
	want := []string{bob2.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
	if kept, err := bob.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 0 {
		t.Fatalf("bob/1 still keeps %+v, %v after the take-back, want nothing", kept, err)
	}
}
