package engine_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// discardLearnedLate runs the case of a sibling's discard heard before
// the list naming the device it told: alice's message id is pending on
// bob/1 and bob/2; bob commits it on bob/2, whose decision the relay
// keeps back from bob/1; bob/1 links bob/3 (its archive carries the
// message pending) and bob discards it there on bob/1, which tells bob/2
// and bob/3. bob/2 hears the discard before it holds the list naming
// bob/3, then bob/1 hears bob/2's commit, and bob/2 adopts the list.
// committed says whether a device holds the message committed.
func discardLearnedLate(t *testing.T, w *world, alice, bob, bob2 *device, id wire.LogicalID, committed func(*device) bool) {
	t.Helper()
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
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
	if err := bob3.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/1 discards the message: %v", err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if committed(bob3) {
		t.Fatal("bob/3 holds the message committed before bob/2 told it anything")
	}
	bob2.sync() // hears bob/1's discard; its list does not name bob/3
	w.net.Release(bob.addr)
	bob.sync()
	bob2.sync()
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
	}
	settleDevices(t, bob, bob2, bob3)
	for _, d := range []*device{bob, bob2, bob3} {
		if !committed(d) {
			t.Errorf("%s does not hold the message committed (bob committed it on bob/2)", d.addr)
		}
	}
}

func TestDiscardHeardBeforeTheListAnswersLater(t *testing.T) {
	oneGoroutine(t)
	t.Run("one to one", func(t *testing.T) {
		w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
		bob2.skew = -10 * time.Minute
		bob2.reopen()
		id := alice.enqueue(bob, "committed on bob/2")
		bob.sync()
		bob2.sync()
		discardLearnedLate(t, w, alice, bob, bob2, id, func(d *device) bool {
			s, err := d.st.Seen(w.ctx, alice.addr, id)
			return err == nil && s.Finalized && s.Outcome == engine.OutcomeCommitted
		})
	})
}
