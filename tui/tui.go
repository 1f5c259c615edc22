// Package tui is parley's terminal interface (Bubble Tea, bubbles, lipgloss):
// every message still in flight is visible and actionable. Run shows one
// profile; RunDemo starts an embedded relay and two fresh profiles side by
// side, with controls that stage the hard cases (collision, lost envelope,
// lost ACK, crash, identity change) on purpose.
//
// The root model (root.go) owns the window, the focus, the global keys and
// the routing; each profile is a pane (pane.go) of panels, one package per
// panel with its own keys: conversations, timeline, composer, inbox, outbox,
// eventlog. Update never does I/O: engine calls run in commands and come
// back as typed messages, and engine events arrive through a re-armed
// command listening on the client's channel. Every style comes from themes.
//
// tui imports engine, themes and the charmbracelet libraries; the demo also
// imports store and transport, because it makes its own profiles and runs
// its own relay (network_embedded.go is the only file that names the
// relay). Nothing in tui imports main.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/eventlog"
)

// Options configure Run and RunDemo. The zero value is usable.
type Options struct {
	// Theme is a themes name: "dark" (default), "light", "high-contrast".
	// NO_COLOR in the environment turns colours off whatever the theme.
	Theme string
	// LogFile is where the interface logs; default
	// $XDG_STATE_HOME/parley/parley.log. Nothing is ever logged to the
	// screen.
	LogFile string
	// Debug logs more.
	Debug bool
	// Logger, when set, replaces LogFile (tests).
	Logger *slog.Logger
	// Input and Output default to the terminal (stdin, stdout).
	Input  io.Reader
	Output io.Writer
	// NoAltScreen draws inline instead of on the alternate screen.
	NoAltScreen bool
	// Peer chooses a conversation at start (Run); "" picks the first.
	Peer string
	// ConnState, when set, reports the relay connection state in words
	// ("connected", "connecting", "offline") for the status bar (Run).
	ConnState func() string
	// AutoCommit commits every delivery as it arrives; AutoRetry retries
	// peers with pending sent messages with a doubling backoff. Both are off
	// by default (and in the demo, where ctrl+x c / ctrl+x r toggle them).
	AutoCommit, AutoRetry bool
	// Dir is where the demo makes its profiles; default a new temporary
	// directory, removed when the demo ends. A Dir given is kept.
	Dir string
	// Now is the clock (default time.Now); tests fix it.
	Now func() time.Time
}

func (o Options) clock() func() time.Time {
	if o.Now != nil {
		return o.Now
	}
	return time.Now
}

func (o Options) theme() (themes.Theme, error) {
	return themes.Get(o.Theme)
}

func (o Options) program(m tea.Model, ctx context.Context) *tea.Program {
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if !o.NoAltScreen {
		opts = append(opts, tea.WithAltScreen())
	}
	if o.Input != nil {
		opts = append(opts, tea.WithInput(o.Input))
	}
	if o.Output != nil {
		opts = append(opts, tea.WithOutput(o.Output))
	}
	return tea.NewProgram(m, opts...)
}

// runProgram runs p; a cancelled ctx is a clean end, like ctrl+c.
func runProgram(ctx context.Context, p *tea.Program) error {
	_, err := p.Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return nil
	}
	return err
}

// Run shows one profile until the user quits (ctrl+c) or ctx ends; both
// return nil. client is the profile's open engine and relay the same
// connection the client was opened with: Run receives from it in the
// background (Receive, Stage, Acknowledge, ProcessStaged) and keeps the
// prekeys fresh (Maintain at start and hourly), in a goroutine it stops
// before returning. Run closes neither client nor relay; after it returns
// the caller closes them. A relay that reconnects on its own keeps the
// pump going; Options.ConnState shows its state.
func Run(ctx context.Context, client *engine.Client, relay engine.Relay, opts Options) error {
	th, err := opts.theme()
	if err != nil {
		return err
	}
	log, closeLog, err := openLog(opts)
	if err != nil {
		return err
	}
	defer closeLog()
	now := opts.clock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	notes := make(chan eventlog.Entry, 64)
	done := make(chan struct{})
	p := startPump(ctx, client, relay, newGate(), notes, log, now, true)
	defer func() {
		p.Stop()
		if !client.ResyncRequired() && len(client.Events()) == 0 {
			if err := client.MarkPresented(context.Background()); err != nil {
				log.Warn("mark presented", "err", err)
			}
		}
	}()
	defer close(done)
	state := opts.ConnState
	if state == nil {
		state = func() string { return "unknown" }
	}
	s := &session{client: tagged{client}, relay: relay, events: client.Events(), notes: notes, done: done, state: state}
	m := newModel(ctx, th, log, now, nil)
	focus := panelConversations
	pn := m.addPane(client.Self(), s, focus)
	pn.autoCommit, pn.autoRetry = opts.AutoCommit, opts.AutoRetry
	if opts.Peer != "" {
		peer, err := engine.ParseAddress(opts.Peer)
		if err != nil {
			return fmt.Errorf("tui: peer: %w", err)
		}
		m.init = append(m.init, tag(0, pn.gen, pn.conv.Select(peer)))
		pn.focus = panelComposer
		m.init = append(m.init, tag(0, pn.gen, pn.setActive(true)))
	}
	log.Info("tui start", "self", client.Self().String())
	return runProgram(ctx, opts.program(m, ctx))
}

// RunDemo starts an embedded relay and two fresh profiles, alice/1 and
// bob/1, and shows them side by side (stacked below 120 columns) until the
// user quits (ctrl+c) or ctx ends; both return nil. Focus starts in alice's
// composer addressed to bob/1. The profiles live in Options.Dir or in a
// temporary directory removed at the end; every goroutine the demo starts
// (one pump per profile) is stopped before RunDemo returns.
func RunDemo(ctx context.Context, opts Options) error {
	th, err := opts.theme()
	if err != nil {
		return err
	}
	log, closeLog, err := openLog(opts)
	if err != nil {
		return err
	}
	defer closeLog()
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "parley-demo-"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	net, err := newEmbeddedNetwork(log, opts.clock())
	if err != nil {
		return fmt.Errorf("demo: relay: %w", err)
	}
	w := newWorld(ctx, dir, net, log, opts.clock())
	defer func() {
		if err := w.Close(); err != nil {
			log.Warn("demo close", "err", err)
		}
	}()
	m, err := newDemoModel(ctx, w, th, log, opts)
	if err != nil {
		return err
	}
	log.Info("demo start", "dir", dir, "relay", net.URL())
	return runProgram(ctx, opts.program(m, ctx))
}

// newDemoModel creates alice/1 and bob/1 in w and the model showing them.
func newDemoModel(ctx context.Context, w *world, th themes.Theme, log *slog.Logger, opts Options) (Model, error) {
	m := newModel(ctx, th, log, opts.clock(), w)
	for i, addr := range []engine.Address{demoAlice, demoBob} {
		s, err := w.create(ctx, addr)
		if err != nil {
			return Model{}, fmt.Errorf("demo: %w", err)
		}
		focus := panelConversations
		if i == 0 {
			focus = panelComposer
		}
		p := m.addPane(addr, s, focus)
		peer := demoBob
		if i == 1 {
			peer = demoAlice
		}
		p.autoCommit, p.autoRetry = opts.AutoCommit, opts.AutoRetry
		m.init = append(m.init, tag(i, p.gen, p.conv.Select(peer)))
	}
	return m, nil
}
