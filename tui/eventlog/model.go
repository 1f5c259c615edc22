// Package eventlog is the panel that names everything that happened to a
// profile, with times: every receive result and error by its snake_case name
// (delivery, already_committed, already_discarded, acknowledgement,
// session_collision, stale_session_initiation, identity_changed,
// logical_message_conflict...), hand-offs, finalizations, resyncs, and what
// the user's actions and the demo controls did. It keeps the newest
// Capacity entries.
package eventlog

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/actiontext"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// Capacity is how many entries the log keeps.
const Capacity = 2000

// Level is how an entry is drawn.
type Level uint8

// Levels.
const (
	Info Level = iota
	Good
	Warn
	Error
	Demo
)

// Entry is one line of the log.
type Entry struct {
	At    time.Time
	Name  string // a result, error or action name, e.g. "delivery", "session_collision"
	Text  string
	Level Level

	// msg names the received message an entry is about (its sender and
	// logical ID): a delivery of a message already delivered and still
	// pending is folded into the first one's line; a commit or discard
	// ends that.
	msg   string
	final bool // the entry finalizes msg
}

// String is the entry as one plain line (for the log file).
func (e Entry) String() string {
	return fmt.Sprintf("%s %s %s", layout.Clock(e.At), e.Name, layout.Clean([]byte(e.Text)))
}

// Model is the event log panel.
type Model struct {
	th      themes.Theme
	keys    KeyMap
	w, h    int
	focus   bool
	entries []Entry
	// delivered counts the envelopes that delivered each message still
	// pending (Entry.msg), for the "again" of its line.
	delivered map[string]int
	back      int  // entries scrolled back from the newest (0: follow)
	sel       int  // the marked entry, counted back from the newest
	open      bool // the marked entry is shown in full
	scroll    int  // lines of the open entry scrolled past
}

// New returns an empty log.
func New(th themes.Theme) Model {
	return Model{th: th, keys: DefaultKeyMap()}
}

// SetSize sets the panel's size, title included.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Focus gives the panel the keyboard.
func (m *Model) Focus() { m.focus = true }

// Blur takes it away (and closes an entry shown in full).
func (m *Model) Blur() { m.focus, m.open = false, false }

// KeyMap returns the panel's keys.
func (m Model) KeyMap() KeyMap {
	k := m.keys
	k.Open.SetEnabled(!m.open && len(m.entries) > 0)
	k.Close.SetEnabled(m.open)
	if m.open {
		// The same keys scroll the entry shown in full.
		k.Up.SetHelp("↑/k", "scroll up")
		k.Down.SetHelp("↓/j", "scroll down")
		k.Top.SetHelp("home", "its start")
		k.Bottom.SetHelp("end", "its end")
	}
	return k
}

// marked is the index of the entry the panel marks (the newest shown),
// or -1 when the log is empty.
func (m Model) marked() int { return len(m.entries) - m.sel - 1 }

// follow keeps the marked entry in view.
func (m *Model) follow() {
	m.sel = layout.Clamp(m.sel, 0, max(len(m.entries)-1, 0))
	m.back = layout.Clamp(m.back, max(m.sel-m.rows()+1, 0), m.sel)
	m.back = layout.Clamp(m.back, 0, m.maxBack())
}

// Entries returns the entries, oldest first.
func (m Model) Entries() []Entry { return m.entries }

// Add appends entries, dropping the oldest beyond Capacity. A log scrolled
// back stays on the same entries.
//
// A delivery of a message already delivered and not finalized (the relay
// handed its envelope over again, or the sender retried) adds no line: the
// first delivery's line says "again, envelope N".
func (m *Model) Add(es ...Entry) {
	added := 0
	for _, e := range es {
		if m.again(e) {
			continue
		}
		m.entries = append(m.entries, e)
		added++
	}
	if m.back > 0 {
		m.back += added
	}
	if m.sel > 0 {
		m.sel += added
	}
	if over := len(m.entries) - Capacity; over > 0 {
		m.entries = append(m.entries[:0:0], m.entries[over:]...)
	}
	m.back = layout.Clamp(m.back, 0, m.maxBack())
	m.follow()
}

// Show adds an entry and opens it in full (a message's trace, say): esc
// goes back to the list.
func (m *Model) Show(e Entry) {
	m.Add(e)
	m.sel, m.back = 0, 0
	m.open, m.scroll = true, 0
}

