package engine_test

import (
	"fmt"
	"slices"
	"strings"
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
// bob/2's clock runs skew from the others'. committed says whether a
// device holds the message committed.
func discardLearnedLate(t *testing.T, w *world, alice, bob, bob2 *device, id wire.LogicalID, skew time.Duration, committed func(*device) bool) {
	t.Helper()
	if skew != 0 {
		bob2.skew = skew
		bob2.reopen()
	}
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
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/3 after bob/1's discard: %+v, %v; want discarded", s, err)
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

// TestDiscardHeardBeforeTheListIsCaughtUp: discardLearnedLate for a
// one-to-one text, a group text and a group reaction, with bob/2's clock
// right and ten minutes behind. bob/2 hears bob/1's discard against its
// commit while its list does not name bob/3 (linked since by bob/1,
// which told bob/3 its discard), so it answers no one (it told bob/1 its
// commit, which takes the discard back there and tells no one); bob/3
// holds the discard until bob/2 adopts the list naming it, whose
// catch-up must tell it the commit. With bob/2's clock right, the
// catch-up told it already (bob/2's lane to bob/1 ended after bob/3's
// linking time); ten minutes behind, bob/2's commit and its lane's end
// both fall before the linking time bob/1 stamped, and the catch-up
// left it out: bob/3 held bob/1's discard against bob's commit for good.
// bob/2 now marks the commit contradicted when it hears the discard
// (migration 0032), and the catch-up tells a contradicted commit
// whatever its times.
func TestDiscardHeardBeforeTheListIsCaughtUp(t *testing.T) {
	oneGoroutine(t)
	for _, skew := range []time.Duration{0, -10 * time.Minute} {
		t.Run(fmt.Sprintf("one to one, skew %v", skew), func(t *testing.T) {
			w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
			id := alice.enqueue(bob, "committed on bob/2")
			bob.sync()
			bob2.sync()
			discardLearnedLate(t, w, alice, bob, bob2, id, skew, func(d *device) bool {
				s, err := d.st.Seen(w.ctx, alice.addr, id)
				n, _ := inHistory(t, d, alice, "committed on bob/2")
				return err == nil && s.Finalized && s.Outcome == engine.OutcomeCommitted && n == 1
			})
		})
		t.Run(fmt.Sprintf("group text, skew %v", skew), func(t *testing.T) {
			w, alice, bob, bob2, g, id := groupTwoDeviceBobIn(t, blobWorld(t), "committed on bob/2", false)
			discardLearnedLate(t, w, alice, bob, bob2, id, skew, func(d *device) bool {
				s, err := d.st.Seen(w.ctx, alice.addr, id)
				_, in := decidedOnOf(t, d, g, id)
				return err == nil && s.Finalized && s.Outcome == engine.OutcomeCommitted && in
			})
		})
		t.Run(fmt.Sprintf("group reaction, skew %v", skew), func(t *testing.T) {
			w, alice, bob, bob2, g, m, r := groupActionBobIn(t, blobWorld(t))
			want := []string{alice.addr.String() + " " + thumbs}
			discardLearnedLate(t, w, alice, bob, bob2, r, skew, func(d *device) bool {
				s, err := d.st.Seen(w.ctx, alice.addr, r)
				return err == nil && s.Finalized && s.Outcome == engine.OutcomeCommitted &&
					slices.Equal(groupReactionsOf(d.groupEntry(g, m)), want)
			})
		})
	}
}

// TestDiscardOfASiblingLinkedSinceIsCaughtUp: the discarding sibling is
// not the linker. bob/1 links bob/3, which bob/2 learns; alice's message
// is pending on all three; bob commits it on bob/2 (its clock ten minutes
// behind), whose decision the relay keeps back from bob/1 and bob/3;
// bob/1 links bob/4 (its archive carries the message pending), bob/3
// learns the list naming it before bob/2 does and discards the message,
// telling bob/1, bob/2 and bob/4. bob/2's catch-up of bob/4, when it
// learns the list, must tell it the commit.
func TestDiscardOfASiblingLinkedSinceIsCaughtUp(t *testing.T) {
	oneGoroutine(t)
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
	bob2.skew = -10 * time.Minute
	bob2.reopen()
	bob3, _ := w.linkWithHistory(bob, all, all)
	if err := bob3.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	alice.enqueue(bob, "first of three")
	settle(t, 8, alice, bob, bob2, bob3)
	settleDevices(t, bob, bob2, bob3)
	id := alice.enqueue(bob, "committed on bob/2")
	for _, d := range []*device{bob, bob2, bob3} {
		d.sync()
	}
	w.net.Hold(bob.addr)
	w.net.Hold(bob3.addr)
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	bob4, archived := w.linkWithHistory(bob, all, all)
	if !archived {
		t.Fatal("the link carried no archive")
	}
	if err := bob4.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if err := bob3.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/3 discards the message: %v", err)
	}
	if _, err := bob3.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob4.sync()
	if s, err := bob4.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/4 after bob/3's discard: %+v, %v; want discarded", s, err)
	}
	bob2.sync() // hears bob/3's discard; its list does not name bob/4
	w.net.Release(bob.addr)
	w.net.Release(bob3.addr)
	settleDevices(t, bob, bob2, bob3)
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/4: %v", err)
	}
	settleDevices(t, bob, bob2, bob3, bob4)
	for _, d := range []*device{bob, bob2, bob3, bob4} {
		if s, err := d.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
			t.Errorf("%s's record: %+v, %v; want committed (bob committed it on bob/2)", d.addr, s, err)
		}
	}
}

