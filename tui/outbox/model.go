// Package outbox is the panel of pending sent messages: stored, not yet
// acknowledged by the peer. Each shows its last hand-off (pending, relay
// accepted, not sent); a retry resends a peer's messages in order, an abandon
// drops one (or all) locally. It shows one page at a time.
package outbox

import (
	"context"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/layout"
	"github.com/parley-chat/parley/tui/internal/life"
	"github.com/parley-chat/parley/tui/internal/pager"
	"github.com/parley-chat/parley/tui/internal/sent"
	"github.com/parley-chat/parley/wire"
)

// Source is what the outbox reads and acts through: *engine.Client
// implements it.
type Source interface {
	PendingOutbound(ctx context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error)
	CountOutbound(ctx context.Context, peer *engine.Address) (int, error)
	Retry(ctx context.Context, peer engine.Address) ([]wire.LogicalID, error)
	Abandon(ctx context.Context, peer engine.Address, id wire.LogicalID) error
	Conversations(ctx context.Context) ([]engine.Conversation, error)
}

// LoadedMsg carries a page of pending sent messages and the total.
type LoadedMsg struct {
	After int64
	Page  []engine.OutboundMessage
	Total int
	Err   error
}

// RetriedMsg reports a retry of one peer (or of every peer with pending
// messages): the messages handed off, and the first error.
type RetriedMsg struct {
	Peers []engine.Address
	Sent  int
	Auto  bool // started by auto-retry
	Peer  engine.Address
	Err   error // *engine.MessageNotSentError when a hand-off failed
}

// AbandonedMsg reports abandoned messages.
type AbandonedMsg struct {
	Count int
	Err   error
}

type ask uint8

const (
	askNone ask = iota
	askOne
	askAll
)

// Model is the outbox panel.
type Model struct {
	src      Source
	ctx      context.Context
	th       themes.Theme
	keys     KeyMap
	w, h     int
	focus    bool
	pg       pager.Pager
	page     []engine.OutboundMessage
	total    int
	sel      int
	err      string
	ask      ask
	busy     bool
	status   string
	statusAt time.Time
	states   sent.States

	loading, again bool
}

// New returns the outbox; ctx bounds its calls.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), states: sent.New()}
}

// SetSource replaces the source (after a reopen).
func (m *Model) SetSource(src Source) {
	m.src = src
	m.loading, m.again, m.busy = false, false, false
}

// SetSize sets the panel's size, title included; the page holds as many
// messages as fit, and a page of another size is read again (the one read
// before the first size holds a single row).
func (m *Model) SetSize(w, h int) tea.Cmd {
	rows := m.rows()
	m.w, m.h = w, h
	if m.rows() == rows || m.src == nil {
		return nil
	}
	return m.Reload()
}

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes it away (and forgets a question).
func (m *Model) Blur() {
	m.focus = false
	m.setAsk(askNone)
}

// StatusLifetime is how long the panel's status line stays; the event log
// keeps what it said.
const StatusLifetime = 8 * time.Second

// ExpireStatus clears a status line older than StatusLifetime.
func (m *Model) ExpireStatus(now time.Time) {
	if m.status != "" && now.Sub(m.statusAt) >= StatusLifetime {
		m.status = ""
	}
}

// KeyMap returns the panel's keys.
func (m Model) KeyMap() KeyMap { return m.keys }

// Total is the number of pending sent messages at the last read.
func (m Model) Total() int { return m.total }

// Page returns the messages shown.
func (m Model) Page() []engine.OutboundMessage { return m.page }

// rows is the page size: the panel's height less the title and, when
// there is room for it, a status line.
func (m Model) rows() int {
	if m.h >= 4 {
		return m.h - 2
	}
	return max(m.h-1, 1)
}

// Reload reads the current page again; calls while a read is in flight
// coalesce.
func (m *Model) Reload() tea.Cmd {
	if m.loading {
		m.again = true
		return nil
	}
	m.loading = true
	src, ctx, after, limit := m.src, m.ctx, m.pg.After(), m.rows()
	return func() tea.Msg {
		page, err := src.PendingOutbound(ctx, engine.PageQuery{After: after, Limit: limit})
		if err != nil {
			return LoadedMsg{After: after, Err: err}
		}
		n, err := src.CountOutbound(ctx, nil)
		return LoadedMsg{After: after, Page: page, Total: n, Err: err}
	}
}

