package relayserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// waitStatuses collects the envelope statuses c hears until there are n.
func waitStatuses(tb testing.TB, c *transport.Conn, n int) []wire.EnvelopeStatus {
	tb.Helper()
	ctx := ctxT(tb)
	var got []wire.EnvelopeStatus
	for {
		got = append(got, c.EnvelopeStatuses()...)
		if len(got) >= n {
			return got
		}
		select {
		case <-c.Wake():
		case <-ctx.Done():
			tb.Fatalf("heard %d envelope statuses (%v), want %d", len(got), got, n)
		}
	}
}

// TestEnvelopeStatusTaken: the relay announces the feature after AuthOK, and
// once the recipient acknowledges a row, the envelope's sender, whom the
// recipient accepts, hears it was taken, on every backend and across two
// relays sharing a NATS store. The recipient and a third party hear nothing.
func TestEnvelopeStatusTaken(t *testing.T) {
	type pair struct{ a, b *testRelay } // the sender's relay and the recipient's
	backends := []struct {
		name  string
		start func(t *testing.T) pair
	}{
		{"memory", func(t *testing.T) pair { r := startRelay(t, Config{}); return pair{r, r} }},
		{"sqlite", func(t *testing.T) pair { r := startSQLiteRelay(t, t.TempDir(), Config{}); return pair{r, r} }},
		{"nats, one relay", func(t *testing.T) pair {
			// The relay hears its own signal: the sender is told once.
			c := natstest.StartCluster(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := startStoreRelay(t, "127.0.0.1:0", st, Config{})
			return pair{r, r}
		}},
		{"nats, two relays", func(t *testing.T) pair {
			c := natstest.StartCluster(t, 1)
			open := func() *testRelay {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return startStoreRelay(t, "127.0.0.1:0", st, Config{})
			}
			return pair{open(), open()}
		}},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			p := be.start(t)
			alice, bob, carol := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "carol/1")
			cb := dial(t, p.b, bob)
			ca := dial(t, p.a, alice)
			cc := dial(t, p.a, carol)
			// bob writes to alice first: she is no stranger to him.
			mustSubmit(t, cb, envelope(bob, alice, "hello alice"))
			e1, e2 := envelope(alice, bob, "one"), envelope(alice, bob, "two")
			mustSubmit(t, ca, e1)
			mustSubmit(t, ca, e2)
			// Features come before any reply on a connection.
			if f, ok := ca.RelayFeatures(); !ok || !f.Has(wire.FeatureEnvelopeStatus|wire.FeatureEnvelopeLifetime) {
				t.Fatalf("RelayFeatures after a reply: %v, %v; want envelope status and lifetime", f, ok)
			}
			if d, ok := ca.EnvelopeLifetime(); !ok || d != DefaultEnvelopeLifetime {
				t.Fatalf("EnvelopeLifetime after a reply: %v, %v; want the default %v", d, ok, DefaultEnvelopeLifetime)
			}
			got := receiveN(t, cb, 2)
			if err := cb.Release(ctxT(t), []uint64{got[0].Row}); err != nil {
				t.Fatal(err)
			}
			st := waitStatuses(t, ca, 1)
			if want := (wire.EnvelopeStatus{EnvelopeID: e1.ID, State: wire.EnvelopeTaken}); !slices.Equal(st, []wire.EnvelopeStatus{want}) {
				t.Fatalf("alice heard %v, want %v", st, want)
			}
			if err := cb.Release(ctxT(t), []uint64{got[1].Row, got[0].Row}); err != nil {
				t.Fatal(err)
			}
			st = waitStatuses(t, ca, 1)
			if want := (wire.EnvelopeStatus{EnvelopeID: e2.ID, State: wire.EnvelopeTaken}); !slices.Equal(st, []wire.EnvelopeStatus{want}) {
				t.Fatalf("alice heard %v, want only %v (a row acknowledged twice is told once)", st, want)
			}
			// A round trip on each of the others' connections orders
			// anything the relay pushed them before its reply.
			mustSubmit(t, cc, envelope(carol, bob, "sync"))
			mustSubmit(t, cb, envelope(bob, carol, "sync"))
			if s := cb.EnvelopeStatuses(); len(s) != 0 {
				t.Errorf("the recipient heard %v", s)
			}
			if s := cc.EnvelopeStatuses(); len(s) != 0 {
				t.Errorf("a third party heard %v", s)
			}
			// Counted by the relay that saw the acknowledgement.
			p.b.waitMetric(t, `parley_relay_envelope_status_total{state="taken"}`, 2)
		})
	}
}