// TestDiscardKeptWhilePendingIsCaughtUp: the sibling's discard comes to
// bob/2 while the message is still pending there, and the person commits
// it on bob/2 before the kept discard applies. alice's message id is
// pending on bob/1 and bob/2 (bob/2's clock ten minutes behind); bob/1
// links bob/3 (its archive carries the message pending) and bob discards
// it there on bob/1, which tells bob/2 and bob/3. bob/2 keeps the discard
// (the message is pending: DecisionKeep) and its store refuses to apply
// it once; bob then commits on bob/2, which tells bob/1 (its list does
// not name bob/3), and bob/1 takes its discard back. bob/2's catch-up of
// bob/3, when it adopts the list, must tell it the commit. Before the fix
// the commit forgot the kept discard and marked nothing: bob/2's commit
// and its lane's end fall before the linking time bob/1 stamped, the
// catch-up left it out, and bob/3 held the discard for good.
func TestDiscardKeptWhilePendingIsCaughtUp(t *testing.T) {
	oneGoroutine(t)
	for _, skew := range []time.Duration{0, -10 * time.Minute} {
		t.Run(fmt.Sprintf("skew %v", skew), func(t *testing.T) {
			all := engine.HistoryChoice{Mode: engine.HistoryAll}
			w, alice, bob, bob2 := twoDeviceBobWithBlobs(t)
			if skew != 0 {
				bob2.skew = skew
				bob2.reopen()
			}
			id := alice.enqueue(bob, "committed on bob/2")
			bob.sync()
			bob2.sync()
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
			if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeDiscarded {
				t.Fatalf("bob/3 after bob/1's discard: %+v, %v; want discarded", s, err)
			}
			w.net.Hold(bob.addr)
			tries := new(int)
			bob2.fp.Store(func(p string) error {
				if strings.Contains(p, "/stmt-decision-forget-") {
					*tries++
					return fmt.Errorf("refused here: %w", engine.ErrConflict)
				}
				return nil
			})
			_, err := bob2.c.Sync(w.ctx) // keeps bob/1's discard; applying it is refused
			bob2.fp.Store(nil)
			if err != nil || *tries == 0 {
				t.Fatalf("bob/2's round: %v (%d tries); want none, the kept discard tried", err, *tries)
			}
			if s, err := bob2.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Pending {
				t.Fatalf("bob/2's record after bob/1's discard: %+v, %v; want still pending", s, err)
			}
			if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
				t.Fatalf("bob commits on bob/2: %v", err)
			}
			if _, err := bob2.c.Pump(w.ctx); err != nil {
				t.Fatal(err)
			}
			w.net.Release(bob.addr)
			bob.sync()
			bob2.sync()
			if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
				t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
			}
			settleDevices(t, bob, bob2, bob3)
			for _, d := range []*device{bob, bob2, bob3} {
				s, err := d.st.Seen(w.ctx, alice.addr, id)
				n, _ := inHistory(t, d, alice, "committed on bob/2")
				if err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted || n != 1 {
					t.Errorf("%s's record: %+v, %v, %d in history; want committed (bob committed it on bob/2)", d.addr, s, err, n)
				}
			}
		})
	}
}
