package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// TestDecideRetryWait: without envelope status the backoff is today's;
// with it, a lost envelope is due at once, a taken one waits for its ACK
// ten minutes, and one never reported taken waits an hour, doubling to a
// day, however short the policy's own backoff is.
func TestDecideRetryWait(t *testing.T) {
	p := engine.Policy{AutoRetry: true, RetryMin: 2 * time.Second, RetryMax: 5 * time.Minute}
	tests := []struct {
		status bool
		fate   engine.EnvelopeFate
		prev   time.Duration
		want   time.Duration
	}{
		// No envelope status: doubling from RetryMin to RetryMax.
		{false, engine.FateUnreported, 0, 2 * time.Second},
		{false, engine.FateUnreported, 2 * time.Second, 4 * time.Second},
		{false, engine.FateUnreported, 4 * time.Minute, 5 * time.Minute},
		{false, engine.FateUnreported, 5 * time.Minute, 5 * time.Minute},
		// A fate heard from a relay that does not announce the feature
		// changes nothing.
		{false, engine.FateTaken, 0, 2 * time.Second},
		{false, engine.FateExpired, 2 * time.Second, 4 * time.Second},
		// Envelope status: never reported taken.
		{true, engine.FateUnreported, 0, time.Hour},
		{true, engine.FateUnreported, 2 * time.Second, time.Hour},
		{true, engine.FateUnreported, time.Hour, 2 * time.Hour},
		{true, engine.FateUnreported, 16 * time.Hour, 24 * time.Hour},
		{true, engine.FateUnreported, 24 * time.Hour, 24 * time.Hour},
		// Taken, not acknowledged.
		{true, engine.FateTaken, 0, 10 * time.Minute},
		{true, engine.FateTaken, 8 * time.Hour, 10 * time.Minute},
		// Expired: lost, resent at the next opportunity.
		{true, engine.FateExpired, 0, 0},
		{true, engine.FateExpired, 8 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("status=%v/fate=%d/prev=%v", tt.status, tt.fate, tt.prev), func(t *testing.T) {
			got := engine.DecideRetryWait(tt.status, tt.fate, tt.prev, p)
			if got != tt.want {
				t.Fatalf("DecideRetryWait = %v, want %v", got, tt.want)
			}
		})
	}
}

// newsRelay is an in-process relay that announces envelope status and
// reports what the test pushes.
type newsRelay struct {
	*enginetest.Endpoint
	mu       sync.Mutex
	statuses []wire.EnvelopeStatus
	lifetime time.Duration // announced when set
}

func (r *newsRelay) RelayFeatures() (wire.FeatureSet, bool) {
	return wire.FeatureEnvelopeStatus, true
}

func (r *newsRelay) EnvelopeLifetime() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lifetime, r.lifetime > 0
}

func (r *newsRelay) EnvelopeStatuses() []wire.EnvelopeStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.statuses
	r.statuses = nil
	return out
}

func (r *newsRelay) push(st wire.EnvelopeStatus) {
	r.mu.Lock()
	r.statuses = append(r.statuses, st)
	r.mu.Unlock()
}

