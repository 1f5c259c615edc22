package engine_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

// TestFirstMessageHeldWhileRelayUnreachable: with no session, a bundle fetch
// that cannot reach the relay keeps the message pending (MessageNotSent),
// not yet encrypted; a later message to that peer waits behind it; a retry
// once the relay is back starts the session and sends both in order, once.
func TestFirstMessageHeldWhileRelayUnreachable(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.net.SetDown(alice.addr, true)
	id, err := alice.c.Send(w.ctx, bob.addr, []byte("first"))
	var notSent *engine.MessageNotSentError
	if !errors.As(err, &notSent) || notSent.ID != id || !errors.Is(err, engine.ErrRelayUnreachable) {
		t.Fatalf("first send while down: %v, want MessageNotSentError for %x naming the relay", err, id)
	}
	if got := alice.pendingOut(); got != 1 {
		t.Fatalf("pending after a held send: %d, want 1", got)
	}
	// The conversation is listed (an interface shows it, auto-retry finds
	// it) though bob's identity is not pinned yet.
	convs, err := alice.c.Conversations(w.ctx)
	if err != nil || len(convs) != 1 || convs[0].Peer != bob.addr || convs[0].PendingOut != 1 {
		t.Fatalf("conversations after a held send: %+v, %v; want bob with one pending", convs, err)
	}
	if _, err := alice.c.Retry(w.ctx, bob.addr); !errors.As(err, &notSent) {
		t.Fatalf("retry while down: %v, want MessageNotSentError", err)
	}
	if a, err := alice.c.Attempts(w.ctx, bob.addr, id); err != nil || len(a) != 0 {
		t.Fatalf("a held message has attempts %v (%v), want none", a, err)
	}

	// The relay is back: a second message goes out after the first, never
	// before it.
	w.net.SetDown(alice.addr, false)
	alice.send(bob, "second")
	if alice.pendingOut() != 2 || w.net.Accepted() != 2 {
		t.Fatalf("after the second send: %d pending, %d accepted; want 2 and 2", alice.pendingOut(), w.net.Accepted())
	}
	var bodies []string
	for _, r := range bob.sync() {
		if r.Kind == engine.ResultDelivery {
			bodies = append(bodies, string(r.Body))
		}
	}
	if !reflect.DeepEqual(bodies, []string{"first", "second"}) {
		t.Fatalf("bob got %q, want first then second", bodies)
	}
	converge(t, alice, bob)
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Fatalf("bob's history %q, want each message once, in order", got)
	}
}

// TestHeldMessagesOutlastRestart: a held message survives a restart and a
// plain retry sends it; two held messages keep their order.
func TestHeldMessagesOutlastRestart(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.net.SetDown(alice.addr, true)
	for _, body := range []string{"one", "two"} {
		if _, err := alice.c.Send(w.ctx, bob.addr, []byte(body)); !errors.Is(err, engine.ErrRelayUnreachable) {
			t.Fatalf("send %q while down: %v", body, err)
		}
	}
	alice.reopen()
	w.net.SetDown(alice.addr, false)
	if ids := alice.retry(bob); len(ids) != 2 {
		t.Fatalf("retry handed off %d, want 2", len(ids))
	}
	converge(t, alice, bob)
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"one", "two"}) {
		t.Fatalf("bob's history %q", got)
	}
}

// TestRefusedFirstSendStoresNothing: an unknown recipient or an expired
// bundle still refuses a first message and stores nothing.
func TestRefusedFirstSendStoresNothing(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	var notSent *engine.MessageNotSentError
	if _, err := alice.c.Send(w.ctx, engine.MustParseAddress("carol/1"), []byte("x")); err == nil || errors.As(err, &notSent) {
		t.Fatalf("send to an unknown peer: %v, want a refusal", err)
	}
	w.clock.Advance(engine.SignedPreKeyLifetime)
	if _, err := alice.c.Send(w.ctx, bob.addr, []byte("late")); !errors.Is(err, engine.ErrExpiredSignedPreKey) || errors.As(err, &notSent) {
		t.Fatalf("send with an expired bundle: %v, want ErrExpiredSignedPreKey", err)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("refused sends stored %d messages", n)
	}
}

// TestRunAutoRetryHeldFirstMessage: a first message held while the relay
// was out of reach goes out by itself once it is back, with AutoRetry: the
// loop fetches the bundle, starts the session and the ACK clears it.
func TestRunAutoRetryHeldFirstMessage(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.net.SetDown(alice.addr, true)
	id, err := alice.c.Send(w.ctx, bob.addr, []byte("held"))
	if !errors.Is(err, engine.ErrRelayUnreachable) {
		t.Fatalf("first send while down: %v", err)
	}
	w.net.SetDown(alice.addr, false)
	alice.c.SetPolicy(engine.Policy{AutoRetry: true, RetryMin: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond})
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	runLoop(t, alice)
	runLoop(t, bob)
	waitEvent(t, alice, "the ACK of the held message", func(e engine.Event) bool {
		return e.Kind == engine.EventReceived && e.Result.Kind == engine.ResultAcknowledgement && e.ID == id && e.Result.Cleared
	})
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("%d still pending after the ACK", n)
	}
}
