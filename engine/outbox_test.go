package engine_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// TestEnqueueStoresWithoutTheNetwork: with the relay out of reach, Enqueue
// stores every message and forgets the draft in the same transaction; the
// pump then reports each as not sent (pending), and once the relay is back
// hands them off in the order they were stored, starting the session.
func TestEnqueueStoresWithoutTheNetwork(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	ctx := context.Background()
	if err := alice.c.SaveDraft(ctx, bob.addr, "three"); err != nil {
		t.Fatal(err)
	}
	w.net.SetDown(alice.addr, true)
	var reqs []engine.SendRequest
	for _, body := range []string{"one", "two", "three"} {
		reqs = append(reqs, engine.SendRequest{Peer: bob.addr, Body: []byte(body), ClearDraft: body == "three"})
	}
	res, err := alice.c.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("enqueue: %v", r.Err)
		}
	}
	if n := alice.pendingOut(); n != 3 {
		t.Fatalf("%d pending after Enqueue, want 3", n)
	}
	if drafts, err := alice.c.Drafts(ctx); err != nil || len(drafts) != 0 {
		t.Fatalf("drafts %v (%v): the send must forget the draft", drafts, err)
	}
	pumped, err := alice.c.Pump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var notSent *engine.MessageNotSentError
	if len(pumped) != 3 || !errors.As(pumped[0].Err, &notSent) || !errors.Is(pumped[0].Err, engine.ErrRelayUnreachable) {
		t.Fatalf("pump with the relay down: %+v, want three not sent (unreachable)", pumped)
	}
	if n := alice.pendingOut(); n != 3 {
		t.Fatalf("%d pending after a failed pump, want 3", n)
	}
	w.net.SetDown(alice.addr, false)
	pumped, err = alice.c.Pump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range pumped {
		if r.Err != nil || r.ID != res[i].ID {
			t.Fatalf("pump %d: %+v, want %x handed off", i, r, res[i].ID[:4])
		}
	}
	if again, err := alice.c.Pump(ctx); err != nil || len(again) != 0 {
		t.Fatalf("a second pump tried %d (%v): what was handed off is not unsent", len(again), err)
	}
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"one", "two", "three"}) {
		t.Fatalf("bob received %q", got)
	}
	alice.sync()
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("%d pending after the ACKs", n)
	}
}

// TestEnqueueRefusesTheOwnDevice: a message to the own device is refused
// before anything is stored.
func TestEnqueueRefusesTheOwnDevice(t *testing.T) {
	w := newWorld(t)
	alice := w.device("alice/1")
	res, err := alice.c.Enqueue(context.Background(), []engine.SendRequest{{Peer: alice.addr, Body: []byte("me")}})
	if err != nil || !errors.Is(res[0].Err, engine.ErrInvalidAddress) {
		t.Fatalf("enqueue to self: %+v %v", res, err)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("%d pending", n)
	}
}

// slowRelay holds every Submit, once armed, until release is closed.
type slowRelay struct {
	*enginetest.Endpoint
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *slowRelay) Submit(ctx context.Context, env wire.Envelope) error {
	if !s.armed.Load() {
		return s.Endpoint.Submit(ctx, env)
	}
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Endpoint.Submit(ctx, env)
}

func (s *slowRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return enginetest.SubmitEach(ctx, s.Submit, envs)
}

// TestReceiveWhileThePumpWaits: while the pump's hand-off waits on a relay
// that does not answer, the same client receives, processes and commits a
// message: the hand-off holds no lock that receiving needs.
func TestReceiveWhileThePumpWaits(t *testing.T) {
	w := newWorld(t)
	var slow *slowRelay
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		if a.String() != "alice/1" {
			return e
		}
		slow = &slowRelay{Endpoint: e, entered: make(chan struct{}, 1), release: make(chan struct{})}
		return slow
	}
	alice, bob := w.device("alice/1"), w.device("bob/1")
	bob.send(alice, "hello")
	alice.sync()
	alice.commitAll()
	bob.sync()
	// From here alice's relay answers no hand-off; bob's message after it
	// needs nothing sent back to be received (commits are manual).
	slow.armed.Store(true)
	bob.send(alice, "from bob")
	ctx := context.Background()
	if _, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("from alice")}}); err != nil {
		t.Fatal(err)
	}
	pumped := make(chan error, 1)
	go func() {
		_, err := alice.c.Pump(ctx)
		pumped <- err
	}()
	<-slow.entered
	done := make(chan []engine.ReceiveResult, 1)
	go func() { done <- alice.sync() }()
	select {
	case res := <-done:
		if count(res, engine.ResultDelivery) != 1 {
			t.Fatalf("alice's round: %+v, want bob's message", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a receive waited for the pump's hand-off")
	}
	close(slow.release)
	if err := <-pumped; err != nil {
		t.Fatal(err)
	}
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"from alice"}) {
		t.Fatalf("bob received %q", got)
	}
}

// BenchmarkSendLatency: what Enqueue costs a person who pressed Enter (one
// durable commit) against Send, which waits for the relay's answer, with a
// relay that answers after 50 ms.
func BenchmarkSendLatency(b *testing.B) {
	for _, mode := range []string{"enqueue", "send"} {
		b.Run(mode, func(b *testing.B) {
			w := newWorld(b)
			w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
				return &delayRelay{Endpoint: e, delay: 50 * time.Millisecond}
			}
			alice, bob := w.device("alice/1"), w.device("bob/1")
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if mode == "enqueue" {
					if _, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("hello")}}); err != nil {
						b.Fatal(err)
					}
				} else if _, err := alice.c.Send(ctx, bob.addr, []byte("hello")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// delayRelay answers every Submit after delay.
type delayRelay struct {
	*enginetest.Endpoint
	delay time.Duration
}

func (d *delayRelay) Submit(ctx context.Context, env wire.Envelope) error {
	time.Sleep(d.delay)
	return d.Endpoint.Submit(ctx, env)
}

func (d *delayRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return enginetest.SubmitEach(ctx, d.Submit, envs)
}

// TestSendDoesNotOvertakeEnqueued: a Send on an established session (a
// file's manifest, say) leaves after the messages Enqueue stored before it.
func TestSendDoesNotOvertakeEnqueued(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	ctx := context.Background()
	if _, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("first")}}); err != nil {
		t.Fatal(err)
	}
	alice.send(bob, "second") // e.g. SendFile's manifest
	if _, err := alice.c.Pump(ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"hello", "first", "second"}) {
		t.Fatalf("bob received %q, want hello first second", got)
	}
}

