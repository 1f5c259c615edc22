// Replies and edits written in the composer, and the actions the pane
// sends through its line (a reaction, a delete for everyone).

package composer

import (
	"context"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/wire"
)

// ActionSource is what the composer sends an action through:
// *engine.Client implements it. Act stores the action as a pending message
// and applies it here in the same transaction, as Enqueue stores a
// message; the client's loop hands it to the relay.
type ActionSource interface {
	Act(ctx context.Context, r engine.ActionRequest) (wire.LogicalID, error)
}

// ActedMsg reports one action: Err nil means it is stored as pending and
// applied here; any error means nothing was stored (a reply's or an
// edit's Req.Text is then given back to the composer).
type ActedMsg struct {
	Req engine.ActionRequest
	ID  wire.LogicalID
	Err error
}

// errNoActions is the answer of a source that cannot act.
var errNoActions = errors.New("this profile's client cannot reply, react, edit or delete")

// mode is what Enter sends besides a plain message: a reply quoting
// target, or an edit of it.
type mode struct {
	content wire.ContentType // 0: a plain message
	peer    engine.Address
	group   *wire.GroupID // the group written to when the mode was set
	target  wire.LogicalID
	quote   string // the line shown above the text
}

// actEntry is one action queued on the line (Take leaves it alone).
type actEntry struct{ req engine.ActionRequest }

// Reply makes Enter send a reply to target, a message of the conversation
// with peer, whose quote is shown above the text; esc cancels it.
func (m *Model) Reply(peer engine.Address, target wire.LogicalID, quote string) {
	m.mode = mode{content: wire.ContentReply, peer: peer, group: m.group, target: target, quote: "↪ replying to " + quote + " · esc cancels"}
	m.err = ""
	m.changed()
}

// Edit fills the composer with body, the current text of target, and
// makes Enter send it as the edit; esc cancels it and empties the
// composer.
func (m *Model) Edit(peer engine.Address, target wire.LogicalID, body string) {
	m.mode = mode{content: wire.ContentEdit, peer: peer, group: m.group, target: target, quote: "✎ editing your message · esc cancels"}
	m.err = ""
	m.SetValue(body)
}

// Mode names what Enter sends: "reply", "edit" or "" (a message).
func (m Model) Mode() string { return engine.ActionName(m.mode.content) }

// CancelMode goes back to plain messages (an edit's text is dropped).
func (m *Model) CancelMode() {
	if m.mode.content == wire.ContentEdit {
		m.SetValue("")
	}
	m.mode = mode{}
	m.changed()
}

// Act queues action r on the composer's line, after the sends entered
// before it: a reaction or a delete for everyone.
func (m *Model) Act(r engine.ActionRequest) tea.Cmd {
	src, ctx := m.src, m.ctx
	return m.line.Cmd(actEntry{r}, func() tea.Msg {
		as, ok := src.(ActionSource)
		if !ok {
			return ActedMsg{Req: r, Err: errNoActions}
		}
		id, err := as.Act(ctx, r)
		return ActedMsg{Req: r, ID: id, Err: err}
	})
}

// submitAction sends the text as the reply or the edit the mode names.
func (m Model) submitAction(body string) (Model, tea.Cmd) {
	if err := m.Check(body); err != nil {
		m.err = err.Error()
		return m, nil
	}
	if limit := MaxActionText; len(body) > MaxGroupActionText || m.group == nil && len(body) > limit {
		// A reply's or an edit's text: its header (and, to a person,
		// its copy's) take a little of the message's room. Refused
		// here, up front; the text stays to be edited.
		if m.group != nil {
			limit = MaxGroupActionText
		}
		m.err = fmt.Sprintf("message_too_large: %d bytes, the limit for a %s is %d", len(body), engine.ActionName(m.mode.content), limit)
		return m, nil
	}
	r := engine.ActionRequest{Peer: m.peer, Group: m.group, Content: m.mode.content, Target: m.mode.target, Text: []byte(body)}
	m.err = ""
	m.mode = mode{}
	m.ta.Reset()
	m.changed()
	m.entered++
	return m, m.Act(r)
}

// acted takes an action's outcome: an error gives a reply's or an edit's
// text back, in its mode, when the composer is empty.
func (m *Model) acted(msg ActedMsg) {
	r := msg.Req
	if r.Content != wire.ContentReply && r.Content != wire.ContentEdit {
		return
	}
	m.entered = max(0, m.entered-1)
	if msg.Err == nil || m.Value() != "" || r.Peer != m.peer || !sameGroup(r.Group, m.group) {
		return
	}
	m.err = layout.OneLine([]byte(engine.ErrorName(msg.Err)+": "+msg.Err.Error()), 200)
	q := "the message"
	m.mode = mode{content: r.Content, peer: r.Peer, group: m.group, target: r.Target, quote: "↪ replying to " + q + " · esc cancels"}
	if r.Content == wire.ContentEdit {
		m.mode.quote = "✎ editing your message · esc cancels"
	}
	m.SetValue(string(r.Text))
}
