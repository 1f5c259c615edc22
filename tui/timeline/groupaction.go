// Acting on a group's message, as in a conversation (action.go): a reply
// (r) or a reaction (+) on the newest message, an edit (e) or a delete for
// everyone (D, asked first) of one's own newest sent from this device, an
// edited message's
// earlier versions (v). The pane sends them with the group set.

package timeline

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/internal/actiontext"
	"github.com/parley-chat/parley/tui/internal/input"
	"github.com/parley-chat/parley/wire"
)

// SetSelf names this device's address (its reactions read "you").
func (g *Group) SetSelf(a engine.Address) { g.self = a }

// asHistory is group entry e as the actions and the composer name a
// message: its sender as the peer, one's own as sent.
func asHistory(e engine.GroupEntry) engine.HistoryEntry {
	h := engine.HistoryEntry{Seq: e.Seq, Peer: e.Sender, Direction: engine.DirectionIn, ID: e.ID, At: e.At, Body: e.Body,
		ReplyTo: e.ReplyTo, Edits: e.Edits, Deleted: e.Deleted, Reactions: e.Reactions, Imported: e.Imported}
	if e.Own {
		h.Direction = engine.DirectionOut
	}
	return h
}

// newest is the newest message not deleted, only one this device sent
// when own is set (a sibling's is that device's to edit or delete).
func (g Group) newest(own bool) (engine.GroupEntry, bool) {
	for i := len(g.entries) - 1; i >= 0; i-- {
		if e := g.entries[i]; !e.Deleted && (e.Own && !e.Sibling || !own) {
			return e, true
		}
	}
	return engine.GroupEntry{}, false
}

// actionKey handles the action keys; ok false means k is none of them.
func (g Group) actionKey(k tea.KeyMsg) (Group, tea.Cmd, bool) {
	id := g.id
	ask := func(c wire.ContentType, e engine.GroupEntry) tea.Cmd {
		a := ActionMsg{Group: &id, Peer: e.Sender, Content: c, Target: asHistory(e)}
		return func() tea.Msg { return a }
	}
	switch {
	case input.Matches(k, g.keys.Reply):
		e, ok := g.newest(false)
		if !ok {
			return g, notice("reply: no message to reply to here"), true
		}
		return g, ask(wire.ContentReply, e), true
	case input.Matches(k, g.keys.React):
		e, ok := g.newest(false)
		if !ok {
			return g, notice("react: no message to react to here"), true
		}
		g.pick = picker{on: true, target: asHistory(e)}
		for _, r := range e.Reactions {
			if r.From.IsZero() || r.From == g.self {
				g.pick.own = r.Emoji
			}
		}
		g.status = g.pick.line()
		return g, nil, true
	case input.Matches(k, g.keys.Edit), input.Matches(k, g.keys.Delete):
		what := "edit"
		if input.Matches(k, g.keys.Delete) {
			what = "delete"
		}
		if last, ok := g.newest(false); ok && !last.Own {
			// The newest message is a member's: only its author changes it.
			return g, notice(what + " refused: only its author edits or deletes a message (" + g.label(last.Sender) + " wrote the newest)"), true
		} else if ok && last.Sibling {
			// Another device of this person's sent it: its author is that
			// device, which alone edits or deletes it.
			return g, notice(what + " refused: the newest was sent from " + last.Sender.String() + ", which alone edits or deletes it"), true
		}
		e, ok := g.newest(true)
		if !ok {
			return g, notice(what + ": none of your messages here"), true
		}
		if what == "edit" {
			return g, ask(wire.ContentEdit, e), true
		}
		g.deleting = &e
		g.status = fmt.Sprintf("delete %s for everyone? y deletes it, any other key keeps it", actiontext.Quote(asHistory(e), true))
		return g, nil, true
	case input.Matches(k, g.keys.Versions):
		for i := len(g.entries) - 1; i >= 0; i-- {
			if e := g.entries[i]; e.Edits > 0 && !e.Deleted {
				v := VersionsMsg{Group: &id, Peer: e.Sender, Target: asHistory(e)}
				return g, func() tea.Msg { return v }, true
			}
		}
		return g, notice("versions: no edited message here"), true
	}
	return g, nil, false
}

// pickKey handles a key while the reaction picker is open.
func (g Group) pickKey(k tea.KeyMsg) (Group, tea.Cmd) {
	send, open := g.pick.step(k)
	if open {
		g.status = g.pick.line()
		return g, nil
	}
	p := g.pick
	g.pick, g.status = picker{}, ""
	if !send {
		return g, nil
	}
	id := g.id
	a := ActionMsg{Group: &id, Peer: p.target.Peer, Content: wire.ContentReaction, Target: p.target}
	p.choose(&a)
	return g, func() tea.Msg { return a }
}

// confirmDelete takes the key after D asked: y deletes.
func (g Group) confirmDelete(k tea.KeyMsg) (Group, tea.Cmd) {
	e := *g.deleting
	g.deleting, g.status = nil, ""
	if !input.Matches(k, g.keys.Confirm) {
		return g, nil
	}
	id := g.id
	a := ActionMsg{Group: &id, Peer: e.Sender, Content: wire.ContentDelete, Target: asHistory(e)}
	return g, func() tea.Msg { return a }
}

// quoteLine is a reply's one-line quote of the group message it answers.
func (g Group) quoteLine(id wire.LogicalID, w int) string {
	who, q := "", actiontext.Quote(engine.HistoryEntry{}, false)
	for i := len(g.entries) - 1; i >= 0; i-- {
		if e := g.entries[i]; e.ID == id {
			who, q = g.who(e.Sender, e.Own)+": ", actiontext.Quote(asHistory(e), true)
			break
		}
	}
	return "↪ " + layout.OneLine([]byte(who+q), max(w-2, 1))
}

// who is how the view names a member: "you" for this device.
func (g Group) who(a engine.Address, own bool) string {
	if own || a.IsZero() || a == g.self {
		return "you"
	}
	return g.label(a)
}

// reactionLine is a message's reactions, per member.
func (g Group) reactionLine(rs []engine.Reaction) string {
	return reactionText(rs, func(a engine.Address) string { return g.who(a, false) })
}