// waitNextRetry polls d's schedule for peer until ok holds for the time
// left before the next retry.
func waitNextRetry(t *testing.T, d *device, peer *device, what string, ok func(left time.Duration) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		next := d.c.NextRetry(peer.addr)
		if !next.IsZero() && ok(time.Until(next)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: next retry to %s in %v, want %s", d.addr, peer.addr, time.Until(next), what)
		}
		d.c.SyncNow()
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunRetryByEnvelopeFate: with a relay that reports envelope status, a
// lost message is not resent on the policy's short backoff but waits the
// hour for an envelope never reported taken; "taken" is recorded (the
// message is on the device) and moves the retry to ten minutes away, and
// "expired" makes it due again, but not sooner than ReportRetryFloor after
// its hand-off (TestDecideExpiredRetry, TestExpiredStormIsATrickle).
func TestRunRetryByEnvelopeFate(t *testing.T) {
	w := newWorld(t)
	relays := map[engine.Address]*newsRelay{}
	var relaysMu sync.Mutex
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		r := &newsRelay{Endpoint: e}
		relaysMu.Lock()
		relays[a] = r
		relaysMu.Unlock()
		return r
	}
	alice, bob := w.device("alice/1"), w.device("bob/1")
	relaysMu.Lock()
	news := relays[alice.addr]
	relaysMu.Unlock()
	alice.c.SetPolicy(engine.Policy{AutoRetry: true, RetryMin: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond})
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	w.net.DropNext(alice.addr, bob.addr, 1)
	id := alice.send(bob, "lost in the mailbox")
	runLoop(t, alice)
	runLoop(t, bob)
	waitNextRetry(t, alice, bob, "about an hour", func(left time.Duration) bool { return left > 50*time.Minute })

	tr, err := alice.c.Trace(w.ctx, bob.addr, id, engine.DirectionOut)
	if err != nil || len(tr.Attempts) != 1 {
		t.Fatalf("Trace: %d attempts (%v), want 1", len(tr.Attempts), err)
	}
	env := tr.Attempts[0].Envelope

	news.push(wire.EnvelopeStatus{EnvelopeID: env, State: wire.EnvelopeTaken})
	alice.c.SyncNow()
	waitEvent(t, alice, "the message on bob's device", func(e engine.Event) bool {
		return e.Kind == engine.EventTaken && e.Peer == bob.addr && e.ID == id
	})
	waitNextRetry(t, alice, bob, "about ten minutes", func(left time.Duration) bool { return left > 5*time.Minute && left <= 10*time.Minute })
	if tr, err := alice.c.Trace(w.ctx, bob.addr, id, engine.DirectionOut); err != nil || tr.State != "on_device" || tr.Attempts[0].TakenAt.IsZero() {
		t.Fatalf("Trace after taken: state %q, attempts %+v (%v); want on_device, taken", tr.State, tr.Attempts, err)
	}

	news.push(wire.EnvelopeStatus{EnvelopeID: env, State: wire.EnvelopeExpired})
	alice.c.SyncNow()
	waitNextRetry(t, alice, bob, "within ten minutes of the hand-off", func(left time.Duration) bool { return left > 5*time.Minute && left <= engine.ReportRetryFloor })
	time.Sleep(100 * time.Millisecond)
	if tr, err := alice.c.Trace(w.ctx, bob.addr, id, engine.DirectionOut); err != nil || len(tr.Attempts) != 1 {
		t.Fatalf("Trace after expired: %d attempts (%v), want still 1: not resent at once", len(tr.Attempts), err)
	}
}

// TestDecideExpiredRetry: an expiry reported before the announced lifetime
// has passed is not believed; a believed one makes the message due at once,
// but never sooner than ReportRetryFloor after the envelope's hand-off.
func TestDecideExpiredRetry(t *testing.T) {
	sent := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	tests := []struct {
		name     string
		now      time.Time
		lifetime time.Duration
		want     time.Time
		believed bool
	}{
		{"no lifetime, at once", sent, 0, sent.Add(engine.ReportRetryFloor), true},
		{"no lifetime, a minute on", sent.Add(time.Minute), 0, sent.Add(engine.ReportRetryFloor), true},
		{"no lifetime, past the floor", sent.Add(time.Hour), 0, sent.Add(time.Hour), true},
		{"before the lifetime", sent.Add(week - time.Second), week, time.Time{}, false},
		{"at once with a lifetime", sent, week, time.Time{}, false},
		{"at the lifetime", sent.Add(week), week, sent.Add(week), true},
		{"after the lifetime", sent.Add(week + time.Hour), week, sent.Add(week + time.Hour), true},
		{"a lifetime shorter than the floor", sent.Add(2 * time.Second), time.Second, sent.Add(engine.ReportRetryFloor), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, believed := engine.DecideExpiredRetry(sent, tt.now, tt.lifetime)
			if believed != tt.believed || !got.Equal(tt.want) {
				t.Fatalf("DecideExpiredRetry = %v, %v; want %v, %v", got, believed, tt.want, tt.believed)
			}
		})
	}
}

// expiringRelay is a hostile relay: it accepts every envelope, delivers
// none and reports each expired at once.
type expiringRelay struct {
	*newsRelay
	submits atomic.Int64
}

func (r *expiringRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return enginetest.SubmitEach(ctx, r.Submit, envs)
}

func (r *expiringRelay) Submit(ctx context.Context, env wire.Envelope) error {
	r.submits.Add(1)
	r.push(wire.EnvelopeStatus{EnvelopeID: env.ID, State: wire.EnvelopeExpired})
	return nil
}

