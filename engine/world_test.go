package engine_test

import (
	"context"
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

var passphrase = []byte("test passphrase")

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// world is a set of devices on one fake network, each a real profile on disk.
type world struct {
	t     testing.TB
	ctx   context.Context
	net   *enginetest.Network
	clock *clock
	dir   string
	// seed, when set, gives each new device a deterministic random
	// source (keys, IDs, encapsulations), so that a simulation's seed
	// replays the same case.
	seed *uint64
	// relay, when set, wraps the endpoint each device opens with.
	relay func(engine.Address, *enginetest.Endpoint) engine.Relay
	// blobs, when set, is the blob store every device opens with (a
	// files directory of its own): a link's history travels there.
	blobs *enginetest.Blobs
	// maxFile, when set, is every device's FileConfig.MaxSize.
	maxFile int64
	// scrubDelay, when set, is every device's store.Options.ScrubDelay.
	scrubDelay time.Duration
}

// detRandom is a deterministic engine.Randomness for simulations.
type detRandom struct{ c *mrand.ChaCha8 }

func newDetRandom(seed uint64) *detRandom {
	var s [32]byte
	binary.BigEndian.PutUint64(s[:], seed)
	return &detRandom{mrand.NewChaCha8(s)}
}

func (d *detRandom) Read(p []byte) (int, error) { return d.c.Read(p) }

func (d *detRandom) Encapsulate(ek *mlkem.EncapsulationKey768) ([]byte, []byte, error) {
	var m [32]byte
	d.c.Read(m[:])
	return mlkemtest.Encapsulate768(ek, m[:])
}

func newWorld(t testing.TB) *world {
	return &world{t: t, ctx: context.Background(), net: enginetest.NewNetwork(),
		clock: &clock{now: time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)}, dir: t.TempDir()}
}

// device is one profile and its open client.
type device struct {
	w      *world
	addr   engine.Address
	dir    string
	c      *engine.Client
	st     *store.DB
	random engine.Randomness // nil: the system's
	fp     failpointHook     // what the store's failpoints call, when set
	// skew is how far this device's clock is from the world's (a
	// device whose clock runs behind or ahead), taken when it opens.
	skew time.Duration
}

// failpointHook is a failpoint function a test may set and clear while the
// device runs.
type failpointHook struct {
	mu sync.Mutex
	f  func(string) error
}

// Store sets the hook (nil clears it).
func (h *failpointHook) Store(f func(string) error) {
	h.mu.Lock()
	h.f = f
	h.mu.Unlock()
}

func (h *failpointHook) call(p string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return nil
	}
	return h.f(p)
}

// sessionID returns the initiation ID of d's current session with peer.
func (d *device) sessionID(peer *device) engine.InitiationID {
	d.w.t.Helper()
	ps, err := d.st.Peer(d.w.ctx, peer.addr)
	if err != nil || ps.Session == nil {
		d.w.t.Fatalf("%s has no session with %s (%v)", d.addr, peer.addr, err)
	}
	s, err := session.UnmarshalSession(ps.Session)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return s.ID
}

func (w *world) device(addr string) *device {
	w.t.Helper()
	d := &device{w: w, addr: engine.MustParseAddress(addr)}
	if w.seed != nil {
		*w.seed++
		d.random = newDetRandom(*w.seed)
	}
	d.dir = filepath.Join(w.dir, addr+"-"+time.Now().Format("150405.000000000"))
	st, err := store.Create(w.ctx, d.dir, passphrase, store.Options{KDF: store.KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}})
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := engine.CreateProfile(w.ctx, st, d.addr, "fake://", d.random, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		w.t.Fatal(err)
	}
	d.open()
	if err := d.c.RefreshPreKeys(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		if d.c != nil {
			d.c.Close()
		}
	})
	return d
}

