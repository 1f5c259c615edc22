package relayserver

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// cpuTime is the user and system CPU this process has used so far: the
// clients, the relay and the NATS nodes of a benchmark all run in it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawJetStream is what JetStream alone does on cluster c with n messages
// of 300 bytes: 100 publishers each waiting for its publish's
// acknowledgement, one pull consumer fetching and acknowledging them, a
// work-queue stream on file storage with replicas replicas. It returns
// messages per second and the process's CPU per message. The benchmark
// runs it beside the relay so that both figures come from one session.
func rawJetStream(b *testing.B, c *natstest.Cluster, replicas, n int) (rate float64, cpu time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	nc, err := nats.Connect(c.URLs()[0])
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	var st jetstream.Stream
	for {
		st, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.*"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: replicas})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			b.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond) // a cluster still electing
	}
	defer js.DeleteStream(context.Background(), "RAW")
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if err := m.Ack(); err != nil {
			return
		}
		if got.Add(1) == int64(n) {
			close(all)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()

	const publishers = 100
	body := make([]byte, 300)
	cpu0, start := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for i := range publishers {
		k := n / publishers
		if i < n%publishers {
			k++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			subj := fmt.Sprintf("raw.%d", i)
			for range k {
				if _, err := js.Publish(ctx, subj, body); err != nil {
					b.Errorf("raw publish: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n > 0 {
		select {
		case <-all:
		case <-ctx.Done():
			b.Fatalf("raw consumer: %d of %d", got.Load(), n)
		}
	}
	elapsed, used := time.Since(start), cpuTime()-cpu0
	return float64(n) / elapsed.Seconds(), used / time.Duration(max(n, 1))
}

// rawSQLiteCommits is the rate of single-row durable commits on the disk
// under dir, with the relay store's own pragmas (WAL, synchronous=FULL):
// n inserts, one transaction each, one after another.
func rawSQLiteCommits(b *testing.B, dir string, n int) (rate float64, cpu time.Duration) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "raw.db")+
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE raw (id INTEGER PRIMARY KEY, body BLOB)"); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 300)
	cpu0, start := cpuTime(), time.Now()
	for range n {
		if _, err := db.Exec("INSERT INTO raw (body) VALUES (?)", body); err != nil {
			b.Fatal(err)
		}
	}
	elapsed, used := time.Since(start), cpuTime()-cpu0
	return float64(n) / elapsed.Seconds(), used / time.Duration(max(n, 1))
}
