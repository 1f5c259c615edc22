package relayserver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// BenchmarkRelayThroughput measures envelopes per second through one relay
// (rate limits off) with 100 connected clients in a ring: each submits to
// the next and receives and acknowledges what the previous one sent. An
// envelope counts once its recipient acknowledged it. One run per store: in
// memory, SQLite (synchronous=FULL), and NATS JetStream with one node (R1)
// and three (R3), the nodes in this process, and R3 with the mailboxes over
// three shards (--nats-shards 3). Each store runs twice: "-batch16" clients
// hand the relay 16 envelopes at a time (Conn.SubmitBatch: one SubmitBatch
// message where the relay serves it, as the engine's pump does when several
// are due), the others one Submit at a time. Beside each it reports the
// process's CPU per envelope (clients, relay and NATS nodes together), and
// for the durable stores what their engine alone does (rawSQLiteCommits,
// rawJetStream on the same cluster), with the relay's ratio to it.
//
//	go test -run '^$' -bench RelayThroughput -benchtime 20000x ./transport/relayserver
func BenchmarkRelayThroughput(b *testing.B) {
	lim := Limits{MessageRate: -1, ByteRate: -1, MaxConnectionsPerIP: 1000, MaxUnauthenticatedPerIP: 1000, RegistrationBurst: 1000}
	for _, batch := range []int{1, benchBatch} {
		suffix := ""
		if batch > 1 {
			suffix = fmt.Sprintf("-batch%d", batch)
		}
		b.Run("memory"+suffix, func(b *testing.B) { benchRelay(b, startRelay(b, Config{Limits: lim}), batch) })
		b.Run("sqlite"+suffix, func(b *testing.B) {
			dir := b.TempDir()
			rate := benchRelay(b, startSQLiteRelay(b, dir, Config{Limits: lim}), batch)
			raw, cpu := rawSQLiteCommits(b, dir, b.N)
			b.ReportMetric(raw, "raw-commits/s")
			b.ReportMetric(float64(cpu.Microseconds()), "raw-cpu-µs/commit")
			b.ReportMetric(rate/raw, "ratio")
		})
		for _, run := range []struct{ replicas, shards int }{{1, 1}, {3, 1}, {3, 3}} {
			name := fmt.Sprintf("nats-r%d", run.replicas)
			if run.shards > 1 {
				name += fmt.Sprintf("-shards%d", run.shards)
			}
			n := run.replicas
			b.Run(name+suffix, func(b *testing.B) {
				c := natstest.StartCluster(b, n)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: n, Shards: run.shards, Limits: lim.Limits})
				if err != nil {
					b.Fatal(err)
				}
				r := startStoreRelay(b, "127.0.0.1:0", st, Config{Limits: lim}) // stop closes st
				rate := benchRelay(b, r, batch)
				r.stop()
				raw, cpu := rawJetStream(b, c, n, b.N)
				b.ReportMetric(raw, "raw-msgs/s")
				b.ReportMetric(float64(cpu.Microseconds()), "raw-cpu-µs/msg")
				b.ReportMetric(rate/raw, "ratio")
			})
		}
	}
}

// benchBatch is the batched runs' envelopes per SubmitBatch call.
const benchBatch = 16

// benchRelay runs b.N envelopes through r, batch at a time per client,
// and returns envelopes per second.
func benchRelay(b *testing.B, r *testRelay, batch int) float64 {
	const clients = 100
	devs := make([]*device, clients)
	conns := make([]*transport.Conn, clients)
	for i := range devs {
		devs[i] = newDevice(b, fmt.Sprintf("bench%d/1", i))
		conns[i] = dial(b, r, devs[i])
	}
	body := string(make([]byte, 200)) // a short chat message, encrypted
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var received atomic.Int64
	all := make(chan struct{})
	var recv sync.WaitGroup
	for _, c := range conns {
		recv.Add(1)
		go func() {
			defer recv.Done()
			for {
				ls, err := waitReceive(ctx, c)
				if err != nil {
					return
				}
				if err := c.Release(ctx, rowsOf(ls)); err != nil {
					return
				}
				if received.Add(int64(len(ls))) == int64(b.N) {
					close(all)
				}
			}
		}()
	}

	b.ResetTimer()
	cpu0, start := cpuTime(), time.Now()
	var send sync.WaitGroup
	for i, c := range conns {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		from, to := devs[i], devs[(i+1)%clients]
		send.Add(1)
		go func() {
			defer send.Done()
			for n > 0 {
				k := min(n, batch)
				n -= k
				if k == 1 {
					if err := c.Submit(ctx, envelope(from, to, body)); err != nil {
						b.Errorf("submit: %v", err)
						return
					}
					continue
				}
				envs := make([]wire.Envelope, k)
				for j := range envs {
					envs[j] = envelope(from, to, body)
				}
				for _, err := range c.SubmitBatch(ctx, envs) {
					if err != nil {
						b.Errorf("submit batch: %v", err)
						return
					}
				}
			}
		}()
	}
	send.Wait()
	if b.N > 0 {
		<-all
	}
	elapsed, used := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "envelopes/s")
	b.ReportMetric(float64((used / time.Duration(max(b.N, 1))).Microseconds()), "cpu-µs/env")
	cancel()
	recv.Wait()
	return rate
}
