package engine_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

func TestRoundTrip(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.send(bob, "hello bob")

	res := bob.sync()
	if len(res) != 1 || res[0].Kind != engine.ResultDelivery || string(res[0].Body) != "hello bob" || res[0].ID != id {
		t.Fatalf("bob's sync: %+v, want one delivery of %x", res, id)
	}
	if alice.pendingOut() != 1 {
		t.Fatal("a delivery cleared the sender's pending message; only the ACK may")
	}
	ackSent, err := bob.c.Commit(w.ctx, alice.addr, id)
	if err != nil || !ackSent {
		t.Fatalf("commit: ackSent=%v, %v", ackSent, err)
	}
	res = alice.sync()
	if len(res) != 1 || res[0].Kind != engine.ResultAcknowledgement || !res[0].Cleared || res[0].ID != id {
		t.Fatalf("alice's sync: %+v, want the cleared ACK", res)
	}
	if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
		t.Fatal("something is still pending after the ACK")
	}
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"hello bob"}) {
		t.Fatalf("bob's history: %q", got)
	}
	h, _ := alice.c.History(w.ctx, bob.addr, 0, 10)
	if len(h) != 1 || h[0].Direction != engine.DirectionOut || h[0].State != engine.SentAcknowledged {
		t.Fatalf("alice's history: %+v, want one acknowledged sent message", h)
	}
	// Replies travel on the same session, as ratchet messages.
	alice.send(bob, "second")
	bid := bob.send(alice, "reply")
	if res := alice.sync(); count(res, engine.ResultDelivery) != 1 {
		t.Fatalf("alice gets %+v, want bob's reply", res)
	}
	alice.commitAll()
	bob.sync()
	bob.commitAll()
	alice.sync()
	if alice.pendingOut()+bob.pendingOut() != 0 {
		t.Fatalf("pending after replies: %d, %d (reply %x)", alice.pendingOut(), bob.pendingOut(), bid)
	}
}

func TestDuplicatesAreDeliveredUntilFinalized(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	// A byte-identical copy of an envelope cannot be decrypted twice (its
	// message key is gone): it fails cleanly as a duplicate.
	w.net.DuplicateNext(alice.addr, bob.addr, 1)
	id := alice.send(bob, "twice")
	res := bob.sync()
	if count(res, engine.ResultDelivery) != 1 || !hasError(res, engine.ErrDuplicateMessage) || bob.pendingIn() != 1 {
		t.Fatalf("duplicate envelope: %+v, pending %d; want one delivery, one duplicate_message", res, bob.pendingIn())
	}
	// A retry while pending is the same delivery again, no second row.
	alice.retry(bob)
	if res := bob.sync(); count(res, engine.ResultDelivery) != 1 || bob.pendingIn() != 1 {
		t.Fatalf("retry while pending: %+v", res)
	}
	// Once committed, a retry is reported as already committed and ACKed again.
	w.net.DropNext(bob.addr, alice.addr, 1) // the first ACK is lost
	if sent, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil || !sent {
		t.Fatalf("commit: %v %v", sent, err)
	}
	if res := alice.sync(); len(res) != 0 || alice.pendingOut() != 1 {
		t.Fatalf("the lost ACK arrived: %+v", res)
	}
	alice.retry(bob)
	res = bob.sync()
	if len(res) != 1 || res[0].Kind != engine.ResultAlreadyCommitted || !res[0].AckSent || res[0].Body != nil {
		t.Fatalf("retry after commit: %+v, want already_committed with ack_sent and no body", res)
	}
	if res := alice.sync(); len(res) != 1 || !res[0].Cleared || alice.pendingOut() != 0 {
		t.Fatalf("the second ACK: %+v", res)
	}
	if got := bob.received(alice); len(got) != 1 {
		t.Fatalf("history holds %d copies", len(got))
	}
	// A repeated ACK clears nothing.
	alice.send(bob, "another")
	bob.sync()
	bob.commitAll()
}

