package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// holdInWorld makes dev hold list as its account's, as a link package
// leaves a new device: its frames to the account's other devices come from
// a device of the account it holds, and theirs to it.
func holdInWorld(t *testing.T, dev *device, list wire.DeviceList) {
	t.Helper()
	a, err := engine.LoadAccount(dev.w.ctx, dev.st)
	if err != nil {
		t.Fatal(err)
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		t.Fatal(err)
	}
	to, err := wire.EncodeDeviceList(list)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.st.Apply(dev.w.ctx, engine.UpdateDeviceList{From: from, List: to}); err != nil {
		t.Fatal(err)
	}
}

// twoDeviceBob is alice/1 and bob, a person of bob/1 and bob/2, with
// alice holding bob's list and bob's two devices with a session each way
// settled: a first message committed on both (each device tells the
// other, their first sessions collide, and retries settle it as for any
// pair), so that what a test sends between them next goes at once.
func twoDeviceBob(t *testing.T) (w *world, alice, bob, bob2 *device) {
	return twoDeviceBobIn(t, newWorld(t))
}

// twoDeviceBobIn is twoDeviceBob in w (made with newWorld, set up before
// its devices open).
func twoDeviceBobIn(t *testing.T, w *world) (_ *world, alice, bob, bob2 *device) {
	alice, bob, bob2 = w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	holdInWorld(t, bob2, linkInWorld(t, bob, bob2))
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	alice.enqueue(bob, "first")
	bob.sync()
	bob2.sync()
	bob.commitAll()
	bob2.commitAll()
	for round := 0; ; round++ {
		bob.sync()
		bob2.sync()
		if bob.pendingOut() == 0 && bob2.pendingOut() == 0 {
			break
		}
		if round == 8 {
			t.Fatalf("bob's devices still have lanes to each other after 8 rounds")
		}
		bob.retry(bob2)
		bob2.retry(bob)
	}
	alice.sync()
	return w, alice, bob, bob2
}

// inHistory returns how many times d's history with peer holds body, and
// the entry of the last.
func inHistory(t *testing.T, d, peer *device, body string) (int, engine.HistoryEntry) {
	t.Helper()
	h, err := d.c.History(d.w.ctx, peer.addr, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	n, last := 0, engine.HistoryEntry{}
	for _, e := range h {
		if string(e.Body) == body {
			n, last = n+1, e
		}
	}
	return n, last
}

// TestDecisionTakesBackADiscard: bob discards alice's message on bob/2
// while bob/1 commits it. bob/1's decision carries the body (frame kind
// 16), and bob/2 takes the message back into its history, decided on
// bob/1 (commit beats discard), once: the decision heard again changes
// nothing. A decision from bob/1 whose body is not the one bob/2
// discarded takes nothing back, nor does one from a device not of bob's
// account, nor one for a message bob/2 still holds pending.
func TestDecisionTakesBackADiscard(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "keep me")
	forgedID := alice.enqueue(bob, "the real text")
	pendingID := alice.enqueue(bob, "still pending on bob/2")
	bob.sync()
	bob2.sync()
	for _, m := range []wire.LogicalID{id, forgedID} {
		if _, err := bob2.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	res := bob2.sync()
	taken := 0
	for _, r := range res {
		if r.Kind == engine.ResultDecisionHeard && r.TakenBack {
			taken++
			if r.Decided == nil || r.Decided.ID != id || r.Decided.Sender != alice.addr {
				t.Errorf("taken back: %+v, want alice's message %x", r.Decided, id[:4])
			}
		}
	}
	if taken != 1 {
		t.Fatalf("bob/2 took back %d messages, want 1: %+v", taken, res)
	}
	n, e := inHistory(t, bob2, alice, "keep me")
	if n != 1 || e.ID != id || e.DecidedOn == nil || *e.DecidedOn != bob.addr {
		t.Fatalf("bob/2's history holds %q %d times (%+v), want once, decided on bob/1", "keep me", n, e)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the message: %+v, %v; want finalized committed", s, err)
	}

	// bob/1 (an own device, but wrong) claims a commit of the other
	// discarded message with another text, of the pending one, and says
	// the first again; bob/9 (not bob's) claims a commit too.
	frame := func(n byte, msg wire.LogicalID, body string) []byte {
		f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd0, n}, Sender: alice.addr.String(), Message: msg,
			Outcome: wire.DecisionCommitted, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	bob.raw(bob2, frame(1, forgedID, "not what alice wrote"))
	bob.raw(bob2, frame(2, id, "keep me"))
	bob.raw(bob2, frame(3, pendingID, "still pending on bob/2"))
	mallory := w.device("bob/9")
	mallory.raw(bob2, frame(4, forgedID, "the real text"))
	res = bob2.sync()
	for _, r := range res {
		if r.TakenBack {
			t.Errorf("bob/2 took back %+v", r.Decided)
		}
	}
	if !hasError(res, engine.ErrNotOwnDevice) {
		t.Errorf("bob/9's decision was not refused as from a device not of bob's: %+v", res)
	}
	for body, want := range map[string]int{"keep me": 1, "not what alice wrote": 0, "the real text": 0} {
		if n, _ := inHistory(t, bob2, alice, body); n != want {
			t.Errorf("bob/2's history holds %q %d times, want %d", body, n, want)
		}
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, forgedID); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Errorf("the message whose decision carried another text: %+v, %v; want still discarded", s, err)
	}
	// The pending message's decision is kept and finalizes it, with the
	// copy bob/2 holds.
	if n, _ := inHistory(t, bob2, alice, "still pending on bob/2"); n != 1 {
		t.Errorf("bob/2's pending message after bob/1's commit: in its history %d times, want once", n)
	}
}

