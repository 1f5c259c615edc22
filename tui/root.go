package tui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/picture"
)

// sideBySide is the narrowest terminal where two profiles show next to
// each other; below it they are stacked.
const sideBySide = 120

// Model is the root of the chat: it owns the window size, which profile has
// the focus, the global keys and the help line, and routes every other
// message to the profile pane it belongs to. It knows nothing of the demo,
// which wraps it (package tui/demo) through the methods in seam.go.
type Model struct {
	ctx    context.Context
	th     themes.Theme
	keys   globalKeys
	help   help.Model
	panes  []pane
	active int
	w, h   int
	full   bool // full help shown
	// quitAsk is set by a ctrl+c with a draft in a composer: a second one
	// quits, any other key keeps the draft.
	quitAsk bool
	// quitWait is set by a ctrl+c while entered messages are not stored
	// yet: the program quits once they are, a second ctrl+c quits now.
	quitWait bool
	// wholeClusters draws emoji clusters whole (SetEmoji).
	wholeClusters bool
	log           *slog.Logger
	now           func() time.Time
	init          []tea.Cmd
	helpH         int
	// helpHead and helpKeys, when set by a wrapper (SetHelpKeys), replace
	// the help line: the demo's controls after ctrl+x.
	helpHead string
	helpKeys []key.Binding

	notify   Notify    // how Run announces what arrives out of view
	bellOut  io.Writer // where the bell and desktop notifications go
	blurred  bool      // the terminal reported that it lost the focus
	away     int       // deliveries to the chosen conversation while blurred
	titleFor int       // the unread count the title shows (-1: not set yet)
}

// New returns a chat model with no profile yet (AddPane adds them): th
// styles it, log receives what the panes note, now is its clock. It
// announces nothing until Run sets how.
func New(ctx context.Context, th themes.Theme, log *slog.Logger, now func() time.Time) Model {
	hm := help.New()
	hm.ShortSeparator = " · "
	hm.Styles = help.Styles{
		ShortKey: th.Help.Key, ShortDesc: th.Help.Desc, ShortSeparator: th.Help.Separator, Ellipsis: th.Help.Ellipsis,
		FullKey: th.Help.Key, FullDesc: th.Help.Desc, FullSeparator: th.Help.Separator,
	}
	// 80x24 until the terminal says otherwise (an output that is not a
	// terminal never does).
	return Model{ctx: ctx, th: th, keys: defaultGlobalKeys(), help: hm,
		log: log, now: now, helpH: 1, w: 80, h: 24, titleFor: -1}
}

// PaneOptions are how a pane starts and what a wrapper adds to it. The zero
// value is a pane focused on its conversations.
type PaneOptions struct {
	// Compose starts the focus in the composer.
	Compose bool
	// Peer, when set, is the conversation chosen at start.
	Peer engine.Address
	// Peers returns the open client of another device this process holds
	// (the demo's peer), so that a message's trace shows both ends; nil
	// when there is none.
	Peers func(engine.Address) *engine.Client
	// OnNote sees every entry added to the pane's event log, in Update
	// (the demo's --record). It must not block.
	OnNote func(self engine.Address, e eventlog.Entry)
	// ClosedHint follows the reason in the status bar of a pane detached
	// (Model.Detach): how to open it again ("ctrl+x o reopens").
	ClosedHint string
	// NoDrafts keeps the composer's drafts in memory only, for a profile
	// that will not be opened again (the demo makes fresh ones on each
	// run): quitting with a draft then asks.
	NoDrafts bool
	// ChatFirst gives the conversation the room at ordinary sizes (below
	// about 46 rows): the timeline and the composer fill the pane, and the
	// inbox, outbox and events take the conversation's place while one has
	// the focus (alt+4, alt+5, alt+6), as in a small terminal. parley tui
	// sets it; the demo shows every panel.
	ChatFirst bool
	// Downloads is where fetched files are saved (DefaultDownloads when
	// empty).
	Downloads string
	// NoPreviews draws no picture in the conversation after a download.
	NoPreviews bool
	// Graphics is how a downloaded picture is drawn (the zero value: as
	// the terminal is known to show it).
	Graphics picture.Mode
	// Opener is the program that opens a saved file (xdg-open, or open on
	// macOS, when empty).
	Opener string
	// ImportCommand, when set, is the command that finishes a history
	// import that stopped part way (link says whether it is a linked
	// device's history, else a restore's): the status bar shows it with
	// the import's progress.
	ImportCommand func(link bool) string
	// LinkCommand, when set, is the command a new device runs to be
	// linked to this account (its relay named): the devices panel shows
	// it.
	LinkCommand string
	// LinkDevice, when set, lets the devices panel link a new device by
	// the code it printed (a): the command line joins the relay's
	// provisioning mailbox for it.
	LinkDevice *DeviceLinking
}

