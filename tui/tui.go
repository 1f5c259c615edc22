// Package tui is parley's chat interface (Bubble Tea, bubbles, lipgloss):
// every message still in flight is visible and actionable. Run shows one
// profile.
//
// The root model (root.go) owns the window, the focus, the global keys and
// the routing; each profile is a pane (pane.go) of panels, one package per
// panel with its own keys: conversations, timeline, composer, inbox, outbox,
// eventlog. Update never does I/O: engine calls run in commands and come
// back as typed messages, and engine events arrive through a re-armed
// command listening on the client's channel. Every style comes from themes.
//
// The demo (package tui/demo) wraps this model and reaches it only through
// the seam in seam.go; tui imports nothing of it, tests included. tui
// imports engine, themes and the charmbracelet libraries, never the store,
// the transport or the profile wiring: the receive loop is the engine's
// (engine.Client.Run). TestArchitectureTable holds it to both, from the
// package table in docs/architecture.md.
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
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/picture"
)

// Options configure Run (and, embedded, the demo's Run). The zero value is
// usable.
type Options struct {
	// Theme is a themes name: "dark", "light", "high-contrast"; by
	// default the one that reads on the terminal's background (Theme).
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
	// Now is the clock (default time.Now); tests fix it.
	Now func() time.Time
	// Downloads is where fetched files are saved (Run; DefaultDownloads,
	// the XDG download directory, when empty).
	Downloads string
	// NoPreviews draws no picture in the conversation after a download
	// (the settings' previews = false).
	NoPreviews bool
	// Graphics is how a picture is drawn: "auto" (or ""), "kitty" or
	// "blocks" (the settings' graphics).
	Graphics string
	// Emoji is how clusters terminals measure differently are drawn:
	// whole, plain, or (the zero value) as the terminal is known to do.
	Emoji Emoji
	// Notify says how Run announces a message for a conversation not in
	// view (the demo announces nothing).
	Notify Notify
	// Names are names for devices from the settings file (Run); names kept
	// in the profile win over them.
	Names map[engine.Address]string
	// ImportCommand, when set, is the command that finishes the profile's
	// history import if one stopped part way (a linked device's history
	// when link is set, else a restore's); the status bar shows it.
	ImportCommand func(link bool) string
	// LinkCommand, when set, is the command a new device runs to be
	// linked to this profile's account; the devices panel shows it.
	LinkCommand string
	// LinkDevice, when set, lets the devices panel link a new device by
	// its code, as parley device add does.
	LinkDevice *DeviceLinking
}

// Notify are the ways a message that arrives for a conversation not in view
// is announced.
type Notify struct {
	Bell    bool // the terminal bell
	Desktop bool // a desktop notification through the terminal (OSC 777, OSC 9)
	Title   bool // the unread count in the terminal's title
}

// Clock is the clock the options give: Now, or time.Now.
func (o Options) Clock() func() time.Time {
	if o.Now != nil {
		return o.Now
	}
	return time.Now
}

// RunModel runs m, the chat's model or one wrapping it, in a terminal
// program as the options say (input, output, alternate screen) until it
// quits or ctx ends; a cancelled ctx is a clean end, like ctrl+c.
func RunModel(ctx context.Context, m tea.Model, o Options) error {
	_, err := runProgram(ctx, m, o)
	return err
}

// runProgram is RunModel returning the model as the program left it.
func runProgram(ctx context.Context, m tea.Model, o Options) (tea.Model, error) {
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
	final, err := tea.NewProgram(m, opts...).Run()
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return final, nil
	}
	return final, err
}

// Run shows one profile until the user quits (ctrl+c) or ctx ends; both
// return nil. It runs the client's receive loop (engine.Client.Run) in the
// background and ends it before returning; it closes nothing: the caller
// closes the client afterwards. Options.ConnState shows the relay
// connection.
func Run(ctx context.Context, client *engine.Client, opts Options) error {
	th, err := Theme(opts)
	if err != nil {
		return err
	}
	log, closeLog, err := OpenLog(opts)
	if err != nil {
		return err
	}
	defer closeLog()
	now := opts.Clock()
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
	a := &Attachment{Client: client, Events: client.Events(), Notes: make(chan eventlog.Entry), Done: done, State: state}
	m := New(ctx, th, log, now)
	m.notify, m.bellOut = opts.Notify, opts.Output
	m.SetEmoji(opts.Emoji)
	if m.bellOut == nil {
		m.bellOut = os.Stdout
	}
	graphics, err := picture.ParseMode(opts.Graphics)
	if err != nil {
		return fmt.Errorf("tui: %w", err)
	}
	po := PaneOptions{ChatFirst: true, Downloads: opts.Downloads, NoPreviews: opts.NoPreviews, Graphics: graphics,
		ImportCommand: opts.ImportCommand, LinkCommand: opts.LinkCommand, LinkDevice: opts.LinkDevice}
	if opts.Peer != "" {
		peer, err := engine.ParseAddress(opts.Peer)
		if err != nil {
			return fmt.Errorf("tui: peer: %w", err)
		}
		po.Compose, po.Peer = true, peer
	}
	i := m.AddPane(client.Self(), a, po)
	m.panes[i].fileNames = opts.Names
	log.Info("tui start", "self", client.Self().String())
	final, err := runProgram(ctx, m, opts)
	// What is in the composers is kept, whether the person quit or ctx
	// ended; the client is still open (the caller closes it).
	if fm, ok := final.(Model); ok {
		if serr := fm.SaveDrafts(context.WithoutCancel(ctx)); serr != nil {
			log.Warn("keep drafts", "err", serr)
		}
	}
	return err
}
