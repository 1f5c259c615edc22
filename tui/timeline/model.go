// Package timeline is the panel showing one conversation: sent messages with
// their state (pending, relay accepted, not sent, acknowledged, abandoned)
// and committed received messages. It pages the history from the store and
// never holds more than MaxLoaded entries.
package timeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/layout"
	"github.com/parley-chat/parley/tui/internal/sent"
)

// Page sizes.
const (
	// PageSize is how many history entries one read fetches.
	PageSize = 100
	// MaxLoaded bounds the entries held; scrolling further back drops the
	// newest, which come back at the next reload.
	MaxLoaded = 1000
)

// Source is what the panel reads: *engine.Client implements it.
type Source interface {
	History(ctx context.Context, peer engine.Address, before int64, limit int) ([]engine.HistoryEntry, error)
}

// LoadedMsg carries a page of history, newest first as the store returns it.
type LoadedMsg struct {
	Peer    engine.Address
	Older   bool  // a page before Before, to prepend
	Before  int64 // the page's bound (0: the newest)
	Limit   int
	Entries []engine.HistoryEntry
	Err     error
}

// Model is the timeline panel.
type Model struct {
	src     Source
	ctx     context.Context
	th      themes.Theme
	keys    KeyMap
	w, h    int
	focus   bool
	self    string
	peer    engine.Address
	entries []engine.HistoryEntry // oldest first
	more    bool                  // older entries may exist
	states  sent.States
	vp      viewport.Model
	err     string

	loading, again, older bool
}

// New returns the panel; ctx bounds its reads.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	vp := viewport.New(0, 0)
	vp.KeyMap = viewport.KeyMap{} // the panel's own keys drive it
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), states: sent.New(), vp: vp, self: "you"}
}

// SetSource replaces the source (after a reopen).
func (m *Model) SetSource(src Source) {
	m.src = src
	m.loading, m.again, m.older = false, false, false
}

// SetSize sets the panel's size, title included.
func (m *Model) SetSize(w, h int) {
	atBottom := m.vp.AtBottom()
	m.w, m.h = w, h
	m.vp.Width, m.vp.Height = w, max(h-1, 0)
	m.render(atBottom)
}

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes it away.
func (m *Model) Blur() { m.focus = false }

// KeyMap returns the panel's keys.
func (m Model) KeyMap() KeyMap { return m.keys }

// Peer returns the conversation shown.
func (m Model) Peer() engine.Address { return m.peer }

// Entries returns the loaded entries, oldest first.
func (m Model) Entries() []engine.HistoryEntry { return m.entries }

// SetPeer shows another conversation and reads its newest page.
func (m *Model) SetPeer(peer engine.Address) tea.Cmd {
	if peer == m.peer && (len(m.entries) > 0 || m.loading) {
		return nil
	}
	m.peer = peer
	m.entries, m.more, m.err = nil, false, ""
	m.loading, m.again, m.older = false, false, false
	m.render(true)
	return m.Reload()
}

// Reload reads the newest entries again (as many as are loaded, at least a
// page); calls while a read is in flight coalesce.
func (m *Model) Reload() tea.Cmd {
	if m.peer.IsZero() {
		return nil
	}
	if m.loading {
		m.again = true
		return nil
	}
	m.loading = true
	limit := layout.Clamp(len(m.entries), PageSize, MaxLoaded)
	return m.read(false, 0, limit)
}

func (m *Model) loadOlder() tea.Cmd {
	if !m.more || m.loading || len(m.entries) == 0 {
		return nil
	}
	m.loading, m.older = true, true
	return m.read(true, m.entries[0].Seq, PageSize)
}

func (m Model) read(older bool, before int64, limit int) tea.Cmd {
	src, ctx, peer := m.src, m.ctx, m.peer
	return func() tea.Msg {
		es, err := src.History(ctx, peer, before, limit)
		return LoadedMsg{Peer: peer, Older: older, Before: before, Limit: limit, Entries: es, Err: err}
	}
}

// Update handles the panel's messages, keys (when focused) and engine events.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		return m.loaded(msg)
	case engine.Event:
		return m.event(msg)
	case tea.KeyMsg:
		if m.focus {
			return m.key(msg)
		}
	}
	return m, nil
}

func (m Model) loaded(msg LoadedMsg) (Model, tea.Cmd) {
	if msg.Peer != m.peer {
		return m, nil // a read for a conversation no longer shown
	}
	m.loading, m.older = false, false
	if msg.Err != nil {
		m.err = engine.ErrorName(msg.Err) + ": " + msg.Err.Error()
	} else {
		m.err = ""
		page := make([]engine.HistoryEntry, len(msg.Entries))
		for i, e := range msg.Entries {
			page[len(page)-1-i] = e
		}
		if msg.Older {
			prevLines := m.vp.TotalLineCount()
			off := m.vp.YOffset
			m.entries = append(page, m.entries...)
			if len(m.entries) > MaxLoaded {
				m.entries = m.entries[:MaxLoaded]
			}
			m.more = len(msg.Entries) == msg.Limit
			m.render(false)
			m.vp.SetYOffset(off + m.vp.TotalLineCount() - prevLines)
		} else {
			atBottom := m.vp.AtBottom() || len(m.entries) == 0
			m.entries = page
			m.more = len(msg.Entries) == msg.Limit
			m.render(atBottom)
		}
	}
	if m.again {
		m.again = false
		return m, m.Reload()
	}
	return m, nil
}

