package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// actionBob is twoDeviceBob with two messages from alice committed on both
// of bob's devices (m1 and m2), and the decisions between them settled.
func actionBob(t *testing.T) (w *world, alice, bob, bob2 *device, m1, m2 wire.LogicalID) {
	w, alice, bob, bob2 = twoDeviceBob(t)
	m1, m2 = alice.enqueue(bob, "lunch at noon"), alice.enqueue(bob, "secret")
	bob.sync()
	bob2.sync()
	bob.commitAll()
	bob2.commitAll()
	settleSiblings(t, bob, bob2)
	alice.sync()
	return w, alice, bob, bob2, m1, m2
}

// settleSiblings syncs bob's two devices until neither has a lane to the other.
func settleSiblings(t *testing.T, bob, bob2 *device) {
	t.Helper()
	for round := 0; ; round++ {
		bob.sync()
		bob2.sync()
		if bob.pendingOut() == 0 && bob2.pendingOut() == 0 {
			return
		}
		if round == 8 {
			t.Fatalf("bob's devices still have lanes to each other after 8 rounds")
		}
		bob.retry(bob2)
		bob2.retry(bob)
	}
}

// discardAllAs discards every pending received message of d, as the
// person does.
func discardAllAs(t *testing.T, d *device) int {
	t.Helper()
	msgs, err := d.c.PendingInbound(d.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := d.c.Discard(d.w.ctx, m.Sender, m.ID, engine.DiscardRejected); err != nil {
			t.Fatalf("%s discards %x: %v", d.addr, m.ID[:4], err)
		}
	}
	return len(msgs)
}

// TestActionDecisionTakesBackADiscard: alice reacts to, edits and replies
// to her message m1 and deletes m2; bob discards the four actions on bob/1
// while bob/2 commits them. Each commit's decision carries its action
// (frame kind 18), so bob/1 takes each discard back and applies the
// action (commit beats discard): both devices show the reaction, the
// edit, the reply and the tombstone, and bob/2's discards heard from
// bob/1 change nothing there.
func TestActionDecisionTakesBackADiscard(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, m2 := actionBob(t)
	reaction := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m1, Emoji: thumbs})
	edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m1, Text: []byte("lunch at one")})
	reply := alice.act(bob, engine.ActionRequest{Content: wire.ContentReply, Target: m1, Text: []byte("or two")})
	del := alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: m2})
	bob.sync()
	bob2.sync()
	if n := discardAllAs(t, bob); n != 4 {
		t.Fatalf("bob/1 discarded %d actions, want 4", n)
	}
	if n := bob2.commitAll(); n != 4 {
		t.Fatalf("bob/2 committed %d actions, want 4", n)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	res := bob.sync()
	var taken []wire.LogicalID
	for _, r := range res {
		if r.Kind == engine.ResultDecisionHeard && r.TakenBack {
			taken = append(taken, r.Decided.ID)
			if r.Action == nil {
				t.Errorf("bob/1 took back %x without saying what it applied", r.Decided.ID[:4])
			}
		}
	}
	for _, id := range []wire.LogicalID{reaction, edit, reply, del} {
		if !slices.Contains(taken, id) {
			t.Errorf("bob/1 did not take back action %x: %+v", id[:4], res)
		}
	}
	settleSiblings(t, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		e := d.entry(alice, m1)
		if string(e.Body) != "lunch at one" || e.Edits != 1 {
			t.Errorf("%s shows m1 as %q, edit %d; want the edit applied", d.addr, e.Body, e.Edits)
		}
		if got := reactionsOf(e); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Errorf("%s shows m1's reactions %q, want alice's", d.addr, got)
		}
		if e := d.entry(alice, m2); !e.Deleted || len(e.Body) != 0 {
			t.Errorf("%s shows m2 as %q (deleted %v), want a tombstone", d.addr, e.Body, e.Deleted)
		}
		if e := d.entry(alice, reply); string(e.Body) != "or two" || e.ReplyTo == nil || *e.ReplyTo != m1 {
			t.Errorf("%s shows the reply as %q quoting %v, want %q quoting m1", d.addr, e.Body, e.ReplyTo, "or two")
		}
		for _, id := range []wire.LogicalID{reaction, edit, reply, del} {
			if s, err := d.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
				t.Errorf("%s's record of action %x: %+v, %v; want committed", d.addr, id[:4], s, err)
			}
		}
	}
}

