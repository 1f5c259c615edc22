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
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/input"
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
	// MaxLaneReads bounds the own messages of the newest page whose lanes
	// to a person's devices one read fetches (one query each): the
	// messages a person still watches arrive; older ones show their
	// message state alone.
	MaxLaneReads = 20
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
	// Quotes are the messages the page's replies and the waiting actions
	// name that the page does not hold (read when the source is a
	// MessageSource).
	Quotes map[wire.LogicalID]engine.HistoryEntry
	// Lanes are the lanes to the person's devices of the newest own
	// messages (read when the source is a LaneSource; none for a message
	// that went to one device).
	Lanes map[wire.LogicalID][]engine.LaneStatus
	Err   error
}

// LaneSource reads the lanes of an own message to a person with several
// devices: *engine.Client implements it. The panel shows how many of the
// person's devices acknowledged it.
type LaneSource interface {
	PersonLanes(ctx context.Context, conversation engine.Address, id wire.LogicalID) ([]engine.LaneStatus, error)
}

// MessageSource finds one message of a conversation, sent or received:
// *engine.Client implements it. The panel quotes a reply's target with it
// when the target is not loaded.
type MessageSource interface {
	Message(ctx context.Context, peer engine.Address, id wire.LogicalID) (engine.HistoryEntry, bool, error)
}

// FinalizedMsg reports commits or discards made from the conversation
// (Peer), or from a group's view (Group).
type FinalizedMsg struct {
	Peer    engine.Address
	Group   *wire.GroupID
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

	onRead bool                    // the policy commits what was shown
	busy   map[wire.LogicalID]bool // finalizations in flight
	// fetching are the files being downloaded; saved is the last file
	// saved from this conversation in this run (file.go).
	fetching map[wire.LogicalID]bool
	saved    string
	// previews are the pictures downloaded in this run (preview.go).
	previews *previews
	discard  bool            // x asked once: x again discards
	search   textinput.Model // the query being typed
	typing   bool            // the search prompt has the keyboard
	query    string          // the query searched for
	matches  []int           // items that match, oldest first
	current  int             // index into matches

	// pick is the reaction picker, deleting the message a delete for
	// everyone asks about, quotes the messages replies quote that are
	// not loaded (action.go); selfAddr this device's address.
	pick     picker
	deleting *engine.HistoryEntry
	quotes   map[wire.LogicalID]engine.HistoryEntry
	selfAddr engine.Address
	// lanes are the newest own messages' lanes to the person's devices.
	lanes map[wire.LogicalID][]engine.LaneStatus

	loading, again, older bool
	// newest: the next read of the newest page shows its end, wherever
	// the view was (a message was just sent).
	newest bool
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
		search: in, busy: map[wire.LogicalID]bool{}, fetching: map[wire.LogicalID]bool{}, previews: &previews{}}
}

// SetSource replaces the source (after a reopen).
func (m *Model) SetSource(src Source) {
	m.src = src
	m.loading, m.again, m.older = false, false, false
	m.busy = map[wire.LogicalID]bool{}
	m.fetching = map[wire.LogicalID]bool{}
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
	switch {
	case m.pick.on:
		return 1
	case m.typing || m.query != "":
		return 1
	case m.status != "":
		return len(m.statusLines())
	}
	return 0
}

// statusLines is the status wrapped to the panel, at most three lines: a
// question is read whole, its answer key included.
func (m Model) statusLines() []string {
	ls := layout.Wrap(m.status, max(m.w-1, 1))
	if len(ls) > 3 {
		ls = append(ls[:2], strings.Join(ls[2:], " "))
	}
	return ls
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
	m.deleting = nil
	m.pick = picker{}
}

// SetSelf names this device's address (its reactions read "you").
func (m *Model) SetSelf(a engine.Address) { m.selfAddr = a }

// Capturing reports whether typed characters belong to the search prompt.
func (m Model) Capturing() bool { return m.typing }

// KeyMap returns the panel's keys.
func (m Model) KeyMap() KeyMap {
	k := m.keys
	k.Commit.SetEnabled(len(m.waiting) > 0 && !m.onRead)
	k.Discard.SetEnabled(len(m.waiting) > 0)
	_, _, file := m.firstFile()
	k.Download.SetEnabled(file)
	k.Open.SetEnabled(m.saved != "")
	k.Confirm.SetEnabled(m.discard || m.deleting != nil)
	k.Confirm.SetHelp("y", "yes, discard it")
	if m.deleting != nil {
		k.Confirm.SetHelp("y", "yes, delete it for everyone")
	}
	hist := len(m.entries) > 0
	k.Reply.SetEnabled(hist)
	k.React.SetEnabled(hist)
	k.Edit.SetEnabled(hist)
	k.Delete.SetEnabled(hist)
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

// ShowNewest goes to the newest entry now and again once the next read
// brings what was just sent: a message sent after a search or a scroll
// is on screen.
func (m *Model) ShowNewest() {
	m.newest = true
	m.vp.GotoBottom()
}

// SetPeer shows another conversation and reads its newest page.
func (m *Model) SetPeer(peer engine.Address) tea.Cmd {
	if peer == m.peer && (len(m.entries) > 0 || m.loading) {
		return nil
	}
	m.peer = peer
	m.entries, m.waiting, m.more, m.err, m.status, m.saved = nil, nil, false, "", "", ""
	m.loading, m.again, m.older, m.discard = false, false, false, false
	m.deleting, m.pick, m.quotes, m.lanes = nil, picker{}, nil, nil
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
			var ws []engine.InboundMessage
			// A person's conversation waits on every device of theirs.
			ws, msg.Err = src.PendingInbound(ctx, engine.PageQuery{Peer: &peer, Person: true, Limit: MaxWaiting})
			for _, w := range ws {
				if w.Group == nil { // a group message waits in its group's view
					msg.Waiting = append(msg.Waiting, w)
				}
			}
		}
		if ms, ok := src.(MessageSource); ok && msg.Err == nil {
			msg.Quotes = readQuotes(ctx, ms, peer, es, msg.Waiting)
		}
		if ls, ok := src.(LaneSource); ok && msg.Err == nil && !older {
			msg.Lanes = readLanes(ctx, ls, peer, es)
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
	case FetchedMsg:
		return m.fetched(msg)
	case OpenedMsg:
		if msg.Err != nil && msg.Path == m.saved {
			m.status = "open_failed: " + msg.Err.Error()
			m.resizeViewport()
		}
		return m, nil
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
			atBottom := m.vp.AtBottom() || len(m.items) == 0 || m.newest
			m.entries, m.waiting = page, msg.Waiting
			m.quotes, m.lanes = msg.Quotes, msg.Lanes
			m.more = len(msg.Entries) == msg.Limit
			m.render(atBottom)
		}
		if m.query != "" {
			m.findMatches(msg.Older)
		}
		if m.newest && !msg.Older {
			m.newest = false
			m.vp.GotoBottom() // over the search's match: what was sent shows
		}
	}
	if m.again {
		m.again = false
		return m, m.Reload()
	}
	return m, nil
}

