// Acting on a message of the conversation: a reply (r), a reaction (+,
// with a small picker), an edit (e), a delete for everyone (D, asked
// first) and an edited message's earlier versions (v). The message acted
// on is the search's match when there is one, else the newest; an edit
// and a delete take the newest of this device's own messages when the
// match is not one. The panel asks the pane (ActionMsg, VersionsMsg),
// which writes through the composer's line (composer.Model.Act).

package timeline

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/internal/actiontext"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// Reactions are the emoji the picker offers, keys 1 to 6.
var Reactions = []string{"👍", "👎", "😂", "😮", "😢", "🎉"}

// ActionMsg asks the pane for an action on Target, a message of the
// conversation with Peer: a reply or an edit opens the composer with the
// quote or the text, a reaction (Emoji, or Remove) and a delete are sent
// at once.
type ActionMsg struct {
	Peer engine.Address
	// Group, when set, makes it an action in that group (Peer unused):
	// Target is then the group message as a history entry (Peer its
	// sender, DirectionOut one's own).
	Group   *wire.GroupID
	Content wire.ContentType
	Target  engine.HistoryEntry
	Emoji   string
	Remove  bool
}

// VersionsMsg asks the pane to show an edited message's earlier versions.
type VersionsMsg struct {
	Peer   engine.Address
	Group  *wire.GroupID // a group's message: Target.Peer is its author
	Target engine.HistoryEntry
}

// NoticeMsg is a line for the pane's status bar (why an action key did
// nothing).
type NoticeMsg struct{ Text string }

// picker is the reaction picker's state.
type picker struct {
	on     bool
	at     int // the emoji chosen, index into Reactions; len: remove
	target engine.HistoryEntry
	own    string // the emoji this device gave the target, if any
}

// selected is the message a reply or a reaction acts on: the search's
// match, else the newest entry of the history.
func (m Model) selected() (engine.HistoryEntry, bool) {
	if m.current >= 0 && m.current < len(m.matches) {
		if it := m.items[m.matches[m.current]]; it.hist != nil {
			return *it.hist, true
		}
	}
	for i := len(m.entries) - 1; i >= 0; i-- {
		if !m.entries[i].Deleted {
			return m.entries[i], true
		}
	}
	return engine.HistoryEntry{}, false
}

// selectedOwn is the message an edit or a delete acts on: the search's
// match when this device sent it, else its newest message. A sent copy
// (sent from another device of this person) is that device's to edit or
// delete, as the engine's rule says (engine.DecideAction).
func (m Model) selectedOwn() (engine.HistoryEntry, bool) {
	if m.current >= 0 && m.current < len(m.matches) {
		if it := m.items[m.matches[m.current]]; it.hist != nil && sentHere(*it.hist) && !it.hist.Deleted {
			return *it.hist, true
		}
	}
	for i := len(m.entries) - 1; i >= 0; i-- {
		if e := m.entries[i]; sentHere(e) && !e.Deleted {
			return e, true
		}
	}
	return engine.HistoryEntry{}, false
}

// sentHere reports whether this device sent e: not a sent copy of
// another device of this person, nor a message of the history imported
// when this device was linked (another device sent it).
func sentHere(e engine.HistoryEntry) bool {
	return e.Direction == engine.DirectionOut && e.State != engine.SentCopied && (e.Imported == nil || !e.Imported.Link)
}

func notice(s string) tea.Cmd { return func() tea.Msg { return NoticeMsg{Text: s} } }

// matchWaiting reports whether the search's match is a received message
// not committed yet: nothing acts on it before it is.
func (m Model) matchWaiting() bool {
	return m.current >= 0 && m.current < len(m.matches) && m.items[m.matches[m.current]].wait != nil
}

