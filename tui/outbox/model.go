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
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/actiontext"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/pagedlist"
	"github.com/parley-chat/parley/tui/internal/sent"
	"github.com/parley-chat/parley/tui/internal/trace"
	"github.com/parley-chat/parley/wire"
)

// Source is what the outbox reads and acts through: *engine.Client
// implements it.
type Source interface {
	PendingOutbound(ctx context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error)
	CountOutbound(ctx context.Context, peer *engine.Address) (int, error)
	Retry(ctx context.Context, peer engine.Address) ([]wire.LogicalID, error)
	Abandon(ctx context.Context, peer engine.Address, id wire.LogicalID) error
	ConversationsByPerson(ctx context.Context) ([]engine.Conversation, error)
}

// LoadedMsg carries a page of pending sent messages and the total.
type LoadedMsg = pagedlist.Loaded[engine.OutboundMessage]

// RetriedMsg reports a retry of one conversation (or of every one with
// pending messages): the messages handed off, and the first error.
type RetriedMsg struct {
	// Peers are the conversations retried: a person whose device list is
	// held is one, however many of their devices had lanes pending.
	Peers []engine.Address
	// Devices counts the devices whose lanes were retried.
	Devices int
	Sent    int
	Auto    bool // started by auto-retry
	// Peer is the device whose hand-off failed when Err is set, else the
	// conversation retried (for a retry of one).
	Peer engine.Address
	Err  error // *engine.MessageNotSentError when a hand-off failed
}

// AbandonedMsg reports abandoned messages.
type AbandonedMsg struct {
	Count int
	Err   error
}

// The questions the outbox asks (pagedlist.List.Ask).
const (
	askNone = iota
	askOne
	askAll
)

// Model is the outbox panel.
type Model struct {
	src    Source
	ctx    context.Context
	th     themes.Theme
	keys   KeyMap
	w, h   int
	focus  bool
	list   pagedlist.List[engine.OutboundMessage] // the page, the cursor, the reads, the question
	states sent.States
}

// New returns the outbox; ctx bounds its calls.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), states: sent.New(),
		list: pagedlist.New(func(m engine.OutboundMessage) int64 { return m.Seq })}
}

// SetSource replaces the source (after a reopen).
func (m *Model) SetSource(src Source) {
	m.src = src
	m.list.Reset()
}

// SetSize sets the panel's size, title included; the page holds as many
// messages as fit, and a page of another size is read again (the one read
// before the first size holds a single row).
func (m *Model) SetSize(w, h int) tea.Cmd {
	m.w, m.h = w, h
	if !m.list.SetHeight(h) || m.src == nil {
		return nil
	}
	return m.Reload()
}

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes it away (and forgets a question).
func (m *Model) Blur() {
	m.focus = false
	m.list.Ask(askNone)
}

// StatusLifetime is how long the panel's status line stays; the event log
// keeps what it said.
const StatusLifetime = pagedlist.StatusLifetime

// ExpireStatus clears a status line older than StatusLifetime.
func (m *Model) ExpireStatus(now time.Time) { m.list.ExpireStatus(now) }

// KeyMap returns the panel's keys.
func (m Model) KeyMap() KeyMap {
	k := m.keys
	k.Keys = m.list.Keys()
	return k
}

// Total is the number of pending sent messages at the last read.
func (m Model) Total() int { return m.list.Total() }

// Page returns the messages shown.
func (m Model) Page() []engine.OutboundMessage { return m.list.Page() }

