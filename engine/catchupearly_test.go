package engine_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// twoDeviceBobWithBlobs is twoDeviceBob over a relay with a blob store,
// so that a link carries its archive.
func twoDeviceBobWithBlobs(t *testing.T) (w *world, alice, bob, bob2 *device) {
	w = newWorld(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	return twoDeviceBobIn(t, w)
}

// settleDevices runs rounds of sync and retry among devs until none has a
// lane pending to another.
func settleDevices(t *testing.T, devs ...*device) {
	t.Helper()
	for round := 0; ; round++ {
		for _, d := range devs {
			d.sync()
		}
		out := 0
		for _, d := range devs {
			out += d.pendingOut()
		}
		if out == 0 {
			return
		}
		if round == 10 {
			t.Fatalf("%d lanes still pending among the devices after 10 rounds", out)
		}
		for _, d := range devs {
			for _, p := range devs {
				if p != d {
					d.retry(p)
				}
			}
		}
	}
}

// TestCatchUpTellsADecisionTheLinkerHadNotHeard: alice's message is
// pending on bob/1 and bob/2; bob commits it on bob/2, whose decision to
// bob/1 the relay keeps back; a minute later bob/1 links bob/3 with all
// its history, so the link's archive carries the message pending, and bob
// discards it on bob/3. bob/2 made its decision before the link, so its
// catch-up of bob/3 used to leave it out, bob/1 (which hears it after the
// archive was cut) tells no sibling a decision it applied from another,
// and bob/3's discard stood against bob's commit for good (the
// people-in-groups adversary's seed 1796650919536685365). bob/2's lane to
// bob/1 was still open at the link, so its catch-up now tells bob/3,
// which takes its discard back, decided on bob/2; both when bob/2 adopts
// the list before bob/1 acknowledges the decision and after.
func TestCatchUpTellsADecisionTheLinkerHadNotHeard(t *testing.T) {
	oneGoroutine(t)
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	for _, ackFirst := range []bool{false, true} {
		w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
		id := alice.enqueue(bob, "committed on bob/2 before the link")
		bob.sync()
		bob2.sync()
		w.net.Hold(bob.addr)
		if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
			t.Fatal(err)
		}
		if _, err := bob2.c.Pump(w.ctx); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Minute)
		bob3, archived := w.linkWithHistory(bob, all, all)
		if !archived {
			t.Fatal("the link carried no archive")
		}
		if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
			t.Fatalf("bob/3 discards the message the archive carried pending: %v", err)
		}
		w.net.Release(bob.addr)
		if ackFirst {
			// bob/1 hears bob/2's commit after its cut and acknowledges
			// it before bob/2 learns of bob/3.
			bob.sync()
			bob2.sync()
			if n := bob2.pendingOut(); n != 0 {
				t.Fatalf("ackFirst: bob/2 has %d lanes pending before it learns of bob/3, want none", n)
			}
		}
		if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
			t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
		}
		settleDevices(t, bob, bob2, bob3)
		s, err := bob3.st.Seen(w.ctx, alice.addr, id)
		if err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
			t.Fatalf("ackFirst %v: bob/3's record: %+v, %v; want committed (bob committed it on bob/2)", ackFirst, s, err)
		}
		n, e := inHistory(t, bob3, alice, "committed on bob/2 before the link")
		if n != 1 || e.DecidedOn == nil || *e.DecidedOn != bob2.addr {
			t.Fatalf("ackFirst %v: bob/3's history holds the message %d times (%+v), want once, decided on bob/2", ackFirst, n, e)
		}
	}
}

// TestCatchUpLeavesOutADecisionHeardBeforeTheLink: bob/2's commit reached
// bob/1, and its acknowledgement bob/2, before bob/1 links bob/3: the
// link's archive carries it, and bob/2's catch-up of bob/3 tells it no
// second time (no lane stored for it).
func TestCatchUpLeavesOutADecisionHeardBeforeTheLink(t *testing.T) {
	oneGoroutine(t)
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
	id := alice.enqueue(bob, "committed on bob/2, heard on bob/1")
	bob.sync()
	bob2.sync()
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	settleDevices(t, bob, bob2)
	w.clock.Advance(time.Minute)
	bob3, _ := w.linkWithHistory(bob, all, all)
	before := bob2.pendingOut()
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
	}
	if after := bob2.pendingOut(); after != before {
		t.Fatalf("bob/2 stored %d catch-up lanes for a decision bob/1 heard before the link, want none", after-before)
	}
	settleDevices(t, bob, bob2, bob3)
	if n, e := inHistory(t, bob3, alice, "committed on bob/2, heard on bob/1"); n != 1 || e.Imported == nil {
		t.Fatalf("bob/3's history holds the message %d times (%+v), want once, from the archive", n, e)
	}
}