// TestActionDecisionBeforeTheAction: bob/2 commits alice's reaction
// before bob/1 received it; bob/1 keeps the decision and, when the
// reaction comes, commits and applies it without asking.
func TestActionDecisionBeforeTheAction(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	w.net.Hold(bob.addr) // what comes for bob/1 waits
	reaction := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m1, Emoji: heart})
	bob2.sync()
	if n := bob2.commitAll(); n != 1 {
		t.Fatalf("bob/2 committed %d actions, want 1", n)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if held := len(w.net.Held(bob.addr)); held != 2 {
		t.Fatalf("%d envelopes wait for bob/1, want alice's reaction and bob/2's decision", held)
	}
	w.net.DeliverHeld(bob.addr, 1) // the decision first
	res := bob.sync()
	if count(res, engine.ResultDecisionHeard) != 1 {
		t.Fatalf("bob/1 heard no decision alone: %+v", res)
	}
	if got := reactionsOf(bob.entry(alice, m1)); len(got) != 0 {
		t.Fatalf("bob/1 shows reactions %q before the reaction came", got)
	}
	w.net.Release(bob.addr)
	res = bob.sync()
	decided := false
	for _, r := range res {
		decided = decided || r.Kind == engine.ResultDecided && r.ID == reaction
	}
	if !decided {
		t.Errorf("bob/1 did not apply bob/2's decision when the reaction came: %+v", res)
	}
	if got := reactionsOf(bob.entry(alice, m1)); !slices.Equal(got, []string{"alice/1 " + heart}) {
		t.Fatalf("bob/1 shows reactions %q, want alice's %s", got, heart)
	}
	if n := bob.pendingIn(); n != 0 {
		t.Fatalf("bob/1 still has %d pending messages: it would ask the person", n)
	}
}

// TestActionDecisionMismatchRefused: a sibling's kind-18 decision whose
// action is not the message it names here (another digest: another
// reaction under the ID alice's reaction carries) is heard and
// acknowledged as a commit without its action (kind 15), its result
// naming ErrDecisionMismatch, and takes nothing back; one whose action does not
// decode is refused (wire.ErrUnsupportedVersion); the receive goes on, and bob/2's own
// commit then takes the discard back.
func TestActionDecisionMismatchRefused(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	reaction := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m1, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	if n := discardAllAs(t, bob); n != 1 {
		t.Fatalf("bob/1 discarded %d actions, want 1", n)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	forged, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: m1, Emoji: heart, Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd1}, Sender: alice.addr.String(), Message: reaction,
		Outcome: wire.DecisionCommitted, Content: wire.ContentReaction, Body: forged})
	if err != nil {
		t.Fatal(err)
	}
	bob2.raw(bob, f)
	// A kind-18 frame whose content type says delete over a reaction's
	// body (version 2, a reaction's only) does not decode.
	good := append([]byte(nil), f...)
	good[1+1+16+1+len(alice.addr.String())+16] = byte(wire.ContentDelete)
	bob2.raw(bob, good)
	res := bob.sync()
	heard := false
	for _, r := range res {
		heard = heard || r.Kind == engine.ResultDecisionHeard && r.ID == (wire.LogicalID{0xd1}) && errors.Is(r.Err, engine.ErrDecisionMismatch)
	}
	if !heard {
		t.Errorf("the forged action's decision was not heard as a mismatch: %+v", res)
	}
	if s, err := bob.st.Seen(w.ctx, bob2.addr, wire.LogicalID{0xd1}); err != nil || !s.Finalized {
		t.Errorf("bob/1's record of the mismatched decision: %+v, %v; want it finalized (acknowledged)", s, err)
	}
	if !hasError(res, wire.ErrUnsupportedVersion) {
		t.Errorf("the malformed action's decision was not refused: %+v", res)
	}
	for _, r := range res {
		if r.TakenBack {
			t.Errorf("bob/1 took back %+v", r.Decided)
		}
	}
	if got := reactionsOf(bob.entry(alice, m1)); len(got) != 0 {
		t.Fatalf("bob/1 shows reactions %q after the forged decisions, want none", got)
	}
	// The receive went on: bob/2's real commit takes it back.
	bob2.commitAll()
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if got := reactionsOf(bob.entry(alice, m1)); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
		t.Fatalf("bob/1 shows reactions %q after bob/2's commit, want alice's %s", got, thumbs)
	}
}