// TestDecidedElsewhereDelivery: bob commits alice's message on bob/1
// before bob/2 heard of it; bob/2 receives the message and the decision
// in one page, and its delivery says it was decided elsewhere (no bell)
// before the decision finalizes it.
func TestDecidedElsewhereDelivery(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "decided before it came")
	bob.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	var delivered, decided *engine.ReceiveResult
	res := bob2.sync()
	for i, r := range res {
		switch {
		case r.Kind == engine.ResultDelivery && r.ID == id:
			delivered = &res[i]
		case r.Kind == engine.ResultDecided && r.ID == id:
			decided = &res[i]
		case r.Kind == engine.ResultDelivery && string(r.Body) == "first":
			t.Errorf("bob/2 got the first message again")
		}
	}
	if delivered == nil || !delivered.DecidedElsewhere || decided == nil {
		t.Fatalf("bob/2's sync: delivery %+v, decided %+v; want the delivery marked decided elsewhere, then the decision", delivered, decided)
	}
	for _, err := range errorsIn(res) {
		if !errors.Is(err, engine.ErrNotOwnDevice) {
			t.Errorf("bob/2's sync: %v", err)
		}
	}
}

// TestArrivalCommitTellsTheSiblings: bob/1 commits on arrival (the
// loop's policy, which commits in the receive's own transaction); bob/2
// is told as for a Commit, and ends with alice's message committed,
// decided on bob/1, in its history once, and nothing pending: it is never
// asked about it.
func TestArrivalCommitTellsTheSiblings(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	bob.sync() // the switch's pass over what is pending: nothing
	id := alice.enqueue(bob, "committed as it came")
	res, err := bob.c.Sync(w.ctx)
	if err != nil || res.Committed != 1 {
		t.Fatalf("bob/1's round: %d committed, %v; want alice's message committed on arrival", res.Committed, err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	bob2.sync()
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 holds %d messages pending, want none (bob/1 decided)", n)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the message: %+v, %v; want finalized committed", s, err)
	}
	n, e := inHistory(t, bob2, alice, "committed as it came")
	if n != 1 || e.ID != id || e.DecidedOn == nil || *e.DecidedOn != bob.addr {
		t.Fatalf("bob/2's history holds the message %d times (%+v), want once, decided on bob/1", n, e)
	}
}

