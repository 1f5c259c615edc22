// Package timeline is the panel showing one conversation in the order things
// happened on this device: sent messages with their state (pending, relay
// accepted, not sent, acknowledged, abandoned), committed received messages,
// and received messages still waiting for a decision, with the keys that
// commit or discard them right there. It pages the history from the store,
// never holds more than MaxLoaded entries, and searches what it holds.
package timeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/tui/internal/layout"
	"github.com/parley-chat/parley/tui/internal/life"
	"github.com/parley-chat/parley/tui/internal/sent"
	"github.com/parley-chat/parley/wire"
)

// Page sizes.
const (
	// PageSize is how many history entries one read fetches.
	PageSize = 100
	// MaxLoaded bounds the entries held; scrolling further back drops the
	// newest, which come back at the next reload.
	MaxLoaded = 1000
	// MaxWaiting bounds the received messages still pending that the
	// conversation shows (the inbox lists them all).
	MaxWaiting = 200
)

// Source is what the panel reads and acts through: *engine.Client
// implements it.
type Source interface {
	History(ctx context.Context, peer engine.Address, before int64, limit int) ([]engine.HistoryEntry, error)
	PendingInbound(ctx context.Context, q engine.PageQuery) ([]engine.InboundMessage, error)
	FinalizeBatch(ctx context.Context, reqs []engine.FinalizeRequest) ([]engine.FinalizeResult, error)
}

// LoadedMsg carries a page of history, newest first as the store returns
// it, and (for a read of the newest page) the received messages still
// pending.
type LoadedMsg struct {
	Peer    engine.Address
	Older   bool  // a page before Before, to prepend
	Before  int64 // the page's bound (0: the newest)
	Limit   int
	Entries []engine.HistoryEntry
	Waiting []engine.InboundMessage // oldest first
	Err     error
}

// FinalizedMsg reports commits or discards made from the conversation.
type FinalizedMsg struct {
	Peer    engine.Address
	Outcome engine.Outcome
	Auto    bool // committed because the policy commits what was shown
	Reqs    []engine.FinalizeRequest
	Results []engine.FinalizeResult
	Err     error
}

// item is one line group of the conversation: a history entry or a
// received message still waiting.
type item struct {
	hist *engine.HistoryEntry
	wait *engine.InboundMessage
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
	names   map[engine.Address]string
	peer    engine.Address
	entries []engine.HistoryEntry   // oldest first
	waiting []engine.InboundMessage // oldest first
	items   []item                  // entries and waiting, in time order
	spans   [][2]int                // each item's first and last line in the viewport
	more    bool                    // older entries may exist
	states  sent.States
	vp      viewport.Model
	err     string
	status  string

	onRead  bool                    // the policy commits what was shown
	busy    map[wire.LogicalID]bool // finalizations in flight
	discard bool                    // x asked once: x again discards
	search  textinput.Model         // the query being typed
	typing  bool                    // the search prompt has the keyboard
	query   string                  // the query searched for
	matches []int                   // items that match, oldest first
	current int                     // index into matches

	loading, again, older bool
}

// New returns the panel; ctx bounds its reads.
func New(ctx context.Context, src Source, th themes.Theme) Model {
	vp := viewport.New(0, 0)
	vp.KeyMap = viewport.KeyMap{} // the panel's own keys drive it
	in := textinput.New()
	in.Prompt = "/"
	in.CharLimit = 200
	in.Cursor.SetMode(cursor.CursorStatic) // a blink redraws the screen twice a second for nothing
	return Model{src: src, ctx: ctx, th: th, keys: DefaultKeyMap(), states: sent.New(), vp: vp, self: "you",
		search: in, busy: map[wire.LogicalID]bool{}}
}

// SetSource replaces the source (after a reopen).
func (m *Model) SetSource(src Source) {
	m.src = src
	m.loading, m.again, m.older = false, false, false
	m.busy = map[wire.LogicalID]bool{}
}

// SetSize sets the panel's size, title included.
func (m *Model) SetSize(w, h int) {
	atBottom := m.vp.AtBottom()
	m.w, m.h = w, h
	m.vp.Width, m.vp.Height = w, max(h-1-m.footerLines(), 0)
	m.search.Width = max(w-3, 1)
	m.render(atBottom)
}

// footerLines is the room under the messages: the search prompt or the
// search's or a decision's status.
func (m Model) footerLines() int {
	if m.typing || m.query != "" || m.status != "" {
		return 1
	}
	return 0
}