// TestActionDecisionTakesBackWithItsTarget: bob discards alice's new
// message and her reaction to it and edit of it on bob/1, and commits the
// three on bob/2. bob/1 hears the three decisions in one batch: the
// message is taken back first, and the actions find it there (not as the
// discard the store still holds when the batch is prepared).
func TestActionDecisionTakesBackWithItsTarget(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, _, _ := actionBob(t)
	m3 := alice.enqueue(bob, "new plan")
	alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m3, Emoji: thumbs})
	alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m3, Text: []byte("newer plan")})
	bob.sync()
	bob2.sync()
	if n := discardAllAs(t, bob); n != 3 {
		t.Fatalf("bob/1 discarded %d messages, want 3", n)
	}
	if n := bob2.commitAll(); n != 3 {
		t.Fatalf("bob/2 committed %d messages, want 3", n)
	}
	for _, d := range []*device{bob, bob2} {
		if _, err := d.c.Pump(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	res := bob.sync()
	if n := count(res, engine.ResultDecisionHeard); n != 3 {
		t.Fatalf("bob/1 heard %d decisions in its sync, want the 3 in one: %+v", n, res)
	}
	settleSiblings(t, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		e := d.entry(alice, m3)
		if string(e.Body) != "newer plan" || e.Edits != 1 {
			t.Errorf("%s shows the message as %q, edit %d; want the edit applied", d.addr, e.Body, e.Edits)
		}
		if got := reactionsOf(e); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Errorf("%s shows its reactions %q, want alice's", d.addr, got)
		}
	}
}

// discardAs discards the pending received messages ids of d (from
// sender), as the person does.
func discardAs(t *testing.T, d *device, sender *device, ids ...wire.LogicalID) {
	t.Helper()
	for _, id := range ids {
		if _, err := d.c.Discard(d.w.ctx, sender.addr, id, engine.DiscardRejected); err != nil {
			t.Fatalf("%s discards %x: %v", d.addr, id[:4], err)
		}
	}
}

// TestActionDecisionTakesBackWhatRestedOnTheTarget: alice sends x and y,
// deletes x and reacts to y. On bob/1 the person discards only x and y;
// the hold's pass then discards the delete and the reaction itself
// (target_discarded). bob/2 commits all four. bob/1 takes x and y back
// (kind 16) and, though the engine made those discards, the delete and
// the reaction too (kind 18): they rested on the person's discard of
// their targets, which the commit overrules. Both devices show x's
// tombstone and y's reaction.
func TestActionDecisionTakesBackWhatRestedOnTheTarget(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, _, _ := actionBob(t)
	x := alice.enqueue(bob, "the code is 4711")
	y := alice.enqueue(bob, "see you there")
	del := alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: x})
	reaction := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: y, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	discardAs(t, bob, alice, x, y)
	bob.sync() // the hold's pass
	for _, id := range []wire.LogicalID{del, reaction} {
		if s, err := bob.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
			t.Fatalf("bob/1's record of action %x: %+v, %v; want discarded, target_discarded", id[:4], s, err)
		}
	}
	if n := bob2.commitAll(); n != 4 {
		t.Fatalf("bob/2 committed %d messages, want 4", n)
	}
	for _, d := range []*device{bob, bob2} {
		if _, err := d.c.Pump(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	bob.sync()
	settleSiblings(t, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		if e := d.entry(alice, x); !e.Deleted || len(e.Body) != 0 {
			t.Errorf("%s shows x as %q (deleted %v), want a tombstone", d.addr, e.Body, e.Deleted)
		}
		if got := reactionsOf(d.entry(alice, y)); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Errorf("%s shows y's reactions %q, want alice's", d.addr, got)
		}
		for _, id := range []wire.LogicalID{x, y, del, reaction} {
			if s, err := d.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
				t.Errorf("%s's record of %x: %+v, %v; want committed", d.addr, id[:4], s, err)
			}
		}
	}
}