func (d *device) open() {
	d.w.t.Helper()
	st, err := store.Open(d.w.ctx, d.dir, passphrase, store.Options{Failpoint: d.fp.call, ScrubDelay: d.w.scrubDelay})
	if err != nil {
		d.w.t.Fatal(err)
	}
	var relay engine.Relay = d.w.net.Endpoint(d.addr)
	if d.w.relay != nil {
		relay = d.w.relay(d.addr, d.w.net.Endpoint(d.addr))
	}
	now := d.w.clock.Now
	if skew := d.skew; skew != 0 {
		now = func() time.Time { return d.w.clock.Now().Add(skew) }
	}
	cfg := engine.Config{Store: st, Relay: relay, Now: now, Random: d.random, PollInterval: 10 * time.Millisecond}
	if d.w.blobs != nil {
		cfg.Files = engine.FileConfig{Dir: filepath.Join(d.dir, "files"), ChunkSize: testChunk, Blobs: d.w.blobs, MaxSize: d.w.maxFile}
	}
	c, err := engine.Open(d.w.ctx, cfg)
	if err != nil {
		d.w.t.Fatal(err)
	}
	d.c, d.st = c, st
}

// reopen closes the client and opens the profile again, as after a restart.
func (d *device) reopen() {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	d.open()
}

func (d *device) send(peer *device, body string) wire.LogicalID {
	d.w.t.Helper()
	id, err := d.c.Send(d.w.ctx, peer.addr, []byte(body))
	if err != nil {
		d.w.t.Fatalf("%s sends %q: %v", d.addr, body, err)
	}
	return id
}

// sync runs one round of d's receive loop: stage everything the relay
// holds for d, acknowledge the leases and process the staging area.
func (d *device) sync() []engine.ReceiveResult {
	d.w.t.Helper()
	res, err := d.c.Sync(d.w.ctx)
	if err != nil {
		d.w.t.Fatalf("%s syncs: %v", d.addr, err)
	}
	return res.Received
}

// commitAll commits every pending received message and reports whether
// every ACK was handed off.
func (d *device) commitAll() int {
	d.w.t.Helper()
	msgs, err := d.c.PendingInbound(d.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		d.w.t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := d.c.Commit(d.w.ctx, m.Sender, m.ID); err != nil {
			d.w.t.Fatalf("%s commits %x: %v", d.addr, m.ID, err)
		}
	}
	return len(msgs)
}

func (d *device) retry(peer *device) []wire.LogicalID {
	d.w.t.Helper()
	ids, err := d.c.Retry(d.w.ctx, peer.addr)
	if err != nil {
		d.w.t.Fatalf("%s retries to %s: %v", d.addr, peer.addr, err)
	}
	return ids
}

func (d *device) pendingOut() int {
	n, err := d.c.CountOutbound(d.w.ctx, nil)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return n
}

func (d *device) pendingIn() int {
	n, err := d.c.CountInbound(d.w.ctx, nil)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return n
}

// received returns the bodies d committed from peer, oldest first.
func (d *device) received(peer *device) []string {
	d.w.t.Helper()
	h, err := d.c.History(d.w.ctx, peer.addr, 0, 1000)
	if err != nil {
		d.w.t.Fatal(err)
	}
	var out []string
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Direction == engine.DirectionIn {
			out = append(out, string(h[i].Body))
		}
	}
	return out
}

// errorsIn returns the receive errors among results.
func errorsIn(res []engine.ReceiveResult) []error {
	var out []error
	for _, r := range res {
		if r.Kind == engine.ResultError {
			out = append(out, r.Err)
		}
	}
	return out
}

func hasError(res []engine.ReceiveResult, target error) bool {
	for _, err := range errorsIn(res) {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func count(res []engine.ReceiveResult, kind engine.ResultKind) int {
	n := 0
	for _, r := range res {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// converge runs sync, commit and retry rounds on both sides until neither has
// anything pending, and fails after a bound.
func converge(t *testing.T, a, b *device) {
	t.Helper()
	for round := 0; round < 8; round++ {
		a.sync()
		b.sync()
		a.commitAll()
		b.commitAll()
		a.sync()
		b.sync()
		if a.pendingOut()+b.pendingOut()+a.pendingIn()+b.pendingIn() == 0 {
			return
		}
		a.retry(b)
		b.retry(a)
	}
	t.Fatalf("no convergence: pending out %d/%d, in %d/%d", a.pendingOut(), b.pendingOut(), a.pendingIn(), b.pendingIn())
}
