package engine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// notSentFor reports whether err is a MessageNotSentError caused by cause.
func notSentFor(err, cause error) bool {
	var ns *engine.MessageNotSentError
	return errors.As(err, &ns) && errors.Is(ns.Err, cause)
}

// TestSendWindow: a sending chain carries at most SendWindow messages that
// the peer is not known to have received. While a relay withholds every
// envelope, the message past the window is stored pending without an
// envelope (send_window_full, as a hand-off failure), and retries encrypt
// nothing; the peer's ACK of one message turns the chain and sends go out
// again. Before, the chain ran on past the peer's MaxSkip.
func TestSendWindow(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.net.Hold(bob.addr)
	reqs := make([]engine.SendRequest, engine.SendWindow+1)
	for i := range reqs {
		reqs[i] = engine.SendRequest{Peer: bob.addr, Body: []byte(fmt.Sprintf("m%d", i))}
	}
	res, err := alice.c.SendBatch(w.ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res[:engine.SendWindow] {
		if r.Err != nil {
			t.Fatalf("message %d inside the window: %v", i, r.Err)
		}
	}
	if last := res[engine.SendWindow].Err; !notSentFor(last, engine.ErrSendWindow) {
		t.Fatalf("message past the window: %v, want it pending for the window", last)
	}
	if n := alice.pendingOut(); n != engine.SendWindow+1 {
		t.Fatalf("alice holds %d pending, want %d", n, engine.SendWindow+1)
	}
	before := w.net.Accepted()
	if _, err := alice.c.Retry(w.ctx, bob.addr); !notSentFor(err, engine.ErrSendWindow) {
		t.Fatalf("retry with a full window: %v, want it pending for the window", err)
	}
	if _, err := alice.c.Send(w.ctx, bob.addr, []byte("one more")); !notSentFor(err, engine.ErrSendWindow) {
		t.Fatalf("send with a full window: %v, want it pending for the window", err)
	}
	if got := w.net.Accepted(); got != before {
		t.Fatalf("%d envelopes went out with the window full, want none", got-before)
	}
	if got := engine.ErrorName(res[engine.SendWindow].Err); got != "message_not_sent" {
		t.Fatalf("ErrorName = %q", got)
	}

	// The relay lets the first envelope through; bob's ACK turns alice's
	// chain, and she sends again.
	w.net.DeliverHeld(bob.addr, 0)
	if got := count(bob.sync(), engine.ResultDelivery); got != 1 {
		t.Fatalf("bob got %d deliveries, want the first message", got)
	}
	bob.commitAll()
	alice.sync()
	before = w.net.Accepted()
	if _, err := alice.c.Send(w.ctx, bob.addr, []byte("after the turn")); err != nil {
		t.Fatalf("send after the peer's ACK: %v", err)
	}
	// The two messages held for the window go first (the pump, before
	// the send), then the new one: three envelopes, in the order they were
	// stored.
	if got := w.net.Accepted(); got != before+3 {
		t.Fatalf("%d envelopes after the turn, want the two held messages and the new one", got-before)
	}
}

// TestSendWindowLostForGood: when a relay lost a whole window of envelopes
// the peer has nothing to answer, so nothing turns the chain. The messages
// wait; once the window has been full for SendWindowWait, the retry resets
// the session and sends on a fresh one that names it, and the message
// arrives once.
func TestSendWindowLostForGood(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.net.Hold(bob.addr)
	id := alice.send(bob, "kept pending")
	if err := alice.c.SpendSendWindow(w.ctx, bob.addr, id); err != nil {
		t.Fatal(err)
	}
	w.net.TakeHeld(bob.addr) // lost for good
	w.net.Release(bob.addr)
	old := alice.sessionID(bob)
	if _, err := alice.c.Retry(w.ctx, bob.addr); !notSentFor(err, engine.ErrSendWindow) {
		t.Fatalf("retry with a full window: %v, want it pending for the window", err)
	}
	w.clock.Advance(engine.SendWindowWait - 1)
	if _, err := alice.c.Retry(w.ctx, bob.addr); !notSentFor(err, engine.ErrSendWindow) {
		t.Fatalf("retry before SendWindowWait: %v, want it still pending", err)
	}
	w.clock.Advance(1)
	if ids := alice.retry(bob); len(ids) != 1 || ids[0] != id {
		t.Fatalf("retry after SendWindowWait sent %x, want %x", ids, id)
	}
	if alice.sessionID(bob) == old {
		t.Fatal("the session was not reset")
	}
	converge(t, alice, bob)
	if got := bob.received(alice); len(got) != 1 || got[0] != "kept pending" {
		t.Fatalf("bob's history %q, want the message once", got)
	}
}