// actionKey handles the action keys; ok false means k is none of them.
func (m Model) actionKey(k tea.KeyMsg) (Model, tea.Cmd, bool) {
	if m.matchWaiting() && (input.Matches(k, m.keys.Reply) || input.Matches(k, m.keys.React)) {
		return m, notice("the match is waiting: commit it (c) before replying or reacting"), true
	}
	switch {
	case input.Matches(k, m.keys.Reply):
		t, ok := m.selected()
		if !ok {
			return m, notice("reply: no message to reply to here"), true
		}
		return m, m.ask(ActionMsg{Peer: m.peer, Content: wire.ContentReply, Target: t}), true
	case input.Matches(k, m.keys.React):
		t, ok := m.selected()
		if !ok {
			return m, notice("react: no message to react to here"), true
		}
		m.pick = picker{on: true, target: t}
		for _, r := range t.Reactions {
			if r.From.IsZero() || r.From == m.selfAddr {
				m.pick.own = r.Emoji
			}
		}
		m.resizeViewport()
		return m, nil, true
	case input.Matches(k, m.keys.Edit):
		t, ok := m.selectedOwn()
		if !ok {
			return m, notice("edit: none of your messages here"), true
		}
		return m, m.ask(ActionMsg{Peer: m.peer, Content: wire.ContentEdit, Target: t}), true
	case input.Matches(k, m.keys.Delete):
		t, ok := m.selectedOwn()
		if !ok {
			return m, notice("delete: none of your messages here"), true
		}
		m.deleting = &t
		m.status = fmt.Sprintf("delete %s for everyone? y deletes it, any other key keeps it", actiontext.Quote(t, true))
		m.resizeViewport()
		return m, nil, true
	case input.Matches(k, m.keys.Versions):
		t, ok := m.selected()
		if m.current < 0 || m.current >= len(m.matches) {
			// Without a match: the newest edited message.
			ok = false
			for i := len(m.entries) - 1; i >= 0; i-- {
				if m.entries[i].Edits > 0 && !m.entries[i].Deleted {
					t, ok = m.entries[i], true
					break
				}
			}
		}
		if !ok || t.Edits == 0 {
			return m, notice("versions: no edited message here"), true
		}
		peer := m.peer
		return m, func() tea.Msg { return VersionsMsg{Peer: peer, Target: t} }, true
	}
	return m, nil, false
}

func (m Model) ask(a ActionMsg) tea.Cmd { return func() tea.Msg { return a } }

// pickKey handles a key while the reaction picker is open: arrows or a
// number choose, enter sends, esc (or any other key) closes it.
func (m Model) pickKey(k tea.KeyMsg) (Model, tea.Cmd) {
	send, open := m.pick.step(k)
	if open {
		return m, nil
	}
	if send {
		return m.react()
	}
	m.pick = picker{}
	m.resizeViewport()
	return m, nil
}

// step takes a key while the picker is open: send reports that a choice
// was made, open that the picker stays open.
func (p *picker) step(k tea.KeyMsg) (send, open bool) {
	n := len(Reactions)
	if p.own != "" {
		n++ // the last choice takes the reaction back
	}
	switch {
	case k.Type == tea.KeyLeft:
		p.at = (p.at + n - 1) % n
		return false, true
	case k.Type == tea.KeyRight:
		p.at = (p.at + 1) % n
		return false, true
	case k.Type == tea.KeyRunes && len(k.Runes) == 1 && k.Runes[0] >= '1' && int(k.Runes[0]-'1') < len(Reactions):
		p.at = int(k.Runes[0] - '1')
		return true, false
	case k.Type == tea.KeyRunes && len(k.Runes) == 1 && k.Runes[0] == '0' && p.own != "":
		p.at = len(Reactions)
		return true, false
	case k.Type == tea.KeyEnter:
		return true, false
	}
	return false, false
}

// choose fills a's emoji, or its Remove when the choice is the remove one
// or the emoji already given.
func (p picker) choose(a *ActionMsg) {
	if p.at >= len(Reactions) || Reactions[p.at] == p.own {
		a.Remove = true
	} else {
		a.Emoji = Reactions[p.at]
	}
}

// react sends the reaction chosen: the same emoji as this device's
// reaction, or the remove choice, takes it back.
func (m Model) react() (Model, tea.Cmd) {
	p := m.pick
	m.pick = picker{}
	m.resizeViewport()
	a := ActionMsg{Peer: m.peer, Content: wire.ContentReaction, Target: p.target}
	p.choose(&a)
	return m, m.ask(a)
}

// pickerLine is the picker as the footer shows it.
func (m Model) pickerLine() string { return m.pick.line() }

