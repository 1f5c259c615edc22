package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// groupEditor is what a pane needs of a client to create groups and change
// their members: *engine.Client implements it. A client without it (a test
// double) answers the group command line with an error.
type groupEditor interface {
	CreateGroup(ctx context.Context, name string, members []engine.Address) (engine.GroupInfo, engine.GroupSendResult, error)
	ChangeRoster(ctx context.Context, id wire.GroupID, ops []wire.RosterChange) (engine.GroupSendResult, error)
}

var _ groupEditor = (*engine.Client)(nil)

// groupDoneMsg reports a group command run on the engine.
type groupDoneMsg struct {
	text string
	err  error
}

// errNoGroups: the client cannot change groups.
var errNoGroups = errors.New("this profile's client has no groups")

// runGroupCommand runs c on the client in a command.
func (p pane) runGroupCommand(c conversations.GroupCommandMsg) tea.Cmd {
	if p.att == nil {
		return nil
	}
	ge, ok := p.att.Client.(groupEditor)
	ctx := p.ctx
	return func() tea.Msg {
		if !ok {
			return groupDoneMsg{err: errNoGroups}
		}
		names := make([]string, len(c.Members))
		for i, a := range c.Members {
			names[i] = a.String()
		}
		if c.Create {
			g, _, err := ge.CreateGroup(ctx, c.Name, c.Members)
			if err != nil {
				return groupDoneMsg{err: fmt.Errorf("create group %s: %w", c.Name, err)}
			}
			return groupDoneMsg{text: fmt.Sprintf("created #%s with %s (generation %d)", g.Name, strings.Join(names, ", "), g.Roster.Generation)}
		}
		ops := make([]wire.RosterChange, len(c.Members))
		for i, a := range names {
			ops[i] = wire.RosterChange{Op: c.Op, Address: a}
		}
		verb := "added"
		if c.Op == wire.RosterRemove {
			verb = "removed"
		}
		if _, err := ge.ChangeRoster(ctx, c.Group, ops); err != nil {
			return groupDoneMsg{err: fmt.Errorf("change group %s: %w", c.Name, err)}
		}
		return groupDoneMsg{text: fmt.Sprintf("%s %s in #%s", verb, strings.Join(names, ", "), c.Name)}
	}
}

// groupDone notes the outcome and reads the conversations again.
func (p *pane) groupDone(msg groupDoneMsg) tea.Cmd {
	if msg.err != nil {
		p.noteErr(engine.ErrorName(msg.err), msg.err, "the group command")
		return nil
	}
	p.note(eventlog.Entry{At: p.now(), Name: "group", Text: msg.text, Level: eventlog.Info})
	return p.conv().Reload()
}