func (m *Model) resizeViewport() {
	h := max(m.h-1-m.footerLines(), 0)
	if h != m.vp.Height {
		atBottom := m.vp.AtBottom()
		m.vp.Height = h
		m.render(atBottom)
	}
}

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes it away (a search being typed is kept as typed so far, a
// discard that asked is forgotten).
func (m *Model) Blur() {
	m.focus = false
	m.typing = false
	m.search.Blur()
	m.discard = false
}

// Capturing reports whether typed characters belong to the search prompt.
func (m Model) Capturing() bool { return m.typing }

// KeyMap returns the panel's keys.
func (m Model) KeyMap() KeyMap {
	k := m.keys
	k.Commit.SetEnabled(len(m.waiting) > 0 && !m.onRead)
	k.Discard.SetEnabled(len(m.waiting) > 0)
	k.Next.SetEnabled(m.query != "")
	k.Prev.SetEnabled(m.query != "")
	return k
}

// Peer returns the conversation shown.
func (m Model) Peer() engine.Address { return m.peer }

// Entries returns the loaded history entries, oldest first.
func (m Model) Entries() []engine.HistoryEntry { return m.entries }

// Waiting returns the received messages still pending that the
// conversation shows, oldest first.
func (m Model) Waiting() []engine.InboundMessage { return m.waiting }

// SetNames sets the nicknames shown next to addresses.
func (m *Model) SetNames(names map[engine.Address]string) {
	m.names = names
	m.render(m.vp.AtBottom())
}

// SetCommitOnRead says whether the policy commits what the conversation
// shows (the keys then only discard).
func (m *Model) SetCommitOnRead(on bool) {
	if on != m.onRead {
		m.onRead = on
		m.render(m.vp.AtBottom())
	}
}

// SetPeer shows another conversation and reads its newest page.
func (m *Model) SetPeer(peer engine.Address) tea.Cmd {
	if peer == m.peer && (len(m.entries) > 0 || m.loading) {
		return nil
	}
	m.peer = peer
	m.entries, m.waiting, m.more, m.err, m.status = nil, nil, false, "", ""
	m.loading, m.again, m.older, m.discard = false, false, false, false
	m.clearSearch()
	m.render(true)
	return m.Reload()
}

// Reload reads the newest entries again (as many as are loaded, at least a
// page) and the received messages still pending; calls while a read is in
// flight coalesce.
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
		msg := LoadedMsg{Peer: peer, Older: older, Before: before, Limit: limit, Entries: es, Err: err}
		if err == nil && !older {
			msg.Waiting, msg.Err = src.PendingInbound(ctx, engine.PageQuery{Peer: &peer, Limit: MaxWaiting})
		}
		return msg
	}
}

// Update handles the panel's messages, keys (when focused) and engine events.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		return m.loaded(msg)
	case FinalizedMsg:
		return m.finalized(msg)
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
			atBottom := m.vp.AtBottom() || len(m.items) == 0
			m.entries, m.waiting = page, msg.Waiting
			m.more = len(msg.Entries) == msg.Limit
			m.render(atBottom)
		}
		if m.query != "" {
			m.findMatches(msg.Older)
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
		if r := e.Result; r != nil {
			mine = r.Sender == m.peer && (r.Kind == engine.ResultAcknowledgement || r.Kind == engine.ResultDelivery)
		}
	case engine.EventSent, engine.EventNotSent, engine.EventAbandoned, engine.EventIdentityAccepted, engine.EventFinalized:
		mine = e.Peer == m.peer
	}
	if mine {
		return m, m.Reload()
	}
	return m, nil
}