// TestActionDecisionHeardLate: bob/1 discards alice's edit of m1 in its
// window; bob/2 commits it, and its decision reaches bob/1 more than
// ActionWindow later. bob/1 judges the edit on the time it recorded (its
// discard, in the window), not the decision's arrival, and applies it as
// bob/2 did.
func TestActionDecisionHeardLate(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m1, Text: []byte("lunch at one")})
	bob.sync()
	bob2.sync()
	if n := discardAllAs(t, bob); n != 1 {
		t.Fatalf("bob/1 discarded %d actions, want 1", n)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(engine.ActionWindow + time.Hour)
	if n := bob2.commitAll(); n != 1 {
		t.Fatalf("bob/2 committed %d actions, want 1", n)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	settleSiblings(t, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		if e := d.entry(alice, m1); string(e.Body) != "lunch at one" || e.Edits != 1 {
			t.Errorf("%s shows m1 as %q, edit %d; want the edit applied", d.addr, e.Body, e.Edits)
		}
	}
}

// TestActionDecisionWindowNotReset: alice's edit of x reaches bob's
// devices more than ActionWindow after x did; bob/1 had discarded x, so
// its hold pass discards the edit (target_discarded). A hostile sibling
// sends bob/1 a take-back of x (kind 16) and, in the same batch, a
// kind-18 commit of the edit with its true body. x goes back into
// bob/1's history at its arrival, and the edit, arrived
// after the window, stays discarded (window_passed, as bob/2's rules say).
func TestActionDecisionWindowNotReset(t *testing.T) {
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
	w.net.Hold(bob2.addr)
	edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("the new plan")})
	w.clock.Advance(engine.ActionWindow + time.Hour)
	w.net.Release(bob.addr)
	w.net.Release(bob2.addr)
	bob.sync()
	bob2.sync()
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/1's record of the edit: %+v, %v; want discarded, target_discarded", s, err)
	}
	m, err := bob2.st.Inbound(w.ctx, alice.addr, edit)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []wire.Decision{
		{ID: wire.LogicalID{0xd1}, Sender: alice.addr.String(), Message: x, Outcome: wire.DecisionCommitted, Body: []byte("the plan")},
		{ID: wire.LogicalID{0xd2}, Sender: alice.addr.String(), Message: edit, Outcome: wire.DecisionCommitted, Content: wire.ContentEdit, Body: m.Body},
	} {
		f, err := wire.EncodeDecision(d)
		if err != nil {
			t.Fatalf("decision %d: %v", i, err)
		}
		bob2.raw(bob, f)
	}
	bob.sync()
	if e := bob.entry(alice, x); string(e.Body) != "the plan" || e.Edits != 0 {
		t.Errorf("bob/1 shows x as %q, edit %d; want it taken back, unedited", e.Body, e.Edits)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Errorf("bob/1's record of the edit: %+v, %v; want it still discarded", s, err)
	}
}

