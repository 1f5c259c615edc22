package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// keptTarget is actionBob with alice's new message x discarded on bob/1
// and her actions acts (built from x) reaching bob's devices after that,
// so that bob/1's hold pass discards each (target_discarded) while bob/2
// holds them pending. advance moves the clock between x and the actions.
func keptTarget(t *testing.T, advance time.Duration, acts ...func(x wire.LogicalID) engine.ActionRequest) (w *world, alice, bob, bob2 *device, x wire.LogicalID, ids []wire.LogicalID) {
	t.Helper()
	w, alice, bob, bob2, _, _ = actionBob(t)
	x = alice.enqueue(bob, "the plan")
	bob.sync()
	bob2.sync()
	discardAs(t, bob, alice, x)
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.net.Hold(bob.addr)
	w.net.Hold(bob2.addr)
	for _, a := range acts {
		ids = append(ids, alice.act(bob, a(x)))
	}
	w.clock.Advance(advance)
	w.net.Release(bob.addr)
	w.net.Release(bob2.addr)
	bob.sync()
	bob2.sync()
	for _, id := range ids {
		if s, err := bob.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
			t.Fatalf("bob/1's record of action %x: %+v, %v; want discarded, target_discarded", id[:4], s, err)
		}
	}
	return w, alice, bob, bob2, x, ids
}

func editOf(x wire.LogicalID) engine.ActionRequest {
	return engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("the new plan")}
}

func reactionTo(x wire.LogicalID) engine.ActionRequest {
	return engine.ActionRequest{Content: wire.ContentReaction, Target: x, Emoji: thumbs}
}

// commitDecision is bob/2's kind-18 commit of alice's action id, pending
// on bob/2, under decision ID did.
func commitDecision(t *testing.T, w *world, alice, bob2 *device, did byte, id wire.LogicalID, content wire.ContentType) []byte {
	t.Helper()
	m, err := bob2.st.Inbound(w.ctx, alice.addr, id)
	if err != nil {
		t.Fatal(err)
	}
	return decisionFrame(t, alice, did, id, content, m.Body)
}

// decisionFrame is a committing decision frame (kind 16 for a text when
// content is 0, kind 18 for an action) on alice's message id.
func decisionFrame(t *testing.T, alice *device, did byte, id wire.LogicalID, content wire.ContentType, body []byte) []byte {
	t.Helper()
	f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{did}, Sender: alice.addr.String(), Message: id,
		Outcome: wire.DecisionCommitted, Content: content, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestKeptActionRefusedAtTakeBackStaysKept: alice's edit of x reaches
// bob's devices more than ActionWindow after x did, and bob/1's hold pass
// discards it (target_discarded). bob/2's kind-18 commit of the edit comes
// first, alone: it is kept with its action. x's take-back (kind 16) in a
// later batch judges the kept edit as its own decision would be, from
// its recorded arrival: after the window, refused. x comes back unedited,
// the edit stays discarded, and its kept decision stays (docs/protocol.md:
// one the rules still refuse stays kept until it is forgotten).
func TestKeptActionRefusedAtTakeBackStaysKept(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, x, ids := keptTarget(t, engine.ActionWindow+time.Hour, editOf)
	edit := ids[0]
	bob2.raw(bob, commitDecision(t, w, alice, bob2, 0xd2, edit, wire.ContentEdit))
	bob.sync()
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 1 || kept[0].ID != edit {
		t.Fatalf("bob/1 keeps %+v, %v for x; want the edit's decision", kept, err)
	}
	bob2.raw(bob, decisionFrame(t, alice, 0xd1, x, 0, []byte("the plan")))
	bob.sync()
	if e := bob.entry(alice, x); string(e.Body) != "the plan" || e.Edits != 0 {
		t.Errorf("bob/1 shows x as %q, edit %d; want it taken back, unedited", e.Body, e.Edits)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, x); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Errorf("bob/1's record of x: %+v, %v; want it taken back", s, err)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Errorf("bob/1's record of the edit: %+v, %v; want it still discarded", s, err)
	}
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 1 || kept[0].ID != edit {
		t.Errorf("bob/1 keeps %+v, %v for x after its take-back; want the refused edit's decision still kept", kept, err)
	}
}