// AddPane adds a profile with its open client and returns its index. The
// first pane added has the keyboard; a second enables the key that
// switches between them.
func (m *Model) AddPane(self engine.Address, a *Attachment, o PaneOptions) int {
	p := newPane(m.ctx, len(m.panes), self, m.th, m.log, m.now)
	p.focus = panelConversations
	if o.Compose {
		p.focus = panelComposer
	}
	p.hooks = o
	cmd := p.attach(a)
	m.panes = append(m.panes, p)
	m.init = append(m.init, tag(p.idx, p.gen, cmd))
	if len(m.panes) == 1 {
		m.init = append(m.init, tag(0, p.gen, m.panes[0].setActive(true)))
	}
	m.keys.Other.SetEnabled(len(m.panes) > 1)
	q := &m.panes[p.idx]
	if !o.Peer.IsZero() {
		m.init = append(m.init, tag(p.idx, q.gen, q.conv().Select(o.Peer)))
	}
	return p.idx
}

// Init starts the ticker and every pane's first reads and listeners.
func (m Model) Init() tea.Cmd {
	return tea.Batch(append(m.init, tick())...)
}

// Update routes a message: global keys first, then the focused pane;
// tagged results to their pane.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case tea.FocusMsg, tea.BlurMsg:
		_, m.blurred = msg.(tea.BlurMsg)
		if !m.blurred {
			m.away = 0
		}
		for i := range m.panes {
			m.panes[i].blurred = m.blurred
		}
		cmd = m.title()
	case tea.KeyMsg:
		var quit bool
		m, cmd, quit = m.key(msg)
		if quit {
			return m, tea.Quit
		}
	case paneMsg:
		if msg.pane >= len(m.panes) || msg.gen != m.panes[msg.pane].gen {
			return m, nil // from a client closed since
		}
		p := &m.panes[msg.pane]
		if lm, ok := msg.msg.(traceMsg); ok && lm.err == nil {
			msg.msg = m.traceEvents(lm)
		}
		var c tea.Cmd
		m.panes[msg.pane], c = p.Update(msg.msg)
		cmd = tag(msg.pane, m.panes[msg.pane].gen, c)
		if evs, ok := msg.msg.(eventsMsg); ok {
			cmd = tea.Batch(cmd, m.announce(msg.pane, evs.events))
		}
		if m.quitWait && m.unsent() == 0 {
			// What was entered is stored: the quit asked for goes on.
			m.quitWait = false
			if m.draft() == "" || m.keepsDrafts() {
				return m, tea.Quit
			}
			m.quitAsk = true
		}
	case TickMsg:
		cmds := []tea.Cmd{tick()}
		for i := range m.panes {
			var c tea.Cmd
			m.panes[i], c = m.panes[i].Update(msg)
			cmds = append(cmds, tag(i, m.panes[i].gen, c))
		}
		cmd = tea.Batch(cmds...)
	}
	return m, tea.Batch(cmd, m.Relayout())
}

// Relayout lays the panes out again for the window and the help's height,
// and retitles the terminal when its count changed. Update does it after
// every message; a wrapper does it after each message it handles itself.
func (m *Model) Relayout() tea.Cmd {
	return tea.Batch(m.resize(), m.title())
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd, bool) {
	if handled, quit := m.Quit(k); handled {
		return m, nil, quit
	}
	p := &m.panes[m.active]
	switch {
	case input.Matches(k, m.keys.Help) && (k.String() != "?" || !p.capturing()):
		m.full = !m.full
		return m, nil, false
	case input.Matches(k, m.keys.Other) && len(m.panes) > 1:
		p.setActive(false)
		m.active = (m.active + 1) % len(m.panes)
		q := &m.panes[m.active]
		return m, tag(m.active, q.gen, q.setActive(true)), false
	}
	var c tea.Cmd
	m.panes[m.active], c = p.Update(k)
	return m, tag(m.active, m.panes[m.active].gen, c), false
}