// scrollOpen handles a key while an entry is shown in full: the list's
// moving keys scroll its text, esc and enter close it.
func (m *Model) scrollOpen(k tea.KeyMsg) {
	page := m.textRows()
	switch {
	case input.Matches(k, m.keys.Close):
		m.open = false
	case input.Matches(k, m.keys.Up):
		m.scroll--
	case input.Matches(k, m.keys.Down):
		m.scroll++
	case input.Matches(k, m.keys.PageUp):
		m.scroll -= page
	case input.Matches(k, m.keys.PageDown):
		m.scroll += page
	case input.Matches(k, m.keys.Top):
		m.scroll = 0
	case input.Matches(k, m.keys.Bottom):
		m.scroll = len(m.fullLines(m.entries[m.marked()]))
	}
	if m.open && m.marked() >= 0 {
		m.scroll = layout.Clamp(m.scroll, 0, max(len(m.fullLines(m.entries[m.marked()]))-page, 0))
	}
}

// textRows is how many lines of an open entry show: all but its title and
// the line that says how to move and close.
func (m Model) textRows() int { return max(m.h-2, 1) }

func (m Model) rows() int { return max(m.h-1, 1) }

func (m Model) maxBack() int { return max(len(m.entries)-m.rows(), 0) }

// Update handles keys when focused.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok || !m.focus {
		return m, nil
	}
	if m.open {
		m.scrollOpen(k)
		return m, nil
	}
	switch {
	case input.Matches(k, m.keys.Open):
		m.open, m.scroll = m.marked() >= 0, 0
	case input.Matches(k, m.keys.Up):
		m.sel++
	case input.Matches(k, m.keys.Down):
		m.sel--
	case input.Matches(k, m.keys.PageUp):
		m.sel += m.rows()
		m.back += m.rows()
	case input.Matches(k, m.keys.PageDown):
		m.sel -= m.rows()
		m.back -= m.rows()
	case input.Matches(k, m.keys.Top):
		m.sel = len(m.entries) - 1
	case input.Matches(k, m.keys.Bottom):
		m.sel = 0
	}
	m.follow()
	return m, nil
}

// View draws the panel in exactly its size: only the visible entries are
// rendered.
func (m Model) View() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	if m.open && m.marked() >= 0 {
		return m.full(m.entries[m.marked()])
	}
	detail := fmt.Sprintf("%d", len(m.entries))
	if m.back > 0 {
		detail += fmt.Sprintf(" · %d newer below (end follows)", m.back)
	}
	lines := []string{layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Events", detail, m.w)}
	end := len(m.entries) - m.back
	start := max(end-m.rows(), 0)
	for i, e := range m.entries[start:end] {
		l := m.line(e)
		if m.focus && start+i == m.marked() {
			// The marked entry, which enter opens.
			l = m.th.Events.Marked.Render(layout.Line(ansi.Strip(l), m.w))
		}
		lines = append(lines, l)
	}
	return layout.Fit(lines, m.w, m.h)
}

// full shows one entry's whole text, wrapped to the panel.
// It scrolls (the list's keys move it) and says where it is when it does
// not fit, so that no line is ever out of reach.
func (m Model) full(e Entry) string {
	title := layout.Title(m.th.Panel.Title, m.th.Panel.TitleFocused, m.focus, "Event", e.Name+" · "+layout.Clock(e.At), m.w)
	body := m.fullLines(e)
	rows := m.textRows()
	top := layout.Clamp(m.scroll, 0, max(len(body)-rows, 0))
	lines := append([]string{title}, body[top:min(top+rows, len(body))]...)
	foot := " esc: back to the list"
	if len(body) > rows {
		foot = fmt.Sprintf(" lines %d–%d of %d · ↑/↓ pgup/pgdn scroll · esc: back to the list", top+1, min(top+rows, len(body)), len(body))
	}
	lines = append(lines, m.th.Panel.Count.Render(layout.Line(foot, m.w)))
	return layout.Fit(lines, m.w, m.h)
}

// fullLines is an entry's whole text wrapped to the panel.
func (m Model) fullLines(e Entry) []string {
	var lines []string
	for _, para := range strings.Split(e.Text, "\n") {
		for _, l := range layout.Wrap(layout.Clean([]byte(para)), max(m.w-1, 1)) {
			lines = append(lines, " "+l)
		}
	}
	return lines
}

func (m Model) line(e Entry) string {
	st := m.th.Events
	var name = st.Info
	switch e.Level {
	case Good:
		name = st.Good
	case Warn:
		name = st.Warn
	case Error:
		name = st.Error
	case Demo:
		name = st.Demo
	}
	// One row per entry: a text of several lines (a message's trace) is
	// joined here and shown whole when opened. The text can hold a relay's
	// or a peer's words (an error's message): cleaned like a body.
	return st.Time.Render(layout.Clock(e.At)) + " " + name.Render(e.Name) + " " + strings.ReplaceAll(layout.Clean([]byte(e.Text)), "\n", " · ")
}

