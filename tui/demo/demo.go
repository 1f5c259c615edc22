// Package demo is parley's demo: an embedded relay's two fresh profiles,
// alice/1 and bob/1, side by side in the chat's interface, with controls
// (ctrl+x, then a key) that stage the hard cases on purpose: a collision, a
// lost envelope, a lost ACK, a crash, an identity change. It owns the
// world of profiles and their fault relays (world.go, network.go), the
// guided scenarios (scenario.go), scripts and the recorder (script.go), the
// exactly-once verdict (verdict.go), the hint line (hint.go) and its keys.
//
// Its Model wraps the chat's (tui.Model), the way soft-serve's UI wraps its
// pages: it handles ctrl+x, its scenarios' keys and its own messages, and
// passes everything else on, changing the chat only through tui's seam
// (tui/seam.go). The chat imports nothing of this package. Like tui, demo
// never imports the store, the transport or the profile wiring: cli hands
// it its profiles (Profiles).
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui"
	"github.com/parley-chat/parley/tui/internal/input"
)

// The demo's two profiles.
var (
	demoAlice = engine.MustParseAddress("alice/1")
	demoBob   = engine.MustParseAddress("bob/1")
)

// Options configure Run: the chat's options, and the demo's own.
type Options struct {
	tui.Options
	// Policy is the profiles' loop policy (manual commits, no automatic
	// retry unless set; ctrl+x c and ctrl+x r toggle them).
	Policy engine.Policy
	// Dir is where the demo makes its profiles; default a new temporary
	// directory, removed when the demo ends. A Dir given is kept.
	Dir string
	// Record receives every event of both profiles as JSON lines with
	// their times.
	Record io.Writer
	// Script is played one action at a time (ParseScript).
	Script []ScriptAction
	// FileSize is the size of the file scenario 8 sends (DemoFileSize
	// when 0; tests send a smaller one).
	FileSize int64
}

// Run makes two fresh profiles, alice/1 and bob/1, through profiles, and
// shows them side by side (stacked below 120 columns) until the user quits
// (ctrl+c) or ctx ends; both return nil. Focus starts in alice's composer
// addressed to bob/1. The profiles live in Options.Dir or in a temporary
// directory removed at the end; every profile is closed (and its loop
// ended) before Run returns. The relay behind profiles is the caller's to
// stop afterwards.
func Run(ctx context.Context, profiles Profiles, opts Options) error {
	th, err := tui.Theme(opts.Options)
	if err != nil {
		return err
	}
	log, closeLog, err := tui.OpenLog(opts.Options)
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
	w := newWorld(ctx, dir, profiles, log, opts.Clock())
	w.policy = retryBounds(opts.Policy)
	defer func() {
		if err := w.Close(); err != nil {
			log.Warn("demo close", "err", err)
		}
	}()
	m, err := newModel(ctx, w, th, log, opts)
	if err != nil {
		return err
	}
	m.chat.SetEmoji(opts.Emoji)
	log.Info("demo start", "dir", dir)
	return tui.RunModel(ctx, m, opts.Options)
}

// headerLines are the lines the demo draws above the chat at start, the
// hint and the exactly-once verdict; the header grows when its text needs
// more at the window's width.
const headerLines = 2

// Model is the demo's root: the chat's model, wrapped. It owns the world,
// the demo's keys and switches as the status bars show them, the verdict,
// the guided scenario and the script being played.
type Model struct {
	// headerH is the height of the hint and the exactly-once line the
	// chat was last sized for (headerLines at start).
	headerH int
	chat    tui.Model
	world   *world
	th      themes.Theme
	keys    demoKeys
	w, h    int
	init    []tea.Cmd

	prefix bool // ctrl+x waits for its key

	// Per pane: the switches as last read from the world, and whether a
	// crash is armed after the next transition.
	flags      []demoFlags
	crashArmed []bool

	// The exactly-once verdict, read from both stores after what changed
	// them, at most one read at a time.
	verdict      verdictMsg
	verdictStale bool
	verdictBusy  bool

	// scen is the guided scenario being played (ctrl+x then a digit);
	// scripted is set while it types its keys, which are not its own
	// space and enter. serial numbers the runs; stepWait bounds how long a
	// step's effect may take (stepWait, shorter in tests).
	scen     *scenarioRun
	scripted bool
	serial   int
	stepWait time.Duration
	// facts is what the panes show, published after every update for the
	// steps' checks, which run in commands (check.go).
	facts *atomic.Pointer[demoFacts]
	// forgetting counts ctrl+x s still resetting the sessions.
	forgetting int

	// script is the demo script being played (Options.Script): the next
	// action and when it may run.
	script     []ScriptAction
	scriptAt   int
	scriptNext time.Time

	// fileSize is the size of scenario 8's file (file.go).
	fileSize int64
}