// readLanes reads the lanes of the newest own messages among es (newest
// first), at most MaxLaneReads, keeping those that went to several devices.
// A failed read leaves a message without its count; the page still shows.
func readLanes(ctx context.Context, ls LaneSource, peer engine.Address, es []engine.HistoryEntry) map[wire.LogicalID][]engine.LaneStatus {
	var out map[wire.LogicalID][]engine.LaneStatus
	n := 0
	for _, e := range es {
		if e.Direction != engine.DirectionOut || e.State == engine.SentCopied {
			continue
		}
		if n++; n > MaxLaneReads {
			break
		}
		lanes, err := ls.PersonLanes(ctx, peer, e.ID)
		if err != nil || len(lanes) == 0 {
			continue
		}
		if out == nil {
			out = map[wire.LogicalID][]engine.LaneStatus{}
		}
		out[e.ID] = lanes
	}
	return out
}

func (m Model) event(e engine.Event) (Model, tea.Cmd) {
	m.states.Apply(e)
	mine := false
	switch e.Kind {
	case engine.EventResync:
		return m, m.Reload()
	case engine.EventReceived:
		if r := e.Result; r != nil {
			// Another device of the person counts: its ACK moves a
			// message's device count.
			mine = r.Sender.User == m.peer.User && (r.Kind == engine.ResultAcknowledgement || r.Kind == engine.ResultDelivery)
			// A message of this conversation another device of this
			// person committed, taken back here.
			mine = mine || r.TakenBack && r.Decided != nil && r.Decided.Sender.User == m.peer.User
			// A message or an action another device of this person sent
			// to this conversation (its sent copy, committed on arrival
			// or by the hold's pass once its target came): shown as a
			// delivery is, without a key.
			mine = mine || r.CopyTo != nil && r.CopyTo.User == m.peer.User
		}
	case engine.EventStored, engine.EventSent, engine.EventTaken, engine.EventNotSent, engine.EventAbandoned, engine.EventIdentityAccepted, engine.EventFinalized:
		// A lane to another device of the person, or a decision on a
		// message from one, is of this conversation when the person's
		// list is held (a read more when it is not).
		mine = e.Peer.User == m.peer.User
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
	if m.pick.on {
		return m.pickKey(k)
	}
	if m.deleting != nil {
		// y deletes; any other key keeps the message and then acts as usual.
		t := *m.deleting
		m.deleting, m.status = nil, ""
		m.resizeViewport()
		if input.Matches(k, m.keys.Confirm) {
			return m, m.ask(ActionMsg{Peer: m.peer, Content: wire.ContentDelete, Target: t})
		}
	}
	if mm, cmd, ok := m.actionKey(k); ok {
		return mm, cmd
	}
	if m.discard {
		// y confirms, as everywhere; x again leaves the question up; any
		// other key keeps the message and then acts as usual.
		switch {
		case input.Matches(k, m.keys.Confirm):
			m.discard, m.status = false, ""
			m.resizeViewport()
			if w, ok := m.firstWaiting(); ok {
				return m, m.finalize([]engine.InboundMessage{w}, engine.OutcomeDiscarded, false)
			}
			return m, nil
		case input.Matches(k, m.keys.Discard):
			return m, nil
		}
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
			if f, file := fileOf(&w); file {
				// A file is committed by downloading it.
				if m.fetching[w.ID] {
					return m, nil
				}
				return m, m.fetch(w, f)
			}
			return m, m.finalize([]engine.InboundMessage{w}, engine.OutcomeCommitted, false)
		}
	case input.Matches(k, m.keys.Download):
		if w, f, ok := m.firstFile(); ok {
			return m, m.fetch(w, f)
		}
	case input.Matches(k, m.keys.Open):
		return m, m.open()
	case input.Matches(k, m.keys.Discard):
		w, ok := m.firstWaiting()
		if ok {
			m.discard = true
			body := w.Body
			if f, file := fileOf(&w); file {
				body = fileText(f)
			}
			m.status = fmt.Sprintf("discard %s from %s for good? y discards it, any other key keeps it", layout.Quote(layout.OneLine(body, 24)), m.label(w.Sender))
			m.resizeViewport()
		}
	case input.Matches(k, m.keys.Trace):
		return m, m.traceOfCurrent()
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
