package relayserver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The batch tests: SubmitBatch (issue 32) and the pipelined appends of a
// connection's envelopes (issue 37).

// waitFeatures waits until c heard the relay's features, and returns them.
func waitFeatures(tb testing.TB, c *transport.Conn) wire.FeatureSet {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if f, ok := c.RelayFeatures(); ok {
			return f
		}
		if time.Now().After(deadline) {
			tb.Fatal("the relay's features never came")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantRefused checks that err is the relay's refusal for reason.
func wantRefused(tb testing.TB, what string, err error, reason wire.RefuseReason) {
	tb.Helper()
	var re *transport.RefusedError
	if !errors.As(err, &re) || re.Reason != reason {
		tb.Errorf("%s: %v, want refused (%s)", what, err, reason)
	}
}

// TestSubmitBatchMixed: one SubmitBatch whose envelopes meet every fate a
// Submit can: stored, refused for an unknown recipient, silently dropped
// for a recipient that blocks the sender (answered accepted), refused over
// the sender's share of a mailbox. Each gets its own answer, the others
// are stored in order, on the memory and the SQLite store alike, and the
// submit metrics count each envelope.
func TestSubmitBatchMixed(t *testing.T) {
	for _, backend := range []string{"memory", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			cfg := Config{Limits: Limits{Limits: relaystore.Limits{SenderEnvelopes: 2}}}
			var r *testRelay
			if backend == "sqlite" {
				r = startSQLiteRelay(t, t.TempDir(), cfg)
			} else {
				r = startRelay(t, cfg)
			}
			alice, bob, carol, nobody := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "carol/1"), newDevice(t, "nobody/1")
			ca, cb, cc := dial(t, r, alice), dial(t, r, bob), dial(t, r, carol)
			if err := cc.BlockSender(ctxT(t), alice.addr, true); err != nil {
				t.Fatal(err)
			}
			if f := waitFeatures(t, ca); !f.Has(wire.FeatureSubmitBatch) {
				t.Fatalf("the relay announces %s, without submit batch", f)
			}
			envs := []wire.Envelope{
				envelope(alice, bob, "one"),
				envelope(alice, nobody, "lost"),
				envelope(alice, carol, "blocked"),
				envelope(alice, bob, "two"),
				envelope(alice, bob, "three"), // alice's third in bob's mailbox
			}
			errs := ca.SubmitBatch(ctxT(t), envs)
			if errs[0] != nil || errs[2] != nil || errs[3] != nil {
				t.Fatalf("stored and blocked envelopes: %v, want accepted", errs)
			}
			wantRefused(t, "to an unregistered recipient", errs[1], wire.RefuseUnknownRecipient)
			wantRefused(t, "over the sender's share", errs[4], wire.RefuseSenderQuota)
			if got := payloads(t, receiveN(t, cb, 2)); strings.Join(got, ",") != "one,two" {
				t.Fatalf("bob received %q, want one, two in order", got)
			}
			expectNothing(t, cc, 100*time.Millisecond)
			for series, want := range map[string]float64{
				"parley_relay_submit_batch_envelopes_count":                        1,
				"parley_relay_submit_batch_envelopes_sum":                          5,
				"parley_relay_envelopes_accepted_total":                            2,
				"parley_relay_envelopes_blocked_total":                             1,
				`parley_relay_envelopes_refused_total{reason="unknown_recipient"}`: 1,
				`parley_relay_envelopes_refused_total{reason="sender_share"}`:      1,
				`parley_relay_limited_total{limit="sender_share"}`:                 1,
				"parley_relay_append_group_envelopes_sum":                          4,
			} {
				if got := r.metric(t, series); got != want {
					t.Errorf("%s = %v, want %v", series, got, want)
				}
			}
		})
	}
}

