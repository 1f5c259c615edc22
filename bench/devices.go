package bench

import (
	"bytes"
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
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// DevicesOptions say what a devices run does (parley bench --devices): one
// sender writes to a person with one device, then to a person with
// Devices of them, in one run on one relay, and each message is done when
// every device of the person acknowledged it.
type DevicesOptions struct {
	// Devices is the larger person's number of devices (2 to
	// engine.MaxDevicesPerAccount); the run measures one device first.
	Devices int
	// Messages is the fewest messages sent to each person.
	Messages int
	// Duration is the shortest time each person is sent to (default 5s
	// when Messages is 0).
	Duration time.Duration
	// Window is the most messages in flight (default 64), as the
	// one-to-one bench.
	Window int
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

// DevicesResult is what one person measured.
type DevicesResult struct {
	Devices          int     `json:"devices"`
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

// benchArchiveKDF is the cost of the bench's own device archives: they
// carry an empty history from one profile to the next in one process, and
// Argon2id at the default cost would only lengthen the set-up.
var benchArchiveKDF = engine.ArchiveKDF{Passes: 1, MemoryKiB: 64, Threads: 1}

// RunDevices measures one-to-one sends to a person of one device, then to
// a person of o.Devices devices, each a fresh person whose devices commit
// on arrival, from one sender on one relay that keeps device lists.
func RunDevices(ctx context.Context, o DevicesOptions) ([]DevicesResult, error) {
	if o.Devices < 2 || o.Devices > engine.MaxDevicesPerAccount {
		return nil, fmt.Errorf("bench: --devices %d: want 2 to %d", o.Devices, engine.MaxDevicesPerAccount)
	}
	if o.Duration <= 0 && o.Messages <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 64
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	dir, err := os.MkdirTemp("", "parley-bench-devices-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	most := 2 + o.Devices
	srv, err := relayserver.NewMemory(relayserver.Config{DeviceLists: true, DeviceListJoins: true, Limits: relayserver.Limits{MessageRate: -1, ByteRate: -1,
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
	var people [][]*profile.Profile
	for i, n := range []int{1, o.Devices} {
		fmt.Fprintf(o.Progress, "making a person with %d devices\n", n)
		devs, err := openBenchPerson(ctx, dir, fmt.Sprintf("person%d", i), url, n)
		for _, d := range devs {
			defer d.Close()
		}
		if err != nil {
			return nil, err
		}
		people = append(people, devs)
	}

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
	all := []*profile.Profile{sender}
	for _, devs := range people {
		all = append(all, devs...)
	}
	for _, prof := range all {
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
		go func() { // a device's events only need draining
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

	var out []DevicesResult
	for _, devs := range people {
		res, err := runDevices(ctx, o, f, sender, devs)
		if err != nil {
			return out, fmt.Errorf("bench: a person with %d devices: %w", len(devs), err)
		}
		out = append(out, res)
	}
	return out, nil
}

// openBenchPerson makes a person of n devices: its first device as any
// bench peer, each other one restored from an archive of the first (as
// parley restore makes a device: a new number in the account's list,
// signed by the account key the archive carries). The archives hold no
// history; the devices' loops are not running yet.
func openBenchPerson(ctx context.Context, dir, user, url string, n int) ([]*profile.Profile, error) {
	first, err := openBenchPeer(ctx, dir, engine.Address{User: user, Device: 1}, url, engine.Policy{Commit: engine.CommitOnArrival})
	if err != nil {
		return nil, err
	}
	devs := []*profile.Profile{first}
	if n == 1 {
		return devs, nil
	}
	// The first device's list is at the relay before another joins it.
	if _, err := first.Client.Sync(ctx); err != nil {
		return devs, fmt.Errorf("%s: first sync: %w", first.Client.Self(), err)
	}
	pass := []byte("bench")
	var archive bytes.Buffer
	if _, err := first.Client.Backup(ctx, &archive, pass, benchArchiveKDF, nil); err != nil {
		return devs, err
	}
	chk, err := engine.CheckArchive(bytes.NewReader(archive.Bytes()), pass, engine.ArchiveKDF{})
	if err != nil {
		return devs, err
	}
	// Each device joins the list as the one restored before it left it.
	list := chk.Account.List
	for i := 2; i <= n; i++ {
		key, err := engine.UnmarshalAccountKey(chk.Account.Key[:])
		if err != nil {
			return devs, err
		}
		id, err := engine.NewIdentity(engine.SystemRandom{})
		if err != nil {
			return devs, err
		}
		dev, err := engine.JoinAccount(ctx, dialPublisher{url: url, id: id}, key, list, id, time.Now())
		if err != nil {
			return devs, err
		}
		list = dev.List
		ddir := filepath.Join(dir, fmt.Sprintf("%s_%d", user, i))
		opts := profile.Options{Passphrase: pass}
		if err := profile.CreateRestored(ctx, ddir, url, id, dev, key, chk, opts); err != nil {
			return devs, err
		}
		p, err := profile.Open(ctx, ddir, profile.Options{Passphrase: pass, Connect: profile.ConnectNow,
			Engine: engine.Config{Policy: engine.Policy{Commit: engine.CommitOnArrival}, EventBuffer: 4096}})
		if err != nil {
			return devs, err
		}
		devs = append(devs, p)
		if err := p.Client.RefreshPreKeys(ctx); err != nil {
			return devs, err
		}
	}
	return devs, nil
}

// runDevices measures sends to the person whose devices are devs: a
// warm-up message, done when every device acknowledged it (the sender
// learns the list and sets up a session with each device), then the
// measurement.
func runDevices(ctx context.Context, o DevicesOptions, f *fanout, sender *profile.Profile, devs []*profile.Profile) (DevicesResult, error) {
	to := devs[0].Client.Self()
	lanes := len(devs)
	// As parley send and the TUI do before storing: the person's list,
	// so that the message has a lane per device.
	if err := sender.Client.CheckPeer(ctx, to); err != nil {
		return DevicesResult{}, err
	}
	warm, err := sender.Client.Enqueue(ctx, []engine.SendRequest{{Peer: to, Body: []byte("warm-up")}})
	if err == nil {
		err = warm[0].Err
	}
	if err != nil {
		return DevicesResult{}, err
	}
	f.mu.Lock()
	f.track(warm[0].ID, lanes, time.Now())
	err = f.wait(ctx, func() bool { return f.inflight == 0 })
	f.latencies, f.done, f.lanes = nil, 0, 0
	f.mu.Unlock()
	if err != nil {
		return DevicesResult{}, fmt.Errorf("warm-up: %w", err)
	}

	body := make([]byte, 1024)
	cpu0, cpuOK := cpuTime()
	start := time.Now()
	last := start
	sent := 0
	for sent < o.Messages || time.Since(start) < o.Duration {
		f.mu.Lock()
		err := f.wait(ctx, func() bool { return f.inflight < o.Window })
		k := o.Window - f.inflight
		f.inflight += k // held for the batch until it is tracked
		f.mu.Unlock()
		if err != nil {
			return DevicesResult{}, err
		}
		reqs := make([]engine.SendRequest, k)
		for i := range reqs {
			reqs[i] = engine.SendRequest{Peer: to, Body: body}
		}
		at := time.Now()
		// Stored as the TUI and parley send store (a lane per device, in
		// one transaction); the loop's pump hands them off.
		res, err := sender.Client.Enqueue(ctx, reqs)
		if err != nil {
			return DevicesResult{}, err
		}
		f.mu.Lock()
		f.inflight -= k
		for _, r := range res {
			if r.Err != nil {
				f.mu.Unlock()
				return DevicesResult{}, fmt.Errorf("send: %w", r.Err)
			}
			f.track(r.ID, lanes, at)
		}
		f.mu.Unlock()
		sent += k
		if time.Since(last) >= 200*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(o.Progress, "\r%d devices, %.1f s: %d sent", lanes, time.Since(start).Seconds(), sent)
		}
	}
	f.mu.Lock()
	err = f.wait(ctx, func() bool { return f.inflight == 0 })
	lat := append([]time.Duration(nil), f.latencies...)
	acked := f.lanes
	f.mu.Unlock()
	if err != nil {
		return DevicesResult{}, err
	}
	elapsed := time.Since(start)
	cpu1, _ := cpuTime()
	fmt.Fprintf(o.Progress, "\r%d devices, %.1f s: %d sent, %d lanes acknowledged\n", lanes, elapsed.Seconds(), sent, acked)
	if acked != sent*lanes {
		return DevicesResult{}, errors.New("bench: lanes acknowledged do not match the messages sent")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	res := DevicesResult{Devices: lanes, Messages: sent, Lanes: acked, Seconds: elapsed.Seconds(),
		MsgsPerSec: float64(sent) / elapsed.Seconds(), LanesPerSec: float64(acked) / elapsed.Seconds(),
		P50ms: pct(0.50), P99ms: pct(0.99), Window: o.Window}
	if cpuOK && acked > 0 {
		res.CPUMicrosPerLane = float64((cpu1 - cpu0).Microseconds()) / float64(acked)
	}
	return res, nil
}