// TestPumpDoesNotStarve: a full page of unsent messages to a peer the pump
// cannot serve (never registered) does not keep the pump from the others.
func TestPumpDoesNotStarve(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	carol := engine.MustParseAddress("carol/1") // never registered
	ctx := context.Background()
	var reqs []engine.SendRequest
	for i := 0; i < 256; i++ {
		reqs = append(reqs, engine.SendRequest{Peer: carol, Body: []byte("x")})
	}
	if _, err := alice.c.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	res, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("to bob")}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		out, err := alice.c.Pump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out {
			if r.ID == res[0].ID {
				return
			}
		}
	}
	t.Fatal("three pumps never tried bob's message: a held peer's full page starves the others")
}

// stallRelay blocks FetchBundle for one peer until release (or ctx ends).
type stallRelay struct {
	*enginetest.Endpoint
	peer    engine.Address
	skip    atomic.Int32 // calls let through before stalling
	entered chan struct{}
	release chan struct{}
	submits atomic.Int32
}

func (s *stallRelay) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	if peer == s.peer && s.skip.Add(-1) < 0 {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return wire.Bundle{}, ctx.Err()
		}
	}
	return s.Endpoint.FetchBundle(ctx, peer)
}

func (s *stallRelay) Submit(ctx context.Context, env wire.Envelope) error {
	s.submits.Add(1)
	return s.Endpoint.Submit(ctx, env)
}

func (s *stallRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return enginetest.SubmitEach(ctx, s.Submit, envs)
}

// TestStalledBundleDoesNotStopReceiving: while one bundle fetch of the
// pump never returns, the loop still receives.
func TestStalledBundleDoesNotStopReceiving(t *testing.T) {
	w := newWorld(t)
	var sr *stallRelay
	carol := engine.MustParseAddress("carol/1")
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		if a.String() != "alice/1" {
			return e
		}
		sr = &stallRelay{Endpoint: e, peer: carol, entered: make(chan struct{}, 1), release: make(chan struct{})}
		return sr
	}
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.device("carol/1")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); alice.c.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	if _, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: carol, Body: []byte("hi carol")}}); err != nil {
		t.Fatal(err)
	}
	<-sr.entered
	defer close(sr.release)
	bob.send(alice, "from bob")
	alice.c.SyncNow()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if n, _ := alice.c.CountInbound(context.Background(), nil); n > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("alice's loop received nothing in 5s while one bundle fetch hangs")
}

// TestRetryDuringPumpSendsOnce: a Retry while the pump waits for a bundle
// sends the message; the pump then finds it sent and does not send it again.
func TestRetryDuringPumpSendsOnce(t *testing.T) {
	w := newWorld(t)
	var sr *stallRelay
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		if a.String() != "alice/1" {
			return e
		}
		sr = &stallRelay{Endpoint: e, peer: engine.MustParseAddress("bob/1"), entered: make(chan struct{}, 1), release: make(chan struct{})}
		return sr
	}
	alice, bob := w.device("alice/1"), w.device("bob/1")
	ctx := context.Background()
	if _, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("once")}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan []engine.SendResult, 1)
	go func() { r, _ := alice.c.Pump(ctx); done <- r }()
	<-sr.entered     // the pump read Unsent and waits on the bundle
	sr.skip.Store(1) // the retry's fetch passes
	before := sr.submits.Load()
	alice.retry(bob)
	close(sr.release)
	<-done
	if n := sr.submits.Load() - before; n != 1 {
		t.Fatalf("one message, %d envelopes handed off (retry + pump)", n)
	}
}

// TestAckNotHandedOffIsRecovered: an ACK the relay did not take after a
// commit is not kept for a later hand-off of its own; what brings it back
// is durable on the sender's side, the message's pending row: the sender's
// retry (the loop's, by its policy) brings a repeat, the receiver
// acknowledges it again from its finalized record, and the row clears.
func TestAckNotHandedOffIsRecovered(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.send(bob, "hello")
	bob.sync()
	w.net.SetDown(bob.addr, true)
	acked, err := bob.c.Commit(w.ctx, alice.addr, id)
	if err != nil || acked {
		t.Fatalf("commit with the relay down: ACK sent %v, %v; want committed, ACK not sent", acked, err)
	}
	w.net.SetDown(bob.addr, false)
	alice.sync()
	if n := alice.pendingOut(); n != 1 {
		t.Fatalf("%d pending at alice without the ACK, want 1", n)
	}
	if ids := alice.retry(bob); len(ids) != 1 {
		t.Fatalf("retry handed off %d", len(ids))
	}
	res := bob.sync()
	if len(res) != 1 || res[0].Kind == engine.ResultDelivery {
		t.Fatalf("bob's results for the repeat %+v: want it answered from the finalized record, not delivered again", res)
	}
	alice.sync()
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("%d pending at alice after the repeat's ACK", n)
	}
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"hello"}) {
		t.Fatalf("bob's history %q, want hello once", got)
	}
}