// TestSubmitBatchOversized: a batch over the count or the byte bound (made
// by hand: the encoder refuses both) is a bad request, and the
// connection's next requests are served as usual.
func TestSubmitBatchOversized(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	dial(t, r, bob)
	c := dialRaw(t, r)
	c.login(alice)
	env, err := wire.EncodeEnvelope(envelope(alice, bob, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	batch := func(req uint32, envs ...[]byte) []byte {
		b := []byte{wire.RelayVersion, byte(wire.RelaySubmitBatch), 0, 0, 0, byte(req), byte(len(envs))}
		for _, e := range envs {
			b = append(b, byte(len(e)>>24), byte(len(e)>>16), byte(len(e)>>8), byte(len(e)))
			b = append(b, e...)
		}
		return b
	}
	many := make([][]byte, wire.MaxSubmitBatchEnvelopes+1)
	for i := range many {
		many[i] = env
	}
	c.sendBytes(batch(2, many...))
	if e := c.expectError(2, wire.ErrorBadRequest); !strings.Contains(e.Message, "envelope count 65") {
		t.Errorf("a batch of 65: %q, want it to say the count", e.Message)
	}
	big := make([]byte, wire.MaxSubmitBatchBytes)
	c.sendBytes(batch(3, big, env))
	if e := c.expectError(3, wire.ErrorBadRequest); !strings.Contains(e.Message, "bytes in all") {
		t.Errorf("a batch over the byte bound: %q, want it to say so", e.Message)
	}
	c.send(4, wire.Submit{Envelope: env})
	if m, ok := c.reply(4).(wire.Accepted); !ok {
		t.Fatalf("a Submit after the oversized batches: %+v, want accepted", m)
	}
	c.send(5, wire.SubmitBatch{Envelopes: [][]byte{env, env}})
	res, ok := c.reply(5).(wire.BatchResults)
	if !ok || len(res.Results) != 2 || res.Results[0].Outcome != wire.SubmitAccepted || res.Results[1].Outcome != wire.SubmitAccepted {
		t.Fatalf("a batch of 2 after them: %+v, want both accepted", res)
	}
}

// TestSubmitBatchHostileNeighbour: mallory, from 127.0.0.2, floods bob
// with full batches as fast as the relay answers. The message bucket
// refuses what it cannot pay for item by item, and the room bob keeps for
// strangers' IPs caps what mallory stores; alice, on 127.0.0.1, submits
// meanwhile and every envelope of hers is stored and delivered in order.
func TestSubmitBatchHostileNeighbour(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{
		Limits:       relaystore.Limits{MailboxEnvelopes: 400},
		MessageRate:  200,
		MessageBurst: 100,
	}})
	alice, bob, mallory := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "mallory/1")
	cb := dial(t, r, bob)
	cm := mustDialFrom(t, r, mallory, "127.0.0.2")
	ca := dial(t, r, alice)
	waitFeatures(t, cm)
	done := make(chan [3]int)
	go func() {
		var n [3]int // accepted, refused over a quota, rate limited
		for range 10 {
			envs := make([]wire.Envelope, wire.MaxSubmitBatchEnvelopes)
			for i := range envs {
				envs[i] = envelope(mallory, bob, "spam")
			}
			for _, err := range cm.SubmitBatch(ctxT(t), envs) {
				var re *transport.RefusedError
				var se *transport.ServerError
				switch {
				case err == nil:
					n[0]++
				case errors.As(err, &re) && re.Reason == wire.RefuseRateLimited,
					errors.As(err, &se) && se.Code == wire.ErrorRateLimited:
					n[2]++
				case errors.As(err, &re):
					n[1]++
				}
			}
		}
		done <- n
	}()
	var want []string
	for i := range 20 {
		e := envelope(alice, bob, fmt.Sprint("alice ", i))
		mustSubmit(t, ca, e)
		want = append(want, string(e.Payload))
	}
	n := <-done
	t.Logf("mallory's 640: %d stored, %d refused over a quota, %d rate limited", n[0], n[1], n[2])
	// The room for strangers is half of bob's 400, an IP's share of it a
	// quarter of that.
	if n[0] > 50 || n[1] == 0 || n[2] == 0 {
		t.Errorf("mallory's 640: %d stored, %d refused over a quota, %d rate limited; want at most 50 stored, some refused, some rate limited", n[0], n[1], n[2])
	}
	var got []string
	for _, p := range payloads(t, receiveAtLeast(t, cb, n[0]+20)) {
		if strings.HasPrefix(p, "alice") {
			got = append(got, p)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("bob received alice's %q, want %q", got, want)
	}
}

// TestSubmitBatchOldRelay: against a relay that does not announce the
// feature, SubmitBatch falls back to one Submit per envelope, each
// answered as before, and the relay never sees a batch.
func TestSubmitBatchOldRelay(t *testing.T) {
	r := startRelay(t, Config{withoutSubmitBatch: true})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	if f := waitFeatures(t, ca); f.Has(wire.FeatureSubmitBatch) {
		t.Fatalf("the old relay announces %s", f)
	}
	envs := []wire.Envelope{envelope(alice, bob, "a"), envelope(alice, newDevice(t, "nobody/1"), "b"), envelope(alice, bob, "c")}
	errs := ca.SubmitBatch(ctxT(t), envs)
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("SubmitBatch to an old relay: %v", errs)
	}
	wantRefused(t, "to an unregistered recipient", errs[1], wire.RefuseUnknownRecipient)
	if got := payloads(t, receiveN(t, cb, 2)); strings.Join(got, ",") != "a,c" {
		t.Fatalf("bob received %q", got)
	}
	if got := r.metric(t, "parley_relay_submit_batch_envelopes_count"); got != 0 {
		t.Fatalf("the old relay saw %v batches", got)
	}
}

// TestPipelinedSubmits: Submits written without waiting are appended
// several at a time (the append group histogram says so on a store that
// takes its time), answered each, stored in the order sent; a request of
// another kind written after them is answered after every one of them.
func TestPipelinedSubmits(t *testing.T) {
	r := startSQLiteRelay(t, t.TempDir(), Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	cb := dial(t, r, bob)
	c := dialRaw(t, r)
	c.login(alice)
	const n = 200
	var want []string
	for i := range n {
		e := envelope(alice, bob, fmt.Sprint("m", i))
		b, err := wire.EncodeEnvelope(e)
		if err != nil {
			t.Fatal(err)
		}
		c.send(uint32(10+i), wire.Submit{Envelope: b})
		want = append(want, string(e.Payload))
	}
	c.send(5, wire.FetchBundle{Address: bob.addr.String()})
	answered := 0
	for answered < n {
		req, m := c.read()
		switch {
		case req == 5:
			t.Fatalf("the fetch was answered after %d of the %d submits before it", answered, n)
		case m.RelayKind() == wire.RelayAccepted:
			answered++
		default:
			t.Fatalf("reply %d: %+v, want accepted", req, m)
		}
	}
	c.reply(5) // whatever it says, after them
	if got := payloads(t, receiveN(t, cb, n)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("bob received the pipelined envelopes out of order:\n%q", got)
	}
	groups := r.metric(t, "parley_relay_append_group_envelopes_count")
	if sum := r.metric(t, "parley_relay_append_group_envelopes_sum"); sum != n || groups >= n {
		t.Errorf("%v envelopes in %v appends, want %d in fewer", sum, groups, n)
	}
}