func TestLostEnvelopeRecoveredByRetry(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.net.DropNext(alice.addr, bob.addr, 1)
	alice.send(bob, "lost once")
	if res := bob.sync(); len(res) != 0 {
		t.Fatalf("bob got %+v from a dropped envelope", res)
	}
	if ids := alice.retry(bob); len(ids) != 1 {
		t.Fatalf("retry handed off %d", len(ids))
	}
	if res := bob.sync(); count(res, engine.ResultDelivery) != 1 {
		t.Fatalf("after retry: %+v", res)
	}
	converge(t, alice, bob)
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"lost once"}) {
		t.Fatalf("history: %q", got)
	}
}

func TestHandOffFailureKeepsMessagePending(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "first") // establishes the session
	w.net.SetDown(alice.addr, true)
	id, err := alice.c.Send(w.ctx, bob.addr, []byte("not sent"))
	var notSent *engine.MessageNotSentError
	if !errors.As(err, &notSent) || notSent.ID != id {
		t.Fatalf("send while down: %v, want MessageNotSentError for %x", err, id)
	}
	if _, err := alice.c.Retry(w.ctx, bob.addr); !errors.As(err, &notSent) {
		t.Fatalf("retry while down: %v, want MessageNotSentError", err)
	}
	w.net.SetDown(alice.addr, false)
	if ids := alice.retry(bob); len(ids) != 2 {
		t.Fatalf("retry handed off %d, want 2 in order", len(ids))
	}
	converge(t, alice, bob)
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"first", "not sent"}) {
		t.Fatalf("history %q", got)
	}
}

func TestOversizedBodyStoresNothing(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	_, err := alice.c.Send(w.ctx, bob.addr, make([]byte, wire.MaxBodySize+1))
	if !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Fatalf("got %v, want ErrMessageTooLarge", err)
	}
	if alice.pendingOut() != 0 || w.net.Accepted() != 0 {
		t.Fatal("an oversized body left something behind")
	}
	if _, err := alice.c.Send(w.ctx, bob.addr, make([]byte, wire.MaxBodySize)); err != nil {
		t.Fatalf("the largest body: %v", err)
	}
	if res := bob.sync(); count(res, engine.ResultDelivery) != 1 {
		t.Fatalf("largest body not delivered: %+v", res)
	}
}

func TestDiscardAndAbandon(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.send(bob, "unwanted")
	bob.sync()
	if sent, err := bob.c.Discard(w.ctx, alice.addr, id, engine.DiscardPolicy); err != nil || !sent {
		t.Fatalf("discard: %v %v", sent, err)
	}
	if res := alice.sync(); len(res) != 1 || !res[0].Cleared {
		t.Fatalf("the discard's ACK: %+v", res)
	}
	if got := bob.received(alice); len(got) != 0 {
		t.Fatalf("a discarded message entered the history: %q", got)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); !errors.Is(err, engine.ErrAlreadyDiscarded) {
		t.Fatalf("commit after discard: %v, want ErrAlreadyDiscarded", err)
	}

	gone := alice.send(bob, "to abandon")
	if err := alice.c.Abandon(w.ctx, bob.addr, gone); err != nil {
		t.Fatal(err)
	}
	if err := alice.c.Abandon(w.ctx, bob.addr, gone); !errors.Is(err, engine.ErrNotPending) {
		t.Fatalf("abandon twice: %v, want ErrNotPending", err)
	}
}