// TestActionDecisionReactionToATakenBackReply: bob/1 discards alice's
// reply and her reaction to it; bob/2 commits both. bob/1 hears both
// decisions in one batch: the reply's (kind 18) takes it back, and the
// reaction's finds it there and applies.
func TestActionDecisionReactionToATakenBackReply(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	reply := alice.act(bob, engine.ActionRequest{Content: wire.ContentReply, Target: m1, Text: []byte("or two")})
	alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: reply, Emoji: heart})
	bob.sync()
	bob2.sync()
	if n := discardAllAs(t, bob); n != 2 {
		t.Fatalf("bob/1 discarded %d messages, want 2", n)
	}
	if n := bob2.commitAll(); n != 2 {
		t.Fatalf("bob/2 committed %d messages, want 2", n)
	}
	for _, d := range []*device{bob, bob2} {
		if _, err := d.c.Pump(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(bob.sync(), engine.ResultDecisionHeard); n != 2 {
		t.Fatalf("bob/1 heard %d decisions in its sync, want the 2 in one", n)
	}
	settleSiblings(t, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		e := d.entry(alice, reply)
		if string(e.Body) != "or two" {
			t.Errorf("%s shows the reply as %q, want it", d.addr, e.Body)
		}
		if got := reactionsOf(e); !slices.Equal(got, []string{"alice/1 " + heart}) {
			t.Errorf("%s shows the reply's reactions %q, want alice's", d.addr, got)
		}
	}
}

// TestActionDecisionMismatchLeavesAPendingCopy: alice's reaction is still
// pending on bob/1 when a kind-18 decision about it comes from bob/2 with
// another action under that ID (a sender may give each device another
// body). The decision is acknowledged, but it does not decide bob/1's
// copy: the person has not seen that action here, so it stays pending
// for them instead of being committed by a decision about another body.
func TestActionDecisionMismatchLeavesAPendingCopy(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	reaction := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m1, Emoji: thumbs})
	bob.sync()
	other, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: m1, Emoji: heart, Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd2}, Sender: alice.addr.String(), Message: reaction,
		Outcome: wire.DecisionCommitted, Content: wire.ContentReaction, Body: other})
	if err != nil {
		t.Fatal(err)
	}
	bob2.raw(bob, f)
	res := bob.sync()
	bob.sync()
	heard := false
	for _, r := range res {
		heard = heard || r.Kind == engine.ResultDecisionHeard && r.ID == (wire.LogicalID{0xd2}) && errors.Is(r.Err, engine.ErrDecisionMismatch)
	}
	if !heard {
		t.Errorf("the other action's decision was not heard as a mismatch: %+v", res)
	}
	msgs, err := bob.c.PendingInbound(w.ctx, engine.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != reaction {
		t.Fatalf("bob/1's pending messages after the mismatched decision: %+v, want alice's reaction", msgs)
	}
	if got := reactionsOf(bob.entry(alice, m1)); len(got) != 0 {
		t.Fatalf("bob/1 shows reactions %q, want none until the person decides", got)
	}
}

// TestActionDecisionKeepsTheRecordedKind: alice sends bob a plain text
// whose bytes are also a reaction to m1; bob/1 discards it. A hostile
// sibling presents those bytes, in a kind-18 decision, as alice's
// committed reaction under that ID: the digest matches, but bob/1's
// record says the message was a text (migration 0028), so nothing is
// taken back; the decision is heard as a commit without its action, its
// result naming ErrDecisionKindMismatch (an ErrDecisionMismatch), and m1
// shows no reaction.
func TestActionDecisionKeepsTheRecordedKind(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	bytes, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: m1, Emoji: thumbs, Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	text := alice.enqueue(bob, string(bytes))
	bob.sync()
	discardAs(t, bob, alice, text)
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, text); err != nil || s.Content != wire.ContentText || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/1's record of the text: %+v, %v; want a discarded text", s, err)
	}
	f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd1}, Sender: alice.addr.String(), Message: text,
		Outcome: wire.DecisionCommitted, Content: wire.ContentReaction, Body: bytes})
	if err != nil {
		t.Fatal(err)
	}
	bob2.raw(bob, f)
	res := bob.sync()
	heard := false
	for _, r := range res {
		heard = heard || r.Kind == engine.ResultDecisionHeard && r.ID == (wire.LogicalID{0xd1}) &&
			errors.Is(r.Err, engine.ErrDecisionKindMismatch) && errors.Is(r.Err, engine.ErrDecisionMismatch)
		if r.TakenBack {
			t.Errorf("bob/1 took back %+v", r.Decided)
		}
	}
	if !heard {
		t.Errorf("the relabelled text's decision was not heard as a kind mismatch: %+v", res)
	}
	if s, err := bob.st.Seen(w.ctx, bob2.addr, wire.LogicalID{0xd1}); err != nil || !s.Finalized {
		t.Errorf("bob/1's record of the decision: %+v, %v; want it finalized (acknowledged)", s, err)
	}
	if got := reactionsOf(bob.entry(alice, m1)); len(got) != 0 {
		t.Errorf("bob/1 shows reactions %q on m1, want none", got)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, text); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Errorf("bob/1's record of the text: %+v, %v; want it still discarded", s, err)
	}
}

