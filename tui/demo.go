package tui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/input"
)

// The demo's two profiles.
var (
	demoAlice = engine.MustParseAddress("alice/1")
	demoBob   = engine.MustParseAddress("bob/1")
)

// DemoProfiles makes and opens the demo's profiles, all on one relay that
// lets a new identity take over an address (the reinstall control). main
// builds it on package profile and an embedded relay, so that tui imports
// neither the store nor the transport.
type DemoProfiles interface {
	// Create makes a fresh profile (a new identity) for self in dir and
	// opens it as Open does.
	Create(ctx context.Context, dir string, self engine.Address, o DemoOpen) (DemoProfile, error)
	// Open opens the profile in dir.
	Open(ctx context.Context, dir string, o DemoOpen) (DemoProfile, error)
}

// DemoOpen is how the demo opens a profile: the engine's settings (clock,
// randomness, loop policy; not its store or relay) and the wrapper the
// relay connection goes through (the demo's switches).
type DemoOpen struct {
	Engine engine.Config
	Wrap   func(engine.Relay) engine.Relay
}

// DemoProfile is one open profile of the demo.
type DemoProfile interface {
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
	profiles DemoProfiles
	log      *slog.Logger
	now      func() time.Time
	random   func(self engine.Address, install int) engine.Randomness
	policy   engine.Policy

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
	prof   DemoProfile
	faults *faultRelay
	done   chan struct{}
	run    chan struct{} // closed when the client's loop has returned

	// closing is closed when the last close of the profile finished: a
	// reopen typed quickly after a crash waits for it (the crash closes in
	// the background while the pane already says CRASHED).
	closing chan struct{}
}

func newWorld(ctx context.Context, dir string, profiles DemoProfiles, log *slog.Logger, now func() time.Time) *world {
	return &world{ctx: ctx, dir: dir, profiles: profiles, log: log, now: now, devs: map[engine.Address]*device{},
		random: func(engine.Address, int) engine.Randomness { return nil }}
}