// resize lays the panes out for the window and the help's height; the
// command reads again what a new size needs.
func (m *Model) resize() tea.Cmd {
	if m.w <= 0 || m.h <= 0 || len(m.panes) == 0 {
		return nil
	}
	m.help.Width = m.w
	m.helpH = len(strings.Split(m.helpView(), "\n"))
	h := max(m.h-m.helpH, 0)
	sizes := make([][2]int, len(m.panes))
	switch {
	case len(m.panes) == 1:
		sizes[0] = [2]int{m.w, h}
	case m.w >= sideBySide:
		left := (m.w - 1) / 2
		sizes[0], sizes[1] = [2]int{left, h}, [2]int{m.w - left - 1, h}
	default:
		top := h / 2
		sizes[0], sizes[1] = [2]int{m.w, top}, [2]int{m.w, h - top}
	}
	cmds := make([]tea.Cmd, len(m.panes))
	for i := range m.panes {
		cmds[i] = tag(i, m.panes[i].gen, m.panes[i].SetSize(sizes[i][0], sizes[i][1]))
	}
	return tea.Batch(cmds...)
}

// View draws the whole screen.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 || len(m.panes) == 0 {
		return ""
	}
	var parts []string
	switch {
	case len(m.panes) == 1:
		parts = append(parts, m.panes[0].View())
	case m.w >= sideBySide:
		h := m.panes[0].h
		sep := m.th.App.Separator.Render(strings.TrimSuffix(strings.Repeat("│\n", h), "\n"))
		parts = append(parts, layout.Beside(m.panes[0].View(), sep, m.panes[1].View()))
	default:
		parts = append(parts, m.panes[0].View(), m.panes[1].View())
	}
	parts = append(parts, m.helpView())
	return m.Frame(layout.Clip(strings.Join(parts, "\n"), m.w, m.h))
}

// draft names the first composer holding text, as "your draft to bob/1";
// "" when every composer is empty.
func (m Model) draft() string {
	for _, p := range m.panes {
		if strings.TrimSpace(p.comp().Value()) != "" {
			if p.group != nil {
				return fmt.Sprintf("%s's draft to #%s", p.self, p.comp().GroupName())
			}
			return fmt.Sprintf("%s's draft to %s", p.self, p.comp().Peer())
		}
	}
	// Drafts of the conversations not in view.
	for _, p := range m.panes {
		for peer, t := range p.draft.text {
			if (peer != p.peer || p.group != nil) && strings.TrimSpace(t) != "" {
				return fmt.Sprintf("%s's draft to %s", p.self, peer)
			}
		}
		if p.groupText() {
			return fmt.Sprintf("%s's draft to a group", p.self)
		}
	}
	return ""
}

// unsent counts the messages entered in every composer that the engine
// has not stored or refused yet.
func (m Model) unsent() int {
	n := 0
	for _, p := range m.panes {
		n += p.comp().Unsent()
	}
	return n
}

func (m Model) helpView() string {
	if m.quitWait {
		fate := "lose them"
		if m.keepsDrafts() {
			fate = "keep as drafts"
		}
		return layout.Line(m.th.App.Prefix.Render(fmt.Sprintf(" %d unsent: quit once stored · ctrl+c: quit now (%s) · other key: stay", m.unsent(), fate)), m.w)
	}
	if m.quitAsk {
		return layout.Line(m.th.App.Prefix.Render(fmt.Sprintf(" ctrl+c again quits and loses %s; any other key keeps it", m.draft())), m.w)
	}
	if m.helpKeys != nil {
		return m.wrapHelp(m.th.App.Prefix.Render(m.helpHead), [][]key.Binding{m.helpKeys})
	}
	km := m.keyHelp()
	if m.full {
		return m.wrapHelp("", km.full)
	}
	return layout.Line(m.help.ShortHelpView(km.short), m.w)
}

// wrapHelp draws groups of bindings, each group from a new line, wrapped at
// the window's width, so that no binding is ever cut off.
func (m Model) wrapHelp(head string, groups [][]key.Binding) string {
	st := m.th.Help
	sep := st.Separator.Render(" · ")
	var lines []string
	line, lineW := head, layout.Width(head)
	flush := func() {
		if lineW > 0 {
			lines = append(lines, layout.Line(line, m.w))
		}
		line, lineW = "", 0
	}
	for _, g := range groups {
		for _, b := range g {
			if !b.Enabled() {
				continue
			}
			item := st.Key.Render(b.Help().Key) + " " + st.Desc.Render(b.Help().Desc)
			w := layout.Width(b.Help().Key) + 1 + layout.Width(b.Help().Desc)
			if lineW > 0 && lineW+3+w > m.w {
				flush()
			}
			if lineW > 0 && line != head {
				line += sep
				lineW += 3
			}
			line += item
			lineW += w
		}
		flush()
	}
	flush()
	return strings.Join(lines, "\n")
}