// TestExpiredStormIsATrickle: a relay that answers every envelope
// "expired" made the automatic retry resend one message thousands of times
// a second (each an encryption, a transaction and a submit). After a report
// a message goes again at most once per ReportRetryFloor; and a relay that
// announced its envelope lifetime is not believed at all before it passed.
func TestExpiredStormIsATrickle(t *testing.T) {
	for _, lifetime := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("lifetime %v", lifetime), func(t *testing.T) {
			w := newWorld(t)
			relays := map[engine.Address]*expiringRelay{}
			var relaysMu sync.Mutex
			w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
				r := &expiringRelay{newsRelay: &newsRelay{Endpoint: e, lifetime: lifetime}}
				relaysMu.Lock()
				relays[a] = r
				relaysMu.Unlock()
				return r
			}
			alice, bob := w.device("alice/1"), w.device("bob/1")
			relaysMu.Lock()
			relay := relays[alice.addr]
			relaysMu.Unlock()
			alice.c.SetPolicy(engine.Policy{AutoRetry: true, RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond})
			id := alice.send(bob, "reported lost for ever")
			runLoop(t, alice)
			time.Sleep(2 * time.Second)
			if n := relay.submits.Load(); n > 1 {
				t.Fatalf("%d submits in 2 s, want the send alone", n)
			}
			want := func(left time.Duration) bool { return left > 5*time.Minute && left <= engine.ReportRetryFloor }
			what := "within ten minutes of the hand-off"
			if lifetime > 0 {
				// Not believed: the hour an unreported envelope waits.
				want, what = func(left time.Duration) bool { return left > 50*time.Minute }, "about an hour"
			}
			waitNextRetry(t, alice, bob, what, want)
			tr, err := alice.c.Trace(w.ctx, bob.addr, id, engine.DirectionOut)
			if err != nil || len(tr.Attempts) != 1 {
				t.Fatalf("Trace: %d attempts (%v), want 1", len(tr.Attempts), err)
			}
		})
	}
}

// refusingRelay reports envelope status and refuses every submit while
// refuse is set, as a relay restarted without its registrations refuses a
// recipient it does not know yet.
type refusingRelay struct {
	*newsRelay
	refuse atomic.Bool
}

var errUnknownRecipient = errors.New("unknown recipient")

func (r *refusingRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return enginetest.SubmitEach(ctx, r.Submit, envs)
}

func (r *refusingRelay) Submit(ctx context.Context, env wire.Envelope) error {
	if r.refuse.Load() {
		return errUnknownRecipient
	}
	return r.newsRelay.Submit(ctx, env)
}

// TestRunRetryAfterRefusal: a retry the relay refused put nothing in the
// mailbox, so it is tried again on the policy's short backoff, not after
// the hour an envelope in the mailbox waits for news; once the relay
// accepts, the message arrives with no key pressed.
func TestRunRetryAfterRefusal(t *testing.T) {
	w := newWorld(t)
	relays := map[engine.Address]*refusingRelay{}
	var relaysMu sync.Mutex
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		r := &refusingRelay{newsRelay: &newsRelay{Endpoint: e}}
		relaysMu.Lock()
		relays[a] = r
		relaysMu.Unlock()
		return r
	}
	alice, bob := w.device("alice/1"), w.device("bob/1")
	relaysMu.Lock()
	relay := relays[alice.addr]
	relaysMu.Unlock()
	alice.c.SetPolicy(engine.Policy{AutoRetry: true, RetryMin: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond})
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})

	relay.refuse.Store(true)
	id, err := alice.c.Send(w.ctx, bob.addr, []byte("refused at first"))
	var notSent *engine.MessageNotSentError
	if !errors.As(err, &notSent) {
		t.Fatalf("Send to a refusing relay: %v, want MessageNotSentError", err)
	}
	runLoop(t, alice)
	runLoop(t, bob)
	waitNextRetry(t, alice, bob, "within RetryMax", func(left time.Duration) bool { return left <= 80*time.Millisecond })
	relay.refuse.Store(false)
	waitEvent(t, alice, "the ACK of the message once the relay accepts", func(e engine.Event) bool {
		return e.Kind == engine.EventReceived && e.Result.Kind == engine.ResultAcknowledgement && e.ID == id && e.Result.Cleared
	})
}