// TestActionDecisionWindowFromArrival: alice's edit of m1 reaches both of
// bob's devices in its window; the person leaves it pending on bob/1 for
// longer than ActionWindow and then discards it, while bob/2 commits it.
// bob/1 judges the edit's window from its arrival, which its record keeps
// (migration 0028), not from its discard: the decision takes it back and
// applies it, as bob/2 did.
func TestActionDecisionWindowFromArrival(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, m1, _ := actionBob(t)
	edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m1, Text: []byte("lunch at one")})
	bob.sync()
	bob2.sync()
	w.clock.Advance(engine.ActionWindow + time.Hour)
	discardAs(t, bob, alice, edit)
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := bob2.commitAll(); n != 1 {
		t.Fatalf("bob/2 committed %d actions, want 1", n)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	settleSiblings(t, bob, bob2)
	for _, d := range []*device{bob, bob2} {
		if e := d.entry(alice, m1); string(e.Body) != "lunch at one" || e.Edits != 1 {
			t.Errorf("%s shows m1 as %q, edit %d; want the edit applied", d.addr, e.Body, e.Edits)
		}
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Errorf("bob/1's record of the edit: %+v, %v; want it taken back", s, err)
	}
}

// TestActionDecisionBeforeItsTargetsTakeBack: bob/1 discards alice's x,
// and its hold pass then discards her edit of x (target_discarded); bob/2
// commits both. bob/1 hears the edit's decision (kind 18) in one batch,
// before the decision that takes x back (kind 16) in a later one: the
// edit's decision is kept with its action (migration 0028), and x's
// take-back takes the edit back and applies it in the same transaction,
// so bob/1 ends as bob/2 does. The kept decision is forgotten. The same
// holds when both decisions come in one batch, the edit's first.
func TestActionDecisionBeforeItsTargetsTakeBack(t *testing.T) {
	oneGoroutine(t)
	for _, oneBatch := range []bool{false, true} {
		name := "two batches"
		if oneBatch {
			name = "one batch"
		}
		t.Run(name, func(t *testing.T) { actionDecisionBeforeItsTarget(t, oneBatch) })
	}
}

func actionDecisionBeforeItsTarget(t *testing.T, oneBatch bool) {
	w, alice, bob, bob2, _, _ := actionBob(t)
	x := alice.enqueue(bob, "the plan")
	bob.sync()
	bob2.sync()
	discardAs(t, bob, alice, x)
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.net.Hold(bob.addr)
	w.net.Hold(bob2.addr)
	edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("the new plan")})
	w.net.Release(bob.addr)
	w.net.Release(bob2.addr)
	bob.sync()
	bob2.sync()
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/1's record of the edit: %+v, %v; want discarded, target_discarded", s, err)
	}
	m, err := bob2.st.Inbound(w.ctx, alice.addr, edit)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []wire.Decision{
		{ID: wire.LogicalID{0xd2}, Sender: alice.addr.String(), Message: edit, Outcome: wire.DecisionCommitted, Content: wire.ContentEdit, Body: m.Body},
		{ID: wire.LogicalID{0xd1}, Sender: alice.addr.String(), Message: x, Outcome: wire.DecisionCommitted, Body: []byte("the plan")},
	} {
		f, err := wire.EncodeDecision(d)
		if err != nil {
			t.Fatalf("decision %d: %v", i, err)
		}
		bob2.raw(bob, f)
		if oneBatch {
			continue
		}
		bob.sync()
		if i == 0 {
			if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeDiscarded {
				t.Fatalf("bob/1's record of the edit before x is taken back: %+v, %v; want it discarded", s, err)
			}
		}
	}
	if oneBatch {
		if n := count(bob.sync(), engine.ResultDecisionHeard); n != 2 {
			t.Fatalf("bob/1 heard %d decisions in its sync, want the 2 in one", n)
		}
	}
	if e := bob.entry(alice, x); string(e.Body) != "the new plan" || e.Edits != 1 {
		t.Errorf("bob/1 shows x as %q, edit %d; want it taken back, edited", e.Body, e.Edits)
	}
	if s, err := bob.st.Seen(w.ctx, alice.addr, edit); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Errorf("bob/1's record of the edit: %+v, %v; want it taken back", s, err)
	}
	if kept, err := bob.st.KeptActions(w.ctx, alice.addr, x); err != nil || len(kept) != 0 {
		t.Errorf("bob/1 still keeps %+v, %v; want the applied decision forgotten", kept, err)
	}
}
