package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingDecisionOnAnOwnCopyIsRefused: a hostile or buggy bob/1 sends
// bob/2 a sent copy of a reaction to alice's message (pending on bob/2,
// so the copy waits for it) and then a decision discarding that copy. No
// device tells a decision on its own account's messages: bob/2
// acknowledges it, keeps nothing and says why (ErrDecisionOwnMessage);
// the copy stays the hold's and is committed once its target is. Before
// the fix the decision was kept and discarded the copy (reported as
// decided), so bob's reaction never showed on bob/2.
func TestSiblingDecisionOnAnOwnCopyIsRefused(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	m := alice.enqueue(bob, "lunch?")
	bob2.sync()
	copyID := wire.LogicalID{0xc0, 0x01}
	cp, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: copyID, To: alice.addr.String(),
		Action: wire.Action{Content: wire.ContentReaction, Target: m, Emoji: thumbs}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd0, 0x01}, Sender: bob.addr.String(), Message: copyID,
		Outcome: wire.DecisionDiscarded})
	if err != nil {
		t.Fatal(err)
	}
	bob.raw(bob2, cp)
	bob.raw(bob2, dec)
	res := bob2.sync()
	refused := false
	for _, r := range res {
		if r.Kind == engine.ResultDecided && r.ID == copyID {
			t.Fatalf("bob/2 applied bob/1's decision on its own copy: %+v", r)
		}
		refused = refused || r.Kind == engine.ResultDecisionHeard && errors.Is(r.Err, engine.ErrDecisionOwnMessage)
	}
	if !refused {
		t.Fatalf("bob/2's round: %v; want the decision heard and refused with %v", kinds(res), engine.ErrDecisionOwnMessage)
	}
	if n := bob2.pendingFrom(bob); n != 1 {
		t.Fatalf("bob/2 holds %d of bob/1's copies, want the one waiting for its target", n)
	}
	if _, err := bob2.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	// Its result names the conversation, for a view of it to read it
	// again (as the TUI's timeline does).
	applied := false
	for _, r := range bob2.sync() {
		applied = applied || r.Kind == engine.ResultApplied && r.ID == copyID && r.CopyTo != nil && *r.CopyTo == alice.addr
	}
	if !applied {
		t.Fatalf("bob/2 reported no applied copy naming alice's conversation")
	}
	if got, want := reactionsOf(bob2.entry(alice, m)), []string{"bob/1 " + thumbs}; !slices.Equal(got, want) {
		t.Fatalf("bob/2's entry of alice's message shows reactions %v, want %v", got, want)
	}
	// The decision heard again is acknowledged again and kept no more.
	bob.raw(bob2, dec)
	for _, r := range bob2.sync() {
		if r.Kind == engine.ResultDecided {
			t.Fatalf("bob/2 applied a decision after the repeat: %+v", r)
		}
	}
}

// TestRefusedKeptDecisionLeavesTheRest: bob/1 discards one of alice's
// messages and commits the other; bob/2 holds both pending and applies
// both decisions in one pass, whose commit's plan the store refuses
// (injected ErrConflict where the entry is named decided on bob/1). The
// discard applies all the same, the commit is reported refused
// (ErrKeptDecisionRefused) and leaves its message pending, and the round
// ends without an error. Before the fix the refused plan failed the
// pass's one transaction: neither applied, and every round that found the
// decisions due failed with a SyncError.
func TestRefusedKeptDecisionLeavesTheRest(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	dropped := alice.enqueue(bob, "never mind")
	kept := alice.enqueue(bob, "see you at noon")
	bob.sync()
	bob2.sync()
	if _, err := bob.c.Discard(w.ctx, alice.addr, dropped, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.fp.Store(func(p string) error {
		if strings.Contains(p, "/stmt-history-decided-") {
			return fmt.Errorf("refused here: %w", engine.ErrConflict)
		}
		return nil
	})
	out, err := bob2.c.Sync(w.ctx)
	bob2.fp.Store(nil)
	if err != nil {
		t.Fatalf("bob/2's round: %v; want none (one refused decision stops no other)", err)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, dropped); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/2's record of the discarded message: %+v, %v; want finalized discarded", s, err)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, kept); err != nil || !s.Pending {
		t.Fatalf("bob/2's record of the refused commit's message: %+v, %v; want still pending", s, err)
	}
	refused := false
	for _, r := range out.Received {
		refused = refused || r.Kind == engine.ResultError && r.ID == kept && errors.Is(r.Err, engine.ErrKeptDecisionRefused)
	}
	if !refused {
		t.Fatalf("bob/2's round: %v; want the commit reported refused (%v)", kinds(out.Received), engine.ErrKeptDecisionRefused)
	}
}

// refuseDecidedPlans makes d's store refuse every plan that names an
// entry decided on another device (as TestRefusedKeptDecisionLeavesTheRest
// does), with err, and counts the attempts.
func refuseDecidedPlans(d *device, err error) *int {
	n := new(int)
	d.fp.Store(func(p string) error {
		if strings.Contains(p, "/stmt-history-decided-") {
			*n++
			return fmt.Errorf("refused here: %w", err)
		}
		return nil
	})
	return n
}