// TestPrunedMessageIsDeliveredAgain: after its finalized record is pruned, a
// retry of a committed message is a new delivery (as the docs warn); a commit
// of it succeeds and the history still holds it once.
func TestPrunedMessageIsDeliveredAgain(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.send(bob, "once")
	bob.sync()
	w.net.DropNext(bob.addr, alice.addr, 1) // the ACK is lost: alice will retry
	bob.commitAll()
	w.clock.Advance(time.Hour)
	if n, err := bob.c.Prune(w.ctx, time.Minute); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	alice.retry(bob)
	res := bob.sync()
	if len(res) != 1 || res[0].Kind != engine.ResultDelivery || res[0].ID != id {
		t.Fatalf("after the prune the retry gives %+v, want a delivery again", res)
	}
	bob.commitAll()
	alice.sync()
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"once"}) {
		t.Fatalf("history %q, want the message once", got)
	}
	if alice.pendingOut() != 0 {
		t.Fatal("the second commit's ACK did not clear the message")
	}
}

// TestHistoryByArrival: a received message takes its place in the
// conversation by when it arrived on this device, not by when it was
// committed: bob commits the later message first, and his history still
// reads in the order things happened, with the arrival times.
func TestHistoryByArrival(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	first := alice.send(bob, "first")
	bob.sync()
	arrivedFirst := w.clock.Now()
	w.clock.Advance(time.Minute)
	bob.send(alice, "in between")
	w.clock.Advance(time.Minute)
	second := alice.send(bob, "second")
	bob.sync()
	arrivedSecond := w.clock.Now()
	w.clock.Advance(time.Minute)
	if _, err := bob.c.Commit(w.ctx, alice.addr, second); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	if _, err := bob.c.Commit(w.ctx, alice.addr, first); err != nil {
		t.Fatal(err)
	}
	h, err := bob.c.History(w.ctx, alice.addr, 0, 10)
	if err != nil || len(h) != 3 {
		t.Fatalf("history: %d entries, %v", len(h), err)
	}
	var got []string
	for i := len(h) - 1; i >= 0; i-- {
		got = append(got, string(h[i].Body))
	}
	if want := []string{"first", "in between", "second"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("bob's history, oldest first: %q, want %q", got, want)
	}
	if !h[2].At.Equal(arrivedFirst) || !h[0].At.Equal(arrivedSecond) {
		t.Fatalf("history times %v and %v, want the arrivals %v and %v", h[2].At, h[0].At, arrivedFirst, arrivedSecond)
	}
}

// TestAttemptLog: the send and each retry log their envelope, in order, on
// the session they were encrypted on; a pending message keeps its log
// through a prune, an acknowledged one loses it.
func TestAttemptLog(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.send(bob, "logged")
	alice.retry(bob)
	alice.retry(bob)
	got, err := alice.c.Attempts(w.ctx, bob.addr, id)
	if err != nil || len(got) != 3 {
		t.Fatalf("attempts %+v, %v; want three", got, err)
	}
	session := alice.sessionID(bob)
	for i, a := range got {
		if a.N != i+1 || a.Initiation != session || a.Type != wire.EnvelopePreKey {
			t.Fatalf("attempt %d: %+v; want number %d, prekey, on initiation %x", i, a, i+1, session[:4])
		}
		if i > 0 && a.Envelope == got[i-1].Envelope {
			t.Fatalf("attempts %d and %d share an envelope ID", i-1, i)
		}
	}
	w.clock.Advance(time.Hour)
	if _, err := alice.c.Prune(w.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := alice.c.Attempts(w.ctx, bob.addr, id); len(got) != 3 {
		t.Fatalf("a prune dropped the log of a pending message: %d left", len(got))
	}
	bob.sync()
	bob.commitAll()
	alice.sync()
	l, err := alice.c.Trace(w.ctx, bob.addr, id, engine.DirectionOut)
	if err != nil || l.State != "acknowledged" || len(l.Attempts) != 3 {
		t.Fatalf("trace %+v, %v; want acknowledged with three attempts", l, err)
	}
	w.clock.Advance(time.Hour)
	if _, err := alice.c.Prune(w.ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := alice.c.Attempts(w.ctx, bob.addr, id); len(got) != 0 {
		t.Fatalf("the log of an acknowledged message outlived the prune: %d left", len(got))
	}
}