// againMark starts what a repeated delivery adds to the first one's line.
const againMark = " · again, envelope "

// again counts e when it repeats a delivery still pending, updating that
// delivery's line, and reports whether it did; it forgets a message that
// e finalizes.
func (m *Model) again(e Entry) bool {
	if e.msg == "" {
		return false
	}
	if e.final {
		delete(m.delivered, e.msg)
		return false
	}
	if m.delivered == nil {
		m.delivered = map[string]int{}
	}
	n := m.delivered[e.msg] + 1
	m.delivered[e.msg] = n
	if n == 1 {
		return false
	}
	for i := len(m.entries) - 1; i >= 0; i-- {
		if f := &m.entries[i]; f.msg == e.msg && !f.final {
			base, _, _ := strings.Cut(f.Text, againMark)
			f.Text = fmt.Sprintf("%s%s%d", base, againMark, n)
			return true
		}
	}
	// The first line is gone (beyond Capacity): this one stands alone.
	return false
}

// msgKey names a received message for Entry.msg.
func msgKey(sender engine.Address, id wire.LogicalID) string {
	return sender.String() + "/" + fmt.Sprintf("%x", id[:])
}

// FromEvent describes an engine event as a log entry.
func FromEvent(e engine.Event) Entry {
	id := layout.ShortID(e.ID)
	switch e.Kind {
	case engine.EventReceived:
		if e.Result != nil {
			return fromResult(e.At, *e.Result)
		}
	case engine.EventSent:
		return Entry{At: e.At, Name: "relay_accepted", Text: "to " + e.Peer.String() + " " + id + " (stays pending until " + e.Peer.String() + "'s ACK)", Level: Info}
	case engine.EventStored:
		return Entry{At: e.At, Name: "stored", Text: "to " + e.Peer.String() + " " + id + " (pending; handed to the relay next)", Level: Info}
	case engine.EventNotSent:
		return Entry{At: e.At, Name: "message_not_sent", Text: "to " + e.Peer.String() + " " + id + ": " + errText(e.Err) + " (pending; a retry sends it)", Level: Error}
	case engine.EventFinalized:
		name, lvl := "committed", Info
		if e.Outcome == engine.OutcomeDiscarded {
			name = "discarded"
		}
		ack := "ACK sent"
		if !e.AckSent {
			ack, lvl = "ACK not sent (the sender's next retry brings another)", Warn
		}
		return Entry{At: e.At, Name: name, Text: "from " + e.Peer.String() + " " + id + ", " + ack, Level: lvl, msg: msgKey(e.Peer, e.ID), final: true}
	case engine.EventTaken:
		return Entry{At: e.At, Name: "on_device", Text: "to " + e.Peer.String() + " " + id + " (on " + e.Peer.String() + "'s device; pending until its ACK)", Level: Info}
	case engine.EventAbandoned:
		return Entry{At: e.At, Name: "abandoned", Text: "to " + e.Peer.String() + " " + id + " (dropped locally; not a recall)", Level: Warn}
	case engine.EventIdentityAccepted:
		return Entry{At: e.At, Name: "identity_accepted", Text: e.Peer.String() + ": session removed; a retry resends the pending messages to the new identity", Level: Warn}
	case engine.EventResync:
		return Entry{At: e.At, Name: "state_resync_required", Text: "the last run stopped before its events were shown; every list was read again", Level: Warn}
	case engine.EventSessionReset:
		return Entry{At: e.At, Name: "session_reset", Text: "the session with " + e.Peer.String() + " was forgotten here; the next message starts a new one", Level: Warn}
	case engine.EventQuarantineEvicted:
		return Entry{At: e.At, Name: "quarantine_evicted", Text: fmt.Sprintf("%d of the oldest unreadable envelopes dropped: the quarantine is full", e.Count), Level: Warn}
	case engine.EventRequest, engine.EventRequestBound, engine.EventRequestsSwept, engine.EventRequestAccepted:
		return fromRequest(e)
	case engine.EventSyncFailed:
		name := e.Op + "_failed"
		if e.Op == "" {
			name = "sync_failed"
		}
		text := errText(e.Err)
		var se *engine.SyncError
		if errors.As(e.Err, &se) {
			text = errText(se.Err)
		}
		if !e.Peer.IsZero() {
			text = e.Peer.String() + ": " + text
		}
		return Entry{At: e.At, Name: name, Text: text + " (tried again by itself)", Level: Error}
	}
	return Entry{At: e.At, Name: "event", Text: fmt.Sprintf("kind %d", e.Kind), Level: Info}
}

