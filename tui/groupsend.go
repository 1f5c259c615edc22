package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/outbox"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Writing to a group: choosing a group in the conversations addresses the
// composer to it (enter sends to every other member, one lane each);
// choosing a peer again addresses it back. The text written to a group is
// kept apart from the peers' drafts, for as long as the program runs.

// chooseGroup addresses the composer to group id, setting aside what was
// written to the peer or group chosen before.
func (p *pane) chooseGroup(id wire.GroupID, name string) {
	if p.group != nil && *p.group == id {
		return
	}
	p.stashComposer()
	if p.draft.groups == nil {
		p.draft.groups = map[wire.GroupID]string{}
	}
	p.group = &id
	p.comp().SetValue(p.draft.groups[id])
	p.comp().SetGroup(id, name)
	p.updateBlocked()
}

// leaveGroup addresses the composer back to the peer chosen last, with its
// draft, when it was writing to a group.
func (p *pane) leaveGroup() {
	if p.group == nil {
		return
	}
	p.stashComposer()
	p.group = nil
	p.comp().SetValue(p.draft.text[p.peer])
	p.comp().SetPeer(p.peer)
	p.updateBlocked()
}

// stashComposer keeps the composer's text as the draft of what it writes
// to now.
func (p *pane) stashComposer() {
	t := p.comp().Value()
	switch {
	case p.group != nil:
		if p.draft.groups == nil {
			p.draft.groups = map[wire.GroupID]string{}
		}
		p.draft.groups[*p.group] = t
	case !p.peer.IsZero():
		if p.draft.text == nil {
			p.draft.text = map[engine.Address]string{}
		}
		p.draft.text[p.peer] = t
	}
}

// keepQueuedGroup puts a message queued for group id back into that
// group's text, after what is there.
func (p *pane) keepQueuedGroup(id wire.GroupID, body []byte) {
	if p.draft.groups == nil {
		p.draft.groups = map[wire.GroupID]string{}
	}
	here := p.group != nil && *p.group == id
	t := p.draft.groups[id]
	if here {
		t = p.comp().Value()
	}
	t = strings.TrimLeft(t+"\n"+string(body), "\n")
	p.draft.groups[id] = t
	if here {
		p.comp().SetValue(t)
	}
}

// groupText reports whether text written to a group would be lost by
// quitting (the profile keeps drafts of peers only).
func (p pane) groupText() bool {
	if p.group != nil && strings.TrimSpace(p.comp().Value()) != "" {
		return true
	}
	for id, t := range p.draft.groups {
		if (p.group == nil || *p.group != id) && strings.TrimSpace(t) != "" {
			return true
		}
	}
	return false
}

// groupText reports whether any pane holds text written to a group.
func (m Model) groupText() bool {
	for _, p := range m.panes {
		if p.groupText() {
			return true
		}
	}
	return false
}

// sentGroup reports a message sent to a group: the lanes the relay took are
// told by the engine's events (one per lane); a message stored with lanes
// left pending names them; anything else stored nothing.
func (p *pane) sentGroup(m composer.SentMsg) tea.Cmd {
	name := "#" + p.comp().GroupName()
	if p.group == nil || *p.group != *m.Group {
		name = fmt.Sprintf("group %x", m.Group[:4])
	}
	var nse *engine.MessageNotSentError
	switch {
	case m.Err == nil:
		p.note(eventlog.Entry{At: p.now(), Name: "group_send", Text: fmt.Sprintf("%s to %s: every lane taken by the relay", layout.ShortID(m.ID), name), Level: eventlog.Info})
	case errors.As(m.Err, &nse):
		p.note(eventlog.Entry{At: p.now(), Name: "group_send", Text: fmt.Sprintf("%s to %s: stored, %d lane(s) pending (r on a lane in the outbox retries it): %v", layout.ShortID(m.ID), name, len(m.Unsent), nse.Err), Level: eventlog.Warn})
	default:
		p.noteErr(engine.ErrorName(m.Err), m.Err, "send to "+name+" failed, nothing stored")
		return nil
	}
	if p.tl().inGroup {
		return p.tl().group.Reload()
	}
	return nil
}

// retryGroupLanes is ctrl+r while a group is chosen: each member with a
// pending lane of the group is retried, in that member's order with
// everything else pending to it (FIFO per member), as parley retry GROUP
// does.
func retryGroupLanes(ctx context.Context, src PaneSource, id wire.GroupID) tea.Cmd {
	return func() tea.Msg {
		msgs, err := src.PendingOutbound(ctx, engine.PageQuery{Limit: 1000})
		if err != nil {
			return outbox.RetriedMsg{Err: err}
		}
		var out outbox.RetriedMsg
		seen := map[engine.Address]bool{}
		for _, m := range msgs {
			if m.Group == nil || *m.Group != id || seen[m.Recipient] {
				continue
			}
			seen[m.Recipient] = true
			out.Peers = append(out.Peers, m.Recipient)
			ids, err := src.Retry(ctx, m.Recipient)
			out.Sent += len(ids)
			if err != nil && out.Err == nil {
				out.Peer, out.Err = m.Recipient, err
			}
		}
		return out
	}
}
