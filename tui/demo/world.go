package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// Profiles makes and opens the demo's profiles, all on one relay that lets
// a new identity take over an address (the reinstall control). cli builds
// it on package profile and an embedded relay, so that the demo imports
// neither the store nor the transport.
type Profiles interface {
	// Create makes a fresh profile (a new identity) for self in dir and
	// opens it as Open does.
	Create(ctx context.Context, dir string, self engine.Address, o OpenOptions) (Profile, error)
	// Open opens the profile in dir.
	Open(ctx context.Context, dir string, o OpenOptions) (Profile, error)
	// CreateLinked makes the profile of a device linked to an account in
	// dir, from the package the account's device sent it (its identity
	// and number, the list that names it), and opens it as Open does.
	CreateLinked(ctx context.Context, dir string, id *engine.Identity, number uint32, pkg wire.LinkPackageData, o OpenOptions) (Profile, error)
}

// OpenOptions are how the demo opens a profile: the engine's settings (clock,
// randomness, loop policy; not its store or relay) and the wrapper the
// relay connection goes through (the demo's switches).
type OpenOptions struct {
	// Engine is the engine's configuration, less its store and relay.
	Engine engine.Config
	// Wrap wraps the profile's relay connection (the fault relay).
	Wrap func(engine.Relay) engine.Relay
}

// Profile is one open profile of the demo.
type Profile interface {
	// Engine is the profile's client.
	Engine() *engine.Client
	// RelayState is the relay connection in words ("connected"...).
	RelayState() string
	// Close stops the client and the connection, marking nothing
	// presented.
	Close() error
}

// world is the demo's profiles. Its methods do I/O and run inside commands,
// never in Update.
type world struct {
	ctx      context.Context // the demo's lifetime
	dir      string
	profiles Profiles
	log      *slog.Logger
	now      func() time.Time
	random   func(self engine.Address, install int) engine.Randomness
	policy   engine.Policy
	// noDeviceWord stops the relay's envelope statuses at the demo's
	// relay (the golden frames, which must not depend on when a push
	// arrives).
	noDeviceWord bool
	// lists is set once the demo keeps device lists (a person's second
	// device): the fault relays announce the relay's lists from then on.
	lists atomic.Bool
	// listsPublished is set once keepLists has published the list of
	// every profile open then: a list fetched after it names that
	// profile's devices.
	listsPublished atomic.Bool

	mu   sync.Mutex
	devs map[engine.Address]*device
}

// device is one profile of the demo.
type device struct {
	addr      engine.Address
	dir       string
	install   int
	notes     chan eventlog.Entry
	held      bool // the switches and the policy outlive a crash and a reopen
	unplugged bool
	policy    engine.Policy
	// reinstalled is when the device was last reinstalled: what it had
	// committed before is gone with its old profile.
	reinstalled time.Time
	// crashing is set the moment a crash is asked for: the switches no
	// longer reach the client being closed (a release typed right after
	// the crash would let it receive, and commit, while it goes down).
	crashing bool

	// While open:
	prof   Profile
	faults *faultRelay
	done   chan struct{}
	run    chan struct{} // closed when the client's loop has returned

	// closing is closed when the last close of the profile finished: a
	// reopen typed quickly after a crash waits for it (the crash closes in
	// the background while the pane already says CRASHED).
	closing chan struct{}
}

func newWorld(ctx context.Context, dir string, profiles Profiles, log *slog.Logger, now func() time.Time) *world {
	return &world{ctx: ctx, dir: dir, profiles: profiles, log: log, now: now, devs: map[engine.Address]*device{},
		random: func(engine.Address, int) engine.Randomness { return nil }}
}

// openOptions is how a device's profile is opened: its switches wrap the
// relay connection.
func (w *world) openOptions(d *device, install int) (OpenOptions, func() *faultRelay) {
	var faults *faultRelay
	o := OpenOptions{
		Engine: engine.Config{Now: w.now, Random: w.random(d.addr, install), Policy: w.devicePolicy(d)},
		Wrap: func(r engine.Relay) engine.Relay {
			faults = newFaultRelay(r, d.addr, d.notes, w.now)
			faults.noStatuses = w.noDeviceWord
			faults.lists = &w.lists
			w.mu.Lock()
			held, un := d.held, d.unplugged
			w.mu.Unlock()
			faults.set(&held, &un)
			return faults
		},
	}
	return o, func() *faultRelay { return faults }
}

// create makes a fresh profile for addr on disk (a new identity), opens it
// and publishes its prekeys, so that a peer can start a session at once.
func (w *world) create(ctx context.Context, addr engine.Address) (*tui.Attachment, error) {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		d = &device{addr: addr, notes: make(chan eventlog.Entry, 64), policy: w.policy}
		w.devs[addr] = d
	}
	d.install++
	d.dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d-%d", addr.User, addr.Device, d.install))
	install := d.install
	w.mu.Unlock()
	o, faults := w.openOptions(d, install)
	prof, err := w.profiles.Create(ctx, d.dir, addr, o)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", addr, err)
	}
	if err := prof.Engine().RefreshPreKeys(ctx); err != nil {
		prof.Close()
		return nil, fmt.Errorf("publish prekeys of %s: %w", addr, err)
	}
	return w.start(d, prof, faults()), nil
}