// TestCommitAnswersASiblingsDiscard: the relay keeps alice's message to
// bob/1 back (and bob/2's acknowledgement to alice) but hands bob/1
// bob/2's commit of it, which bob/1 keeps (the message is not there) and
// acknowledges; a minute later bob/1 links bob/3, whose archive holds
// neither; alice, the message still pending for her, adds a lane to bob/3
// when she learns of it, and bob discards the message there. No catch-up tells
// bob/3 (bob/2's lane to bob/1 ended before the link; bob/1 applies the
// kept commit once the message comes and tells no one, the commit being
// bob/2's): bob/2 answers bob/3's discard with its commit, and bob/3
// takes the discard back, decided on bob/2.
func TestCommitAnswersASiblingsDiscard(t *testing.T) {
	oneGoroutine(t)
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
	w.net.Hold(bob.addr)
	id := alice.enqueue(bob, "committed on bob/2, kept on bob/1")
	bob2.sync()
	w.net.Hold(alice.addr) // bob/2's ACK too: the message stays pending on alice
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(w.net.Held(bob.addr)); n != 2 {
		t.Fatalf("%d envelopes held for bob/1, want alice's message and bob/2's decision", n)
	}
	w.net.DeliverHeld(bob.addr, 1) // the decision, not the message
	bob.sync()
	bob2.sync()
	if n := bob2.pendingOut(); n != 0 {
		t.Fatalf("bob/2 has %d lanes pending, want its decision acknowledged by bob/1", n)
	}
	w.clock.Advance(time.Minute)
	bob3, _ := w.linkWithHistory(bob, all, all)
	if err := bob3.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	alice.reopen() // a new connection fetches bob's list, naming bob/3
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := lanesOf(t, alice, bob.addr, id); got[bob3.addr.String()] != engine.LanePending {
		t.Fatalf("alice's lanes of her message: %v, want one added to bob/3", got)
	}
	alice.retry(bob3)
	bob3.sync()
	if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/3 discards alice's message (did its lane come?): %v", err)
	}
	w.net.Release(bob.addr)
	w.net.Release(alice.addr)
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatal(err)
	}
	settleDevices(t, bob, bob2, bob3)
	s, err := bob3.st.Seen(w.ctx, alice.addr, id)
	if err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/3's record: %+v, %v; want committed (bob committed it on bob/2)", s, err)
	}
	n, e := inHistory(t, bob3, alice, "committed on bob/2, kept on bob/1")
	if n != 1 || e.DecidedOn == nil || *e.DecidedOn != bob2.addr {
		t.Fatalf("bob/3's history holds the message %d times (%+v), want once, decided on bob/2", n, e)
	}
	if n, _ := inHistory(t, bob, alice, "committed on bob/2, kept on bob/1"); n != 1 {
		t.Fatalf("bob/1's history holds the message %d times, want once", n)
	}
	// bob/2 answered; bob/1, whose commit is bob/2's, did not.
	if told, err := bob2.st.ToldOf(w.ctx, bob3.addr, alice.addr, id); err != nil || !told {
		t.Fatalf("bob/2 told bob/3 of its commit: %v, %v; want its answer", told, err)
	}
	if told, err := bob.st.ToldOf(w.ctx, bob3.addr, alice.addr, id); err != nil || told {
		t.Fatalf("bob/1 told bob/3 of the commit it applied from bob/2: %v, %v; want no answer", told, err)
	}
	// A hostile bob/3 sends its discard again and again under fresh
	// frame IDs: bob/2 told it once, and answers no more.
	for i := range 3 {
		f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xdd, byte(i)}, Sender: alice.addr.String(), Message: id, Outcome: wire.DecisionDiscarded})
		if err != nil {
			t.Fatal(err)
		}
		if err := bob3.c.SendRawFrame(w.ctx, bob2.addr, f); err != nil {
			t.Fatal(err)
		}
	}
	before := bob2.pendingOut()
	bob2.sync()
	if n := bob2.pendingOut() - before; n != 0 {
		t.Fatalf("bob/2 stored %d lanes on three more discards of a message it answered, want none", n)
	}
	if n := lanesTo(t, bob2, bob3); n != 0 {
		t.Fatalf("bob/2 has %d lanes pending to bob/3 after three more discards, want none (answered once)", n)
	}
}

// lanesTo counts d's pending outbound messages to peer.
func lanesTo(t *testing.T, d, peer *device) int {
	t.Helper()
	out, err := d.c.PendingOutbound(d.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range out {
		if m.Recipient == peer.addr {
			n++
		}
	}
	return n
}