func (p picker) line() string {
	var b strings.Builder
	b.WriteString(" react")
	for i, e := range Reactions {
		s := fmt.Sprintf("%d%s", i+1, e)
		if i == p.at {
			s = "[" + s + "]"
		} else {
			s = " " + s + " "
		}
		b.WriteString(s)
	}
	if p.own != "" {
		s := "0 remove"
		if p.at == len(Reactions) {
			s = "[" + s + "]"
		} else {
			s = " " + s + " "
		}
		b.WriteString(s)
	}
	b.WriteString(" · ←/→ enter · esc")
	return b.String()
}

// quoteLine is a reply's one-line quote of its target: found among the
// loaded entries or in quotes (read with the page), else said to be not
// here.
func (m *Model) quoteLine(id wire.LogicalID, w int) string {
	t, ok := m.lookup(id)
	who := ""
	if ok {
		who = m.self
		if t.Direction == engine.DirectionIn {
			who = m.label(m.peer)
		}
		who += ": "
	}
	return "↪ " + layout.OneLine([]byte(who+actiontext.Quote(t, ok)), max(w-2, 1))
}

// lookup finds message id among the loaded entries or the quotes read.
func (m *Model) lookup(id wire.LogicalID) (engine.HistoryEntry, bool) {
	for i := len(m.entries) - 1; i >= 0; i-- {
		if m.entries[i].ID == id {
			return m.entries[i], true
		}
	}
	e, ok := m.quotes[id]
	return e, ok
}

// reactionLine is a message's reactions: each emoji with who gave it,
// "👍 you, bob/1 · 🎉 bob/1".
func (m *Model) reactionLine(rs []engine.Reaction) string {
	return reactionText(rs, func(a engine.Address) string {
		if a.IsZero() || a == m.selfAddr {
			return m.self
		}
		if n := m.names[a]; n != "" {
			return n
		}
		return m.label(a)
	})
}

// reactionText is reactions rs grouped by emoji, each with the names
// name gives the members who gave it, in the order first given.
func reactionText(rs []engine.Reaction, name func(engine.Address) string) string {
	var order []string
	who := map[string][]string{}
	for _, r := range rs {
		e := layout.OneLine([]byte(r.Emoji), 8)
		if _, ok := who[e]; !ok {
			order = append(order, e)
		}
		who[e] = append(who[e], name(r.From))
	}
	parts := make([]string, len(order))
	for i, e := range order {
		parts[i] = e + " " + strings.Join(who[e], ", ")
	}
	return strings.Join(parts, " · ")
}

// waitingText is a waiting message's text: an action said in words.
func (m *Model) waitingText(w *engine.InboundMessage) ([]byte, bool) {
	s, ok := actiontext.Describe(w.Content, w.Body, m.lookup)
	return []byte(s), ok
}

// readQuotes reads the messages that the replies among es and the actions
// among ws name and es does not hold (at most 64 reads a page).
func readQuotes(ctx context.Context, ms MessageSource, peer engine.Address, es []engine.HistoryEntry, ws []engine.InboundMessage) map[wire.LogicalID]engine.HistoryEntry {
	have := make(map[wire.LogicalID]bool, len(es))
	for _, e := range es {
		have[e.ID] = true
	}
	var want []wire.LogicalID
	for _, e := range es {
		if e.ReplyTo != nil && !have[*e.ReplyTo] {
			want = append(want, *e.ReplyTo)
			have[*e.ReplyTo] = true
		}
	}
	for _, id := range actiontext.Targets(ws) {
		if !have[id] {
			want = append(want, id)
			have[id] = true
		}
	}
	var out map[wire.LogicalID]engine.HistoryEntry
	for i, id := range want {
		if i == 64 {
			break
		}
		e, ok, err := ms.Message(ctx, peer, id)
		if err != nil || !ok {
			continue
		}
		if out == nil {
			out = map[wire.LogicalID]engine.HistoryEntry{}
		}
		out[id] = e
	}
	return out
}

// Label is how the panel names a device: its nickname and address, or
// the address.
func (m Model) Label(a engine.Address) string { return m.label(a) }