// open opens addr's profile again (after a crash) and starts its loop.
func (w *world) open(ctx context.Context, addr engine.Address) (*tui.Attachment, error) {
	d := w.device(addr)
	if d == nil {
		return nil, fmt.Errorf("open %s: %w", addr, engine.ErrNoProfile)
	}
	w.mu.Lock()
	closing := d.closing
	w.mu.Unlock()
	if closing != nil {
		select {
		case <-closing:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	o, faults := w.openOptions(d, d.install)
	prof, err := w.profiles.Open(ctx, d.dir, o)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", addr, err)
	}
	return w.start(d, prof, faults()), nil
}

// start runs an opened profile's receive loop and gives the pane its view
// of it.
func (w *world) start(d *device, prof Profile, faults *faultRelay) *tui.Attachment {
	c := prof.Engine()
	run := make(chan struct{})
	go func() {
		defer close(run)
		c.Run(w.ctx)
	}()
	w.mu.Lock()
	d.prof, d.faults, d.done, d.run = prof, faults, make(chan struct{}), run
	d.crashing = false
	state := func() string {
		if faults != nil && faults.down() {
			return "offline"
		}
		return prof.RelayState()
	}
	a := &tui.Attachment{Client: c, Events: c.Events(), Notes: d.notes, Done: d.done, State: state}
	w.mu.Unlock()
	return a
}

// close closes addr's profile. A clean close marks the events presented
// when the screen has read all of them; a crash does not: the client and
// its store are dropped as they are, as if the process had died.
func (w *world) close(addr engine.Address, clean bool) error {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil || d.prof == nil {
		w.mu.Unlock()
		return nil
	}
	prof, done, run, faults := d.prof, d.done, d.run, d.faults
	d.prof, d.faults, d.done, d.run = nil, nil, nil, nil
	closed := make(chan struct{})
	d.closing = closed
	w.mu.Unlock()
	defer close(closed)
	c := prof.Engine()
	close(done)
	if clean && !c.ResyncRequired() && len(c.Events()) == 0 {
		if err := c.MarkPresented(context.Background()); err != nil {
			w.log.Warn("mark presented", "self", addr.String(), "err", err)
		}
	}
	if faults != nil {
		faults.release() // a download held at a kill fails now
	}
	err := prof.Close()
	<-run
	return err
}

// reinstall replaces addr's profile with a fresh one: a new identity for
// the same address, registered again at the relay.
func (w *world) reinstall(ctx context.Context, addr engine.Address) (*tui.Attachment, error) {
	if err := w.close(addr, true); err != nil {
		w.log.Warn("close before reinstall", "self", addr.String(), "err", err)
	}
	w.mu.Lock()
	old := w.devs[addr].dir
	w.devs[addr].reinstalled = w.now()
	w.mu.Unlock()
	if err := os.RemoveAll(old); err != nil {
		return nil, fmt.Errorf("reinstall %s: %w", addr, err)
	}
	return w.create(ctx, addr)
}

// Close shuts every profile down cleanly.
func (w *world) Close() error {
	w.mu.Lock()
	addrs := make([]engine.Address, 0, len(w.devs))
	for a := range w.devs {
		addrs = append(addrs, a)
	}
	w.mu.Unlock()
	var errs []error
	for _, a := range addrs {
		errs = append(errs, w.close(a, true))
	}
	return errors.Join(errs...)
}

func (w *world) device(addr engine.Address) *device {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.devs[addr]
}

// setSwitches changes a device's hold and unplug switches, on the device
// (they outlive a crash) and on its open connection; a release asks the
// loop for a round at once.
func (w *world) setSwitches(addr engine.Address, held, unplugged *bool) {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		w.mu.Unlock()
		return
	}
	if held != nil {
		d.held = *held
	}
	if unplugged != nil {
		d.unplugged = *unplugged
	}
	faults, prof := d.faults, d.prof
	if d.crashing {
		faults, prof = nil, nil
	}
	w.mu.Unlock()
	if faults != nil {
		faults.set(held, unplugged)
	}
	if prof != nil {
		prof.Engine().SyncNow()
	}
}

func (w *world) devicePolicy(d *device) engine.Policy {
	w.mu.Lock()
	defer w.mu.Unlock()
	return d.policy
}

// policyOf is addr's loop policy.
func (w *world) policyOf(addr engine.Address) engine.Policy {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.devs[addr]; d != nil {
		return d.policy
	}
	return engine.Policy{}
}

// retryBounds gives a policy without retry bounds the engine's defaults, so
// that the demo can say which bounds it runs with (the controls' auto-retry
// line); the engine applies the same defaults to a policy without them.
func retryBounds(p engine.Policy) engine.Policy {
	if p.RetryMin <= 0 && p.RetryMax <= 0 {
		p.RetryMin, p.RetryMax = engine.DefaultRetryMin, engine.DefaultRetryMax
	}
	return p
}

