package composer

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// MaxGroupBody is the largest body the composer sends to a group:
// wire.MaxGroupBodySize, a little under wire.MaxBodySize (the group frame
// carries the group ID and generation besides the body) and above MaxBody
// (a group message has no sent copy to the own devices to fit).
const MaxGroupBody = wire.MaxGroupBodySize

// SetGroup addresses the composer to group id, shown as #name: enter sends
// to every other member of its roster, one lane each.
func (m *Model) SetGroup(id wire.GroupID, name string) {
	m.peer = engine.Address{}
	m.group, m.gname = &id, name
	m.err = ""
	m.placeholder()
}

// Group returns the group messages go to, or nil when they go to a peer.
func (m Model) Group() *wire.GroupID { return m.group }

// GroupName is the name of that group ("" when writing to a peer).
func (m Model) GroupName() string { return m.gname }

func sameGroup(a, b *wire.GroupID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// sendGroup sends body to group id through src in a command. Lanes left
// unsent are pending (a retry sends them): the result is then a
// *engine.MessageNotSentError, as a send to a peer the relay did not take.
func sendGroup(ctx context.Context, src Source, id wire.GroupID, body []byte) tea.Cmd {
	return func() tea.Msg {
		gid := id
		gs, ok := src.(GroupSource)
		if !ok {
			return SentMsg{Group: &gid, Body: body, Err: fmt.Errorf("this profile's client cannot write to groups")}
		}
		res, err := gs.SendGroup(ctx, id, body)
		msg := SentMsg{Group: &gid, ID: res.ID, Body: body, Unsent: res.Unsent, Err: err}
		if err == nil && len(res.Unsent) > 0 {
			names := make([]string, len(res.Unsent))
			for i, a := range res.Unsent {
				names[i] = a.String()
			}
			msg.Err = &engine.MessageNotSentError{ID: res.ID, Err: fmt.Errorf("lanes to %s stay pending", strings.Join(names, ", "))}
		}
		return msg
	}
}
