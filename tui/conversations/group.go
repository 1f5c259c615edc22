package conversations

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// GroupSource is what the panel reads of groups when its Source has them:
// *engine.Client implements it. A Source without groups (a test double)
// lists peers only. The pending messages are read to count a group's
// messages with the group, not with their sender or recipient.
type GroupSource interface {
	Groups(ctx context.Context) ([]engine.GroupInfo, error)
	PendingInbound(ctx context.Context, q engine.PageQuery) ([]engine.InboundMessage, error)
	PendingOutbound(ctx context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error)
}

// groupScan bounds the pending messages of one peer read to find the
// group's among them: a peer with more pending than that keeps the group
// messages past them in its own counts (a read costs a row each, on every
// reload of the list).
const groupScan = 256

// GroupPending counts a group's pending messages: received and waiting
// for a decision (In), and lanes of sent ones not acknowledged (Out).
type GroupPending struct{ In, Out int }

// splitGroups moves the group messages out of the peers' counts in list
// and returns them by group; a person's messages are read from all their
// devices (the person's counts are the sum of theirs). The devices' own
// counts (Devices) keep their group messages: retry reads them.
func splitGroups(ctx context.Context, gs GroupSource, list []engine.Conversation) (map[wire.GroupID]GroupPending, error) {
	out := map[wire.GroupID]GroupPending{}
	for i := range list {
		c := &list[i]
		peer := c.Peer
		if c.PendingIn > 0 {
			ws, err := gs.PendingInbound(ctx, engine.PageQuery{Peer: &peer, Person: c.Person(), Limit: min(c.PendingIn, groupScan)})
			if err != nil {
				return nil, err
			}
			for _, w := range ws {
				if w.Group != nil {
					c.PendingIn--
					p := out[*w.Group]
					p.In++
					out[*w.Group] = p
				}
			}
		}
		if c.PendingOut > 0 {
			ms, err := gs.PendingOutbound(ctx, engine.PageQuery{Peer: &peer, Person: c.Person(), Limit: min(c.PendingOut, groupScan)})
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				if m.Group != nil {
					c.PendingOut--
					p := out[*m.Group]
					p.Out++
					out[*m.Group] = p
				}
			}
		}
	}
	return out, nil
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
	GroupPending
}

// GroupItems returns the groups as shown, in the order the store lists them.
func (m Model) GroupItems() []GroupItem {
	out := make([]GroupItem, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, GroupItem{GroupInfo: g, Members: len(g.Roster.Members), Unread: len(m.groupUnread[g.ID]), GroupPending: m.groupPending[g.ID]})
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
	if r.Group == nil || r.Kind != engine.ResultDelivery || (m.selGroup != nil && *m.selGroup == *r.Group) {
		return
	}
	if m.groupUnread[*r.Group] == nil {
		m.groupUnread[*r.Group] = map[wire.LogicalID]bool{}
	}
	m.groupUnread[*r.Group][r.ID] = true
}

// SelectedGroup returns the group chosen, if one is.
func (m Model) SelectedGroup() (wire.GroupID, bool) {
	if m.selGroup == nil {
		return wire.GroupID{}, false
	}
	return *m.selGroup, true
}

// cursor is the place of the choice in the list: peers, then groups.
func (m Model) cursor(items []Item) int {
	if m.selGroup != nil {
		for i, g := range m.groups {
			if g.ID == *m.selGroup {
				return len(items) + i
			}
		}
	}
	return m.index(items)
}

// chooseAt chooses the entry at place i of the list: peers, then groups.
func (m *Model) chooseAt(items []Item, i int) tea.Cmd {
	if i < len(items) {
		return m.choose(items[i].Peer)
	}
	g := m.groups[i-len(items)]
	id := g.ID
	m.selGroup = &id
	delete(m.groupUnread, id)
	peer := m.sel
	return func() tea.Msg { return SelectedMsg{Peer: peer, Group: &id, Name: g.Name} }
}

// groupRows draws the groups under the peers: "# name in 1 out 2 new 3 ·
// 3 members", the counts first, as a peer's are, so that a narrow column
// cuts the member count and never them.
func (m Model) groupRows(st themes.ConversationStyles) []string {
	var out []string
	for _, g := range m.GroupItems() {
		mark, name := "  ", st.Item
		if m.selGroup != nil && *m.selGroup == g.ID {
			mark, name = "▸ ", st.Selected
			if m.focus {
				name = st.Cursor
			}
		}
		// A name from a log kept before names were checked may still hold
		// a control or bidirectional character: drawn cleaned, on one line.
		shown := strings.ReplaceAll(layout.Clean([]byte(g.Name)), "\n", " ")
		s := name.Render(mark + "# " + shown)
		counts := ""
		if g.In > 0 {
			counts += fmt.Sprintf(" in %d", g.In)
		}
		if g.Out > 0 {
			counts += fmt.Sprintf(" out %d", g.Out)
		}
		s += st.Counts.Render(counts)
		if g.Unread > 0 {
			s += st.Unread.Render(fmt.Sprintf(" new %d", g.Unread))
		}
		out = append(out, s+st.Counts.Render(fmt.Sprintf(" · %d members", g.Members)))
	}
	return out
}

// SelectGroup chooses the group named name, as ↓ past the peers reaches it
// (a wrapper's scripted step); nil when no group has that name.
func (m *Model) SelectGroup(name string) tea.Cmd {
	items := m.Items()
	for i, g := range m.groups {
		if g.Name == name {
			return m.chooseAt(items, len(items)+i)
		}
	}
	return nil
}