// setPolicy changes a device's loop policy, on the device (it outlives a
// crash) and on its open client.
func (w *world) setPolicy(addr engine.Address, change func(*engine.Policy)) engine.Policy {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		w.mu.Unlock()
		return engine.Policy{}
	}
	change(&d.policy)
	p, prof := d.policy, d.prof
	w.mu.Unlock()
	if prof != nil {
		prof.Engine().SetPolicy(p)
	}
	return p
}

// flags reads a profile's demo switches for the status bar.
func (w *world) flags(addr engine.Address) demoFlags {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		w.mu.Unlock()
		return demoFlags{}
	}
	f := demoFlags{held: d.held, unplugged: d.unplugged}
	faults := d.faults
	w.mu.Unlock()
	if faults != nil {
		f.dropMsg, f.dropAck = faults.armed()
	}
	return f
}

// demoMsg is the outcome of a demo control for one pane.
type demoMsg struct {
	pane    int
	entries []eventlog.Entry
	attach  *tui.Attachment // the profile was (re)opened
	err     error
	what    string
}

func (w *world) crashCmd(i int, addr engine.Address, when string) tea.Cmd {
	w.mu.Lock()
	if d := w.devs[addr]; d != nil {
		d.crashing = true
	}
	w.mu.Unlock()
	return func() tea.Msg {
		err := w.close(addr, false)
		return demoMsg{pane: i, err: err, what: "crash", entries: []eventlog.Entry{{At: w.now(), Name: "demo_crash", Level: eventlog.Demo,
			Text: addr.String() + " crashed " + when + ": closed without a clean shutdown, nothing marked presented (ctrl+x o reopens)"}}}
	}
}

// collisionCheck says, when delivery is held, whether the two profiles can
// collide: only two initiations can, and a side with a session writes on it.
func (w *world) collisionCheck(i int, self, peer engine.Address) tea.Cmd {
	return func() tea.Msg {
		var with []string
		for _, pair := range [][2]engine.Address{{self, peer}, {peer, self}} {
			c := w.client(pair[0])
			if c == nil {
				continue
			}
			if ok, err := c.HasSession(w.ctx, pair[1]); err == nil && ok {
				with = append(with, pair[0].String())
			}
		}
		if len(with) == 0 {
			return nil
		}
		return demoMsg{pane: i, what: "hold", entries: []eventlog.Entry{{At: w.now(), Name: "demo", Level: eventlog.Demo,
			Text: strings.Join(with, " and ") + " already has a session: these messages will not collide. ctrl+x s forgets the sessions on both sides first"}}}
	}
}

// forgetCmd resets the session between self and peer on both sides, as two
// reinstalls would but keeping the identities: the next messages each way
// start new sessions, and held, they collide.
func (w *world) forgetCmd(i int, self, peer engine.Address) tea.Cmd {
	return func() tea.Msg {
		var errs []error
		for _, pair := range [][2]engine.Address{{self, peer}, {peer, self}} {
			c := w.client(pair[0])
			if c == nil {
				errs = append(errs, fmt.Errorf("%s is closed", pair[0]))
				continue
			}
			errs = append(errs, c.ResetSession(w.ctx, pair[1]))
		}
		msg := demoMsg{pane: i, what: "forget", err: errors.Join(errs...)}
		if msg.err == nil {
			msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_forget", Level: eventlog.Demo,
				Text: "no session between " + self.String() + " and " + peer.String() + " now: ctrl+x H, write on both sides, ctrl+x H collides"}}
		}
		return msg
	}
}

// client returns addr's open client, or nil.
func (w *world) client(addr engine.Address) *engine.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.devs[addr]; d != nil && d.prof != nil {
		return d.prof.Engine()
	}
	return nil
}

// commitAllCmd commits everything pending on addr's profile, through its
// client, in batches.
func (w *world) commitAllCmd(i int, addr engine.Address) tea.Cmd {
	return func() tea.Msg {
		c := w.client(addr)
		if c == nil {
			return demoMsg{pane: i, what: "commit", err: fmt.Errorf("%s is closed", addr)}
		}
		for {
			page, err := c.PendingInbound(w.ctx, engine.PageQuery{Limit: 256})
			if err != nil || len(page) == 0 {
				return demoMsg{pane: i, what: "commit", err: err}
			}
			reqs := make([]engine.FinalizeRequest, len(page))
			for k, msg := range page {
				reqs[k] = engine.FinalizeRequest{Sender: msg.Sender, ID: msg.ID, Outcome: engine.OutcomeCommitted}
			}
			res, err := c.FinalizeBatch(w.ctx, reqs)
			if err != nil {
				return demoMsg{pane: i, what: "commit", err: err}
			}
			done := 0
			for _, r := range res {
				if r.Err == nil {
					done++
				}
			}
			if done == 0 { // what is left cannot be committed now
				return demoMsg{pane: i, what: "commit"}
			}
		}
	}
}
