// Package requests is the panel listing a profile's message requests: the
// first messages of devices it has not accepted, which wait here, out of the
// conversations and the inbox, until they are accepted, rejected or
// rejected and blocked. It reads and acts through the engine only.
package requests

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
)

// Source is what the panel reads and acts on: *engine.Client implements it.
type Source interface {
	Requests(ctx context.Context) ([]engine.Request, error)
	AcceptRequest(ctx context.Context, peer engine.Address) (int, error)
	RejectRequest(ctx context.Context, peer engine.Address, block bool) error
}

var _ Source = (*engine.Client)(nil)

// LoadedMsg carries a fresh read of the open requests.
type LoadedMsg struct {
	List []engine.Request
	Err  error
}

// Op is what was done to a request.
type Op string

// What the panel's keys do.
const (
	OpAccept Op = "accept"
	OpReject Op = "reject"
	OpBlock  Op = "reject + block"
)

// DoneMsg reports an accept, reject or block: Count is how many messages an
// accepted request held (now pending deliveries of the conversation).
type DoneMsg struct {
	Peer  engine.Address
	Op    Op
	Count int
	Err   error
}

// Model is the requests panel.
type Model struct {
	src   Source
	ctx   context.Context
	th    themes.Theme
	keys  KeyMap
	w, h  int
	focus bool

	list   []engine.Request
	sel    engine.Address // the request under the cursor
	asking bool           // "reject and block sel?" is on screen
	status string         // what the last action did
	err    string         // why the last read failed

	loading, again bool
}

// New returns the panel reading from src (nil until SetSource); ctx bounds
// its reads and actions.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap()}
}

// SetSource replaces the source (a profile opened again); nil turns the
// panel off (a client without requests).
func (m *Model) SetSource(src Source) {
	m.src = src
	m.loading, m.again = false, false
	if src == nil {
		m.list, m.sel = nil, engine.Address{}
	}
}

// SetSize sets the panel's size in cells, title included.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes the keyboard away; a block not confirmed yet is not done.
func (m *Model) Blur() {
	m.focus = false
	m.ask(false)
}

// KeyMap returns the panel's keys for the help line.
func (m Model) KeyMap() KeyMap { return m.keys }

// Total is the number of open requests, for the status bar.
func (m Model) Total() int { return len(m.list) }

// List returns the open requests as last read, oldest first.
func (m Model) List() []engine.Request { return m.list }

// Reload reads the requests again; calls while a read is in flight coalesce
// into one more read after it.
func (m *Model) Reload() tea.Cmd {
	if m.src == nil {
		return nil
	}
	if m.loading {
		m.again = true
		return nil
	}
	m.loading = true
	src, ctx := m.src, m.ctx
	return func() tea.Msg {
		l, err := src.Requests(ctx)
		return LoadedMsg{List: l, Err: err}
	}
}

// Update handles the panel's messages, keys (when focused) and the engine
// events that change the requests.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		m.loading = false
		if msg.Err != nil {
			m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		} else {
			m.err = ""
			m.list = msg.List
			m.keepCursor()
		}
		if m.again {
			m.again = false
			return m, m.Reload()
		}
		return m, nil
	case DoneMsg:
		m.status = Describe(msg)
		return m, m.Reload()
	case engine.Event:
		if Changes(msg) {
			return m, m.Reload()
		}
	case tea.KeyMsg:
		if m.focus {
			return m.key(msg)
		}
	}
	return m, nil
}

// Changes reports whether an engine event changes the open requests: one
// opened or joined, accepted or swept, or every list to be read again.
func Changes(e engine.Event) bool {
	switch e.Kind {
	case engine.EventRequest, engine.EventRequestAccepted, engine.EventRequestsSwept, engine.EventResync:
		return true
	case engine.EventReceived:
		return e.Result != nil && e.Result.Kind == engine.ResultRequest
	}
	return false
}

