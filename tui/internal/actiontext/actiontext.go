// Package actiontext says in words what a reply, a reaction, an edit or a
// delete for everyone does, for the panels that show one waiting: "reacts
// 👍 to “first words…”". Every piece of a peer's text in it is cleaned.
package actiontext

import (
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/wire"
)

// QuoteWidth is how many cells of a target's text a description quotes.
const QuoteWidth = 24

// Quote is a target as a description names it: its first words in
// quotes, "a deleted message", or "a message not here" when this device
// does not have it (not arrived yet, or discarded).
func Quote(e engine.HistoryEntry, found bool) string {
	switch {
	case !found:
		return "a message not here"
	case e.Deleted:
		return "a deleted message"
	}
	return "“" + layout.OneLine(layout.Stored(e.Body), QuoteWidth) + "”"
}

// Lookup finds an action's target: its history entry and whether it is
// known.
type Lookup func(id wire.LogicalID) (engine.HistoryEntry, bool)

// Describe says what the action of content c with encoded body does, and
// whether c is an action at all (false: body is a message's own text).
// lookup may be nil: the target is then named by its short ID.
func Describe(c wire.ContentType, body []byte, lookup Lookup) (string, bool) {
	if !wire.IsAction(c) {
		return "", false
	}
	a, err := wire.DecodeAction(c, body)
	if err != nil {
		return engine.ActionName(c) + " (unreadable)", true
	}
	var q string
	if lookup == nil {
		q = "message " + layout.ShortID(a.Target)
	} else {
		t, found := lookup(a.Target)
		q = Quote(t, found)
	}
	switch c {
	case wire.ContentReply:
		return "replies to " + q + ": " + layout.OneLine(a.Text, 4*QuoteWidth), true
	case wire.ContentReaction:
		if a.Remove {
			return "takes back the reaction to " + q, true
		}
		return "reacts " + layout.OneLine([]byte(a.Emoji), 8) + " to " + q, true
	case wire.ContentEdit:
		return "edits " + q + " to “" + layout.OneLine(a.Text, 2*QuoteWidth) + "”", true
	case wire.ContentDelete:
		return "deletes " + q + " for everyone", true
	}
	return engine.ActionName(c), true
}

// Targets returns the targets the actions among msgs name, once each.
func Targets(msgs []engine.InboundMessage) []wire.LogicalID {
	var out []wire.LogicalID
	seen := map[wire.LogicalID]bool{}
	for _, m := range msgs {
		if !wire.IsAction(m.Content) {
			continue
		}
		a, err := wire.DecodeAction(m.Content, m.Body)
		if err != nil || seen[a.Target] {
			continue
		}
		seen[a.Target] = true
		out = append(out, a.Target)
	}
	return out
}

// Own says what an action this device sends does, for a list of sent
// messages: "reaction 👍", "reaction taken back", "edit “…”", "delete
// for everyone", "reply “…”"; false when c is no action.
func Own(c wire.ContentType, body []byte) (string, bool) {
	if !wire.IsAction(c) {
		return "", false
	}
	a, err := wire.DecodeAction(c, body)
	if err != nil {
		return engine.ActionName(c) + " (unreadable)", true
	}
	switch c {
	case wire.ContentReply:
		return "reply “" + layout.OneLine(a.Text, 4*QuoteWidth) + "”", true
	case wire.ContentReaction:
		if a.Remove {
			return "reaction taken back", true
		}
		return "reaction " + layout.OneLine([]byte(a.Emoji), 8), true
	case wire.ContentEdit:
		return "edit “" + layout.OneLine(a.Text, 4*QuoteWidth) + "”", true
	case wire.ContentDelete:
		return "delete for everyone", true
	}
	return engine.ActionName(c), true
}

// Applied says what an action committed in a round did, for the event
// log: "reaction 👍 to message 1a2b3c4d".
func Applied(a engine.AppliedAction) string {
	q := "message " + layout.ShortID(a.Target)
	switch a.Content {
	case wire.ContentReaction:
		if a.Remove {
			return "reaction to " + q + " taken back"
		}
		return "reaction " + layout.OneLine([]byte(a.Emoji), 8) + " to " + q
	case wire.ContentEdit:
		return "edit of " + q + " to “" + layout.OneLine(a.Text, 2*QuoteWidth) + "”"
	case wire.ContentDelete:
		return q + " deleted for everyone"
	case wire.ContentReply:
		return "reply to " + q
	}
	return engine.ActionName(a.Content) + " of " + q
}