func (m Model) key(k tea.KeyMsg) (Model, tea.Cmd) {
	if m.typing {
		return m.searchKey(k)
	}
	if m.discard && !input.Matches(k, m.keys.Discard) {
		m.discard, m.status = false, ""
		m.resizeViewport()
	}
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
	case input.Matches(k, m.keys.Commit) && !m.onRead:
		if w, ok := m.firstWaiting(); ok {
			return m, m.finalize([]engine.InboundMessage{w}, engine.OutcomeCommitted, false)
		}
	case input.Matches(k, m.keys.Discard):
		w, ok := m.firstWaiting()
		switch {
		case !ok:
		case !m.discard:
			m.discard = true
			m.status = fmt.Sprintf("discard %q from %s? x again discards it for good, any other key keeps it", layout.OneLine(w.Body, 24), m.label(w.Sender))
			m.resizeViewport()
		default:
			m.discard, m.status = false, ""
			m.resizeViewport()
			return m, m.finalize([]engine.InboundMessage{w}, engine.OutcomeDiscarded, false)
		}
	case input.Matches(k, m.keys.Life):
		return m, m.lifeOfCurrent()
	case input.Matches(k, m.keys.Search):
		m.typing = true
		m.search.SetValue("")
		m.resizeViewport()
		return m, m.search.Focus()
	case input.Matches(k, m.keys.Next):
		return m, m.nextMatch(-1)
	case input.Matches(k, m.keys.Prev):
		return m, m.nextMatch(+1)
	case input.Matches(k, m.keys.ClearSearch) && m.query != "":
		m.clearSearch()
		m.render(true)
	}
	return m, nil
}

// firstWaiting is the oldest received message still pending that no
// decision is in flight for: the one c and x act on.
func (m Model) firstWaiting() (engine.InboundMessage, bool) {
	for _, w := range m.waiting {
		if !m.busy[w.ID] {
			return w, true
		}
	}
	return engine.InboundMessage{}, false
}

// finalize commits or discards ws.
func (m *Model) finalize(ws []engine.InboundMessage, outcome engine.Outcome, auto bool) tea.Cmd {
	reqs := make([]engine.FinalizeRequest, 0, len(ws))
	for _, w := range ws {
		if m.busy[w.ID] {
			continue
		}
		m.busy[w.ID] = true
		reqs = append(reqs, engine.FinalizeRequest{Sender: w.Sender, ID: w.ID, Outcome: outcome})
	}
	if len(reqs) == 0 {
		return nil
	}
	src, ctx, peer := m.src, m.ctx, m.peer
	return func() tea.Msg {
		res, err := src.FinalizeBatch(ctx, reqs)
		return FinalizedMsg{Peer: peer, Outcome: outcome, Auto: auto, Reqs: reqs, Results: res, Err: err}
	}
}

func (m Model) finalized(msg FinalizedMsg) (Model, tea.Cmd) {
	for _, r := range msg.Reqs {
		delete(m.busy, r.ID)
	}
	if msg.Peer != m.peer {
		return m, nil
	}
	return m, m.Reload()
}

// CommitShown commits, under the on-read policy, the received messages
// still pending that the panel shows now; it does nothing otherwise.
func (m *Model) CommitShown() tea.Cmd {
	if !m.onRead || len(m.waiting) == 0 || m.h <= 1 {
		return nil
	}
	top, bottom := m.vp.YOffset, m.vp.YOffset+m.vp.Height-1
	var shown []engine.InboundMessage
	for i, it := range m.items {
		if it.wait == nil || i >= len(m.spans) {
			continue
		}
		if sp := m.spans[i]; sp[1] >= top && sp[0] <= bottom {
			shown = append(shown, *it.wait)
		}
	}
	return m.finalize(shown, engine.OutcomeCommitted, true)
}

func (m Model) searchKey(k tea.KeyMsg) (Model, tea.Cmd) {
	switch {
	case k.Type == tea.KeyEsc:
		m.typing = false
		m.search.Blur()
		m.resizeViewport()
		return m, nil
	case k.Type == tea.KeyEnter:
		m.typing = false
		m.search.Blur()
		m.query = strings.TrimSpace(m.search.Value())
		m.matches, m.current = nil, 0
		if m.query == "" {
			m.clearSearch()
			m.render(true)
			return m, nil
		}
		m.findMatches(false)
		m.resizeViewport()
		if len(m.matches) == 0 && m.more {
			return m, m.loadOlder()
		}
		return m, nil
	}
	if input.IsText(k) {
		input.Insert(&m.search, k.Runes)
		return m, nil
	}
	var cmd tea.Cmd
	m.search, cmd = m.search.Update(k)
	return m, cmd
}

func (m *Model) clearSearch() {
	m.query, m.matches, m.current, m.typing = "", nil, 0, false
	m.search.SetValue("")
	m.search.Blur()
	m.resizeViewport()
}

