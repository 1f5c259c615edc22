package outbox

import (
	"encoding/hex"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/tui/internal/sent"
)

// laneOfAbove reports whether the row at page index i is a further lane of
// the group message on the row above: the lanes of one message are stored
// together, so they are drawn together, the message once and each
// further lane under it.
func (m Model) laneOfAbove(i int, msg engine.OutboundMessage) bool {
	page := m.list.Page()
	if msg.Group == nil || i <= 0 || i > len(page) {
		return false
	}
	prev := page[i-1]
	return prev.Group != nil && *prev.Group == *msg.Group && prev.ID == msg.ID
}

// laneRow draws a group lane: the first one as "#group id body → member
// state", a further one as "└ member state" under it.
func (m Model) laneRow(i int, msg engine.OutboundMessage, st themes.ListStyles) string {
	mark := "  "
	if i == m.list.Cursor() {
		mark = "▸ "
	}
	state, _ := m.states.Get(msg.ID)
	stStyle := st.State
	if state == sent.NotSent {
		stStyle = st.Warn
	}
	tail := " → " + msg.Recipient.String() + " " + state.String()
	if m.laneOfAbove(i, msg) {
		text := mark + "    └" + tail
		if i == m.list.Cursor() && m.focus {
			return st.Selected.Render(layout.Line(text, m.w))
		}
		return st.Row.Render(mark+"    └ → ") + st.Peer.Render(msg.Recipient.String()) + " " + stStyle.Render(state.String())
	}
	group := "#" + hex.EncodeToString(msg.Group[:4])
	head := mark + group + " " + layout.ShortID(msg.ID) + " "
	bodyW := max(m.w-len(head)-layout.Width(tail), 4)
	body := layout.OneLine(layout.Shown(msg.Content, msg.Body), bodyW)
	fill := layout.Spaces(bodyW - layout.Width(body))
	if i == m.list.Cursor() && m.focus {
		return st.Selected.Render(layout.Line(head+body+fill+tail, m.w))
	}
	return st.Row.Render(mark) + st.Peer.Render(group) + " " + st.ID.Render(layout.ShortID(msg.ID)) + " " +
		st.Row.Render(body+fill) + st.Row.Render(" → ") + st.Peer.Render(msg.Recipient.String()) + " " + stStyle.Render(state.String())
}