func fromResult(at time.Time, r engine.ReceiveResult) Entry {
	from := "from " + r.Sender.String()
	if r.Sender.IsZero() {
		from = "from an unknown sender"
	}
	id := layout.ShortID(r.ID)
	switch r.Kind {
	case engine.ResultDelivery:
		what := layout.Quote(layout.OneLine(layout.Shown(r.Content, r.Body), 40))
		if s, ok := actiontext.Describe(r.Content, r.Body, nil); ok {
			what = layout.OneLine([]byte(s), 60) // an action: what it does
		}
		if r.Action != nil && r.Action.Content != wire.ContentReply {
			// Committed and applied on arrival.
			return Entry{At: at, Name: "applied", Text: fmt.Sprintf("%s %s: %s", from, id, actiontext.Applied(*r.Action)), Level: Good,
				msg: msgKey(r.Sender, r.ID)}
		}
		return Entry{At: at, Name: "delivery", Text: fmt.Sprintf("%s %s %s (pending: commit or discard)", from, id, what), Level: Good,
			msg: msgKey(r.Sender, r.ID)}
	case engine.ResultApplied:
		text := from + " " + id + ": the action waited for its target, now applied"
		if r.Action != nil {
			text = from + " " + id + ": " + actiontext.Applied(*r.Action) + " (waited for its target)"
		}
		return Entry{At: at, Name: "applied", Text: text, Level: Good, msg: msgKey(r.Sender, r.ID)}
	case engine.ResultActionDiscarded:
		return Entry{At: at, Name: "action_discarded", Text: from + " " + id + ": discarded (" + r.Reason.String() + ")", Level: Warn, msg: msgKey(r.Sender, r.ID)}
	case engine.ResultAlreadyCommitted, engine.ResultAlreadyDiscarded:
		ack, lvl := "ACK sent again", Warn
		if !r.AckSent {
			ack, lvl = "ACK not sent", Error
		}
		return Entry{At: at, Name: r.Kind.String(), Text: from + " " + id + ", " + ack, Level: lvl}
	case engine.ResultAcknowledgement:
		if r.ID == (wire.LogicalID{}) {
			// An ACK of no message: the peer announces the session that
			// won a collision, so that retries reach it.
			return Entry{At: at, Name: "acknowledgement", Text: from + " of no message: its winning session is announced; retries now reach it", Level: Info}
		}
		if r.Cleared {
			return Entry{At: at, Name: "acknowledgement", Text: from + " " + id + ", cleared the pending message", Level: Good}
		}
		return Entry{At: at, Name: "acknowledgement", Text: from + " " + id + ", not cleared (unknown or repeated)", Level: Warn}
	case engine.ResultRequest:
		return requestResult(at, r)
	case engine.ResultSessionReset:
		return Entry{At: at, Name: "session_reset", Text: from + " asked for a fresh session (ours could not work there); pending messages go out again on a new one", Level: Warn}
	case engine.ResultGroupChanged:
		return Entry{At: at, Name: "group_changed", Text: fmt.Sprintf("%s: the roster of group %s changed (generation %d)", from, groupID(r.Group), r.Generation), Level: Info}
	case engine.ResultNotAMember:
		return Entry{At: at, Name: "not_a_member", Text: fmt.Sprintf("%s: this device is not in %s's roster of group %s; the lane of %s to it ended", from, r.Sender, groupID(r.Group), id), Level: Warn}
	}
	if r.Err == nil {
		// A result this log does not know by name yet: its kind names it.
		return Entry{At: at, Name: r.Kind.String(), Text: from + " " + id, Level: Info}
	}
	name := engine.ErrorName(r.Err)
	why := errText(r.Err)
	switch {
	case errors.Is(r.Err, engine.ErrSessionCollision):
		why = "both sides started a session; ours won, " + r.Sender.String() + "'s message was dropped unread and comes back on its retry"
	case errors.Is(r.Err, engine.ErrStaleSessionInitiation):
		why = "a message on a retired session start; " + r.Sender.String() + " must retry on the current session"
	case errors.Is(r.Err, engine.ErrIdentityChanged):
		why = r.Sender.String() + " has a new identity; sending is blocked until it is accepted"
	case errors.Is(r.Err, engine.ErrLogicalMessageConflict):
		why = "the same message ID with another body; ignored"
	case errors.Is(r.Err, engine.ErrStaleRecovery):
		why = "a recovery request for a session already replaced (or a replay); nothing changes"
	}
	if r.RecoveryRequested {
		why += "; asked " + r.Sender.String() + " for a fresh session"
	}
	return Entry{At: at, Name: name, Text: from + ": " + why, Level: Error}
}

// groupID is a group as the outbox names it: its first four bytes.
func groupID(g *wire.GroupID) string {
	if g == nil {
		return "(none)"
	}
	return "#" + hex.EncodeToString(g[:4])
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