// TestCatchUpTellsASiblingLinkedSince: bob links bob/3 on bob/1 while
// alice's message is on its way; alice's lane to bob/3 is added. bob
// commits it on bob/2, whose list does not name bob/3 yet (so the commit
// tells bob/1 alone), and discards it on bob/3. When bob/2 adopts the list
// naming bob/3, the same transaction stores a decision lane to bob/3 for
// the commit made since bob/3's linking: bob/3 takes the message back
// (commit beats discard), decided on bob/2. Without the catch-up the
// discard on bob/3 stands.
func TestCatchUpTellsASiblingLinkedSince(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "on its way while bob links")
	bob3 := w.linkDevice(bob)
	alice.reopen() // a new connection fetches bob's list again
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/3 discards alice's message: %v (did it come?)", err)
	}
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/3's record before the catch-up: %+v, %v; want discarded", s, err)
	}
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	// bob/2 and bob/3 start their first sessions both ways at once (bob/3
	// told bob/2 of its discard): they collide, and retries settle it as
	// for any pair.
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
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/3's record after bob/2's catch-up: %+v, %v; want committed (bob/2 committed it)", s, err)
	}
	n, e := inHistory(t, bob3, alice, "on its way while bob links")
	if n != 1 || e.DecidedOn == nil || *e.DecidedOn != bob2.addr {
		t.Fatalf("bob/3's history holds the message %d times (%+v), want once, decided on bob/2", n, e)
	}
	// Adopting the same list again tells nothing more.
	before := bob2.pendingOut()
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatal(err)
	}
	if after := bob2.pendingOut(); after != before {
		t.Fatalf("bob/2 stored %d lanes more on a second publish, want none", after-before)
	}
}

// TestHoldDiscardTellsNoSibling: alice sends bob/1 one reaction more than
// its hold keeps, all to messages that never came; bob/1's hold pass
// discards the oldest (hold full), which rests on bob/1's own state, not
// on bob's choice: it stores no decision lane to bob/2. bob's own discard
// of a held reaction still does (one lane to bob/2).
func TestHoldDiscardTellsNoSibling(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, _ := twoDeviceBob(t)
	var ids []wire.LogicalID
	for i := range engine.MaxHeldActionsPerSender + 1 {
		body, _ := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: wire.LogicalID{0xaa, byte(i)}, Emoji: thumbs})
		id := wire.LogicalID{0xbb, byte(i)}
		frame, _ := wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: wire.ContentReaction, Body: body})
		if err := alice.c.SendRawFrame(w.ctx, bob.addr, frame); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if got := kinds(bob.sync()); !slices.Contains(got, "action_discarded hold_full") {
		t.Fatalf("bob/1's round: %v, want one discarded as hold_full", got)
	}
	if n := bob.pendingOut(); n != 0 {
		t.Fatalf("bob/1 holds %d lanes after its hold pass's discard, want none (bob did not decide)", n)
	}
	if _, err := bob.c.Discard(w.ctx, alice.addr, ids[len(ids)-1], engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	if n := bob.pendingOut(); n != 1 {
		t.Fatalf("bob/1 holds %d lanes after bob's discard, want one (to bob/2)", n)
	}
}

// TestTakenBackOnlyWhenTakenBack: bob/2 discards alice's message under
// the policy (not bob's rejection); bob/1 commits it, with its body. The
// store leaves such a discard as it is (only the person's rejections are
// taken back), and the decision heard says so: no take-back reported,
// nothing in bob/2's history. Before the change the engine reported a
// take-back the store did not do.
func TestTakenBackOnlyWhenTakenBack(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "discarded by policy")
	bob.sync()
	bob2.sync()
	if _, err := bob2.c.Discard(w.ctx, alice.addr, id, engine.DiscardPolicy); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	heard := 0
	for _, r := range bob2.sync() {
		if r.Kind == engine.ResultDecisionHeard {
			heard++
			if r.TakenBack {
				t.Errorf("bob/2 reports taking back %+v", r.Decided)
			}
		}
	}
	if heard != 1 {
		t.Fatalf("bob/2 heard %d decisions, want bob/1's commit", heard)
	}
	if n, _ := inHistory(t, bob2, alice, "discarded by policy"); n != 0 {
		t.Fatalf("bob/2's history holds the policy's discard %d times, want none", n)
	}
}

