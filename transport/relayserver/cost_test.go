package relayserver

import (
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestRequestsPayByCost (finding 4): an AckRows naming 256 rows that do not
// exist costs 256 message tokens, not one: with a bucket of 300 (refilled
// at one a second) a client from 127.0.0.2 gets one through of ten, the
// rest refused and counted, while a client from 127.0.0.1, with a bucket of
// its own, sends and receives.
func TestRequestsPayByCost(t *testing.T) {
	for _, be := range []struct {
		name  string
		start func(t *testing.T, cfg Config) *testRelay
	}{
		{"memory", func(t *testing.T, cfg Config) *testRelay { return startRelay(t, cfg) }},
		{"sqlite", func(t *testing.T, cfg Config) *testRelay { return startSQLiteRelay(t, t.TempDir(), cfg) }},
	} {
		t.Run(be.name, func(t *testing.T) {
			r := be.start(t, Config{Limits: Limits{MessageRate: 1, MessageBurst: 300}})
			mallory := newDevice(t, "mallory/1")
			c := dialRawWith(t, r, from("127.0.0.2"), nil)
			c.login(mallory)
			bogus := make([]uint64, wire.MaxAckRows)
			for i := range bogus {
				bogus[i] = uint64(1<<40 + i)
			}
			done := 0
			for i := range 10 {
				req := uint32(10 + i)
				c.send(req, wire.AckRows{Rows: bogus})
				switch m := c.reply(req).(type) {
				case wire.Done:
					done++
				case wire.Error:
					if m.Code != wire.ErrorRateLimited {
						t.Fatalf("AckRows %d: %v, want done or rate limited", i, m)
					}
				default:
					t.Fatalf("AckRows %d: %s", i, m.RelayKind())
				}
			}
			if done != 1 {
				t.Fatalf("%d of 10 AckRows of 256 rows served, want 1 (the bucket holds 300 tokens)", done)
			}
			if n := r.metric(t, `parley_relay_rate_limited_total{bucket="messages"}`); n < 9 {
				t.Fatalf("rate-limited messages: %v, want at least 9", n)
			}
			alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
			ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
			mustSubmit(t, ca, envelope(alice, bob, "hi"))
			got := receiveN(t, cb, 1)
			if err := cb.Release(ctxT(t), rowsOf(got)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
