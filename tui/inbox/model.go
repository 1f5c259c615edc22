// Package inbox is the panel of pending received messages: stored and
// reported as deliveries, waiting for the user to commit or discard them (one
// or all). It shows one page at a time, read from the store.
package inbox

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
	"github.com/parley-chat/parley/tui/internal/trace"
	"github.com/parley-chat/parley/wire"
)

// BatchSize bounds the messages finalized in one transaction by "all".
const BatchSize = 256

// Source is what the inbox reads and finalizes through: *engine.Client
// implements it.
type Source interface {
	PendingInbound(ctx context.Context, q engine.PageQuery) ([]engine.InboundMessage, error)
	CountInbound(ctx context.Context, peer *engine.Address) (int, error)
	FinalizeBatch(ctx context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error)
}

// LoadedMsg carries a page of the pending received messages and the total.
type LoadedMsg = pagedlist.Loaded[engine.InboundMessage]

// Failure is one message that could not be finalized.
type Failure struct {
	Sender engine.Address
	ID     wire.LogicalID
	Err    error
}

// FinalizedMsg reports a commit or discard of one message or of all.
type FinalizedMsg struct {
	Outcome  engine.Outcome
	All      bool
	Done     int // messages finalized
	AcksSent int // of which the ACK was handed off
	Failed   []Failure
	Err      error // the transaction failed: nothing of the last batch applied
}

// Model is the inbox panel.
type Model struct {
	src   Source
	ctx   context.Context
	th    themes.Theme
	keys  KeyMap
	w, h  int
	focus bool
	// list is the page, the cursor, the reads; its question is the
	// engine.Outcome of "all" waiting for confirmation.
	list pagedlist.List[engine.InboundMessage]
	// quotes are the messages the page's actions name, by sender and ID
	// (read when the source is a MessageSource).
	quotes map[quoteKey]engine.HistoryEntry
}

// MessageSource finds one message of a conversation: *engine.Client
// implements it. The inbox quotes the message a pending action names
// with it.
type MessageSource interface {
	Message(ctx context.Context, peer engine.Address, id wire.LogicalID) (engine.HistoryEntry, bool, error)
}

type quoteKey struct {
	peer engine.Address
	id   wire.LogicalID
}

// quotesMsg carries the messages the page's actions name.
type quotesMsg map[quoteKey]engine.HistoryEntry

// New returns the inbox; ctx bounds its calls.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(),
		list: pagedlist.New(func(m engine.InboundMessage) int64 { return m.Seq })}
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
	m.list.Ask(0)
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

// Total is the number of pending received messages at the last read.
func (m Model) Total() int { return m.list.Total() }

// Page returns the messages shown.
func (m Model) Page() []engine.InboundMessage { return m.list.Page() }

