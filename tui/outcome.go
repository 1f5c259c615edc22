// What a pane says of its actions' outcomes: a send, a decision made from
// the inbox or the conversation, a retry.

package tui

import (
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/inbox"
	"github.com/parley-chat/parley/tui/outbox"
	"github.com/parley-chat/parley/tui/timeline"
)

func (p *pane) sent(m composer.SentMsg) tea.Cmd {
	var nse *engine.MessageNotSentError
	switch {
	case m.Group != nil:
		return p.sentGroup(m)
	case m.Err == nil, errors.As(m.Err, &nse):
		if m.Peer == p.peer {
			p.tl().ShowNewest() // what was just sent is on screen, whatever was scrolled to
		}
		return nil // the engine's events tell the rest
	case errors.Is(m.Err, engine.ErrIdentityChanged):
		p.noteErr("identity_changed", m.Err, "send to "+m.Peer.String()+" refused, nothing stored")
		return p.markChanged(m.Peer)
	}
	p.noteErr(engine.ErrorName(m.Err), m.Err, "send to "+m.Peer.String()+" failed, nothing stored")
	return nil
}

func (p *pane) finalized(m inbox.FinalizedMsg) {
	if m.All && m.Done > 0 {
		verb := "commit"
		if m.Outcome == engine.OutcomeDiscarded {
			verb = "discard"
		}
		p.note(eventlog.Entry{Name: verb + "_all", Text: fmt.Sprintf("%d finalized, %d ACK sent", m.Done, m.AcksSent), Level: eventlog.Info})
	}
	for _, f := range m.Failed {
		p.noteErr(engine.ErrorName(f.Err), f.Err, "finalize "+layout.ShortID(f.ID)+" from "+f.Sender.String())
	}
	if m.Err != nil {
		p.noteErr(engine.ErrorName(m.Err), m.Err, "finalize")
	}
}

// finalizedHere logs what the conversation committed or discarded, and why
// not when it failed.
func (p *pane) finalizedHere(m timeline.FinalizedMsg) {
	where := "in the conversation with " + m.Peer.String()
	if m.Group != nil {
		where = "in a group's view"
	}
	if m.Err != nil {
		p.noteErr(engine.ErrorName(m.Err), m.Err, "finalize "+where)
		return
	}
	for i, r := range m.Results {
		if r.Err != nil {
			p.noteErr(engine.ErrorName(r.Err), r.Err, "finalize "+layout.ShortID(m.Reqs[i].ID)+" from "+m.Reqs[i].Sender.String())
		}
	}
}

func (p *pane) retried(m outbox.RetriedMsg) tea.Cmd {
	// A retry that had nothing to send says so in the outbox's status line
	// only; the log keeps what happened.
	if (!m.Auto && m.Sent > 0) || m.Err != nil {
		lvl := eventlog.Info
		if m.Err != nil {
			lvl = eventlog.Error
		}
		p.note(eventlog.Entry{Name: "retry", Text: outbox.DescribeRetry(m), Level: lvl})
	}
	if errors.Is(m.Err, engine.ErrIdentityChanged) {
		return p.markChanged(m.Peer)
	}
	return nil
}