// demoFlags are the demo switches of one profile.
type demoFlags struct {
	held, unplugged  bool
	dropMsg, dropAck int // armed drops
}

// newModel creates alice/1 and bob/1 in w and the model showing them.
func newModel(ctx context.Context, w *world, th themes.Theme, log *slog.Logger, opts Options) (Model, error) {
	m := Model{chat: tui.New(ctx, th, log, opts.Clock()), world: w, th: th, keys: defaultDemoKeys(),
		w: 80, h: 24, verdictStale: true, script: opts.Script, fileSize: opts.FileSize,
		stepWait: stepWait, facts: new(atomic.Pointer[demoFacts])}
	if m.fileSize <= 0 {
		m.fileSize = DemoFileSize
	}
	m.chat.SetPrefixKey(m.keys.Prefix)
	var rec *recorder
	if opts.Record != nil {
		rec = newRecorder(opts.Record)
	}
	for i, addr := range []engine.Address{demoAlice, demoBob} {
		a, err := w.create(ctx, addr)
		if err != nil {
			return Model{}, fmt.Errorf("demo: %w", err)
		}
		po := tui.PaneOptions{Compose: i == 0, Peer: demoBob, Peers: w.client, ClosedHint: "ctrl+x o reopens", NoDrafts: true,
			Downloads: filepath.Join(w.dir, "downloads", addr.User)}
		if i == 1 {
			po.Peer = demoAlice
		}
		if rec != nil {
			po.OnNote = rec.record
		}
		m.chat.AddPane(addr, a, po)
		m.flags = append(m.flags, demoFlags{})
		m.crashArmed = append(m.crashArmed, false)
	}
	// 80x24 until the terminal says otherwise, less the demo's lines.
	var cmd tea.Cmd
	m.headerH = headerLines
	m, cmd = m.passOn(tea.WindowSizeMsg{Width: m.w, Height: m.h - headerLines})
	m.init = append(m.init, cmd)
	return m, nil
}

// Init starts the chat (its ticker, every pane's first reads and
// listeners).
func (m Model) Init() tea.Cmd {
	return tea.Batch(append([]tea.Cmd{m.chat.Init()}, m.init...)...)
}

// passOn hands msg to the chat.
func (m Model) passOn(msg tea.Msg) (Model, tea.Cmd) {
	next, cmd := m.chat.Update(msg)
	m.chat = next.(tui.Model)
	return m, cmd
}

// Update handles what is the demo's (its keys, its results, the crash
// before a draw, the verdict and the script on each tick) and passes
// everything else on to the chat; then it publishes what the panes show
// for the scenario's checks.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := m.update(msg)
	f := &demoFacts{crashArmed: slices.Clone(m.crashArmed)}
	for i := range m.chat.Panes() {
		f.panes = append(f.panes, m.chat.Pane(i))
	}
	m.facts.Store(f)
	return m, cmd
}

func (m Model) update(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.headerH = len(m.header())
		return m.passOn(tea.WindowSizeMsg{Width: msg.Width, Height: max(msg.Height-m.headerH, 0)})
	case tea.KeyMsg:
		var quit bool
		cmd, quit = m.key(msg)
		if quit {
			return m, tea.Quit
		}
	case tui.TickMsg:
		for i := range m.flags {
			m.readFlags(i)
		}
		m, cmd = m.passOn(msg)
		cmds := []tea.Cmd{cmd}
		if m.chat.Panes() == 2 {
			cmds = append(cmds, m.playScript(time.Time(msg)))
		}
		cmd = tea.Batch(append(cmds, m.countVerdict(), m.playQueued())...)
	case stageMsg:
		cmd = m.staged(msg)
	case checkMsg:
		cmd = m.checked(msg)
	case demoMsg:
		m.verdictStale = true
		cmd = tea.Batch(m.demoResult(msg), m.countVerdict(), m.playQueued())
	case killMsg:
		cmd = m.killed(msg)
	case verdictMsg:
		m.verdict, m.verdictBusy = msg, false
		cmd = m.countVerdict() // what changed while it was read
	default:
		i, events := m.chat.Events(msg)
		if events && m.crashArmed[i] {
			// Crash after the transition committed and before its event
			// is drawn or marked presented.
			m.detach(i, "crashed")
			return m, m.world.crashCmd(i, m.chat.Pane(i).Self, "after a transition, before showing it")
		}
		m, cmd = m.passOn(msg)
		if events {
			m.verdictStale = true
			cmd = tea.Batch(cmd, m.countVerdict())
		}
		var fit tea.Cmd
		m, fit = m.fitHeader()
		return m, tea.Batch(cmd, fit)
	}
	var fit tea.Cmd
	m, fit = m.fitHeader()
	return m, tea.Batch(cmd, fit, m.chat.Relayout())
}

