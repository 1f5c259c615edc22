package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
)

// Durable benchmarks: real profiles on disk (WAL, synchronous=FULL), the
// in-process relay. Each reports the durable transactions per message
// ("tx/msg"), which is what bounds throughput on a real disk.

// BenchmarkSend: one Send per message, one transaction each.
func BenchmarkSend(b *testing.B) { benchSend(b, 1) }

// BenchmarkSendBatch64: messages sent 64 at a time with SendBatch (group
// commit).
func BenchmarkSendBatch64(b *testing.B) { benchSend(b, 64) }

func benchSend(b *testing.B, batch int) {
	w := newWorld(b)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "session set-up")
	body := make([]byte, 1024)
	reqs := make([]engine.SendRequest, batch)
	for i := range reqs {
		reqs[i] = engine.SendRequest{Peer: bob.addr, Body: body}
	}
	b.ResetTimer()
	tx := 0
	for sent := 0; sent < b.N; sent += batch {
		if _, err := alice.c.SendBatch(w.ctx, reqs); err != nil {
			b.Fatal(err)
		}
		tx++
	}
	b.ReportMetric(float64(tx)/float64(b.N), "tx/msg")
}

// BenchmarkReceiveCommit: the recipient stages, processes and commits each
// message on its own (three transactions), as a user committing one by one.
func BenchmarkReceiveCommit(b *testing.B) { benchReceive(b, 1) }

// BenchmarkReceiveCommitBatch64: the same for 64 messages at a time: one
// stage, one processing and one commit transaction per batch.
func BenchmarkReceiveCommitBatch64(b *testing.B) { benchReceive(b, 64) }

func benchReceive(b *testing.B, batch int) {
	w := newWorld(b)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "session set-up")
	bob.sync()
	bob.commitAll()
	body := make([]byte, 1024)
	tx := 0
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		b.StopTimer()
		reqs := make([]engine.SendRequest, batch)
		for i := range reqs {
			reqs[i] = engine.SendRequest{Peer: bob.addr, Body: body}
		}
		if _, err := alice.c.SendBatch(w.ctx, reqs); err != nil {
			b.Fatal(err)
		}
		ep := w.net.Endpoint(bob.addr)
		leased, _ := ep.Receive(w.ctx)
		b.StartTimer()
		if _, err := bob.c.Stage(w.ctx, leased); err != nil {
			b.Fatal(err)
		}
		rows := make([]uint64, len(leased))
		for i, l := range leased {
			rows[i] = l.Row
		}
		ep.Release(w.ctx, rows)
		res, err := bob.c.ProcessStaged(w.ctx)
		if err != nil {
			b.Fatal(err)
		}
		var fin []engine.FinalizeRequest
		for _, r := range res {
			if r.Kind == engine.ResultDelivery {
				fin = append(fin, engine.FinalizeRequest{Sender: r.Sender, ID: r.ID, Outcome: engine.OutcomeCommitted})
			}
		}
		if _, err := bob.c.FinalizeBatch(w.ctx, fin); err != nil {
			b.Fatal(err)
		}
		tx += 3
	}
	b.ReportMetric(float64(tx)/float64(b.N), "tx/msg")
}