// TestKeptActionDuplicateDecisionsApplyOnce: bob/1's hold pass discards
// alice's edit of and reaction to x (target_discarded). bob/1 hears, in
// one batch with x's take-back, two kind-18 commits of each action (a
// repeat under another decision ID), before and after the take-back:
// each action is taken back and applied once (one edit version, one
// reaction), and nothing stays kept. The same when the four come in one
// batch and x's take-back in the next.
func TestKeptActionDuplicateDecisionsApplyOnce(t *testing.T) {
	oneGoroutine(t)
	for _, c := range []struct {
		name  string
		order string // e, r: the edit's and reaction's decisions; E, R their repeats; x the take-back; '|' a new batch
	}{
		{"repeats before the take-back", "erERx"},
		{"repeats around the take-back", "erxER"},
		{"one before, one after", "exrRE"},
		{"repeats a batch before", "erER|x"},
	} {
		t.Run(c.name, func(t *testing.T) { keptDuplicates(t, c.order) })
	}
}

func keptDuplicates(t *testing.T, order string) {
	w, alice, bob, bob2, x, ids := keptTarget(t, 0, editOf, reactionTo)
	edit, reaction := ids[0], ids[1]
	frames := map[byte][]byte{
		'e': commitDecision(t, w, alice, bob2, 0xd2, edit, wire.ContentEdit),
		'E': commitDecision(t, w, alice, bob2, 0xd3, edit, wire.ContentEdit),
		'r': commitDecision(t, w, alice, bob2, 0xd4, reaction, wire.ContentReaction),
		'R': commitDecision(t, w, alice, bob2, 0xd5, reaction, wire.ContentReaction),
		'x': decisionFrame(t, alice, 0xd1, x, 0, []byte("the plan")),
	}
	for _, c := range []byte(order) {
		if c == '|' {
			bob.sync()
			continue
		}
		bob2.raw(bob, frames[c])
	}
	bob.sync()
	bob.sync()
	e := bob.entry(alice, x)
	if string(e.Body) != "the new plan" || e.Edits != 1 {
		t.Errorf("bob/1 shows x as %q, edit %d; want it taken back, edited once", e.Body, e.Edits)
	}
	if got := reactionsOf(e); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
		t.Errorf("bob/1 shows x's reactions %q, want alice's once", got)
	}
	for _, id := range []wire.LogicalID{x, edit, reaction} {
		if s, err := bob.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeCommitted {
			t.Errorf("bob/1's record of %x: %+v, %v; want committed", id[:4], s, err)
		}
	}
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 0 {
		t.Errorf("bob/1 still keeps %+v, %v; want the applied decisions forgotten", kept, err)
	}
	if kept, err := bob.st.KeptDecisions(w.ctx, 100); err != nil || len(kept) != 0 {
		t.Errorf("bob/1 still keeps decisions %+v, %v; want none", kept, err)
	}
}