// key handles a key: the quit key is the chat's; then the scenario's
// space, enter and esc, ctrl+x and the key after it; the rest goes on to
// the chat.
func (m *Model) key(k tea.KeyMsg) (tea.Cmd, bool) {
	if handled, quit := m.chat.Quit(k); handled {
		return nil, quit
	}
	if m.scen != nil && !m.scripted && !m.prefix {
		switch k.Type {
		case tea.KeySpace, tea.KeyEnter:
			if m.scen.failed != "" {
				m.scen = nil // a stopped run ends here
				return nil, false
			}
			return m.nextStep(), false
		case tea.KeyEsc:
			m.scen = nil
			return nil, false
		}
	}
	if m.prefix {
		m.prefix = false
		return tea.Batch(m.chat.SetHelpKeys("", nil), m.demoKey(k)), false
	}
	if input.Matches(k, m.keys.Prefix) {
		m.prefix = true
		head := fmt.Sprintf(" demo controls for %s: ctrl+x, then ", m.chat.Pane(m.chat.Active()).Self)
		return m.chat.SetHelpKeys(head, m.keys.all()), false
	}
	var cmd tea.Cmd
	*m, cmd = m.passOn(k)
	return cmd, false
}

// View draws the hint and the verdict above the chat.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 || m.chat.Panes() == 0 {
		return ""
	}
	return m.chat.Frame(layout.Clip(strings.Join(m.header(), "\n")+"\n"+m.chat.View(), m.w, m.h))
}

// header is what the demo draws above the chat: the hint and the
// exactly-once line, each on as many lines as the width needs.
func (m Model) header() []string {
	return append(m.hintView(), m.verdictView()...)
}

// fitHeader gives the chat the height the header leaves it, when the
// header's height changed (a longer narration, a narrower window).
func (m Model) fitHeader() (Model, tea.Cmd) {
	if m.w <= 0 || m.h <= 0 || m.chat.Panes() == 0 {
		return m, nil
	}
	hh := len(m.header())
	if hh == m.headerH {
		return m, nil
	}
	m.headerH = hh
	return m.passOn(tea.WindowSizeMsg{Width: m.w, Height: max(m.h-hh, 0)})
}

// readFlags reads pane i's switches from the world and shows them.
func (m *Model) readFlags(i int) {
	m.flags[i] = m.world.flags(m.chat.Pane(i).Self)
	m.showFlags(i)
}

// showFlags shows pane i's switches in its status bar, in a fixed order.
func (m *Model) showFlags(i int) {
	f := m.flags[i]
	var on []string
	for _, s := range []struct {
		on   bool
		name string
	}{{f.held, "held"}, {f.unplugged, "unplugged"}, {f.dropMsg > 0, "drop:envelope"}, {f.dropAck > 0, "drop:ACK"}, {m.crashArmed[i], "crash armed"}} {
		if s.on {
			on = append(on, s.name)
		}
	}
	m.chat.SetFlags(i, on)
}

// armCrash arms (or disarms) pane i's crash after its next transition:
// until then it marks nothing presented.
func (m *Model) armCrash(i int, armed bool) {
	m.crashArmed[i] = armed
	m.chat.HoldPresented(i, armed)
	m.showFlags(i)
}

// detach closes pane i's view of its profile (crashed, reinstalling).
func (m *Model) detach(i int, why string) {
	m.chat.Detach(i, why)
	m.armCrash(i, false)
}