// Update handles the panel's messages, keys (when focused) and engine events.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		m.loading = false
		if msg.After != m.pg.After() {
			return m, m.Reload()
		}
		if msg.Err != nil {
			m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		} else {
			m.err = ""
			m.page, m.total = msg.Page, msg.Total
			if len(m.page) == 0 && m.pg.Prev() {
				return m, m.Reload()
			}
			m.sel = layout.Clamp(m.sel, 0, max(len(m.page)-1, 0))
		}
		if m.again {
			m.again = false
			return m, m.Reload()
		}
		return m, nil
	case RetriedMsg:
		if !msg.Auto {
			m.busy = false
			m.status, m.statusAt = "retry: "+DescribeRetry(msg), time.Now()
		}
		return m, m.Reload()
	case AbandonedMsg:
		m.busy = false
		m.status, m.statusAt = fmt.Sprintf("abandoned %d", msg.Count), time.Now()
		if msg.Err != nil {
			m.status += ", " + engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
		}
		return m, m.Reload()
	case engine.Event:
		m.states.Apply(msg)
		switch msg.Kind {
		case engine.EventSent, engine.EventNotSent, engine.EventAbandoned, engine.EventIdentityAccepted, engine.EventResync:
			return m, m.Reload()
		case engine.EventReceived:
			if msg.Result != nil && msg.Result.Kind == engine.ResultAcknowledgement {
				return m, m.Reload()
			}
		}
		return m, nil
	case tea.KeyMsg:
		if m.focus {
			return m.key(msg)
		}
	}
	return m, nil
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd) {
	if m.ask != askNone {
		switch {
		case input.Matches(k, m.keys.Confirm):
			a := m.ask
			m.setAsk(askNone)
			if a == askAll {
				return m, m.abandonAll()
			}
			return m, m.abandonOne()
		case input.Matches(k, m.keys.Cancel):
			m.setAsk(askNone)
		}
		return m, nil
	}
	switch {
	case input.Matches(k, m.keys.Up):
		if m.sel > 0 {
			m.sel--
		} else if m.pg.Prev() {
			m.sel = m.rows() - 1
			return m, m.Reload()
		}
	case input.Matches(k, m.keys.Down):
		if m.sel+1 < len(m.page) {
			m.sel++
		} else if len(m.page) == m.rows() {
			m.pg.Next(m.page[len(m.page)-1].Seq)
			m.sel = 0
			return m, m.Reload()
		}
	case input.Matches(k, m.keys.NextPage):
		if len(m.page) == m.rows() {
			m.pg.Next(m.page[len(m.page)-1].Seq)
			m.sel = 0
			return m, m.Reload()
		}
	case input.Matches(k, m.keys.PrevPage):
		if m.pg.Prev() {
			m.sel = 0
			return m, m.Reload()
		}
	case input.Matches(k, m.keys.Retry):
		if msg, ok := m.Selected(); ok && !m.busy {
			m.busy = true
			return m, Retry(m.ctx, m.src, msg.Recipient, false)
		}
	case input.Matches(k, m.keys.Life):
		if msg, ok := m.Selected(); ok {
			return m, func() tea.Msg { return life.Msg{Peer: msg.Recipient, ID: msg.ID, Direction: engine.DirectionOut} }
		}
	case input.Matches(k, m.keys.RetryAll):
		if !m.busy {
			m.busy = true
			return m, RetryAll(m.ctx, m.src)
		}
	case input.Matches(k, m.keys.Abandon):
		if _, ok := m.Selected(); ok {
			m.setAsk(askOne)
		}
	case input.Matches(k, m.keys.AbandonAll):
		if m.total > 0 {
			m.setAsk(askAll)
		}
	}
	return m, nil
}

func (m *Model) setAsk(a ask) {
	m.ask = a
	m.keys.Confirm.SetEnabled(a != askNone)
	m.keys.Cancel.SetEnabled(a != askNone)
}

// Selected returns the message under the cursor.
func (m Model) Selected() (engine.OutboundMessage, bool) {
	if m.sel < len(m.page) {
		return m.page[m.sel], true
	}
	return engine.OutboundMessage{}, false
}

// Retry returns a command that retries peer's pending messages in order.
func Retry(ctx context.Context, src Source, peer engine.Address, auto bool) tea.Cmd {
	return func() tea.Msg {
		ids, err := src.Retry(ctx, peer)
		return RetriedMsg{Peers: []engine.Address{peer}, Sent: len(ids), Auto: auto, Peer: peer, Err: err}
	}
}