// TestCatchUpCarriesActionsOnADiscardedTarget: alice sends x and then
// edits it and reacts to it; bob/2 commits the three, bob/3 (linked since)
// discards the three. bob/2's catch-up tells bob/3 newest first: the
// reaction's and the edit's commits (kind 18) come while x is still
// discarded there, and are kept with their actions; x's commit (kind 16)
// takes x back and applies them with it. bob/3 ends as bob/2 shows x.
func TestCatchUpCarriesActionsOnADiscardedTarget(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	alice.enqueue(bob, "lunch?")
	bob.sync()
	bob2.sync()
	bob.commitAll()
	bob2.commitAll()
	alice.sync()
	bob3 := w.linkDevice(bob)
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	x := alice.enqueue(bob, "the plan")
	edit := alice.act(bob, editOf(x))
	reaction := alice.act(bob, reactionTo(x))
	bob2.sync()
	bob3.sync()
	for _, id := range []wire.LogicalID{x, edit, reaction} {
		// One at a time, the clock moving, so that newest first is
		// the reaction, the edit, x.
		w.clock.Advance(time.Second)
		if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
			t.Fatal(err)
		}
	}
	discardAs(t, bob3, alice, x, edit, reaction)
	for _, id := range []wire.LogicalID{x, edit, reaction} {
		if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeDiscarded {
			t.Fatalf("bob/3's record of %x before the catch-up: %+v, %v; want discarded", id[:4], s, err)
		}
	}
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	devs := []*device{bob, bob2, bob3}
	for round := 0; ; round++ {
		out := 0
		for _, d := range devs {
			d.sync()
		}
		for _, d := range devs {
			out += d.pendingOut()
		}
		if out == 0 {
			break
		}
		if round == 8 {
			t.Fatalf("bob's devices still have %d lanes to each other after 8 rounds", out)
		}
		for _, d := range devs {
			for _, p := range devs {
				if p != d {
					d.retry(p)
				}
			}
		}
	}
	for _, d := range []*device{bob2, bob3} {
		e := d.entry(alice, x)
		if string(e.Body) != "the new plan" || e.Edits != 1 {
			t.Errorf("%s shows x as %q, edit %d; want it edited once", d.addr, e.Body, e.Edits)
		}
		if got := reactionsOf(e); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Errorf("%s shows x's reactions %q, want alice's once", d.addr, got)
		}
		for _, id := range []wire.LogicalID{x, edit, reaction} {
			if s, err := d.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
				t.Errorf("%s's record of %x: %+v, %v; want committed", d.addr, id[:4], s, err)
			}
		}
	}
	if kept, err := bob3.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 0 {
		t.Errorf("bob/3 still keeps %+v, %v; want the applied decisions forgotten", kept, err)
	}
}

// TestKeptActionAfterAPlainDecision: bob/2's plain commit (kind 15) of
// alice's edit of x reaches bob/1 before the edit does and is kept
// without an action. The edit then comes and bob/1's hold pass discards
// it (target_discarded): that finalization forgets the plain decision, so
// the kind-18 commit of the edit that follows is kept alone, with its
// action, and x's take-back applies it. (Store: TestKeepDecisionMerges
// for the merge of a plain row and an action's.)
func TestKeptActionAfterAPlainDecision(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, _, _ := actionBob(t)
	x := alice.enqueue(bob, "the plan")
	bob.sync()
	bob2.sync()
	discardAs(t, bob, alice, x)
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.net.Hold(bob.addr)
	edit := alice.act(bob, editOf(x))
	bob2.sync()
	bob2.raw(bob, decisionFrame(t, alice, 0xd0, edit, 0, nil))
	if held := len(w.net.Held(bob.addr)); held < 2 {
		t.Fatalf("%d envelopes wait for bob/1, want alice's edit and bob/2's decision", held)
	}
	for len(w.net.Held(bob.addr)) > 1 {
		w.net.DeliverHeld(bob.addr, 1) // all but alice's edit
	}
	bob.sync()
	if kept, err := bob.st.KeptDecisions(w.ctx, 100); err != nil || len(kept) != 1 || kept[0].ID != edit {
		t.Fatalf("bob/1 keeps %+v, %v; want the plain decision on the edit", kept, err)
	}
	w.net.Release(bob.addr)
	bob.sync()
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/1's record of the edit: %+v, %v; want discarded, target_discarded", s, err)
	}
	bob2.raw(bob, commitDecision(t, w, alice, bob2, 0xd2, edit, wire.ContentEdit))
	bob.sync()
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 1 || kept[0].ID != edit || kept[0].On != bob2.addr {
		t.Fatalf("bob/1 keeps %+v, %v for x; want the edit's action, decided on bob/2", kept, err)
	}
	bob2.raw(bob, decisionFrame(t, alice, 0xd1, x, 0, []byte("the plan")))
	bob.sync()
	if e := bob.entry(alice, x); string(e.Body) != "the new plan" || e.Edits != 1 {
		t.Errorf("bob/1 shows x as %q, edit %d; want it taken back, edited", e.Body, e.Edits)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Errorf("bob/1's record of the edit: %+v, %v; want it taken back", s, err)
	}
	if kept, err := bob.st.KeptDecisions(w.ctx, 100); err != nil || len(kept) != 0 {
		t.Errorf("bob/1 still keeps %+v, %v; want none", kept, err)
	}
}
