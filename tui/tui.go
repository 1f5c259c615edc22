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
// tui imports engine, themes and the charmbracelet libraries, never the
// store or the transport (engine/imports_test.go holds it to that): the
// receive loop is the engine's (engine.Client.Run), and the demo is handed
// its profiles and their relay by main (DemoProfiles).
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
	// Policy is the demo profiles' loop policy (manual commits, no
	// automatic retry unless set; ctrl+x c and ctrl+x r toggle them). Run
	// shows the policy its client was opened with.
	Policy engine.Policy
	// Dir is where the demo makes its profiles; default a new temporary
	// directory, removed when the demo ends. A Dir given is kept.
	Dir string
	// Now is the clock (default time.Now); tests fix it.
	Now func() time.Time
	// Notify says how Run announces a message for a conversation not in
	// view (the demo announces nothing).
	Notify Notify
	// Names are names for devices from the settings file (Run); names kept
	// in the profile win over them.
	Names map[engine.Address]string
	// Record, in the demo, receives every event of both profiles as JSON
	// lines with their times.
	Record io.Writer
	// Script, in the demo, is played one action at a time (ParseScript).
	Script []ScriptAction
}

// Notify are the ways a message that arrives for a conversation not in view
// is announced.
type Notify struct {
	Bell    bool // the terminal bell
	Desktop bool // a desktop notification through the terminal (OSC 777, OSC 9)
	Title   bool // the unread count in the terminal's title
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
	// Focus reports tell the interface whether the person is looking: what
	// arrives while the terminal is in the background is announced, and not
	// committed on read.
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithReportFocus()}
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
// return nil. It runs the client's receive loop (engine.Client.Run) in the
// background and ends it before returning; it closes nothing: the caller
// closes the client afterwards. Options.ConnState shows the relay
// connection.
func Run(ctx context.Context, client *engine.Client, opts Options) error {
	th, err := opts.theme()
	if err != nil {
		return err
	}
	log, closeLog, err := OpenLog(opts)
	if err != nil {
		return err
	}
	defer closeLog()
	now := opts.clock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	loop := make(chan struct{})
	go func() {
		defer close(loop)
		client.Run(ctx)
	}()
	done := make(chan struct{})
	defer func() {
		cancel()
		<-loop
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
	s := &attachment{client: client, events: client.Events(), notes: make(chan eventlog.Entry), done: done, state: state}
	m := newModel(ctx, th, log, now, nil)
	m.notify, m.bellOut = opts.Notify, opts.Output
	if m.bellOut == nil {
		m.bellOut = os.Stdout
	}
	focus := panelConversations
	pn := m.addPane(client.Self(), s, focus)
	pn.fileNames = opts.Names
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

// RunDemo makes two fresh profiles, alice/1 and bob/1, through profiles,
// and shows them side by side (stacked below 120 columns) until the user
// quits (ctrl+c) or ctx ends; both return nil. Focus starts in alice's
// composer addressed to bob/1. The profiles live in Options.Dir or in a
// temporary directory removed at the end; every profile is closed (and its
// loop ended) before RunDemo returns. The relay behind profiles is the
// caller's to stop afterwards.
func RunDemo(ctx context.Context, profiles DemoProfiles, opts Options) error {
	th, err := opts.theme()
	if err != nil {
		return err
	}
	log, closeLog, err := OpenLog(opts)
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
	w := newWorld(ctx, dir, profiles, log, opts.clock())
	w.policy = opts.Policy.WithDefaults()
	defer func() {
		if err := w.Close(); err != nil {
			log.Warn("demo close", "err", err)
		}
	}()
	m, err := newDemoModel(ctx, w, th, log, opts)
	if err != nil {
		return err
	}
	log.Info("demo start", "dir", dir)
	return runProgram(ctx, opts.program(m, ctx))
}

// newDemoModel creates alice/1 and bob/1 in w and the model showing them.
func newDemoModel(ctx context.Context, w *world, th themes.Theme, log *slog.Logger, opts Options) (Model, error) {
	m := newModel(ctx, th, log, opts.clock(), w)
	m.script = opts.Script
	var rec *recorder
	if opts.Record != nil {
		rec = newRecorder(opts.Record)
	}
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
		p.other = w.client
		p.rec = rec
		peer := demoBob
		if i == 1 {
			peer = demoAlice
		}
		m.init = append(m.init, tag(i, p.gen, p.conv.Select(peer)))
	}
	return m, nil
}
