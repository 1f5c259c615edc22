package tui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/inbox"
)

// The demo's two profiles.
var (
	demoAlice = engine.MustParseAddress("alice/1")
	demoBob   = engine.MustParseAddress("bob/1")
)

// demoPassphrase protects the demo's throw-away profiles, with a cheap KDF:
// they live in a temporary directory for one run.
var demoPassphrase = []byte("parley demo")

var demoKDF = store.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}

// world is the demo's embedded relay and its profiles. Its methods do I/O
// and run inside commands, never in Update.
type world struct {
	ctx    context.Context // the demo's lifetime
	dir    string
	net    Network
	log    *slog.Logger
	now    func() time.Time
	random func(self engine.Address, install int) engine.Randomness

	mu   sync.Mutex
	devs map[engine.Address]*device
}

// device is one profile of the demo.
type device struct {
	addr    engine.Address
	dir     string
	install int
	gate    *gate
	notes   chan eventlog.Entry

	// While open:
	client *engine.Client
	conn   Conn
	faults *faultRelay
	pump   *pump
	done   chan struct{}
}

func newWorld(ctx context.Context, dir string, net Network, log *slog.Logger, now func() time.Time) *world {
	return &world{ctx: ctx, dir: dir, net: net, log: log, now: now, devs: map[engine.Address]*device{},
		random: func(engine.Address, int) engine.Randomness { return nil }}
}

// create makes a fresh profile for addr on disk (a new identity) and opens it.
func (w *world) create(ctx context.Context, addr engine.Address) (*session, error) {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil {
		d = &device{addr: addr, gate: newGate(), notes: make(chan eventlog.Entry, 64)}
		w.devs[addr] = d
	}
	d.install++
	d.dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d-%d", addr.User, addr.Device, d.install))
	install := d.install
	w.mu.Unlock()

	st, err := store.Create(ctx, d.dir, demoPassphrase, store.Options{KDF: demoKDF, Now: w.now})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", addr, err)
	}
	if _, err := engine.CreateProfile(ctx, st, addr, w.net.URL(), w.random(addr, install), w.now()); err != nil {
		st.Close()
		return nil, fmt.Errorf("create %s: %w", addr, err)
	}
	if err := st.Close(); err != nil {
		return nil, fmt.Errorf("create %s: %w", addr, err)
	}
	return w.open(ctx, addr, true)
}

// open opens addr's profile, connects it and starts its pump. maintain
// publishes its prekeys first, so that a peer can start a session at once.
func (w *world) open(ctx context.Context, addr engine.Address, maintain bool) (*session, error) {
	w.mu.Lock()
	d := w.devs[addr]
	w.mu.Unlock()
	if d == nil {
		return nil, fmt.Errorf("open %s: %w", addr, engine.ErrNoProfile)
	}
	st, err := store.Open(ctx, d.dir, demoPassphrase, store.Options{Now: w.now})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", addr, err)
	}
	_, _, id, err := engine.LoadIdentity(ctx, st)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("open %s: %w", addr, err)
	}
	conn, err := w.net.Dial(ctx, addr, id)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	faults := newFaultRelay(conn, addr, d.notes, w.now)
	if _, unplugged := d.gate.state(); unplugged {
		faults.setUnplugged(true)
	}
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: faults, Now: w.now, Random: w.random(addr, d.install)})
	if err != nil {
		conn.Close()
		st.Close()
		return nil, fmt.Errorf("open %s: %w", addr, err)
	}
	if maintain {
		if err := c.Maintain(ctx); err != nil {
			c.Close()
			conn.Close()
			return nil, fmt.Errorf("publish prekeys of %s: %w", addr, err)
		}
	}
	w.mu.Lock()
	d.client, d.conn, d.faults, d.done = c, conn, faults, make(chan struct{})
	d.pump = startPump(w.ctx, c, faults, d.gate, d.notes, w.log, w.now, false)
	s := &session{client: tagged{c}, relay: faults, events: c.Events(), notes: d.notes, done: d.done, state: faults.State}
	w.mu.Unlock()
	return s, nil
}

// close closes addr's client. A clean close marks the events presented when
// the screen has read all of them; a crash does not: the client and its
// store are dropped as they are, as if the process had died.
func (w *world) close(addr engine.Address, clean bool) error {
	w.mu.Lock()
	d := w.devs[addr]
	if d == nil || d.client == nil {
		w.mu.Unlock()
		return nil
	}
	c, conn, p, done := d.client, d.conn, d.pump, d.done
	d.client, d.conn, d.faults, d.pump, d.done = nil, nil, nil, nil, nil
	w.mu.Unlock()
	p.Stop()
	close(done)
	if clean && !c.ResyncRequired() && len(c.Events()) == 0 {
		if err := c.MarkPresented(context.Background()); err != nil {
			w.log.Warn("mark presented", "self", addr.String(), "err", err)
		}
	}
	err := c.Close()
	conn.Close()
	return err
}

