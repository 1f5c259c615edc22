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
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/layout"
)

// sideBySide is the narrowest terminal where the demo shows its two
// profiles next to each other; below it they are stacked.
const sideBySide = 120

// Model is the root of the interface: it owns the window size, which
// profile has the focus, the global keys and the help line, and routes
// every other message to the profile pane it belongs to.
type Model struct {
	ctx    context.Context
	th     themes.Theme
	keys   globalKeys
	dkeys  demoKeys
	help   help.Model
	panes  []pane
	active int
	w, h   int
	full   bool // full help shown
	prefix bool // the demo prefix waits for its key
	// quitAsk is set by a ctrl+c with a draft in a composer: a second one
	// quits, any other key keeps the draft.
	quitAsk bool
	world   *world
	log     *slog.Logger
	now     func() time.Time
	init    []tea.Cmd
	helpH   int

	notify   Notify    // how Run announces what arrives out of view
	bellOut  io.Writer // where the bell and desktop notifications go
	blurred  bool      // the terminal reported that it lost the focus
	away     int       // deliveries to the chosen conversation while blurred
	titleFor int       // the unread count the title shows (-1: not set yet)

	// The demo's exactly-once verdict, read from both stores after what
	// changed them, at most one read at a time.
	verdict      verdictMsg
	verdictStale bool
	verdictBusy  bool

	// scen is the guided scenario being played (ctrl+x then a digit);
	// scripted is set while it types its keys, which are not its own
	// space and enter.
	scen     *scenarioRun
	scripted bool
	// forgetting counts ctrl+x s still resetting the sessions.
	forgetting int

	// script is the demo script being played (Options.Script): the next
	// action and when it may run.
	script     []ScriptAction
	scriptAt   int
	scriptNext time.Time
}

func newModel(ctx context.Context, th themes.Theme, log *slog.Logger, now func() time.Time, w *world) Model {
	hm := help.New()
	hm.ShortSeparator = " · "
	hm.Styles = help.Styles{
		ShortKey: th.Help.Key, ShortDesc: th.Help.Desc, ShortSeparator: th.Help.Separator, Ellipsis: th.Help.Ellipsis,
		FullKey: th.Help.Key, FullDesc: th.Help.Desc, FullSeparator: th.Help.Separator,
	}
	// 80x24 until the terminal says otherwise (an output that is not a
	// terminal never does).
	return Model{ctx: ctx, th: th, keys: defaultGlobalKeys(w != nil), dkeys: defaultDemoKeys(), help: hm,
		world: w, log: log, now: now, helpH: 1, w: 80, h: 24, titleFor: -1, verdictStale: true}
}