// findMatches finds the items whose text holds the query (case does not
// matter) and shows the newest one, or, after a page of older entries
// came in, the newest of those.
func (m *Model) findMatches(olderPage bool) {
	q := strings.ToLower(m.query)
	var prevOldest *int64
	if olderPage && len(m.matches) > 0 {
		if h := m.items[m.matches[0]].hist; h != nil {
			prevOldest = &h.Seq
		}
	}
	m.matches = nil
	for i, it := range m.items {
		if strings.Contains(strings.ToLower(layout.Clean(it.body())), q) {
			m.matches = append(m.matches, i)
		}
	}
	m.current = len(m.matches) - 1
	if prevOldest != nil {
		// Continue the walk back: the newest match older than the one shown.
		for j := len(m.matches) - 1; j >= 0; j-- {
			if h := m.items[m.matches[j]].hist; h != nil && h.Seq < *prevOldest {
				m.current = j
				break
			}
		}
	}
	m.render(false)
	m.showCurrent()
}

// nextMatch moves to the match dir steps away (-1: older); past the oldest
// loaded it reads an older page.
func (m *Model) nextMatch(dir int) tea.Cmd {
	if m.query == "" {
		return nil
	}
	next := m.current + dir
	if next < 0 {
		if m.more {
			return m.loadOlder()
		}
		next = len(m.matches) - 1 // wrap to the newest
	}
	if next >= len(m.matches) {
		next = 0
	}
	if len(m.matches) == 0 {
		return nil
	}
	m.current = next
	m.render(false)
	m.showCurrent()
	return nil
}

func (m *Model) showCurrent() {
	if m.current < 0 || m.current >= len(m.matches) {
		return
	}
	i := m.matches[m.current]
	if i < len(m.spans) {
		m.vp.SetYOffset(max(m.spans[i][0]-m.vp.Height/3, 0))
	}
}

// lifeOfCurrent asks for the life of the current search match, or of the
// newest message shown.
func (m Model) lifeOfCurrent() tea.Cmd {
	i := len(m.items) - 1
	if m.current >= 0 && m.current < len(m.matches) {
		i = m.matches[m.current]
	}
	if i < 0 || i >= len(m.items) {
		return nil
	}
	it := m.items[i]
	msg := life.Msg{Peer: m.peer, Direction: engine.DirectionIn}
	if it.hist != nil {
		msg.ID, msg.Direction = it.hist.ID, it.hist.Direction
	} else {
		msg.ID = it.wait.ID
	}
	return func() tea.Msg { return msg }
}

func (it item) body() []byte {
	if it.hist != nil {
		return it.hist.Body
	}
	return it.wait.Body
}

func (it item) at() int64 {
	if it.hist != nil {
		return it.hist.At.UnixNano()
	}
	return it.wait.ReceivedAt.UnixNano()
}

// label is how a device is named: its nickname and address, or the
// address.
func (m Model) label(a engine.Address) string {
	if n := m.names[a]; n != "" {
		return n + " (" + a.String() + ")"
	}
	return a.String()
}

// render rebuilds the viewport's content from the loaded entries and the
// waiting messages, in time order (a waiting message after the entries of
// its instant).
func (m *Model) render(bottom bool) {
	// Fresh slices: a copy of the model (bubbletea passes models by value)
	// must not see these change under it.
	m.items = make([]item, 0, len(m.entries)+len(m.waiting))
	for i := range m.entries {
		m.items = append(m.items, item{hist: &m.entries[i]})
	}
	for i := range m.waiting {
		m.items = append(m.items, item{wait: &m.waiting[i]})
	}
	sort.SliceStable(m.items, func(a, b int) bool { return m.items[a].at() < m.items[b].at() })
	if m.w <= 0 {
		return
	}
	st := m.th.Timeline
	var b strings.Builder
	line := 0
	if m.more {
		b.WriteString(st.More.Render(layout.Line(" ↑ older messages: pgup loads them", m.w)))
		line++
	}
	peerLabel := m.label(m.peer)
	labelW := max(ansi.StringWidth(m.self), ansi.StringWidth(peerLabel))
	labelW = min(labelW, max(m.w/3, 8))
	first, _ := m.firstWaiting()
	m.spans = make([][2]int, 0, len(m.items))
	for i, it := range m.items {
		if line > 0 {
			b.WriteByte('\n')
		}
		match := -1
		for j, mi := range m.matches {
			if mi == i {
				match = j
			}
		}
		n := m.entry(&b, it, peerLabel, labelW, it.wait != nil && it.wait.ID == first.ID, match)
		m.spans = append(m.spans, [2]int{line, line + n - 1})
		line += n
	}
	m.vp.SetContent(b.String())
	if bottom {
		m.vp.GotoBottom()
	}
}

