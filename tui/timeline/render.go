// Drawing the conversation: the entries in the viewport, their states
// and the footer.

package timeline

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/internal/sent"
	"github.com/parley-chat/parley/wire"
)

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
		body = layout.Stored(it.hist.Body)
	case it.hist != nil:
		who = st.Peer.Render(fit(peerLabel, labelW))
		state = st.Received.Render("delivered")
		if on := it.hist.DecidedOn; on != nil {
			state = st.Received.Render("committed on " + m.label(*on))
		}
		body = layout.Stored(it.hist.Body)
	default:
		who = st.Peer.Render(fit(peerLabel, labelW))
		if it.wait.Sender != m.peer {
			// Waiting from another device of the person: which one.
			who = st.Peer.Render(fit(m.label(it.wait.Sender), labelW))
		}
		f, file := fileOf(it.wait)
		switch {
		case m.busy[it.wait.ID]:
			state = st.Waiting.Render("…")
		case file:
			state = st.Waiting.Render(m.fileState(it.wait.ID, first))
		case m.onRead:
			state = st.Waiting.Render("waiting")
		case first:
			state = st.Waiting.Render("waiting · c commit · x discard")
		default:
			state = st.Waiting.Render("waiting")
		}
		body = it.wait.Body
		if file {
			body = fileText(f)
		}
		if t, ok := m.waitingText(it.wait); ok {
			body = t
		}
	}
	var quote, reactions string
	bodyStyle := st.Body
	if h := it.hist; h != nil {
		switch {
		case h.Deleted:
			body = []byte("message deleted")
			bodyStyle = st.More
		case h.Edits > 0:
			state = st.More.Render("edited ") + state
		}
		if h.Imported != nil {
			// History from before this device (a link's or a restore's):
			// said quietly, before the state; the trace says from what.
			state = st.More.Render("imported ") + state
		}
		if h.ReplyTo != nil && !h.Deleted {
			quote = "r"
		}
		if len(h.Reactions) > 0 && !h.Deleted {
			reactions = m.reactionLine(h.Reactions)
		}
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
	quoted := 0
	if quote != "" {
		lines = append([]string{m.quoteLine(*it.hist.ReplyTo, bodyW)}, lines...)
		quoted = 1
	}
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
		if i < quoted {
			text = st.More.Render(l)
		}
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
	if reactions != "" {
		b.WriteByte('\n')
		b.WriteString(pad + st.More.Render(layout.OneLine([]byte(reactions), max(m.w-prefixW, 1))))
		n++
	}
	if it.hist != nil && !it.hist.Deleted {
		for _, l := range m.previews.of(it.hist.ID) {
			b.WriteByte('\n')
			b.WriteString(pad + ansi.Truncate(l, max(m.w-prefixW, 0), ""))
			n++
		}
	}
	return n
}

// fileState is a waiting file's state: downloading, or the keys that
// act on it (d on the oldest file, x on the oldest message).
func (m *Model) fileState(id wire.LogicalID, first bool) string {
	if m.fetching[id] {
		return "downloading"
	}
	s := "waiting"
	if w, _, ok := m.firstFile(); ok && w.ID == id {
		s += " · d download"
	}
	if first {
		s += " · x discard"
	}
	return s
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
	if lanes := m.lanes[e.ID]; len(lanes) > 0 && e.State != engine.SentAbandoned {
		if s := m.devicesState(e, lanes); s != "" {
			return s
		}
	}
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
	case sent.OnDevice:
		return st.Accepted.Render("on " + m.label(m.peer) + "'s device")
	}
	return st.Pending.Render("pending")
}

// devicesState is an own message's state to a person with several
// devices: how many of them acknowledged it ("✓ 2/2 devices" once all
// did), after the message's own state while some have not ("not sent"
// when the last hand-off failed, so that a retry is asked for). It is ""
// for a message that went to one device of the person (copies to this
// person's other devices do not count).
func (m *Model) devicesState(e engine.HistoryEntry, lanes []engine.LaneStatus) string {
	st := m.th.Timeline
	acked, total := 0, 0
	for _, l := range lanes {
		if l.Own {
			continue
		}
		total++
		if l.State == engine.LaneAcknowledged {
			acked++
		}
	}
	if total < 2 {
		return ""
	}
	count := fmt.Sprintf("%d/%d devices", acked, total)
	switch s, _ := m.states.Get(e.ID); {
	case acked == total:
		return st.Acked.Render("✓ " + count)
	case e.State == engine.SentAcknowledged:
		return st.Acked.Render("acknowledged · " + count)
	case s == sent.NotSent:
		return st.NotSent.Render(s.String() + " · " + count)
	}
	return st.Pending.Render("pending · " + count)
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
		lines = append(lines, strings.Split(f, "\n")...)
	}
	return layout.Fit(append([]string{title}, lines...), m.w, m.h)
}

func (m Model) footer() string {
	switch {
	case m.pick.on:
		return m.th.Panel.Count.Render(layout.Line(m.pickerLine(), m.w))
	case m.typing:
		return m.search.View()
	case m.status != "":
		ls := m.statusLines()
		for i, l := range ls {
			ls[i] = m.th.Panel.Error.Render(layout.Line(" "+strings.TrimRight(l, " "), m.w))
		}
		return strings.Join(ls, "\n")
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
