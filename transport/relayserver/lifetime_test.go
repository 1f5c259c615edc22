package relayserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// fillFrom has one attacker IP register senders and sinks of its own (the
// sinks connect once, to register, and never again) and submit junk to the
// sinks until the relay refuses it; it returns the senders' connections
// and how many envelopes were stored.
func fillFrom(t *testing.T, r *testRelay, ip string, junk string) ([]*transport.Conn, int) {
	t.Helper()
	var sinks []*device
	for i := range 4 {
		d := newDevice(t, fmt.Sprintf("sink%s-%d/1", strings.ReplaceAll(ip, ".", "-"), i))
		mustDialFrom(t, r, d, ip).Close()
		sinks = append(sinks, d)
	}
	var senders []*transport.Conn
	var devs []*device
	for i := range 4 {
		d := newDevice(t, fmt.Sprintf("flood%s-%d/1", strings.ReplaceAll(ip, ".", "-"), i))
		senders = append(senders, mustDialFrom(t, r, d, ip))
		devs = append(devs, d)
	}
	stored := 0
	for i := 0; ; i++ {
		err := senders[i%4].Submit(ctxT(t), envelope(devs[i%4], sinks[(i/4)%4], junk))
		if err == nil {
			stored++
			continue
		}
		var re *transport.RefusedError
		if !errors.As(err, &re) || re.Reason != wire.RefuseStoreFull {
			t.Fatalf("%s after %d envelopes: %v, want refused: relay storage full", ip, stored, err)
		}
		return senders, stored
	}
}

// TestStrangersLeaveRoomForReaders (finding 1): four IPs, 127.0.0.2 to
// 127.0.0.5, register sinks they never read and fill them until the relay
// refuses them (a scaled relay: 8 MiB in all, 2 MiB per IP, the default
// reserve of a quarter). They hold at most the 6 MiB outside the reserve;
// a client from 127.0.0.1 then still registers new addresses, sends and
// receives. The bound: its envelopes use the reserve while their
// recipients read and its IP holds under a sixteenth of the reserve
// (128 KiB), which a recipient that acknowledges keeps it under.
func TestStrangersLeaveRoomForReaders(t *testing.T) {
	lim := Limits{Limits: relaystore.Limits{TotalBytes: 8 << 20, IPBytes: 2 << 20}, MessageRate: -1, ByteRate: -1}
	total := int64(8 << 20)
	if fullSize() {
		// make abuse: the default 1 GiB in all, 256 MiB per IP.
		lim.Limits, total = relaystore.Limits{}, relaystore.DefaultTotalBytes
	}
	for _, be := range []struct {
		name  string
		start func(t *testing.T) *testRelay
	}{
		{"memory", func(t *testing.T) *testRelay { return startRelay(t, Config{Limits: lim}) }},
		{"sqlite", func(t *testing.T) *testRelay { return startSQLiteRelay(t, t.TempDir(), Config{Limits: lim}) }},
	} {
		t.Run(be.name, func(t *testing.T) {
			r := be.start(t)
			junk := strings.Repeat("x", 60<<10)
			if fullSize() {
				junk = strings.Repeat("x", 250<<10)
			}
			for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
				fillFrom(t, r, ip, junk)
			}
			// A sink's connection may still be closing when its IP floods
			// it, and count as a reader's: then that IP's sixteenth of the
			// reserve (128 KiB) goes too.
			outside, slack := total-total/4, total/4/16
			if held := r.metric(t, "parley_relay_mailbox_bytes"); held > float64(outside+slack) {
				t.Fatalf("strangers' sinks hold %v bytes, want at most the %d outside the reserve", held, outside)
			}
			if n := r.metric(t, `parley_relay_limited_total{limit="reserve"}`); n < 1 {
				t.Fatalf("no refusal counted against the reserve")
			}
			alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
			ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
			// 10 rounds: with alice and bob, 12 registrations, within the
			// 20 an IP may make an hour.
			for i := range 10 {
				// A new address registers and reads too.
				carol := newDevice(t, fmt.Sprintf("carol%d/1", i))
				cc := mustDialFrom(t, r, carol, "127.0.0.1")
				mustSubmit(t, ca, envelope(alice, bob, strings.Repeat("b", 10<<10)))
				mustSubmit(t, ca, envelope(alice, carol, "hello carol"))
				for _, c := range []*transport.Conn{cb, cc} {
					got := receiveN(t, c, 1)
					if err := c.Release(ctxT(t), rowsOf(got)); err != nil {
						t.Fatal(err)
					}
				}
				cc.Close()
			}
		})
	}
}

// TestEnvelopesExpire (finding 1): envelopes nobody reads go after their
// lifetime (1 s here), on every backend; each is counted, its sender's live
// connection hears it expired (the sink wrote to mallory once, so mallory
// is no stranger: a stranger hears nothing, TestStatusTellsStrangersNothing),
// and every quota is free again.
func TestEnvelopesExpire(t *testing.T) {
	lim := Limits{EnvelopeLifetime: time.Second, SweepInterval: 50 * time.Millisecond, MessageRate: -1, ByteRate: -1}
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
			sink, mallory := newDevice(t, "sink/1"), newDevice(t, "mallory/1")
			cs := mustDialFrom(t, r, sink, "127.0.0.2")
			cm := mustDialFrom(t, r, mallory, "127.0.0.2")
			mustSubmit(t, cs, envelope(sink, mallory, "hello mallory"))
			if err := cm.Release(ctxT(t), rowsOf(receiveN(t, cm, 1))); err != nil {
				t.Fatal(err)
			}
			cs.Close()
			const n = 5
			sent := map[wire.EnvelopeID]bool{}
			for i := range n {
				e := envelope(mallory, sink, fmt.Sprint("junk ", i))
				mustSubmit(t, cm, e)
				sent[e.ID] = true
			}
			st := waitStatuses(t, cm, n)
			for _, s := range st {
				if !sent[s.EnvelopeID] || s.State != wire.EnvelopeExpired {
					t.Fatalf("mallory heard %v, want %d of its envelopes expired", st, n)
				}
			}
			r.waitMetric(t, "parley_relay_envelopes_expired_total", n)
			r.waitMetricAtMost(t, "parley_relay_mailbox_envelopes", 0)
		})
	}
}

// TestEnvelopeLifetimeAnnounced: right after Features the relay announces
// its envelope lifetime (FeatureEnvelopeLifetime and wire.EnvelopeLifetime,
// whole seconds rounded down), so that a client does not believe an expiry
// reported before it; a lifetime under a second is not announced.
func TestEnvelopeLifetimeAnnounced(t *testing.T) {
	for _, tt := range []struct {
		lifetime, want time.Duration
	}{
		{90*time.Minute + 500*time.Millisecond, 90 * time.Minute},
		{time.Second, time.Second},
		{500 * time.Millisecond, 0},
	} {
		t.Run(tt.lifetime.String(), func(t *testing.T) {
			r := startRelay(t, Config{Limits: Limits{EnvelopeLifetime: tt.lifetime}})
			alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
			dial(t, r, bob)
			c := dial(t, r, alice)
			mustSubmit(t, c, envelope(alice, bob, "x")) // a reply: the pushes came before it
			f, _ := c.RelayFeatures()
			d, ok := c.EnvelopeLifetime()
			if f.Has(wire.FeatureEnvelopeLifetime) != (tt.want > 0) || ok != (tt.want > 0) || d != tt.want {
				t.Fatalf("features %v, lifetime %v (%v); want %v", f, d, ok, tt.want)
			}
		})
	}
}
