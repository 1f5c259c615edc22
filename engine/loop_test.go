package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
	"go.uber.org/goleak"
)

// waitEvent reads d's events until match holds, or fails after a while.
func waitEvent(t *testing.T, d *device, what string, match func(engine.Event) bool) engine.Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e := <-d.c.Events():
			if match(e) {
				return e
			}
		case <-timeout:
			t.Fatalf("%s never saw %s", d.addr, what)
		}
	}
}

// runLoop runs d's loop until the test ends, and checks that Close ends it.
func runLoop(t *testing.T, d *device) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.c.Run(context.Background()) }()
	t.Cleanup(func() {
		d.c.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: Run after Close: %v", d.addr, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Close did not end Run", d.addr)
		}
	})
}

// TestSyncRound: one Sync stages what the relay holds, acknowledges exactly
// those leases (the relay holds nothing after it) and processes the rows,
// returning the deliveries.
func TestSyncRound(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	ids := map[wire.LogicalID]bool{}
	for _, body := range []string{"one", "two", "three"} {
		ids[bob.send(alice, body)] = true
	}
	if n := w.net.Pending(alice.addr); n != 3 {
		t.Fatalf("the relay holds %d for alice, want 3", n)
	}
	res, err := alice.c.Sync(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if count(res.Received, engine.ResultDelivery) != 3 {
		t.Fatalf("Sync returned %+v, want three deliveries", res.Received)
	}
	for _, r := range res.Received {
		if !ids[r.ID] {
			t.Fatalf("delivery of %x, which bob did not send", r.ID)
		}
	}
	if n := w.net.Pending(alice.addr); n != 0 {
		t.Fatalf("after Sync the relay still holds %d for alice: leases not acknowledged", n)
	}
	if alice.pendingIn() != 3 || res.Committed != 0 {
		t.Fatalf("manual policy: %d pending, %d committed; want 3 and 0", alice.pendingIn(), res.Committed)
	}
	// A round with nothing new does nothing.
	again, err := alice.c.Sync(w.ctx)
	if err != nil || len(again.Received) != 0 {
		t.Fatalf("a second Sync: %+v, %v", again, err)
	}
}

// TestSyncPagesPastTheRelayPage: more envelopes than one Receive returns
// all arrive in one Sync.
func TestSyncPagesPastTheRelayPage(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	reqs := make([]engine.SendRequest, 600)
	for i := range reqs {
		reqs[i] = engine.SendRequest{Peer: alice.addr, Body: []byte("x")}
	}
	if _, err := bob.c.SendBatch(w.ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if got := alice.sync(); count(got, engine.ResultDelivery) != 600 {
		t.Fatalf("one Sync delivered %d of 600", count(got, engine.ResultDelivery))
	}
}

// TestSyncCommitOnArrival: under CommitOnArrival the round that delivers a
// message commits it, and its ACK clears the sender's pending message.
func TestSyncCommitOnArrival(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	bob.send(alice, "committed by the loop")
	res, err := alice.c.Sync(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed != 1 || alice.pendingIn() != 0 {
		t.Fatalf("committed %d, %d still pending; want 1 and 0", res.Committed, alice.pendingIn())
	}
	if got := alice.received(bob); len(got) != 1 || got[0] != "committed by the loop" {
		t.Fatalf("alice's history: %q", got)
	}
	if r := bob.sync(); count(r, engine.ResultAcknowledgement) != 1 || bob.pendingOut() != 0 {
		t.Fatalf("bob's round: %+v, %d pending", r, bob.pendingOut())
	}
}

// TestCommitRoundAfterADiscard: the loop commits a round's deliveries from
// what the round stored, without reading them back; one that the person
// discarded between the round and the commit is left alone and the rest
// are committed.
func TestCommitRoundAfterADiscard(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	first := bob.send(alice, "discarded by hand")
	bob.send(alice, "committed by the loop")
	res, err := alice.c.Sync(w.ctx)
	if err != nil || count(res.Received, engine.ResultDelivery) != 2 {
		t.Fatalf("round: %+v, %v", res.Received, err)
	}
	if ok, err := alice.c.Discard(w.ctx, bob.addr, first, engine.DiscardRejected); !ok || err != nil {
		t.Fatalf("discard: %v %v", ok, err)
	}
	n, err := alice.c.CommitRound(w.ctx, res.Received)
	if err != nil || n != 1 {
		t.Fatalf("the loop committed %d (%v), want 1 and no error", n, err)
	}
	if got := alice.received(bob); len(got) != 1 || got[0] != "committed by the loop" || alice.pendingIn() != 0 {
		t.Fatalf("alice's history %q, %d pending", got, alice.pendingIn())
	}
}

// TestRunDeliversAndCloseWaits: Run picks up what arrives without being
// asked, commits it under CommitOnArrival, and Close ends it and waits: no
// goroutine outlives the client.
func TestRunDeliversAndCloseWaits(t *testing.T) {
	// Cleanups run last first: this one runs after every client is closed.
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	runLoop(t, alice)
	id := bob.send(alice, "hello loop")
	waitEvent(t, alice, "the commit", func(e engine.Event) bool {
		return e.Kind == engine.EventFinalized && e.ID == id && e.Outcome == engine.OutcomeCommitted
	})
	// bob's own loop processes the ACK.
	runLoop(t, bob)
	waitEvent(t, bob, "the ACK", func(e engine.Event) bool {
		return e.Kind == engine.EventReceived && e.Result.Kind == engine.ResultAcknowledgement && e.Result.Cleared
	})
	if err := alice.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := alice.c.Run(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Run after Close: %v, want ErrClosed", err)
	}
}

// TestRunAutoRetry: with AutoRetry, a message the relay lost is sent again
// by the loop with no call to Retry, and ends in the peer's history once.
func TestRunAutoRetry(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.c.SetPolicy(engine.Policy{AutoRetry: true, RetryMin: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond})
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	runLoop(t, alice)
	runLoop(t, bob)
	w.net.DropNext(alice.addr, bob.addr, 1)
	id := alice.send(bob, "lost once")
	waitEvent(t, alice, "the ACK of the retried message", func(e engine.Event) bool {
		return e.Kind == engine.EventReceived && e.Result.Kind == engine.ResultAcknowledgement && e.ID == id && e.Result.Cleared
	})
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("%d still pending after the ACK", n)
	}
}

// TestRunAutoRetryAfterConvergence: after a collision, the loser's pending
// message goes out on the winning session by itself.
func TestRunAutoRetryAfterConvergence(t *testing.T) {
	w := newWorld(t)
	alice, bob := startBoth(t, w)
	for _, d := range []*device{alice, bob} {
		// A long backoff: only the convergence can make the retry due.
		d.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival, AutoRetry: true, RetryMin: time.Hour})
	}
	w.net.Release(alice.addr)
	w.net.Release(bob.addr)
	runLoop(t, alice)
	runLoop(t, bob)
	deadline := time.Now().Add(20 * time.Second)
	for len(alice.receivedNoFail(bob))+len(bob.receivedNoFail(alice)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no convergence: alice holds %q, bob %q", alice.receivedNoFail(bob), bob.receivedNoFail(alice))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// receivedNoFail is received for a check run while loops are running: a
// read that fails counts as nothing yet.
func (d *device) receivedNoFail(peer *device) []string {
	h, err := d.c.History(d.w.ctx, peer.addr, 0, 1000)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range h {
		if e.Direction == engine.DirectionIn {
			out = append(out, string(e.Body))
		}
	}
	return out
}

// TestCommitPolicyNames: the names the command line and the settings use.
func TestCommitPolicyNames(t *testing.T) {
	for _, p := range []engine.CommitPolicy{engine.CommitManual, engine.CommitOnRead, engine.CommitOnArrival} {
		got, err := engine.ParseCommitPolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParseCommitPolicy(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := engine.ParseCommitPolicy("sometimes"); err == nil {
		t.Error("ParseCommitPolicy accepted an unknown name")
	}
}

// TestSyncCommitsInTheReceive: under CommitOnArrival a new delivery is
// committed by the plan that receives it (receive-commit): the store never
// runs a separate commit plan for it, and the delivery's event comes before
// its commit's.
func TestSyncCommitsInTheReceive(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	bob.send(alice, "hello")
	if _, err := alice.c.Sync(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	// The session exists now: this message is a plain pairwise receive.
	id := bob.send(alice, "committed as it arrives")
	var kinds []string
	alice.fp.Store(func(p string) error {
		if k, rest, ok := strings.Cut(p, "/"); ok && strings.HasPrefix(rest, "stmt-") {
			kinds = append(kinds, k)
		}
		return nil
	})
	res, err := alice.c.Sync(w.ctx)
	alice.fp.Store(nil)
	if err != nil || res.Committed != 1 || alice.pendingIn() != 0 {
		t.Fatalf("round: committed %d, %d pending, %v; want 1, 0", res.Committed, alice.pendingIn(), err)
	}
	if !slices.Contains(kinds, "receive-commit") || slices.Contains(kinds, "commit") || slices.Contains(kinds, "pairwise-receive") {
		t.Fatalf("plans the store ran: %q; want receive-commit and no separate receive or commit", slices.Compact(kinds))
	}
	var order []engine.EventKind
	for len(order) < 2 {
		e := waitEvent(t, alice, "the message's events", func(e engine.Event) bool {
			return e.ID == id && (e.Kind == engine.EventReceived || e.Kind == engine.EventFinalized)
		})
		order = append(order, e.Kind)
	}
	if order[0] != engine.EventReceived || order[1] != engine.EventFinalized {
		t.Fatalf("events %v; want the delivery, then the commit", order)
	}
	if r := bob.sync(); count(r, engine.ResultAcknowledgement) != 1 || bob.pendingOut() != 0 {
		t.Fatalf("bob's round: %+v, %d pending", r, bob.pendingOut())
	}
}
