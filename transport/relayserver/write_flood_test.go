package relayserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// submitLatencies submits n envelopes from c, one at a time, and returns
// how long each took to be accepted, sorted.
func submitLatencies(t *testing.T, c *transport.Conn, from, to *device, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		mustSubmit(t, c, envelope(from, to, "ping"))
		out = append(out, time.Since(start))
	}
	slices.Sort(out)
	return out
}

func quantile(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }

// floodBlocks has c block and unblock a sender as fast as the relay
// answers, 32 requests in flight, until ctx ends, and counts the changes
// the relay made and those it refused as rate limited.
func floodBlocks(ctx context.Context, c *raw, done, limited *atomic.Int64) {
	req := uint32(10)
	for ctx.Err() == nil {
		first := req
		for i := range 32 {
			b, _ := wire.EncodeRelay(req, wire.SenderBlock{Sender: "victim/1", Blocked: i%2 == 0})
			c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if c.ws.WriteMessage(websocket.BinaryMessage, b) != nil {
				return
			}
			req++
		}
		for range req - first {
			_, m, err := c.next()
			if err != nil {
				return
			}
			switch m := m.(type) {
			case wire.Done:
				done.Add(1)
			case wire.Error:
				if m.Code == wire.ErrorRateLimited {
					limited.Add(1)
				}
			}
		}
	}
}

// TestSenderBlockFlood (issue 30, finding 5): 48 connections from
// 127.0.0.2 (12 addresses, 4 each) send SenderBlock as fast as the relay
// answers, on SQLite and NATS. The changes pay from a bucket per address
// and per IP, so the relay makes at most the IP's burst and rate of them
// (on SQLite they also share the group commit with the appends), and the
// submits of a client from 127.0.0.1 keep their usual latency: p50 and p99
// under the flood within 3 times those measured before it, plus 10 and
// 25 ms of slack for a loaded machine. (Before, 48 connections made about
// 3,300 transactions a second and the victim's p99 went from 4.5 to
// 68-98 ms.) 1.5 s of flood here, with the latencies logged and the
// bound on changes judged; 10 s with PARLEY_ABUSE_FULL=1 (make abuse),
// where the latencies are judged too, except under the race detector.
func TestSenderBlockFlood(t *testing.T) {
	window, n := 1500*time.Millisecond, 100
	if fullSize() {
		window, n = 10*time.Second, 500
	}
	for _, be := range []struct {
		name  string
		start func(t *testing.T) *testRelay
	}{
		{"sqlite", func(t *testing.T) *testRelay { return startSQLiteRelay(t, t.TempDir(), Config{}) }},
		{"nats", func(t *testing.T) *testRelay {
			c := natstest.StartCluster(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return startStoreRelay(t, "127.0.0.1:0", st, Config{})
		}},
	} {
		t.Run(be.name, func(t *testing.T) {
			r := be.start(t)
			alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
			ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
			mustSubmit(t, cb, envelope(bob, alice, "hello")) // alice is no stranger
			// bob reads his mail as it comes.
			readCtx, stopReading := context.WithCancel(context.Background())
			read := make(chan struct{})
			go func() {
				defer close(read)
				for {
					ls, err := waitReceive(readCtx, cb)
					if err != nil {
						return
					}
					if cb.Release(readCtx, rowsOf(ls)) != nil {
						return
					}
				}
			}()
			defer func() { stopReading(); <-read }()
			submitLatencies(t, ca, alice, bob, 20) // warm up
			base := submitLatencies(t, ca, alice, bob, n)

			var conns []*raw
			for i := range 12 {
				d := newDevice(t, fmt.Sprintf("flood%d/1", i))
				for range 4 {
					c := dialRawWith(t, r, from("127.0.0.2"), nil)
					c.login(d)
					conns = append(conns, c)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			var done, limited atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for _, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					floodBlocks(ctx, c, &done, &limited)
				}()
			}
			var under []time.Duration
			for ctx.Err() == nil {
				under = append(under, submitLatencies(t, ca, alice, bob, 10)...)
				time.Sleep(10 * time.Millisecond) // within alice's own message bucket
			}
			wg.Wait()
			elapsed := time.Since(start)
			for _, c := range conns {
				c.ws.Close()
			}
			slices.Sort(under)
			lim, _ := Limits{}.withDefaults()
			t.Logf("%d block changes made, %d refused in %v; submits p50 %v, p99 %v before; %v, %v during (%d)",
				done.Load(), limited.Load(), elapsed.Round(time.Millisecond), quantile(base, 0.5), quantile(base, 0.99),
				quantile(under, 0.5), quantile(under, 0.99), len(under))
			if most := float64(lim.IPWriteBurst) + lim.IPWriteRate*elapsed.Seconds() + 1; float64(done.Load()) > most {
				t.Errorf("%d block changes made from one IP, want at most %.0f (its burst and rate)", done.Load(), most)
			}
			if limited.Load() == 0 {
				t.Errorf("no change was refused")
			}
			if raceEnabled || !fullSize() {
				// The race detector's latencies are not the relay's, and a
				// 1.5 s window on a machine busy with other tests judges
				// the machine: the latencies are judged by make abuse.
				return
			}
			if got, most := quantile(under, 0.5), 3*quantile(base, 0.5)+10*time.Millisecond; got > most {
				t.Errorf("the victim's p50 under the flood is %v, want at most %v", got, most)
			}
			if got, most := quantile(under, 0.99), 3*quantile(base, 0.99)+25*time.Millisecond; got > most {
				t.Errorf("the victim's p99 under the flood is %v, want at most %v", got, most)
			}
		})
	}
}
