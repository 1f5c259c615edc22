// Replies, reactions, edits and deletes for everyone, asked for in the
// timeline (timeline.ActionMsg) and written through the composer's line
// (composer.Model.Act), the store-first path a message takes: stored as a
// pending message and applied here in one transaction, then handed to the
// relay by the client's loop.

package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/tui/composer"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/tui/internal/actiontext"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

// VersionSource reads an edited message's earlier bodies:
// *engine.Client implements it.
type VersionSource interface {
	MessageVersions(ctx context.Context, peer engine.Address, dir engine.Direction, id wire.LogicalID) ([]engine.MessageVersion, error)
}

var (
	_ VersionSource          = (*engine.Client)(nil)
	_ composer.ActionSource  = (*engine.Client)(nil)
	_ timeline.MessageSource = (*engine.Client)(nil)
)

// versionsMsg carries an edited message's earlier versions.
type versionsMsg struct {
	target engine.HistoryEntry
	vs     []engine.MessageVersion
	err    error
}

// act starts the action the timeline asked for.
func (p *pane) act(a timeline.ActionMsg) tea.Cmd {
	if a.Group != nil {
		// An action in the group shown, written through the composer
		// addressed to it.
		if p.group == nil || *p.group != *a.Group || p.att == nil {
			return nil
		}
		a.Peer = engine.Address{}
	} else if p.group != nil || p.tl().inGroup || a.Peer != p.peer || p.att == nil {
		return nil
	}
	switch a.Content {
	case wire.ContentReply:
		who := "you"
		if a.Target.Direction == engine.DirectionIn {
			who = p.tl().Label(a.Target.Peer)
		}
		p.comp().Reply(a.Peer, a.Target.ID, who+": "+actiontext.Quote(a.Target, true))
		return p.setFocus(panelComposer)
	case wire.ContentEdit:
		p.comp().Edit(a.Peer, a.Target.ID, string(a.Target.Body))
		return p.setFocus(panelComposer)
	}
	return p.comp().Act(engine.ActionRequest{Peer: a.Peer, Group: a.Group, Content: a.Content, Target: a.Target.ID, Emoji: a.Emoji, Remove: a.Remove})
}

// acted tells what became of an action: a refusal in the status bar and
// the event log, a stored one on screen.
func (p *pane) acted(m composer.ActedMsg) {
	where := "the conversation with " + m.Req.Peer.String()
	if m.Req.Group != nil {
		where = "the group #" + p.comp().GroupName()
	}
	if m.Err == nil {
		if m.Req.Group == nil && m.Req.Peer == p.peer {
			p.tl().ShowNewest()
		}
		return
	}
	p.notice = refusal(m.Req.Content, m.Err)
	p.noteErr(engine.ErrorName(m.Err), m.Err, engine.ActionName(m.Req.Content)+" in "+where+" not stored")
}

// refusal says in one line why the engine refused an action.
func refusal(c wire.ContentType, err error) string {
	what := engine.ActionName(c)
	var re *engine.ActionRefusedError
	switch {
	case errors.As(err, &re):
		why := re.Reason.String()
		switch re.Reason {
		case engine.DiscardNotAuthor:
			why = "only its author edits or deletes a message"
		case engine.DiscardWindowPassed:
			why = fmt.Sprintf("more than %d hours after the message", int(engine.ActionWindow.Hours()))
		case engine.DiscardTargetDeleted:
			why = "the message was deleted"
		case engine.DiscardTargetMissing:
			why = "that is no message to act on"
		}
		return what + " refused: " + why
	case errors.Is(err, engine.ErrTargetNotFound):
		return what + " refused: no such message in the conversation"
	}
	return what + " failed: " + engine.ErrorName(err) + ": " + err.Error()
}

// GroupVersionSource reads an edited group message's earlier bodies:
// *engine.Client implements it.
type GroupVersionSource interface {
	GroupMessageVersions(ctx context.Context, g wire.GroupID, author engine.Address, id wire.LogicalID) ([]engine.MessageVersion, error)
}

var _ GroupVersionSource = (*engine.Client)(nil)

// readVersions reads an edited message's earlier versions.
func (p *pane) readVersions(v timeline.VersionsMsg) tea.Cmd {
	if v.Group != nil {
		gs, ok := p.attClient().(GroupVersionSource)
		if !ok {
			p.notice = "versions: this profile's client keeps no versions"
			return nil
		}
		ctx, t, g := p.ctx, v.Target, *v.Group
		return func() tea.Msg {
			out, err := gs.GroupMessageVersions(ctx, g, t.Peer, t.ID)
			return versionsMsg{target: t, vs: out, err: err}
		}
	}
	vs, ok := p.attClient().(VersionSource)
	if !ok {
		p.notice = "versions: this profile's client keeps no versions"
		return nil
	}
	ctx, t := p.ctx, v.Target
	return func() tea.Msg {
		out, err := vs.MessageVersions(ctx, v.Peer, t.Direction, t.ID)
		return versionsMsg{target: t, vs: out, err: err}
	}
}

func (p *pane) attClient() PaneSource {
	if p.att == nil {
		return nil
	}
	return p.att.Client
}

// versions shows an edited message's versions in the event log, the
// way a trace is shown: oldest first, the current body last.
func (p *pane) versions(m versionsMsg) tea.Cmd {
	if m.err != nil {
		p.notice = "versions: " + engine.ErrorName(m.err) + ": " + m.err.Error()
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "versions of %s (%d edits)", layout.ShortID(m.target.ID), m.target.Edits)
	for _, v := range m.vs {
		name := "original"
		if v.Edit > 0 {
			name = fmt.Sprintf("edit %d", v.Edit)
		}
		fmt.Fprintf(&b, "\n  %s %-8s %s", layout.Clock(v.At), name, layout.Quote(layout.Clean(v.Body)))
	}
	fmt.Fprintf(&b, "\n  now      edit %d %s", m.target.Edits, layout.Quote(layout.Clean(m.target.Body)))
	cmd := p.setFocus(panelEvents)
	p.ev().Show(eventlog.Entry{At: p.now(), Name: "versions", Text: b.String(), Level: eventlog.Info})
	return cmd
}