// keyHelp gathers the bindings that apply now: the focused panel's, the
// pane's and the global ones.
func (m Model) keyHelp() keyHelp {
	p := m.panes[m.active]
	var short []key.Binding
	var full [][]key.Binding
	add := func(km help.KeyMap) {
		short = append(short, km.ShortHelp()...)
		full = append(full, km.FullHelp()...)
	}
	add(p.panels[p.focus].KeyMap())
	pk := p.keys
	g := m.keys
	if m.full {
		g.Help.SetHelp("f1/?", "less help")
	}
	short = append(short, pk.Accept, pk.Next, g.Prefix, g.Other, g.Help, g.Quit, pk.Retry)
	jumps := make([]key.Binding, 0, panelCount)
	for _, j := range pk.Jump {
		jumps = append(jumps, j)
	}
	full = append(full, append([]key.Binding{pk.Next, pk.Prev}, jumps...), []key.Binding{pk.Retry, pk.Accept})
	full = append(full, []key.Binding{g.Other, g.Prefix, g.Help, g.Quit})
	return keyHelp{short: short, full: full}
}

// note logs an entry in pane i's event log.
func (m *Model) note(i int, e eventlog.Entry) {
	if i >= 0 && i < len(m.panes) {
		m.panes[i].note(e)
	}
}

// announce rings, notifies and retitles for the deliveries in evs that
// arrived out of view: for a conversation other than the one chosen, or
// while the terminal does not have the focus. A model Run did not set up
// (the demo's) announces nothing.
func (m *Model) announce(pane int, evs []engine.Event) tea.Cmd {
	if m.bellOut == nil {
		return nil
	}
	p := m.panes[pane]
	var from []engine.Address
	for _, e := range evs {
		r := e.Result
		// A message another device of this person decided already is
		// finalized here in the same pass: the person has seen it, so it
		// does not ring (issue 33).
		if e.Kind != engine.EventReceived || r == nil || r.Kind != engine.ResultDelivery || r.DecidedElsewhere {
			continue
		}
		// A delivery from another device of the person in view is in
		// view: their devices are one conversation.
		shown := p.conv().Row(r.Sender) == p.peer
		if m.blurred && shown {
			m.away++
		}
		if m.blurred || !shown {
			from = append(from, r.Sender)
		}
	}
	if len(from) == 0 {
		return nil
	}
	var seq strings.Builder
	if m.notify.Bell {
		seq.WriteString("\a")
	}
	if m.notify.Desktop {
		// Only the sender: a notification can show on a locked screen, and
		// the message is end-to-end encrypted for a reason.
		text := "message from " + from[0].String()
		if len(from) > 1 {
			text = fmt.Sprintf("%d messages, the last from %s", len(from), from[len(from)-1])
		}
		fmt.Fprintf(&seq, "\x1b]777;notify;parley;%s\x07\x1b]9;parley: %s\x07", text, text)
	}
	out, b := m.bellOut, seq.String()
	var ring tea.Cmd
	if b != "" {
		ring = func() tea.Msg {
			io.WriteString(out, b)
			return nil
		}
	}
	return tea.Batch(ring, m.title())
}

// unread is what the title counts: deliveries to the other conversations
// not read yet, and to the chosen one while the terminal was away.
func (m Model) unread() int {
	n := m.away
	for _, p := range m.panes {
		n += p.conv().Unread()
	}
	return n
}

// title sets the terminal's title to the profile and its unread count,
// when the count changed.
func (m *Model) title() tea.Cmd {
	if !m.notify.Title || len(m.panes) == 0 {
		return nil
	}
	n := m.unread()
	if n == m.titleFor {
		return nil
	}
	m.titleFor = n
	t := "parley · " + m.panes[0].self.String()
	if n > 0 {
		t = fmt.Sprintf("(%d) %s", n, t)
	}
	return tea.SetWindowTitle(t)
}
