package conversations

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// GroupSource is what the panel reads of groups when its Source has them:
// *engine.Client implements it. A Source without groups (a test double)
// lists peers only.
type GroupSource interface {
	Groups(ctx context.Context) ([]engine.GroupInfo, error)
}

// GroupsLoadedMsg carries a fresh read of the groups.
type GroupsLoadedMsg struct {
	List []engine.GroupInfo
	Err  error
}

// GroupItem is one group as shown: its name, its members (this device
// included) and the messages delivered to it since the panel last showed
// it as read.
type GroupItem struct {
	engine.GroupInfo
	Members int
	Unread  int
}

// GroupItems returns the groups as shown, in the order the store lists them.
func (m Model) GroupItems() []GroupItem {
	out := make([]GroupItem, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, GroupItem{GroupInfo: g, Members: len(g.Roster.Members), Unread: len(m.groupUnread[g.ID])})
	}
	return out
}

// MarkGroupRead forgets the unread count of group id.
func (m *Model) MarkGroupRead(id wire.GroupID) { delete(m.groupUnread, id) }

// reloadGroups reads the groups when the source has them.
func (m Model) reloadGroups() tea.Cmd {
	gs, ok := m.src.(GroupSource)
	if !ok {
		return nil
	}
	ctx := m.ctx
	return func() tea.Msg {
		l, err := gs.Groups(ctx)
		return GroupsLoadedMsg{List: l, Err: err}
	}
}

// groupDelivered counts a group delivery as unread.
func (m *Model) groupDelivered(r *engine.ReceiveResult) {
	if r.Group == nil || r.Kind != engine.ResultDelivery {
		return
	}
	if m.groupUnread[*r.Group] == nil {
		m.groupUnread[*r.Group] = map[wire.LogicalID]bool{}
	}
	m.groupUnread[*r.Group][r.ID] = true
}

// groupRows draws the groups under the peers: "# name · 3 members new 2".
func (m Model) groupRows(st themes.ConversationStyles) []string {
	var out []string
	for _, g := range m.GroupItems() {
		s := st.Item.Render("  # "+g.Name) + st.Counts.Render(fmt.Sprintf(" · %d members", g.Members))
		if g.Unread > 0 {
			s += st.Unread.Render(fmt.Sprintf(" new %d", g.Unread))
		}
		out = append(out, s)
	}
	return out
}