// TestRefusedKeptDecisionIsReportedOnce: bob/1's commit of alice's
// message, kept on bob/2, is refused by bob/2's store (ErrKeptDecisionRefused,
// reported); the next round that delivers (so the kept decisions are due
// again) neither tries it again nor reports it again, while the store
// would still refuse it. Before the fix every such round failed a batch,
// ran it again one transaction at a time and reported the same error.
func TestRefusedKeptDecisionIsReportedOnce(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	kept := alice.enqueue(bob, "see you at noon")
	bob.sync()
	bob2.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	tries := refuseDecidedPlans(bob2, engine.ErrConflict)
	defer bob2.fp.Store(nil)
	reports := func(res []engine.ReceiveResult) int {
		n := 0
		for _, r := range res {
			if r.ID == kept && errors.Is(r.Err, engine.ErrKeptDecisionRefused) {
				n++
			}
		}
		return n
	}
	out, err := bob2.c.Sync(w.ctx)
	if err != nil || reports(out.Received) != 1 || *tries == 0 {
		t.Fatalf("bob/2's first round: %v, %v (%d tries); want the commit reported refused once", kinds(out.Received), err, *tries)
	}
	*tries = 0
	later := alice.enqueue(bob, "or dinner?")
	out, err = bob2.c.Sync(w.ctx)
	delivered := false
	for _, r := range out.Received {
		delivered = delivered || r.Kind == engine.ResultDelivery && r.ID == later
	}
	if err != nil || !delivered {
		t.Fatalf("bob/2's second round: %v, %v; want alice's next message delivered", kinds(out.Received), err)
	}
	if n := reports(out.Received); n != 0 || *tries != 0 {
		t.Fatalf("bob/2's second round reported the refused decision %d times and tried it %d times; want neither", n, *tries)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, kept); err != nil || !s.Pending {
		t.Fatalf("bob/2's record of the refused commit's message: %+v, %v; want still pending", s, err)
	}
}

// TestKeptDecisionOnAFinalizedMessageIsNoRefusal: a kept decision whose
// plan the store refuses because the message is no longer pending
// (ErrNotPending: the person finalized it meanwhile, a benign race) is
// not reported as kept_decision_refused, and the round ends clean. Before
// the fix it was reported as a refused decision.
func TestKeptDecisionOnAFinalizedMessageIsNoRefusal(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	kept := alice.enqueue(bob, "see you at noon")
	bob.sync()
	bob2.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	tries := refuseDecidedPlans(bob2, engine.ErrNotPending)
	out, err := bob2.c.Sync(w.ctx)
	bob2.fp.Store(nil)
	if err != nil || *tries == 0 {
		t.Fatalf("bob/2's round: %v (%d tries); want none, the decision tried", err, *tries)
	}
	for _, r := range out.Received {
		if errors.Is(r.Err, engine.ErrKeptDecisionRefused) {
			t.Fatalf("bob/2 reported %v: %v; a message finalized meanwhile is no refusal", r.Kind, r.Err)
		}
	}
}

// TestKeptDecisionOnAWaitingCopyDiscardsNothing: bob/2 holds bob/1's sent
// copy of a reaction waiting for its target and a kept decision
// discarding that copy (one only a hostile or buggy sibling sends, kept
// before such decisions were refused on hearing: written into the store
// here). The pass of the kept decisions refuses it (ErrHeldCopy):
// nothing is discarded or reported decided, and once the target is
// committed the hold's pass commits the copy, whose reaction shows.
func TestKeptDecisionOnAWaitingCopyDiscardsNothing(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	m := alice.enqueue(bob, "lunch?")
	bob2.sync()
	copyID := wire.LogicalID{0xc0, 0x03}
	cp, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: copyID, To: alice.addr.String(),
		Action: wire.Action{Content: wire.ContentReaction, Target: m, Emoji: thumbs}})
	if err != nil {
		t.Fatal(err)
	}
	bob.raw(bob2, cp)
	bob2.sync()
	if n := bob2.pendingFrom(bob); n != 1 {
		t.Fatalf("bob/2 holds %d of bob/1's copies, want the one waiting for its target", n)
	}
	bob2.execSQL(fmt.Sprintf("INSERT INTO kept_decision (sender, id, outcome, on_device, at) VALUES ('%s', x'%x', 2, '%s', %d)",
		bob.addr, copyID[:], bob.addr, w.clock.Now().UnixNano()))
	for _, r := range bob2.sync() {
		if r.ID == copyID && (r.Kind == engine.ResultDecided || r.Kind == engine.ResultActionDiscarded) {
			t.Fatalf("bob/2 applied the kept decision to the waiting copy: %+v", r)
		}
	}
	if n := bob2.pendingFrom(bob); n != 1 {
		t.Fatalf("bob/2 holds %d of bob/1's copies after the kept decision's pass, want the waiting one", n)
	}
	if _, err := bob2.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if got, want := reactionsOf(bob2.entry(alice, m)), []string{"bob/1 " + thumbs}; !slices.Equal(got, want) {
		t.Fatalf("bob/2's entry of alice's message shows reactions %v, want %v", got, want)
	}
}