// Reload reads the current page again; calls while a read is in flight
// coalesce.
func (m *Model) Reload() tea.Cmd {
	after, limit, ok := m.list.Read()
	if !ok {
		return nil
	}
	src, ctx := m.src, m.ctx
	return func() tea.Msg {
		page, err := src.PendingInbound(ctx, engine.PageQuery{After: after, Limit: limit})
		if err != nil {
			return LoadedMsg{After: after, Err: err}
		}
		n, err := src.CountInbound(ctx, nil)
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
		return m, m.readQuotes(msg.Page)
	case quotesMsg:
		m.quotes = msg
		return m, nil
	case FinalizedMsg:
		m.list.Finish(describe(msg))
		return m, m.Reload()
	case engine.Event:
		switch msg.Kind {
		case engine.EventReceived, engine.EventFinalized, engine.EventResync:
			return m, m.Reload()
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
		if yes != 0 {
			return m, m.finalizeAll(engine.Outcome(yes))
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
	case input.Matches(k, m.keys.Commit):
		return m, m.finalizeOne(engine.OutcomeCommitted)
	case input.Matches(k, m.keys.Trace):
		if msg, ok := m.Selected(); ok {
			return m, func() tea.Msg { return trace.Request{Peer: msg.Sender, ID: msg.ID, Direction: engine.DirectionIn} }
		}
	case input.Matches(k, m.keys.Discard):
		return m, m.finalizeOne(engine.OutcomeDiscarded)
	case input.Matches(k, m.keys.CommitAll):
		return m, m.finalizeAll(engine.OutcomeCommitted)
	case input.Matches(k, m.keys.DiscardAll):
		if m.list.Total() > 0 {
			m.list.Ask(int(engine.OutcomeDiscarded))
		}
	}
	return m, nil
}

// errText is how a failed read shows.
func errText(err error) string { return engine.ErrorName(err) + ": " + err.Error() }

// Selected returns the message under the cursor.
func (m Model) Selected() (engine.InboundMessage, bool) { return m.list.Selected() }

func (m *Model) finalizeOne(o engine.Outcome) tea.Cmd {
	msg, ok := m.Selected()
	if !ok || !m.list.Start() {
		return nil
	}
	src, ctx := m.src, m.ctx
	return func() tea.Msg {
		return run(ctx, src, o, false, []engine.FinalizeRequest{{Sender: msg.Sender, ID: msg.ID, Outcome: o}})
	}
}

func (m *Model) finalizeAll(o engine.Outcome) tea.Cmd {
	if !m.list.Start() {
		return nil
	}
	src, ctx := m.src, m.ctx
	return func() tea.Msg { return FinalizeAll(ctx, src, o) }
}

// FinalizeAll commits or discards every pending received message, a page
// of BatchSize at a time, each page in one transaction. Messages that arrive
// meanwhile are included; a message that fails stays pending and is passed.
func FinalizeAll(ctx context.Context, src Source, o engine.Outcome) FinalizedMsg {
	total := FinalizedMsg{Outcome: o, All: true}
	var after int64
	for {
		page, err := src.PendingInbound(ctx, engine.PageQuery{After: after, Limit: BatchSize})
		if err != nil {
			total.Err = err
			return total
		}
		if len(page) == 0 {
			return total
		}
		reqs := make([]engine.FinalizeRequest, len(page))
		for i, p := range page {
			reqs[i] = engine.FinalizeRequest{Sender: p.Sender, ID: p.ID, Outcome: o}
		}
		r := run(ctx, src, o, true, reqs)
		total.Done += r.Done
		total.AcksSent += r.AcksSent
		total.Failed = append(total.Failed, r.Failed...)
		if r.Err != nil {
			total.Err = r.Err
			return total
		}
		after = page[len(page)-1].Seq
	}
}

func run(ctx context.Context, src Source, o engine.Outcome, all bool, reqs []engine.FinalizeRequest) FinalizedMsg {
	out := FinalizedMsg{Outcome: o, All: all}
	res, err := src.FinalizeBatch(ctx, reqs)
	if err != nil {
		out.Err = err
		return out
	}
	for i, r := range res {
		if r.Err != nil {
			out.Failed = append(out.Failed, Failure{Sender: reqs[i].Sender, ID: reqs[i].ID, Err: r.Err})
			continue
		}
		out.Done++
		if r.AckSent {
			out.AcksSent++
		}
	}
	return out
}

func describe(f FinalizedMsg) string {
	verb := "committed"
	if f.Outcome == engine.OutcomeDiscarded {
		verb = "discarded"
	}
	s := fmt.Sprintf("%s %d, %d ACK sent", verb, f.Done, f.AcksSent)
	if n := f.Done - f.AcksSent; n > 0 {
		s += fmt.Sprintf(", %d ACK not sent (the sender's retry brings it)", n)
	}
	if len(f.Failed) > 0 {
		s += fmt.Sprintf(", %d failed: %s", len(f.Failed), engine.ErrorName(f.Failed[0].Err))
	}
	if f.Err != nil {
		s += ", " + engine.ErrorName(f.Err) + ": " + f.Err.Error()
	}
	return s
}

// View draws the panel in exactly its size.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	st := m.th.Inbox
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Inbox", m.list.Detail("pending received"), m.w)}
	switch {
	case m.list.Asking() != 0:
		lines = append(lines, st.Confirm.Render(layout.Line(fmt.Sprintf(" discard all %d pending received? y/n", m.list.Total()), m.w)))
	case m.list.Err() != "":
		lines = append(lines, m.th.Panel.Error.Render(layout.Line(" "+m.list.Err(), m.w)))
	case len(m.list.Page()) == 0:
		lines = append(lines, m.th.Panel.Empty.Render(layout.Line(" nothing pending", m.w)))
	}
	row := func(i int, msg engine.InboundMessage) string { return m.row(i, msg, st) }
	return layout.Fit(m.list.Lines(lines, m.w, row, m.th.Panel.Count), m.w, m.h)
}

func (m Model) row(i int, msg engine.InboundMessage, st themes.ListStyles) string {
	mark := "  "
	if i == m.list.Cursor() {
		mark = "▸ "
	}
	head := mark + msg.Sender.String() + " " + layout.ShortID(msg.ID) + " "
	clock := ""
	if m.w >= 56 {
		clock = " " + layout.Clock(msg.ReceivedAt)
	}
	bodyW := max(m.w-len(head)-len(clock), 4)
	shown := layout.Shown(msg.Content, msg.Body)
	lookup := func(id wire.LogicalID) (engine.HistoryEntry, bool) {
		e, ok := m.quotes[quoteKey{msg.Sender, id}]
		return e, ok
	}
	if s, ok := actiontext.Describe(msg.Content, msg.Body, lookup); ok {
		shown = []byte(s)
	}
	body := layout.OneLine(shown, bodyW)
	if i == m.list.Cursor() && m.focus {
		return st.Selected.Render(layout.Line(head+body+pad(bodyW, body)+clock, m.w))
	}
	return st.Row.Render(mark) + st.Peer.Render(msg.Sender.String()) + " " + st.ID.Render(layout.ShortID(msg.ID)) + " " +
		st.Row.Render(body+pad(bodyW, body)) + st.Time.Render(clock)
}

func pad(w int, s string) string {
	n := w - layout.Width(s)
	if n <= 0 {
		return ""
	}
	return layout.Spaces(n)
}

// readQuotes reads the messages the actions among page name.
func (m Model) readQuotes(page []engine.InboundMessage) tea.Cmd {
	ms, ok := m.src.(MessageSource)
	if !ok {
		return nil
	}
	type want struct {
		peer engine.Address
		ids  []wire.LogicalID
	}
	var ws []want
	for _, msg := range page {
		if ids := actiontext.Targets([]engine.InboundMessage{msg}); len(ids) > 0 {
			ws = append(ws, want{msg.Sender, ids})
		}
	}
	if len(ws) == 0 {
		return nil
	}
	ctx := m.ctx
	return func() tea.Msg {
		out := quotesMsg{}
		for _, w := range ws {
			for _, id := range w.ids {
				if e, ok, err := ms.Message(ctx, w.peer, id); err == nil && ok {
					out[quoteKey{w.peer, id}] = e
				}
			}
		}
		return out
	}
}