// Describe says in words what an action did, for the status line and the
// event log.
func Describe(d DoneMsg) string {
	switch {
	case d.Err != nil:
		return fmt.Sprintf("%s %s failed: %s: %v", d.Op, d.Peer, engine.ErrorName(d.Err), d.Err)
	case d.Op == OpAccept:
		return fmt.Sprintf("accepted %s: %d %s now in the conversation, waiting as any delivery", d.Peer, d.Count, plural(d.Count, "message", "messages"))
	case d.Op == OpBlock:
		return fmt.Sprintf("rejected and blocked %s: its messages are deleted and its envelopes dropped (it is not told)", d.Peer)
	}
	return fmt.Sprintf("rejected %s: its messages are deleted (it is not told)", d.Peer)
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd) {
	if m.asking {
		yes := input.Matches(k, m.keys.Confirm)
		m.ask(false)
		if yes {
			return m, m.act(OpBlock)
		}
		m.status = "kept the request of " + m.sel.String()
		return m, nil
	}
	i := m.cursor()
	switch {
	case input.Matches(k, m.keys.Up):
		if i > 0 {
			m.sel = m.list[i-1].Peer
		}
	case input.Matches(k, m.keys.Down):
		if i+1 < len(m.list) {
			m.sel = m.list[i+1].Peer
		}
	case input.Matches(k, m.keys.Accept):
		return m, m.act(OpAccept)
	case input.Matches(k, m.keys.Reject):
		return m, m.act(OpReject)
	case input.Matches(k, m.keys.Block):
		if i >= 0 {
			m.ask(true)
		}
	}
	return m, nil
}

// act runs op on the request under the cursor, in a command.
func (m Model) act(op Op) tea.Cmd {
	i := m.cursor()
	if i < 0 || m.src == nil {
		return nil
	}
	src, ctx, peer := m.src, m.ctx, m.list[i].Peer
	return func() tea.Msg {
		d := DoneMsg{Peer: peer, Op: op}
		switch op {
		case OpAccept:
			d.Count, d.Err = src.AcceptRequest(ctx, peer)
		default:
			d.Err = src.RejectRequest(ctx, peer, op == OpBlock)
		}
		return d
	}
}

func (m *Model) ask(on bool) {
	m.asking = on
	m.keys.asking(on)
}

// cursor is the index of the request under the cursor, -1 when none.
func (m Model) cursor() int {
	for i, r := range m.list {
		if r.Peer == m.sel {
			return i
		}
	}
	return -1
}

// keepCursor keeps the cursor on its request, or on the first one when it
// went.
func (m *Model) keepCursor() {
	if m.cursor() < 0 {
		m.sel = engine.Address{}
		if len(m.list) > 0 {
			m.sel = m.list[0].Peer
		}
		m.ask(false)
	}
}

// View draws the panel in exactly its size.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	st := m.th.Requests
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Requests", fmt.Sprintf("%d from devices not accepted", len(m.list)), m.w)}
	if m.err != "" {
		lines = append(lines, m.th.Panel.Error.Render(layout.Line(m.err, m.w)))
	}
	if m.asking {
		lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" reject and block %s? its envelopes are dropped from now on · y blocks, n keeps", m.sel), m.w)))
	} else if m.status != "" {
		lines = append(lines, st.State.Render(layout.Line(" "+m.status, m.w)))
	}
	if len(m.list) == 0 {
		lines = append(lines, m.th.Panel.Empty.Render(layout.Line(" none: a first message from a device you have not accepted waits here", m.w)))
	}
	i := m.cursor()
	first := 0
	if body := m.h - len(lines); i >= body && body > 0 {
		first = i - body + 1
	}
	for j := first; j < len(m.list) && len(lines) < m.h; j++ {
		lines = append(lines, m.row(m.list[j], j == i, st))
	}
	return layout.Fit(lines, m.w, m.h)
}

// row draws one request: the sender, how many messages, when it was first
// seen and the preview, cleaned again here as every peer's text is (the
// engine already wrote its control characters out as text, \u001b, which
// is drawn as it is rather than quoted a second time).
func (m Model) row(r engine.Request, cur bool, st themes.ListStyles) string {
	mark, row := "  ", st.Row
	if cur {
		mark = "▸ "
		if m.focus {
			row = st.Selected
		}
	}
	sender := layout.OneLine([]byte(r.Peer.String()), 64)
	return row.Render(mark) + st.Peer.Render(sender) +
		row.Render(fmt.Sprintf(" · %d %s · first seen ", r.Count, plural(r.Count, "message", "messages"))) +
		st.Time.Render(layout.Clock(r.FirstSeen)) + row.Render(" · ") +
		row.Render(`"`+layout.OneLine([]byte(r.Preview), 80)+`"`)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