// TestStatusTellsStrangersNothing (issue 30, finding 4): bob accepts alice
// and eve (he wrote to each), then blocks eve; mallory, from 127.0.0.2, is a
// stranger to him, and eve sends from 127.0.0.3. Envelopes bob takes tell
// alice taken and mallory nothing; envelopes that wait unread until they
// expire tell alice expired and mallory nothing; eve, blocked, hears
// nothing either way, as a stranger whose envelopes wait unread. On memory,
// SQLite and NATS.
func TestStatusTellsStrangersNothing(t *testing.T) {
	lim := Limits{EnvelopeLifetime: time.Second, SweepInterval: 50 * time.Millisecond}
	for _, be := range []struct {
		name  string
		start func(t *testing.T) *testRelay
	}{
		{"memory", func(t *testing.T) *testRelay { return startRelay(t, Config{Limits: lim}) }},
		{"sqlite", func(t *testing.T) *testRelay { return startSQLiteRelay(t, t.TempDir(), Config{Limits: lim}) }},
		{"nats", func(t *testing.T) *testRelay {
			c := natstest.StartCluster(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Limits: lim.StoreLimits()})
			if err != nil {
				t.Fatal(err)
			}
			return startStoreRelay(t, "127.0.0.1:0", st, Config{Limits: lim})
		}},
	} {
		t.Run(be.name, func(t *testing.T) {
			r := be.start(t)
			alice, bob, eve, mallory := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "eve/1"), newDevice(t, "mallory/1")
			ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
			cm, ce := mustDialFrom(t, r, mallory, "127.0.0.2"), mustDialFrom(t, r, eve, "127.0.0.3")
			for _, to := range []struct {
				d *device
				c *transport.Conn
			}{{alice, ca}, {eve, ce}} {
				mustSubmit(t, cb, envelope(bob, to.d, "hello"))
				if err := to.c.Release(ctxT(t), rowsOf(receiveN(t, to.c, 1))); err != nil {
					t.Fatal(err)
				}
			}
			if err := cb.BlockSender(ctxT(t), eve.addr, true); err != nil {
				t.Fatal(err)
			}
			// quiet checks that c heard no status, a moment after the
			// victim heard hers (statuses of one sweep or acknowledgement
			// are told together).
			quiet := func(who string, c *transport.Conn) {
				t.Helper()
				time.Sleep(200 * time.Millisecond)
				if st := c.EnvelopeStatuses(); len(st) != 0 {
					t.Errorf("%s heard %v, want nothing", who, st)
				}
			}

			// Taken.
			ea, em := envelope(alice, bob, "from alice"), envelope(mallory, bob, "from mallory")
			mustSubmit(t, ca, ea)
			mustSubmit(t, cm, em)
			mustSubmit(t, ce, envelope(eve, bob, "from eve, blocked"))
			got := receiveN(t, cb, 2)
			if p := payloads(t, got); p[0] != "from alice" || p[1] != "from mallory" {
				t.Fatalf("bob received %q", p)
			}
			if err := cb.Release(ctxT(t), rowsOf(got)); err != nil {
				t.Fatal(err)
			}
			if st := waitStatuses(t, ca, 1); st[0] != (wire.EnvelopeStatus{EnvelopeID: ea.ID, State: wire.EnvelopeTaken}) {
				t.Fatalf("alice heard %v, want her envelope taken", st)
			}
			quiet("mallory, a stranger, of an envelope taken", cm)
			quiet("eve, blocked", ce)

			// Expired: bob goes away and nothing is read.
			cb.Close()
			ea, em = envelope(alice, bob, "unread"), envelope(mallory, bob, "unread")
			mustSubmit(t, ca, ea)
			mustSubmit(t, cm, em)
			mustSubmit(t, ce, envelope(eve, bob, "unread, blocked"))
			if st := waitStatuses(t, ca, 1); st[0] != (wire.EnvelopeStatus{EnvelopeID: ea.ID, State: wire.EnvelopeExpired}) {
				t.Fatalf("alice heard %v, want her envelope expired", st)
			}
			quiet("mallory, a stranger, of an envelope expired", cm)
			quiet("eve, blocked", ce)
			r.waitMetric(t, "parley_relay_envelopes_expired_total", 2)
			if got := r.metric(t, `parley_relay_envelope_status_total{state="expired"}`); got != 1 {
				t.Errorf("expired statuses told: %v, want 1 (alice's)", got)
			}
		})
	}
}