// Reload reads the current page again; calls while a read is in flight
// coalesce.
func (m *Model) Reload() tea.Cmd {
	after, limit, ok := m.list.Read()
	if !ok {
		return nil
	}
	src, ctx := m.src, m.ctx
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
		if m.list.Loaded(msg, errText) {
			return m, m.Reload()
		}
		return m, nil
	case RetriedMsg:
		if !msg.Auto {
			m.list.Finish("retry: " + DescribeRetry(msg))
		}
		return m, m.Reload()
	case AbandonedMsg:
		status := fmt.Sprintf("abandoned %d", msg.Count)
		if msg.Err != nil {
			status += ", " + errText(msg.Err)
		}
		m.list.Finish(status)
		return m, m.Reload()
	case engine.Event:
		m.states.Apply(msg)
		switch msg.Kind {
		case engine.EventStored, engine.EventSent, engine.EventNotSent, engine.EventAbandoned, engine.EventIdentityAccepted, engine.EventResync:
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
	if waiting, yes := m.list.Answer(k); waiting {
		switch yes {
		case askAll:
			return m, m.abandonAll()
		case askOne:
			return m, m.abandonOne()
		}
		return m, nil
	}
	if handled, read := m.list.Move(k); handled {
		if read {
			return m, m.Reload()
		}
		return m, nil
	}
	switch {
	case input.Matches(k, m.keys.Retry):
		if msg, ok := m.Selected(); ok && m.list.Start() {
			return m, Retry(m.ctx, m.src, msg.Recipient, false)
		}
	case input.Matches(k, m.keys.Trace):
		if msg, ok := m.Selected(); ok {
			return m, func() tea.Msg { return trace.Request{Peer: msg.Recipient, ID: msg.ID, Direction: engine.DirectionOut} }
		}
	case input.Matches(k, m.keys.RetryAll):
		if m.list.Start() {
			return m, RetryAll(m.ctx, m.src)
		}
	case input.Matches(k, m.keys.Abandon):
		if _, ok := m.Selected(); ok {
			m.list.Ask(askOne)
		}
	case input.Matches(k, m.keys.AbandonAll):
		if m.list.Total() > 0 {
			m.list.Ask(askAll)
		}
	}
	return m, nil
}

// errText is how a failure shows.
func errText(err error) string { return engine.ErrorName(err) + ": " + err.Error() }

// Selected returns the message under the cursor.
func (m Model) Selected() (engine.OutboundMessage, bool) { return m.list.Selected() }

// Retry returns a command that retries the pending messages to the one
// device peer in order (the lane of a message in the outbox).
func Retry(ctx context.Context, src Source, peer engine.Address, auto bool) tea.Cmd {
	return func() tea.Msg {
		ids, err := src.Retry(ctx, peer)
		return RetriedMsg{Peers: []engine.Address{peer}, Devices: 1, Sent: len(ids), Auto: auto, Peer: peer, Err: err}
	}
}

// RetryConversation returns a command that retries the conversation with
// peer: for a person whose device list is held (peer their conversation or
// one of their devices), the lanes of each of their devices with messages
// pending, one device after the other, a device whose hand-off fails not
// stopping the others; for a device of its own, its lanes.
func RetryConversation(ctx context.Context, src Source, peer engine.Address) tea.Cmd {
	return func() tea.Msg {
		convs, err := src.ConversationsByPerson(ctx)
		if err != nil {
			return RetriedMsg{Peer: peer, Err: err}
		}
		c := engine.Conversation{Peer: peer}
		for _, cv := range convs {
			if cv.Peer == peer || cv.Person() && cv.Peer.User == peer.User {
				c = cv
				break
			}
		}
		var out RetriedMsg
		retryConversation(ctx, src, c, &out)
		if out.Err == nil {
			out.Peer = c.Peer
		}
		return out
	}
}

// RetryAll returns a command that retries every conversation with pending
// sent messages, one after the other (a person's devices in turn); a
// device whose hand-off fails does not stop the others.
func RetryAll(ctx context.Context, src Source) tea.Cmd {
	return func() tea.Msg {
		convs, err := src.ConversationsByPerson(ctx)
		if err != nil {
			return RetriedMsg{Err: err}
		}
		var out RetriedMsg
		for _, c := range convs {
			if c.PendingOut > 0 {
				retryConversation(ctx, src, c, &out)
			}
		}
		return out
	}
}

// retryConversation retries c's lanes into out: each of a person's devices
// with messages pending, or c's device.
func retryConversation(ctx context.Context, src Source, c engine.Conversation, out *RetriedMsg) {
	out.Peers = append(out.Peers, c.Peer)
	devices := []engine.Conversation{c}
	if c.Person() {
		devices = c.Devices
	}
	for _, d := range devices {
		if c.Person() && d.PendingOut == 0 {
			continue
		}
		out.Devices++
		ids, err := src.Retry(ctx, d.Peer)
		out.Sent += len(ids)
		if err != nil && out.Err == nil {
			out.Peer, out.Err = d.Peer, err
		}
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
	if r.Devices > len(r.Peers) {
		// A person's lanes: the devices say how far the retry went.
		s += fmt.Sprintf(" (%d devices)", r.Devices)
	}
	if r.Err != nil {
		s += "; " + r.Peer.String() + ": " + engine.ErrorName(r.Err) + ": " + r.Err.Error()
	}
	return s
}

func (m *Model) abandonOne() tea.Cmd {
	msg, ok := m.Selected()
	if !ok || !m.list.Start() {
		return nil
	}
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
	if !m.list.Start() {
		return nil
	}
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
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Outbox", m.list.Detail("pending sent"), m.w)}
	switch {
	case m.list.Asking() == askAll:
		lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" abandon all %d pending sent? (not a recall) y/n", m.list.Total()), m.w)))
	case m.list.Asking() == askOne:
		if msg, ok := m.Selected(); ok {
			lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" abandon %s to %s? (not a recall) y/n", layout.ShortID(msg.ID), msg.Recipient), m.w)))
		}
	case m.list.Err() != "":
		lines = append(lines, m.th.Panel.Error.Render(layout.Line(" "+m.list.Err(), m.w)))
	case len(m.list.Page()) == 0:
		lines = append(lines, m.th.Panel.Empty.Render(layout.Line(" nothing pending", m.w)))
	}
	row := func(i int, msg engine.OutboundMessage) string { return m.row(i, msg, st) }
	return layout.Fit(m.list.Lines(lines, m.w, row, m.th.Panel.Count), m.w, m.h)
}

func (m Model) row(i int, msg engine.OutboundMessage, st themes.ListStyles) string {
	if msg.Group != nil {
		return m.laneRow(i, msg, st)
	}
	mark := "  "
	if i == m.list.Cursor() {
		mark = "▸ "
	}
	state, _ := m.states.Get(msg.ID)
	stateText := state.String()
	head := mark + msg.Recipient.String() + " " + layout.ShortID(msg.ID) + " "
	tail := " " + stateText
	bodyW := max(m.w-len(head)-layout.Width(tail), 4)
	shown := layout.Shown(msg.Content, msg.Body)
	if s, ok := actiontext.Own(msg.Content, msg.Body); ok {
		shown = []byte(s) // an action: what it does, not its encoding
	}
	body := layout.OneLine(shown, bodyW)
	fill := layout.Spaces(bodyW - layout.Width(body))
	if i == m.list.Cursor() && m.focus {
		return st.Selected.Render(layout.Line(head+body+fill+tail, m.w))
	}
	stStyle := st.State
	if state == sent.NotSent {
		stStyle = st.Warn
	}
	return st.Row.Render(mark) + st.Peer.Render(msg.Recipient.String()) + " " + st.ID.Render(layout.ShortID(msg.ID)) + " " +
		st.Row.Render(body+fill) + " " + stStyle.Render(stateText)
}