// RetryAll returns a command that retries every peer with pending sent
// messages, one peer after the other; a peer whose hand-off fails does not
// stop the others.
func RetryAll(ctx context.Context, src Source) tea.Cmd {
	return func() tea.Msg {
		convs, err := src.Conversations(ctx)
		if err != nil {
			return RetriedMsg{Err: err}
		}
		var out RetriedMsg
		for _, c := range convs {
			if c.PendingOut == 0 {
				continue
			}
			out.Peers = append(out.Peers, c.Peer)
			ids, err := src.Retry(ctx, c.Peer)
			out.Sent += len(ids)
			if err != nil && out.Err == nil {
				out.Peer, out.Err = c.Peer, err
			}
		}
		return out
	}
}

// DescribeRetry says in words what a retry did.
func DescribeRetry(r RetriedMsg) string {
	s := fmt.Sprintf("%d handed off", r.Sent)
	switch len(r.Peers) {
	case 0:
		s += " (nothing pending)"
	case 1:
		s += " to " + r.Peers[0].String()
	default:
		s += fmt.Sprintf(" to %d peers", len(r.Peers))
	}
	if r.Err != nil {
		s += "; " + r.Peer.String() + ": " + engine.ErrorName(r.Err) + ": " + r.Err.Error()
	}
	return s
}

func (m *Model) abandonOne() tea.Cmd {
	msg, ok := m.Selected()
	if !ok || m.busy {
		return nil
	}
	m.busy = true
	src, ctx := m.src, m.ctx
	return func() tea.Msg {
		err := src.Abandon(ctx, msg.Recipient, msg.ID)
		if err != nil {
			return AbandonedMsg{Err: err}
		}
		return AbandonedMsg{Count: 1}
	}
}

func (m *Model) abandonAll() tea.Cmd {
	if m.busy {
		return nil
	}
	m.busy = true
	src, ctx := m.src, m.ctx
	return func() tea.Msg {
		var out AbandonedMsg
		var after int64
		for {
			page, err := src.PendingOutbound(ctx, engine.PageQuery{After: after, Limit: 256})
			if err != nil {
				out.Err = err
				return out
			}
			if len(page) == 0 {
				return out
			}
			for _, p := range page {
				if err := src.Abandon(ctx, p.Recipient, p.ID); err != nil {
					if out.Err == nil {
						out.Err = err
					}
					continue
				}
				out.Count++
			}
			after = page[len(page)-1].Seq
		}
	}
}

// View draws the panel in exactly its size.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	st := m.th.Outbox
	detail := fmt.Sprintf("%d pending sent", m.total)
	if pages := pager.Pages(m.total, m.rows()); pages > 1 {
		detail += fmt.Sprintf(" · page %d/%d", m.pg.Index(), pages)
	}
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Outbox", detail, m.w)}
	switch {
	case m.ask == askAll:
		lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" abandon all %d pending sent? (not a recall) y/n", m.total), m.w)))
	case m.ask == askOne:
		if msg, ok := m.Selected(); ok {
			lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" abandon %s to %s? (not a recall) y/n", layout.ShortID(msg.ID), msg.Recipient), m.w)))
		}
	case m.err != "":
		lines = append(lines, m.th.Panel.Error.Render(layout.Line(" "+m.err, m.w)))
	case len(m.page) == 0:
		lines = append(lines, m.th.Panel.Empty.Render(layout.Line(" nothing pending", m.w)))
	}
	for i, msg := range m.page {
		if len(lines) >= 1+m.rows() {
			break
		}
		lines = append(lines, m.row(i, msg, st))
	}
	if m.status != "" && m.h >= 4 {
		for len(lines) < m.h-1 {
			lines = append(lines, "")
		}
		lines = append(lines, m.th.Panel.Count.Render(layout.Line(" "+m.status, m.w)))
	}
	return layout.Fit(lines, m.w, m.h)
}

func (m Model) row(i int, msg engine.OutboundMessage, st themes.ListStyles) string {
	mark := "  "
	if i == m.sel {
		mark = "▸ "
	}
	state, _ := m.states.Get(msg.ID)
	stateText := state.String()
	head := mark + msg.Recipient.String() + " " + layout.ShortID(msg.ID) + " "
	tail := " " + stateText
	bodyW := max(m.w-len(head)-layout.Width(tail), 4)
	body := layout.OneLine(msg.Body, bodyW)
	fill := layout.Spaces(bodyW - layout.Width(body))
	if i == m.sel && m.focus {
		return st.Selected.Render(layout.Line(head+body+fill+tail, m.w))
	}
	stStyle := st.State
	if state == sent.NotSent {
		stStyle = st.Warn
	}
	return st.Row.Render(mark) + st.Peer.Render(msg.Recipient.String()) + " " + st.ID.Render(layout.ShortID(msg.ID)) + " " +
		st.Row.Render(body+fill) + " " + stStyle.Render(stateText)
}