// openOptions is how a device's profile is opened: its switches wrap the
// relay connection.
func (w *world) openOptions(d *device, install int) (DemoOpen, func() *faultRelay) {
	var faults *faultRelay
	o := DemoOpen{
		Engine: engine.Config{Now: w.now, Random: w.random(d.addr, install), Policy: w.devicePolicy(d)},
		Wrap: func(r engine.Relay) engine.Relay {
			faults = newFaultRelay(r, d.addr, d.notes, w.now)
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
func (w *world) create(ctx context.Context, addr engine.Address) (*attachment, error) {
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
	if err := prof.Engine().Maintain(ctx); err != nil {
		prof.Close()
		return nil, fmt.Errorf("publish prekeys of %s: %w", addr, err)
	}
	return w.start(d, prof, faults()), nil
}

// open opens addr's profile again (after a crash) and starts its loop.
func (w *world) open(ctx context.Context, addr engine.Address) (*attachment, error) {
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
func (w *world) start(d *device, prof DemoProfile, faults *faultRelay) *attachment {
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
	a := &attachment{client: c, events: c.Events(), notes: d.notes, done: d.done, state: state}
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
	prof, done, run := d.prof, d.done, d.run
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
	err := prof.Close()
	<-run
	return err
}

// reinstall replaces addr's profile with a fresh one: a new identity for
// the same address, registered again at the relay.
func (w *world) reinstall(ctx context.Context, addr engine.Address) (*attachment, error) {
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
	d.policy = d.policy.WithDefaults()
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
	attach  *attachment // the profile was (re)opened
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

// demoKey runs the demo control named by the key that followed ctrl+x.
func (m *Model) demoKey(k tea.KeyMsg) tea.Cmd {
	if m.world == nil {
		return nil
	}
	w, i := m.world, m.active
	p := &m.panes[i]
	self := p.self
	peer := p.peer
	if peer.IsZero() || peer == self {
		peer = m.panes[(i+1)%len(m.panes)].self
	}
	say := func(text string) {
		m.note(i, eventlog.Entry{Name: "demo", Text: text, Level: eventlog.Demo})
	}
	switch {
	case input.Matches(k, m.dkeys.Cancel):
		return nil
	case input.Matches(k, m.dkeys.Hold):
		held := !w.flags(self).held
		w.setSwitches(self, &held, nil)
		m.panes[i].flags = w.flags(self)
		if held {
			say("holding delivery to " + self.String() + ": envelopes wait at the relay (ctrl+x h releases)")
		} else {
			say("released delivery to " + self.String())
		}
	case input.Matches(k, m.dkeys.HoldBoth):
		hold := false
		for j := range m.panes {
			if !w.flags(m.panes[j].self).held {
				hold = true
			}
		}
		for j := range m.panes {
			w.setSwitches(m.panes[j].self, &hold, nil)
			m.panes[j].flags = w.flags(m.panes[j].self)
			if hold {
				m.note(j, eventlog.Entry{Name: "demo", Level: eventlog.Demo, Text: "holding delivery to " + m.panes[j].self.String() + ": send on both sides, then ctrl+x H releases (a collision)"})
			} else {
				m.note(j, eventlog.Entry{Name: "demo", Level: eventlog.Demo, Text: "released delivery to " + m.panes[j].self.String()})
			}
		}
		if hold && m.forgetting == 0 {
			return w.collisionCheck(i, self, peer)
		}
	case input.Matches(k, m.dkeys.Forget):
		say("forgetting the sessions between " + self.String() + " and " + peer.String() + " on both sides (identities stay pinned)")
		m.forgetting++
		return w.forgetCmd(i, self, peer)
	case input.Matches(k, m.dkeys.Drop), input.Matches(k, m.dkeys.DropAck):
		ack := input.Matches(k, m.dkeys.DropAck)
		d := w.device(self)
		w.mu.Lock()
		faults := d.faults
		w.mu.Unlock()
		if faults == nil {
			say(self.String() + " is closed")
			return nil
		}
		faults.arm(peer, ack)
		m.panes[i].flags = w.flags(self)
		if ack {
			say(fmt.Sprintf("the next ACK %s → %s will be lost after the relay accepts it (commit something from %s)", self, peer, peer))
		} else {
			say(fmt.Sprintf("the next envelope %s → %s will be lost after the relay accepts it", self, peer))
		}
	case input.Matches(k, m.dkeys.Unplug):
		un := !w.flags(self).unplugged
		w.setSwitches(self, nil, &un)
		m.panes[i].flags = w.flags(self)
		m.panes[i].readState()
		if un {
			say(self.String() + "'s relay link unplugged: sends stay pending and show not sent")
		} else {
			say(self.String() + "'s relay link plugged in again: ctrl+r retries")
		}
	case input.Matches(k, m.dkeys.AutoCommit):
		pol := w.setPolicy(self, func(pol *engine.Policy) {
			if pol.Commit == engine.CommitOnArrival {
				pol.Commit = engine.CommitManual
			} else {
				pol.Commit = engine.CommitOnArrival
			}
		})
		p.policy = pol
		say(fmt.Sprintf("auto-commit %s for %s (the engine commits every delivery as it arrives)", onOff(pol.Commit == engine.CommitOnArrival), self))
	case input.Matches(k, m.dkeys.AutoRetry):
		pol := w.setPolicy(self, func(pol *engine.Policy) { pol.AutoRetry = !pol.AutoRetry })
		p.policy = pol
		say(fmt.Sprintf("auto-retry %s for %s (backoff %s doubling to %s, at once after a reconnection or a convergence)", onOff(pol.AutoRetry), self, pol.RetryMin, pol.RetryMax))
	case input.Matches(k, m.dkeys.Crash):
		if p.att == nil {
			return m.reopen(i)
		}
		p.detach("crashed")
		return w.crashCmd(i, self, "now")
	case input.Matches(k, m.dkeys.CrashNext):
		if p.att == nil {
			say(self.String() + " is closed: ctrl+x o reopens it")
			return nil
		}
		p.crashArmed = true
		say(self.String() + " will crash right after its next transition commits, before it is shown")
	case input.Matches(k, m.dkeys.Reopen):
		if p.att != nil {
			say(self.String() + " is open")
			return nil
		}
		return m.reopen(i)
	case input.Matches(k, m.dkeys.Reinstall):
		p.detach("reinstalling")
		say("reinstalling " + self.String() + ": a new identity for the same address")
		return func() tea.Msg {
			s, err := w.reinstall(w.ctx, self)
			msg := demoMsg{pane: i, attach: s, err: err, what: "reinstall"}
			if err == nil {
				msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_reinstall", Level: eventlog.Demo,
					Text: fmt.Sprintf("%s reinstalled with identity %s: its peers meet identity_changed", self, s.client.Identity().Fingerprint())}}
			}
			return msg
		}
	case len(k.Runes) == 1 && k.Runes[0] >= '1' && int(k.Runes[0]-'0') <= len(scenarios()):
		return m.startScenario(int(k.Runes[0] - '0'))
	default:
		say(fmt.Sprintf("no demo control on %q (ctrl+x then h, H, d, a, k, K, o, i, s, c, r or u; a digit plays a guided scenario: %s)", k.String(), scenarioMenu()))
	}
	return nil
}

func (m *Model) reopen(i int) tea.Cmd {
	w, self := m.world, m.panes[i].self
	m.panes[i].closed = "reopening"
	return func() tea.Msg {
		s, err := w.open(w.ctx, self)
		msg := demoMsg{pane: i, attach: s, err: err, what: "reopen"}
		if err == nil {
			text := self.String() + " reopened"
			if s.client.ResyncRequired() {
				text += ": resync follows (committed events were not shown before the crash)"
			} else {
				text += ": no resync needed (everything committed had been shown)"
			}
			msg.entries = []eventlog.Entry{{At: w.now(), Name: "demo_reopen", Level: eventlog.Demo, Text: text}}
		}
		return msg
	}
}

// demoResult applies what a demo control did to its pane.
func (m *Model) demoResult(msg demoMsg) tea.Cmd {
	if msg.pane >= len(m.panes) {
		return nil
	}
	p := &m.panes[msg.pane]
	if msg.what == "forget" && m.forgetting > 0 {
		m.forgetting--
	}
	for _, e := range msg.entries {
		p.note(e)
	}
	if msg.err != nil {
		p.noteErr(engine.ErrorName(msg.err), msg.err, "demo "+msg.what)
		if msg.attach == nil && msg.what != "crash" {
			p.closed = "closed"
		}
	}
	if msg.attach == nil {
		return nil
	}
	cmd := p.attach(msg.attach)
	if msg.what == "reinstall" {
		p.changed = map[engine.Address]*identityChange{}
		p.updateBlocked()
	}
	p.flags = m.world.flags(p.self)
	var cmds []tea.Cmd
	cmds = append(cmds, tag(msg.pane, p.gen, cmd))
	if p.active {
		cmds = append(cmds, tag(msg.pane, p.gen, p.setFocus(p.focus)))
	}
	return tea.Batch(cmds...)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
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
