// Package bench is parley's end-to-end benchmark (parley bench): fresh
// profiles with production settings and an embedded relay on loopback, N
// sender/receiver pairs, the engine's loop on every side, and the raw
// durable commit rate of the same disk measured in the same run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// Options say what a run does. The zero value is one pair for 5 seconds,
// at most 64 messages in flight per pair.
type Options struct {
	// Messages is the fewest messages the run sends, over all pairs.
	Messages int
	// Duration is the shortest time the run sends for (default 5s): a run
	// ends when both Messages and Duration are reached and every message
	// sent is acknowledged.
	Duration time.Duration
	// Window is the most messages in flight per pair (default 64).
	Window int
	// Pairs is the number of conversations, each between two profiles of
	// its own (default 1).
	Pairs int
	// Progress receives a progress line; nil discards it.
	Progress io.Writer
	// CPUProfile, when set, receives a CPU profile of the measured part of
	// the run (not the set-up: key derivation, the commit rate).
	CPUProfile io.Writer
}

func (o Options) withDefaults() Options {
	if o.Duration <= 0 && o.Messages <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 64
	}
	if o.Pairs <= 0 {
		o.Pairs = 1
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// Result is what a run measured; parley bench --json prints it.
type Result struct {
	Messages             int     `json:"messages"`
	Seconds              float64 `json:"seconds"`
	MsgsPerSec           float64 `json:"msgs_per_sec"`
	P50ms                float64 `json:"p50_ms"`
	P99ms                float64 `json:"p99_ms"`
	DurableCommitsPerSec float64 `json:"durable_commits_per_sec"`
	Ratio                float64 `json:"ratio"`
	CPUMicrosPerMsg      float64 `json:"cpu_us_per_msg"`
	Synchronous          string  `json:"synchronous"`
	Window               int     `json:"window"`
	Pairs                int     `json:"pairs"`
}

// openBenchPeer makes a fresh profile with production settings (Argon2id
// defaults, WAL, synchronous=FULL), connects it and publishes its prekeys.
func openBenchPeer(ctx context.Context, dir string, self engine.Address, url string, policy engine.Policy) (*profile.Profile, error) {
	p, err := profile.Create(ctx, filepath.Join(dir, self.User), self, url, profile.Options{
		Passphrase: []byte("bench"),
		Connect:    profile.ConnectNow,
		Engine:     engine.Config{Policy: policy, EventBuffer: 4096},
	})
	if err != nil {
		return nil, err
	}
	if err := p.Client.RefreshPreKeys(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// pair is one conversation: a sender whose messages the receiver's loop
// commits on arrival, and what the sender has in flight.
type pair struct {
	sender, receiver *profile.Profile

	mu        sync.Mutex
	cond      *sync.Cond
	sentAt    map[wire.LogicalID]time.Time
	latencies []time.Duration
	inflight  int
	cleared   int
	warm      bool
	err       error
}

// watch reads the sender's events until ctx ends: each ACK that clears a
// message in flight is one more message done.
func (p *pair) watch(ctx context.Context) {
	for {
		var e engine.Event
		select {
		case e = <-p.sender.Client.Events():
		case <-ctx.Done():
			p.mu.Lock()
			p.cond.Broadcast()
			p.mu.Unlock()
			return
		}
		switch {
		case e.Kind == engine.EventSyncFailed:
			p.fail(e.Err)
			continue
		case e.Kind != engine.EventReceived || e.Result.Kind != engine.ResultAcknowledgement || !e.Result.Cleared:
			continue
		}
		now := time.Now()
		p.mu.Lock()
		if t, ok := p.sentAt[e.Result.ID]; ok {
			p.latencies = append(p.latencies, now.Sub(t))
			delete(p.sentAt, e.Result.ID)
			p.inflight--
			p.cleared++
		} else {
			p.warm = true
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

func (p *pair) fail(err error) {
	if err == nil {
		err = errors.New("a loop stopped")
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// wait waits on the pair's condition (its lock held) until ok holds, the
// pair failed, ctx ended, or 30 s pass without progress.
func (p *pair) wait(ctx context.Context, ok func() bool) error {
	for !ok() {
		if p.err != nil {
			return p.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.AfterFunc(30*time.Second, p.cond.Broadcast)
		start := time.Now()
		p.cond.Wait()
		t.Stop()
		if !ok() && time.Since(start) >= 30*time.Second {
			return errors.New("bench: no progress for 30 s")
		}
	}
	return nil
}

// send sends batches of at most window messages in flight until stop says
// enough, and returns how many it sent.
func (p *pair) send(ctx context.Context, window int, body []byte, stop func(sent int) bool) (int, error) {
	to := p.receiver.Client.Self()
	sent := 0
	for !stop(sent) {
		p.mu.Lock()
		if err := p.wait(ctx, func() bool { return p.inflight < window }); err != nil {
			p.mu.Unlock()
			return sent, err
		}
		k := window - p.inflight
		p.inflight += k
		p.mu.Unlock()
		reqs := make([]engine.SendRequest, k)
		for i := range reqs {
			reqs[i] = engine.SendRequest{Peer: to, Body: body}
		}
		at := time.Now()
		res, err := p.sender.Client.SendBatch(ctx, reqs)
		if err != nil {
			return sent, err
		}
		p.mu.Lock()
		for _, r := range res {
			if r.Err != nil {
				p.mu.Unlock()
				return sent, fmt.Errorf("send: %w", r.Err)
			}
			p.sentAt[r.ID] = at
		}
		p.mu.Unlock()
		sent += k
	}
	return sent, nil
}

// Run runs the benchmark.
func Run(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	dir, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)

	rate, err := store.MeasureCommitRate(ctx, dir, 2*time.Second)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(o.Progress, "durable commits: %.0f/s (synchronous=%s)\n", rate.PerSecond, rate.Synchronous)

	// The relay is the bench's own: its rate limits and its registration
	// limits per IP (16 pairs register 32 addresses from 127.0.0.1) are off.
	srv, err := relayserver.NewMemory(relayserver.Config{Limits: relayserver.Limits{MessageRate: -1, ByteRate: -1,
		RegistrationRate: -1, Limits: relaystore.Limits{RegistrationsPerIP: 4 * o.Pairs}, MaxConnectionsPerIP: 4*o.Pairs + 64, MaxUnauthenticatedPerIP: 4*o.Pairs + 64}})
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

	pairs := make([]*pair, o.Pairs)
	for i := range pairs {
		fmt.Fprintf(o.Progress, "\rmaking profiles: %d/%d", 2*i, 2*o.Pairs)
		p := &pair{sentAt: map[wire.LogicalID]time.Time{}}
		p.cond = sync.NewCond(&p.mu)
		p.sender, err = openBenchPeer(ctx, dir, engine.MustParseAddress(fmt.Sprintf("sender%d/1", i)), url, engine.Policy{})
		if err != nil {
			return Result{}, err
		}
		defer p.sender.Close()
		// The receiver's loop commits every delivery in the round that
		// brought it.
		p.receiver, err = openBenchPeer(ctx, dir, engine.MustParseAddress(fmt.Sprintf("receiver%d/1", i)), url, engine.Policy{Commit: engine.CommitOnArrival})
		if err != nil {
			return Result{}, err
		}
		defer p.receiver.Close()
		pairs[i] = p
	}
	fmt.Fprintf(o.Progress, "\rmaking profiles: %d/%d\n", 2*o.Pairs, 2*o.Pairs)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, p := range pairs {
		for _, prof := range []*profile.Profile{p.sender, p.receiver} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := prof.Client.Run(ctx); err != nil && ctx.Err() == nil {
					p.fail(err)
				}
			}()
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			p.watch(ctx)
		}()
		go func() {
			defer wg.Done()
			for { // the receiver's events only need draining
				select {
				case <-p.receiver.Client.Events():
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	// Warm up: one message per pair sets up its session, outside the
	// measurement.
	for _, p := range pairs {
		if _, err := p.sender.Client.Send(ctx, p.receiver.Client.Self(), []byte("warm-up")); err != nil {
			return Result{}, err
		}
	}
	for _, p := range pairs {
		p.mu.Lock()
		err := p.wait(ctx, func() bool { return p.warm })
		p.mu.Unlock()
		if err != nil {
			return Result{}, err
		}
	}

	body := make([]byte, 1024)
	perPair := (o.Messages + o.Pairs - 1) / o.Pairs
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return Result{}, err
		}
	}
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	sentBy := make([]int, len(pairs))
	errs := make([]error, len(pairs))
	var senders sync.WaitGroup
	for i, p := range pairs {
		senders.Add(1)
		go func() {
			defer senders.Done()
			sentBy[i], errs[i] = p.send(ctx, o.Window, body, func(sent int) bool {
				return sent >= perPair && time.Since(start) >= o.Duration
			})
			if errs[i] != nil {
				return
			}
			p.mu.Lock()
			errs[i] = p.wait(ctx, func() bool { return p.cleared >= sentBy[i] })
			p.mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() {
		senders.Wait()
		close(done)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			fmt.Fprintf(o.Progress, "\r%.1f s: %d acknowledged", time.Since(start).Seconds(), clearedOf(pairs))
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	cpu1, _ := cpuTime()
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	total := 0
	for i := range pairs {
		if errs[i] != nil {
			return Result{}, errs[i]
		}
		total += sentBy[i]
	}
	fmt.Fprintf(o.Progress, "\r%.1f s: %d acknowledged\n", elapsed.Seconds(), total)

	var lat []time.Duration
	for _, p := range pairs {
		p.mu.Lock()
		lat = append(lat, p.latencies...)
		p.mu.Unlock()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	mps := float64(total) / elapsed.Seconds()
	res := Result{Messages: total, Seconds: elapsed.Seconds(), MsgsPerSec: mps, P50ms: pct(0.50), P99ms: pct(0.99),
		DurableCommitsPerSec: rate.PerSecond, Ratio: mps / rate.PerSecond, Synchronous: rate.Synchronous,
		Window: o.Window, Pairs: o.Pairs}
	if cpuOK && total > 0 {
		res.CPUMicrosPerMsg = float64((cpu1 - cpu0).Microseconds()) / float64(total)
	}
	return res, nil
}

func clearedOf(pairs []*pair) int {
	n := 0
	for _, p := range pairs {
		p.mu.Lock()
		n += p.cleared
		p.mu.Unlock()
	}
	return n
}
