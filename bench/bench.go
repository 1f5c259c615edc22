// Package bench is parley's end-to-end benchmark (parley bench): two fresh
// profiles with production settings and an embedded relay on loopback, the
// engine's loop on both sides, and the raw durable commit rate of the same
// disk measured in the same run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// Result is what a run measured; parley bench --json prints it.
type Result struct {
	Messages             int     `json:"messages"`
	Seconds              float64 `json:"seconds"`
	MsgsPerSec           float64 `json:"msgs_per_sec"`
	P50ms                float64 `json:"p50_ms"`
	P99ms                float64 `json:"p99_ms"`
	DurableCommitsPerSec float64 `json:"durable_commits_per_sec"`
	Ratio                float64 `json:"ratio"`
	Synchronous          string  `json:"synchronous"`
	Window               int     `json:"window"`
}

// openBenchPeer makes a fresh profile with production settings (Argon2id
// defaults, WAL, synchronous=FULL), connects it and publishes its prekeys.
func openBenchPeer(ctx context.Context, dir, addr, url string, policy engine.Policy) (*profile.Profile, error) {
	self := engine.MustParseAddress(addr)
	p, err := profile.Create(ctx, filepath.Join(dir, self.User), self, url, profile.Options{
		Passphrase: []byte("bench"),
		Connect:    profile.ConnectNow,
		Engine:     engine.Config{Policy: policy, EventBuffer: 4096},
	})
	if err != nil {
		return nil, err
	}
	if err := p.Client.Maintain(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Run runs the benchmark: n messages, at most window in flight, with
// progress written to progress.
func Run(ctx context.Context, n, window int, progress io.Writer) (Result, error) {
	dir, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)

	rate, err := store.MeasureCommitRate(ctx, dir, 2*time.Second)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(progress, "durable commits: %.0f/s (synchronous=%s)\n", rate.PerSecond, rate.Synchronous)

	srv, err := transport.NewServer(transport.ServerConfig{Limits: transport.Limits{MessageRate: -1, ByteRate: -1}})
	if err != nil {
		return Result{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	url := "ws://" + ln.Addr().String()
	alice, err := openBenchPeer(ctx, dir, "alice/1", url, engine.Policy{})
	if err != nil {
		return Result{}, err
	}
	defer alice.Close()
	// bob's loop commits every delivery in the round that brought it.
	bob, err := openBenchPeer(ctx, dir, "bob/1", url, engine.Policy{Commit: engine.CommitOnArrival})
	if err != nil {
		return Result{}, err
	}
	defer bob.Close()
	bobAddr := bob.Client.Self()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, p := range []*profile.Profile{alice, bob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Client.Run(ctx); err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	// bob's events only need draining.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-bob.Client.Events():
			case <-ctx.Done():
				return
			}
		}
	}()

	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	sentAt := make(map[wire.LogicalID]time.Time, n)
	var latencies []time.Duration
	inflight, cleared, warm := 0, 0, false
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var e engine.Event
			select {
			case e = <-alice.Client.Events():
			case <-ctx.Done():
				return
			}
			switch {
			case e.Kind == engine.EventSyncFailed:
				errs <- e.Err
				continue
			case e.Kind != engine.EventReceived || e.Result.Kind != engine.ResultAcknowledgement || !e.Result.Cleared:
				continue
			}
			now := time.Now()
			mu.Lock()
			if t, ok := sentAt[e.Result.ID]; ok {
				latencies = append(latencies, now.Sub(t))
				delete(sentAt, e.Result.ID)
				inflight--
				cleared++
			} else {
				warm = true
			}
			cond.Broadcast()
			mu.Unlock()
		}
	}()
	failed := func() error {
		select {
		case err := <-errs:
			if err == nil {
				err = errors.New("a pump stopped")
			}
			return err
		default:
			return nil
		}
	}

	// Warm up: one message sets up the session, outside the measurement.
	if _, err := alice.Client.Send(ctx, bobAddr, []byte("warm-up")); err != nil {
		return Result{}, err
	}
	mu.Lock()
	for !warm {
		if err := waitCond(cond, ctx); err != nil {
			mu.Unlock()
			return Result{}, err
		}
	}
	mu.Unlock()

	body := make([]byte, 1024)
	start := time.Now()
	sent := 0
	lastShown := time.Time{}
	for sent < n {
		mu.Lock()
		for inflight >= window {
			if err := waitCond(cond, ctx); err != nil {
				mu.Unlock()
				return Result{}, err
			}
		}
		k := min(window-inflight, n-sent)
		inflight += k
		mu.Unlock()
		reqs := make([]engine.SendRequest, k)
		for i := range reqs {
			reqs[i] = engine.SendRequest{Peer: bobAddr, Body: body}
		}
		at := time.Now()
		res, err := alice.Client.SendBatch(ctx, reqs)
		if err != nil {
			return Result{}, err
		}
		mu.Lock()
		for _, r := range res {
			if r.Err != nil {
				mu.Unlock()
				return Result{}, fmt.Errorf("send: %w", r.Err)
			}
			sentAt[r.ID] = at
		}
		mu.Unlock()
		sent += k
		if err := failed(); err != nil {
			return Result{}, err
		}
		if time.Since(lastShown) > 200*time.Millisecond {
			mu.Lock()
			c := cleared
			mu.Unlock()
			showProgress(progress, c, n)
			lastShown = time.Now()
		}
	}
	mu.Lock()
	for cleared < n {
		if err := waitCond(cond, ctx); err != nil {
			mu.Unlock()
			return Result{}, err
		}
	}
	elapsed := time.Since(start)
	lat := append([]time.Duration(nil), latencies...)
	mu.Unlock()
	showProgress(progress, n, n)
	fmt.Fprintln(progress)
	cancel()
	wg.Wait()

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	mps := float64(n) / elapsed.Seconds()
	return Result{Messages: n, Seconds: elapsed.Seconds(), MsgsPerSec: mps, P50ms: pct(0.50), P99ms: pct(0.99),
		DurableCommitsPerSec: rate.PerSecond, Ratio: mps / rate.PerSecond, Synchronous: rate.Synchronous, Window: window}, nil
}

// waitCond waits on cond (whose lock the caller holds) with a timeout, so
// that a stuck run fails instead of hanging.
func waitCond(cond *sync.Cond, ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	t := time.AfterFunc(30*time.Second, cond.Broadcast)
	start := time.Now()
	cond.Wait()
	t.Stop()
	if time.Since(start) >= 30*time.Second {
		return errors.New("bench: no progress for 30 s")
	}
	return ctx.Err()
}

func showProgress(w io.Writer, done, total int) {
	const width = 40
	filled := done * width / total
	bar := make([]byte, width)
	for i := range bar {
		if i < filled {
			bar[i] = '#'
		} else {
			bar[i] = '.'
		}
	}
	fmt.Fprintf(w, "\r[%s] %d/%d acknowledged", bar, done, total)
}