// entry writes one item and returns how many lines it took. first marks the
// waiting message that c and x act on; match is its index among the search
// matches (-1: none).
func (m *Model) entry(b *strings.Builder, it item, peerLabel string, labelW int, first bool, match int) int {
	st := m.th.Timeline
	var who, state string
	var body []byte
	switch {
	case it.hist != nil && it.hist.Direction == engine.DirectionOut:
		who = st.Own.Render(fit(m.self, labelW))
		state = m.outState(*it.hist)
		body = it.hist.Body
	case it.hist != nil:
		who = st.Peer.Render(fit(peerLabel, labelW))
		state = st.Received.Render("delivered")
		body = it.hist.Body
	default:
		who = st.Peer.Render(fit(peerLabel, labelW))
		switch {
		case m.busy[it.wait.ID]:
			state = st.Waiting.Render("…")
		case m.onRead:
			state = st.Waiting.Render("waiting")
		case first:
			state = st.Waiting.Render("waiting · c commit · x discard")
		default:
			state = st.Waiting.Render("waiting")
		}
		body = it.wait.Body
	}
	stamp := layout.Clock(time.Unix(0, it.at()))
	prefix := st.Time.Render(stamp) + " " + who + " "
	prefixW := 8 + 1 + labelW + 1
	stateW := ansi.StringWidth(state)
	bodyW := m.w - prefixW - stateW - 1
	if bodyW < 20 {
		// A narrow column would fold the body into a tower of short lines.
		bodyW = max(m.w-prefixW, 1)
		stateW = -1 // state on a line of its own
	}
	lines := layout.Wrap(layout.Clean(body), bodyW)
	if len(lines) == 0 {
		lines = []string{""}
	}
	bodyStyle := st.Body
	switch {
	case match >= 0 && match == m.current:
		bodyStyle = st.Current
	case match >= 0:
		bodyStyle = st.Match
	}
	pad := strings.Repeat(" ", prefixW)
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
			b.WriteString(pad)
		} else {
			b.WriteString(prefix)
		}
		text := bodyStyle.Render(l)
		if i == 0 && stateW >= 0 {
			gap := m.w - prefixW - ansi.StringWidth(l) - stateW
			b.WriteString(text + strings.Repeat(" ", max(gap, 1)) + state)
		} else {
			b.WriteString(text)
		}
	}
	n := len(lines)
	if stateW < 0 {
		b.WriteByte('\n')
		b.WriteString(pad + state)
		n++
	}
	return n
}

// fit pads or cuts s to w cells.
func fit(s string, w int) string {
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-ansi.StringWidth(s))
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
		detail = m.label(m.peer)
		if n := len(m.entries); n > 0 {
			detail += fmt.Sprintf(" · %d shown", n)
		}
		if n := len(m.waiting); n > 0 {
			detail += fmt.Sprintf(" · %d waiting", n)
		}
	}
	title := layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Timeline", detail, m.w)
	var body string
	switch {
	case m.err != "":
		body = m.th.Panel.Error.Render(layout.Line(m.err, m.w))
	case len(m.items) == 0 && !m.peer.IsZero():
		body = m.th.Panel.Empty.Render(layout.Line(" no messages yet", m.w))
	case len(m.items) == 0:
		body = ""
	default:
		body = m.vp.View()
	}
	lines := layout.Split(body)
	lines = append(lines, make([]string, max(m.vp.Height-len(lines), 0))...)
	lines = lines[:min(len(lines), max(m.h-1-m.footerLines(), 0))]
	if f := m.footer(); f != "" {
		lines = append(lines, f)
	}
	return layout.Fit(append([]string{title}, lines...), m.w, m.h)
}

func (m Model) footer() string {
	switch {
	case m.typing:
		return m.search.View()
	case m.status != "":
		return m.th.Panel.Error.Render(layout.Line(" "+m.status, m.w))
	case m.query != "":
		pos := "no match"
		if len(m.matches) > 0 {
			pos = fmt.Sprintf("match %d of %d", len(m.matches)-m.current, len(m.matches))
		}
		more := ""
		if m.more {
			more = " (n past the oldest reads older messages)"
		}
		return m.th.Panel.Count.Render(layout.Line(fmt.Sprintf(" /%s · %s · n older, N newer, esc clears%s", m.query, pos, more), m.w))
	}
	return ""
}