func (m Model) event(e engine.Event) (Model, tea.Cmd) {
	m.states.Apply(e)
	mine := false
	switch e.Kind {
	case engine.EventResync:
		return m, m.Reload()
	case engine.EventReceived:
		if e.Result != nil && e.Result.Kind == engine.ResultAcknowledgement {
			mine = e.Result.Sender == m.peer
		}
	case engine.EventSent, engine.EventNotSent, engine.EventAbandoned, engine.EventIdentityAccepted:
		mine = e.Peer == m.peer
	case engine.EventFinalized:
		mine = e.Peer == m.peer && e.Outcome == engine.OutcomeCommitted
	}
	if mine {
		return m, m.Reload()
	}
	return m, nil
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd) {
	switch {
	case input.Matches(k, m.keys.Up):
		if m.vp.AtTop() {
			return m, m.loadOlder()
		}
		m.vp.ScrollUp(1)
	case input.Matches(k, m.keys.Down):
		m.vp.ScrollDown(1)
	case input.Matches(k, m.keys.PageUp):
		if m.vp.AtTop() {
			return m, m.loadOlder()
		}
		m.vp.PageUp()
	case input.Matches(k, m.keys.PageDown):
		m.vp.PageDown()
	case input.Matches(k, m.keys.Top):
		m.vp.GotoTop()
		return m, m.loadOlder()
	case input.Matches(k, m.keys.Bottom):
		m.vp.GotoBottom()
	}
	return m, nil
}

// render rebuilds the viewport's content from the loaded entries.
func (m *Model) render(bottom bool) {
	if m.w <= 0 {
		return
	}
	st := m.th.Timeline
	var b strings.Builder
	if m.more {
		b.WriteString(st.More.Render(layout.Line(" ↑ older messages: pgup loads them", m.w)))
		b.WriteByte('\n')
	}
	label := max(len(m.self), len(m.peer.String()))
	for i, e := range m.entries {
		if i > 0 || m.more {
			b.WriteByte('\n')
		}
		m.entry(&b, e, label)
	}
	m.vp.SetContent(b.String())
	if bottom {
		m.vp.GotoBottom()
	}
}

func (m *Model) entry(b *strings.Builder, e engine.HistoryEntry, labelW int) {
	st := m.th.Timeline
	var who, state string
	if e.Direction == engine.DirectionOut {
		who = st.Own.Render(fmt.Sprintf("%-*s", labelW, m.self))
		state = m.outState(e)
	} else {
		who = st.Peer.Render(fmt.Sprintf("%-*s", labelW, e.Peer.String()))
		state = st.Received.Render("delivered")
	}
	prefix := st.Time.Render(layout.Clock(e.At)) + " " + who + " "
	prefixW := 8 + 1 + labelW + 1
	stateW := ansi.StringWidth(state)
	bodyW := m.w - prefixW - stateW - 1
	if bodyW < 8 {
		bodyW = max(m.w-prefixW, 1)
		stateW = -1 // state on a line of its own
	}
	lines := layout.Wrap(layout.Clean(e.Body), bodyW)
	if len(lines) == 0 {
		lines = []string{""}
	}
	pad := strings.Repeat(" ", prefixW)
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
			b.WriteString(pad)
		} else {
			b.WriteString(prefix)
		}
		body := st.Body.Render(l)
		if i == 0 && stateW >= 0 {
			gap := m.w - prefixW - ansi.StringWidth(l) - stateW
			b.WriteString(body + strings.Repeat(" ", max(gap, 1)) + state)
		} else {
			b.WriteString(body)
		}
	}
	if stateW < 0 {
		b.WriteByte('\n')
		b.WriteString(pad + state)
	}
}

func (m *Model) outState(e engine.HistoryEntry) string {
	st := m.th.Timeline
	switch e.State {
	case engine.SentAcknowledged:
		return st.Acked.Render("acknowledged")
	case engine.SentAbandoned:
		return st.Dropped.Render("abandoned")
	}
	switch s, _ := m.states.Get(e.ID); s {
	case sent.Accepted:
		return st.Accepted.Render(s.String())
	case sent.NotSent:
		return st.NotSent.Render(s.String())
	}
	return st.Pending.Render("pending")
}

// View draws the panel in exactly its size.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	detail := "no conversation chosen"
	if !m.peer.IsZero() {
		detail = m.peer.String()
		if n := len(m.entries); n > 0 {
			detail += fmt.Sprintf(" · %d shown", n)
		}
	}
	title := layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Timeline", detail, m.w)
	var body string
	switch {
	case m.err != "":
		body = m.th.Panel.Error.Render(layout.Line(m.err, m.w))
	case len(m.entries) == 0 && !m.peer.IsZero():
		body = m.th.Panel.Empty.Render(layout.Line(" no messages yet", m.w))
	case len(m.entries) == 0:
		body = ""
	default:
		body = m.vp.View()
	}
	return layout.Fit(append([]string{title}, layout.Split(body)...), m.w, m.h)
}
