package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// BenchmarkRestartNodeDown measures how long a relay's store takes to open
// (every bucket and stream checked or created, the watches and the grant
// ledger started: what a relay does at start) on a cluster of three with
// one node down, every stream and bucket replicated three times. Each
// iteration starts a fresh cluster, opens a store once with every node
// up, shuts down one node (the first, the second, the third in turn, so
// that the leaders it held must be elected again), and times the next
// Open; it reports the median and the longest as open-ms and max-open-ms,
// and beside them an Open with every node up (up-open-ms).
//
//	go test -run '^$' -bench RestartNodeDown -benchtime 3x ./transport/relaystore/natsstore
func BenchmarkRestartNodeDown(b *testing.B) {
	var down, up []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := natstest.StartCluster(b, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		o := natsstore.Options{Replicas: 3, Prefix: fmt.Sprintf("B%d_", next.Add(1))}
		open := func() time.Duration {
			start := time.Now()
			s, err := natsstore.Open(ctx, c.URLs(), o)
			if err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			s.Close()
			return took
		}
		open() // creates everything
		up = append(up, open())
		srv := c.Servers[i%3]
		srv.Shutdown()
		srv.WaitForShutdown()
		b.StartTimer()
		down = append(down, open())
		cancel()
	}
	b.StopTimer()
	median := func(xs []time.Duration) time.Duration {
		ys := append([]time.Duration(nil), xs...)
		for i := range ys {
			for j := i + 1; j < len(ys); j++ {
				if ys[j] < ys[i] {
					ys[i], ys[j] = ys[j], ys[i]
				}
			}
		}
		return ys[len(ys)/2]
	}
	longest := time.Duration(0)
	for _, d := range down {
		longest = max(longest, d)
	}
	b.ReportMetric(float64(median(down).Milliseconds()), "open-ms")
	b.ReportMetric(float64(longest.Milliseconds()), "max-open-ms")
	b.ReportMetric(float64(median(up).Milliseconds()), "up-open-ms")
}
