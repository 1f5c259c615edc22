package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// GroupOptions say what a group run does (parley bench --group): for each
// size, a fresh group of that many members, the sender included, takes
// messages from its sender until Messages and Duration are both reached
// and every lane is acknowledged.
type GroupOptions struct {
	// Sizes are the group sizes measured, in order, each at least 2 and at
	// most wire.MaxGroupMembers.
	Sizes []int
	// Messages is the fewest group messages sent to each group.
	Messages int
	// Duration is the shortest time each group is sent to (default 5s
	// when Messages is 0).
	Duration time.Duration
	// Window is the most group messages in flight (default 16): a message
	// is in flight until every member acknowledged it.
	Window int
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

// GroupResult is what one group size measured.
type GroupResult struct {
	Members          int     `json:"members"`
	Messages         int     `json:"messages"`
	Lanes            int     `json:"lanes"`
	Seconds          float64 `json:"seconds"`
	MsgsPerSec       float64 `json:"msgs_per_sec"`
	LanesPerSec      float64 `json:"lanes_per_sec"`
	P50ms            float64 `json:"p50_ms"`
	P99ms            float64 `json:"p99_ms"`
	CPUMicrosPerLane float64 `json:"cpu_us_per_lane"`
	Window           int     `json:"window"`
}

// fanout is the sender's view of the group messages in flight: a message
// is done when each of its lanes has been acknowledged.
type fanout struct {
	mu        sync.Mutex
	cond      *sync.Cond
	left      map[wire.LogicalID]int       // lanes not acknowledged yet
	sentAt    map[wire.LogicalID]time.Time // when the send returned
	early     map[wire.LogicalID]int       // ACKs read before the send returned
	latencies []time.Duration
	inflight  int
	done      int // messages every member acknowledged
	lanes     int // lanes acknowledged
	err       error
}

// watch reads the sender's events until ctx ends.
func (f *fanout) watch(ctx context.Context, events <-chan engine.Event) {
	for {
		var e engine.Event
		select {
		case e = <-events:
		case <-ctx.Done():
			f.mu.Lock()
			f.cond.Broadcast()
			f.mu.Unlock()
			return
		}
		f.mu.Lock()
		switch {
		case e.Kind == engine.EventSyncFailed:
			if f.err == nil {
				f.err = e.Err
			}
		case e.Kind == engine.EventReceived && e.Result.Kind == engine.ResultAcknowledgement && e.Result.Cleared:
			if _, ok := f.left[e.Result.ID]; ok {
				f.ack(e.Result.ID, 1, time.Now())
			} else {
				f.early[e.Result.ID]++
			}
		}
		f.cond.Broadcast()
		f.mu.Unlock()
	}
}

// ack counts n lanes of id acknowledged (the lock held).
func (f *fanout) ack(id wire.LogicalID, n int, now time.Time) {
	f.lanes += n
	f.left[id] -= n
	if f.left[id] > 0 {
		return
	}
	f.latencies = append(f.latencies, now.Sub(f.sentAt[id]))
	delete(f.left, id)
	delete(f.sentAt, id)
	f.inflight--
	f.done++
}

// track starts counting the lanes of id, sent at at (the lock held).
func (f *fanout) track(id wire.LogicalID, lanes int, at time.Time) {
	f.left[id], f.sentAt[id] = lanes, at
	f.inflight++
	if n := f.early[id]; n > 0 {
		delete(f.early, id)
		f.ack(id, n, time.Now())
	}
}

// wait waits (the lock held) until ok holds, the run failed, ctx ended, or
// 30 s pass without progress.
func (f *fanout) wait(ctx context.Context, ok func() bool) error {
	for !ok() {
		if f.err != nil {
			return f.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.AfterFunc(30*time.Second, f.cond.Broadcast)
		start := time.Now()
		f.cond.Wait()
		t.Stop()
		if !ok() && time.Since(start) >= 30*time.Second {
			return errors.New("bench: no progress for 30 s")
		}
	}
	return nil
}

// RunGroup measures group sends for each size in o.Sizes, one after the
// other, on one relay and one set of profiles: the sender and the largest
// size's other members, of which each group takes the first.
func RunGroup(ctx context.Context, o GroupOptions) ([]GroupResult, error) {
	if o.Duration <= 0 && o.Messages <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 16
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	most := 0
	for _, n := range o.Sizes {
		if n < 2 || n > wire.MaxGroupMembers {
			return nil, fmt.Errorf("bench: a group of %d: sizes go from 2 to %d", n, wire.MaxGroupMembers)
		}
		most = max(most, n)
	}
	if most == 0 {
		return nil, errors.New("bench: no group size")
	}
	dir, err := os.MkdirTemp("", "parley-bench-group-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	srv, err := relayserver.NewMemory(relayserver.Config{Limits: relayserver.Limits{MessageRate: -1, ByteRate: -1,
		RegistrationRate: -1, Limits: relaystore.Limits{RegistrationsPerIP: 2 * most}, MaxConnectionsPerIP: 2*most + 64, MaxUnauthenticatedPerIP: 2*most + 64}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	url := "ws://" + ln.Addr().String()

	sender, err := openBenchPeer(ctx, dir, engine.MustParseAddress("sender/1"), url, engine.Policy{})
	if err != nil {
		return nil, err
	}
	defer sender.Close()
	members := make([]*profile.Profile, most-1)
	for i := range members {
		fmt.Fprintf(o.Progress, "\rmaking profiles: %d/%d", i+1, most)
		// Each member's loop commits every delivery in the round that
		// brought it.
		members[i], err = openBenchPeer(ctx, dir, engine.MustParseAddress(fmt.Sprintf("member%d/1", i)), url, engine.Policy{Commit: engine.CommitOnArrival})
		if err != nil {
			return nil, err
		}
		defer members[i].Close()
	}
	fmt.Fprintf(o.Progress, "\rmaking profiles: %d/%d\n", most, most)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	f := &fanout{left: map[wire.LogicalID]int{}, sentAt: map[wire.LogicalID]time.Time{}, early: map[wire.LogicalID]int{}}
	f.cond = sync.NewCond(&f.mu)
	fail := func(err error) {
		f.mu.Lock()
		if f.err == nil {
			f.err = err
		}
		f.cond.Broadcast()
		f.mu.Unlock()
	}
	for _, prof := range append([]*profile.Profile{sender}, members...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := prof.Client.Run(ctx); err != nil && ctx.Err() == nil {
				fail(err)
			}
		}()
		if prof == sender {
			continue
		}
		wg.Add(1)
		go func() { // a member's events only need draining
			defer wg.Done()
			for {
				select {
				case <-prof.Client.Events():
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.watch(ctx, sender.Client.Events())
	}()

	var out []GroupResult
	for _, n := range o.Sizes {
		res, err := runGroupSize(ctx, o, f, sender, members[:n-1])
		if err != nil {
			return out, fmt.Errorf("bench: group of %d: %w", n, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// runGroupSize creates a group of the sender and members, waits for every
// member to acknowledge the creation (which sets up the sessions), then
// measures.
func runGroupSize(ctx context.Context, o GroupOptions, f *fanout, sender *profile.Profile, members []*profile.Profile) (GroupResult, error) {
	n := len(members) + 1
	addrs := make([]engine.Address, len(members))
	for i, m := range members {
		addrs[i] = m.Client.Self()
	}
	lanes := len(members)
	// Warm up outside the measurement: the creation goes to every member.
	g, created, err := sender.Client.CreateGroup(ctx, fmt.Sprintf("bench%d", n), addrs)
	if err != nil {
		return GroupResult{}, err
	}
	f.mu.Lock()
	f.track(created.ID, lanes, time.Now())
	err = f.wait(ctx, func() bool { return f.inflight == 0 })
	f.latencies, f.done, f.lanes = nil, 0, 0
	f.mu.Unlock()
	if err != nil {
		return GroupResult{}, fmt.Errorf("warm-up: %w", err)
	}

	body := make([]byte, 1024)
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	last := start
	sent := 0
	for sent < o.Messages || time.Since(start) < o.Duration {
		f.mu.Lock()
		err := f.wait(ctx, func() bool { return f.inflight < o.Window })
		f.mu.Unlock()
		if err != nil {
			return GroupResult{}, err
		}
		at := time.Now()
		res, err := sender.Client.SendGroup(ctx, g.ID, body)
		if err != nil {
			return GroupResult{}, err
		}
		if len(res.Unsent) > 0 {
			return GroupResult{}, fmt.Errorf("lanes to %v not sent", res.Unsent)
		}
		f.mu.Lock()
		f.track(res.ID, lanes, at)
		f.mu.Unlock()
		sent++
		if time.Since(last) >= 200*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(o.Progress, "\r%d members, %.1f s: %d sent", n, time.Since(start).Seconds(), sent)
		}
	}
	f.mu.Lock()
	err = f.wait(ctx, func() bool { return f.inflight == 0 })
	lat := append([]time.Duration(nil), f.latencies...)
	acked := f.lanes
	f.mu.Unlock()
	if err != nil {
		return GroupResult{}, err
	}
	elapsed := time.Since(start)
	cpu1, _ := cpuTime()
	fmt.Fprintf(o.Progress, "\r%d members, %.1f s: %d sent, %d lanes acknowledged\n", n, elapsed.Seconds(), sent, acked)

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	res := GroupResult{Members: n, Messages: sent, Lanes: acked, Seconds: elapsed.Seconds(),
		MsgsPerSec: float64(sent) / elapsed.Seconds(), LanesPerSec: float64(acked) / elapsed.Seconds(),
		P50ms: pct(0.50), P99ms: pct(0.99), Window: o.Window}
	if cpuOK && acked > 0 {
		res.CPUMicrosPerLane = float64((cpu1 - cpu0).Microseconds()) / float64(acked)
	}
	return res, nil
}