// reinstall replaces addr's profile with a fresh one: a new identity for
// the same address, registered again at the relay.
func (w *world) reinstall(ctx context.Context, addr engine.Address) (*session, error) {
	if err := w.close(addr, true); err != nil {
		w.log.Warn("close before reinstall", "self", addr.String(), "err", err)
	}
	w.mu.Lock()
	old := w.devs[addr].dir
	w.mu.Unlock()
	if err := os.RemoveAll(old); err != nil {
		return nil, fmt.Errorf("reinstall %s: %w", addr, err)
	}
	return w.create(ctx, addr)
}

// Close shuts every profile down cleanly and stops the relay.
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
	errs = append(errs, w.net.Close())
	return errors.Join(errs...)
}

func (w *world) device(addr engine.Address) *device {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.devs[addr]
}

// flags reads a profile's demo switches for the status bar.
func (w *world) flags(addr engine.Address) demoFlags {
	d := w.device(addr)
	if d == nil {
		return demoFlags{}
	}
	var f demoFlags
	f.held, f.unplugged = d.gate.state()
	w.mu.Lock()
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
	attach  *session // the profile was (re)opened
	err     error
	what    string
}

func (w *world) crashCmd(i int, addr engine.Address, when string) tea.Cmd {
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
	d := w.device(self)
	switch {
	case key.Matches(k, m.dkeys.Cancel):
		return nil
	case key.Matches(k, m.dkeys.Hold):
		held, _ := d.gate.state()
		held = !held
		d.gate.set(&held, nil)
		m.panes[i].flags = w.flags(self)
		if held {
			say("holding delivery to " + self.String() + ": envelopes wait at the relay (ctrl+x h releases)")
		} else {
			say("released delivery to " + self.String())
		}
	case key.Matches(k, m.dkeys.HoldBoth):
		hold := false
		for j := range m.panes {
			if h, _ := w.device(m.panes[j].self).gate.state(); !h {
				hold = true
			}
		}
		for j := range m.panes {
			w.device(m.panes[j].self).gate.set(&hold, nil)
			m.panes[j].flags = w.flags(m.panes[j].self)
			if hold {
				m.note(j, eventlog.Entry{Name: "demo", Level: eventlog.Demo, Text: "holding delivery to " + m.panes[j].self.String() + ": send on both sides, then ctrl+x H releases (a collision)"})
			} else {
				m.note(j, eventlog.Entry{Name: "demo", Level: eventlog.Demo, Text: "released delivery to " + m.panes[j].self.String()})
			}
		}
	case key.Matches(k, m.dkeys.Drop), key.Matches(k, m.dkeys.DropAck):
		ack := key.Matches(k, m.dkeys.DropAck)
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
	case key.Matches(k, m.dkeys.Unplug):
		_, un := d.gate.state()
		un = !un
		d.gate.set(nil, &un)
		w.mu.Lock()
		if d.faults != nil {
			d.faults.setUnplugged(un)
		}
		w.mu.Unlock()
		m.panes[i].flags = w.flags(self)
		m.panes[i].readState()
		if un {
			say(self.String() + "'s relay link unplugged: sends stay pending and show not sent")
		} else {
			say(self.String() + "'s relay link plugged in again: ctrl+r retries")
		}
	case key.Matches(k, m.dkeys.AutoCommit):
		p.autoCommit = !p.autoCommit
		say(fmt.Sprintf("auto-commit %s for %s", onOff(p.autoCommit), self))
		if p.autoCommit && p.sess != nil {
			c, ctx := p.sess.client, withKind(m.ctx, kindAck)
			return tag(i, p.gen, func() tea.Msg { return inbox.FinalizeAll(ctx, c, engine.OutcomeCommitted) })
		}
	case key.Matches(k, m.dkeys.AutoRetry):
		p.autoRetry = !p.autoRetry
		say(fmt.Sprintf("auto-retry %s for %s (backoff %s doubling to %s)", onOff(p.autoRetry), self, retryFirst, retryMax))
	case key.Matches(k, m.dkeys.Crash):
		if p.sess == nil {
			return m.reopen(i)
		}
		p.detach("crashed")
		return w.crashCmd(i, self, "now")
	case key.Matches(k, m.dkeys.CrashNext):
		if p.sess == nil {
			say(self.String() + " is closed: ctrl+x o reopens it")
			return nil
		}
		p.crashArmed = true
		say(self.String() + " will crash right after its next transition commits, before it is shown")
	case key.Matches(k, m.dkeys.Reopen):
		if p.sess != nil {
			say(self.String() + " is open")
			return nil
		}
		return m.reopen(i)
	case key.Matches(k, m.dkeys.Reinstall):
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
	default:
		say(fmt.Sprintf("no demo control on %q (ctrl+x then h, H, d, a, k, K, o, i, c, r or u)", k.String()))
	}
	return nil
}

func (m *Model) reopen(i int) tea.Cmd {
	w, self := m.world, m.panes[i].self
	m.panes[i].closed = "reopening"
	return func() tea.Msg {
		s, err := w.open(w.ctx, self, false)
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