// addPane adds a profile with its open session; focus says which panel
// starts focused.
func (m *Model) addPane(self engine.Address, s *attachment, focus panel) *pane {
	p := newPane(m.ctx, len(m.panes), self, m.th, m.log, m.now, m.world != nil)
	p.focus = focus
	cmd := p.attach(s)
	m.panes = append(m.panes, p)
	m.init = append(m.init, tag(p.idx, p.gen, cmd))
	if len(m.panes) == 1 {
		m.init = append(m.init, tag(0, p.gen, m.panes[0].setActive(true)))
	}
	return &m.panes[len(m.panes)-1]
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
		if _, ok := msg.msg.(eventsMsg); ok && p.crashArmed && m.world != nil {
			// Crash after the transition committed and before its event
			// is drawn or marked presented.
			p.detach("crashed")
			return m, m.world.crashCmd(msg.pane, p.self, "after a transition, before showing it")
		}
		if lm, ok := msg.msg.(lifeMsg); ok && lm.err == nil {
			msg.msg = m.lifeEvents(lm)
		}
		var c tea.Cmd
		m.panes[msg.pane], c = p.Update(msg.msg)
		cmd = tag(msg.pane, m.panes[msg.pane].gen, c)
		if evs, ok := msg.msg.(eventsMsg); ok {
			m.verdictStale = true
			cmd = tea.Batch(cmd, m.announce(msg.pane, evs.events), m.countVerdict())
		}
	case tickMsg:
		cmds := []tea.Cmd{tick()}
		for i := range m.panes {
			if m.world != nil {
				m.panes[i].flags = m.world.flags(m.panes[i].self)
			}
			var c tea.Cmd
			m.panes[i], c = m.panes[i].Update(msg)
			cmds = append(cmds, tag(i, m.panes[i].gen, c))
		}
		if m.world != nil && len(m.panes) == 2 {
			cmds = append(cmds, m.playScript(time.Time(msg)))
		}
		cmds = append(cmds, m.countVerdict())
		cmd = tea.Batch(cmds...)
	case demoMsg:
		m.verdictStale = true
		cmd = tea.Batch(m.demoResult(msg), m.countVerdict(), m.playQueued())
	case verdictMsg:
		m.verdict, m.verdictBusy = msg, false
		cmd = m.countVerdict() // what changed while it was read
	}
	return m, tea.Batch(cmd, m.resize(), m.title())
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd, bool) {
	if input.Matches(k, m.keys.Quit) {
		if m.quitAsk || m.draft() == "" {
			return m, nil, true
		}
		m.quitAsk = true
		return m, nil, false
	}
	m.quitAsk = false
	if m.scen != nil && !m.scripted && !m.prefix {
		switch k.Type {
		case tea.KeySpace, tea.KeyEnter:
			return m, m.nextStep(), false
		case tea.KeyEsc:
			m.scen = nil
			return m, nil, false
		}
	}
	if m.prefix {
		m.prefix = false
		return m, m.demoKey(k), false
	}
	p := &m.panes[m.active]
	switch {
	case input.Matches(k, m.keys.Demo):
		m.prefix = true
		return m, nil, false
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
	h := m.h - m.helpH
	if m.world != nil {
		h -= 2 // the hint and the verdict
	}
	h = max(h, 0)
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
	if m.world != nil {
		parts = append(parts, m.hintView(), m.verdictView())
	}
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
	return layout.Cells(clip(strings.Join(parts, "\n"), m.w, m.h))
}

// countVerdict reads the demo's exactly-once verdict again when something
// changed since the last read and no read is in flight.
func (m *Model) countVerdict() tea.Cmd {
	if m.world == nil || len(m.panes) != 2 || !m.verdictStale || m.verdictBusy {
		return nil
	}
	m.verdictStale, m.verdictBusy = false, true
	return m.world.verdictCmd(m.panes[0].self, m.panes[1].self)
}

// draft names the first composer holding text, as "your draft to bob/1";
// "" when every composer is empty.
func (m Model) draft() string {
	for _, p := range m.panes {
		if strings.TrimSpace(p.comp.Value()) != "" {
			return fmt.Sprintf("%s's draft to %s", p.self, p.comp.Peer())
		}
	}
	return ""
}

func (m Model) helpView() string {
	if m.quitAsk {
		return layout.Line(m.th.App.Prefix.Render(fmt.Sprintf(" ctrl+c again quits and loses %s; any other key keeps it", m.draft())), m.w)
	}
	if m.prefix {
		head := m.th.App.Prefix.Render(fmt.Sprintf(" demo controls for %s: ctrl+x, then ", m.panes[m.active].self))
		return m.wrapHelp(head, [][]key.Binding{m.dkeys.all()})
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
	switch p.focus {
	case panelConversations:
		add(p.conv.KeyMap())
	case panelTimeline:
		add(p.tl.KeyMap())
	case panelComposer:
		add(p.comp.KeyMap())
	case panelInbox:
		add(p.in.KeyMap())
	case panelOutbox:
		add(p.out.KeyMap())
	case panelEvents:
		add(p.ev.KeyMap())
	}
	pk := p.keys
	g := m.keys
	if m.full {
		g.Help.SetHelp("f1/?", "less help")
	}
	short = append(short, pk.Accept, pk.Next, g.Demo, g.Other, g.Help, g.Quit, pk.Retry)
	jumps := make([]key.Binding, 0, panelCount)
	for _, j := range pk.Jump {
		jumps = append(jumps, j)
	}
	full = append(full, append([]key.Binding{pk.Next, pk.Prev}, jumps...), []key.Binding{pk.Retry, pk.Accept})
	full = append(full, []key.Binding{g.Other, g.Demo, g.Help, g.Quit})
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
// while the terminal does not have the focus. The demo announces nothing.
func (m *Model) announce(pane int, evs []engine.Event) tea.Cmd {
	if m.world != nil || m.bellOut == nil {
		return nil
	}
	p := m.panes[pane]
	var from []engine.Address
	for _, e := range evs {
		r := e.Result
		if e.Kind != engine.EventReceived || r == nil || r.Kind != engine.ResultDelivery {
			continue
		}
		if m.blurred && r.Sender == p.peer {
			m.away++
		}
		if m.blurred || r.Sender != p.peer {
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
		n += p.conv.Unread()
	}
	return n
}

// title sets the terminal's title to the profile and its unread count,
// when the count changed.
func (m *Model) title() tea.Cmd {
	if m.world != nil || !m.notify.Title || len(m.panes) == 0 {
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