// TestCatchUpTellsNoEngineDiscard: bob/3 is linked on bob/1 while bob/2
// holds the list from before. alice sends bob/2 one reaction more than its
// hold keeps, all to messages that never came; bob/2's hold pass discards
// the oldest (hold full), and bob discards the newest himself. When bob/2
// adopts the list naming bob/3, its catch-up tells bob/3 of bob's discard
// alone: the hold's discard rests on bob/2's state, not on bob's choice,
// as on the live path (TestHoldDiscardTellsNoSibling). Before the fix the
// catch-up told both.
func TestCatchUpTellsNoEngineDiscard(t *testing.T) {
	w, alice, bob, bob2 := twoDeviceBob(t)
	w.clock.Advance(time.Minute) // the decisions before the link are not caught up
	bob3 := w.linkDevice(bob)
	var ids []wire.LogicalID
	for i := range engine.MaxHeldActionsPerSender + 1 {
		body, _ := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: wire.LogicalID{0xaa, byte(i)}, Emoji: thumbs})
		id := wire.LogicalID{0xbc, byte(i)}
		frame, _ := wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: wire.ContentReaction, Body: body})
		if err := alice.c.SendRawFrame(w.ctx, bob2.addr, frame); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if got := kinds(bob2.sync()); !slices.Contains(got, "action_discarded hold_full") {
		t.Fatalf("bob/2's round: %v, want one discarded as hold_full", got)
	}
	if _, err := bob2.c.Discard(w.ctx, alice.addr, ids[len(ids)-1], engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	before := bob2.pendingOut() // bob's discard told to bob/1
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming %s: %v", bob3.addr, err)
	}
	if n := bob2.pendingOut() - before; n != 1 {
		t.Fatalf("bob/2's catch-up of %s stored %d decision lanes, want 1 (bob's discard, not the hold's)", bob3.addr, n)
	}
}

// TestRefusedCommitTellsTheChoice: bob commits on bob/1 a reaction of
// alice's whose target alice deleted (bob committed the delete first);
// bob/1's rules turn the commit into a discard (target_deleted), which
// rests on bob/1's state. bob/2 is told what bob chose, a commit (told a
// discard before, and nothing for a while, which made bob/2 ask bob
// again), and judges the reaction by its own rules when it comes.
func TestRefusedCommitTellsTheChoice(t *testing.T) {
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "soon gone")
	bob.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	del, err := alice.c.Act(w.ctx, engine.ActionRequest{Peer: bob.addr, Content: wire.ContentDelete, Target: id})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: id, Emoji: thumbs})
	react := wire.LogicalID{0xcd, 1}
	frame, _ := wire.EncodeContentMessage(wire.ContentMessage{ID: react, Content: wire.ContentReaction, Body: body})
	if err := alice.c.SendRawFrame(w.ctx, bob.addr, frame); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, del); err != nil {
		t.Fatal(err)
	}
	before := bob.pendingOut()
	res, err := bob.c.FinalizeBatch(w.ctx, []engine.FinalizeRequest{{Sender: alice.addr, ID: react, Outcome: engine.OutcomeCommitted}})
	if err != nil || len(res) != 1 || res[0].Err != nil || res[0].Discarded != engine.DiscardTargetDeleted {
		t.Fatalf("bob commits the reaction to a deleted message: %+v, %v; want discarded target_deleted", res, err)
	}
	if n := bob.pendingOut() - before; n != 1 {
		t.Fatalf("bob/1 stored %d decision lanes for bob's commit the rules made a discard, want 1 (to bob/2)", n)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	// The raw reaction went to bob/1 alone: bob/2 keeps the decision
	// for it, a commit, which its own rules judge when it comes.
	kept, err := bob2.st.KeptDecisions(w.ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var told []engine.KeptDecision
	for _, k := range kept {
		if k.ID == react {
			told = append(told, k)
		}
	}
	if len(told) != 1 || told[0].Outcome != engine.OutcomeCommitted || told[0].On != bob.addr {
		t.Fatalf("bob/2 keeps %+v for the reaction, want one commit on %s (bob's choice)", told, bob.addr)
	}
}

// TestCatchUpCarriesAnAction is TestCatchUpTellsASiblingLinkedSince for
// alice's reply: bob/2 commits it, bob/3 (linked since) discards it. The
// finalized record keeps the committed reply's action body (migration
// 0028), so bob/2's catch-up carries the action (frame kind 18) and bob/3
// takes its discard back and shows the reply, decided on bob/2.
func TestCatchUpCarriesAnAction(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	m := alice.enqueue(bob, "lunch?")
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
	id := alice.act(bob, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("at noon")})
	bob2.sync()
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		s, serr := bob3.st.Seen(w.ctx, alice.addr, id)
		t.Fatalf("bob/3 discards alice's reply: %v (did it come? %+v %v)", err, s, serr)
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
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/3's record after bob/2's catch-up: %+v, %v; want committed (bob/2 committed it)", s, err)
	}
	n, e := inHistory(t, bob3, alice, "at noon")
	if n != 1 || e.DecidedOn == nil || *e.DecidedOn != bob2.addr {
		t.Fatalf("bob/3's history holds the reply %d times (%+v), want once, decided on bob/2", n, e)
	}
}
