package conversations

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

type groupSource struct {
	fakeSource
	groups []engine.GroupInfo
	in     []engine.InboundMessage
	out    []engine.OutboundMessage
}

func (g *groupSource) Groups(context.Context) ([]engine.GroupInfo, error) { return g.groups, nil }

func (g *groupSource) PendingInbound(_ context.Context, q engine.PageQuery) ([]engine.InboundMessage, error) {
	var out []engine.InboundMessage
	for _, m := range g.in {
		if (q.Peer == nil || m.Sender == *q.Peer) && len(out) < q.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (g *groupSource) PendingOutbound(_ context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error) {
	var out []engine.OutboundMessage
	for _, m := range g.out {
		if (q.Peer == nil || m.Recipient == *q.Peer) && len(out) < q.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

// TestGroupsListed: groups appear under the peers with their name, their
// members and the deliveries not yet read; a source without groups lists
// peers only, as before.
func TestGroupsListed(t *testing.T) {
	gid := wire.GroupID{7}
	team := engine.GroupInfo{ID: gid, Name: "team", Roster: engine.Roster{Generation: 1, Name: "team",
		Members: []wire.RosterMember{{Address: "alice/1"}, {Address: "bob/1"}, {Address: "carol/2"}}}}
	src := &groupSource{fakeSource: fakeSource{list: []engine.Conversation{{Peer: bob}}}, groups: []engine.GroupInfo{team}}
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(40, 8)
	for _, msg := range run(m.Reload()) {
		m, _ = m.Update(msg)
	}
	if v := m.View(); !strings.Contains(v, "# team · 3 members") || !strings.Contains(v, "Conversations · 2") {
		t.Fatalf("the group is not listed with its members:\n%s", v)
	}
	delivery := engine.Event{Kind: engine.EventReceived, Result: &engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: carol, ID: wire.LogicalID{1}, Group: &gid}}
	m, _ = m.Update(delivery)
	m, _ = m.Update(delivery) // a repeat counts once
	if got := m.GroupItems()[0].Unread; got != 1 {
		t.Fatalf("got %d unread in the group, want 1", got)
	}
	if v := m.View(); !strings.Contains(v, "# team new 1 · 3 members") || strings.Contains(v, "carol/2 new") {
		t.Fatalf("a group delivery should count in the group, not with its sender:\n%s", v)
	}
	m.MarkGroupRead(gid)
	if v := m.View(); strings.Contains(v, "new 1") {
		t.Fatalf("read group still marked:\n%s", v)
	}

	plain := newModel(&fakeSource{list: []engine.Conversation{{Peer: bob}}})
	for _, msg := range run(plain.Reload()) {
		plain, _ = plain.Update(msg)
	}
	if v := plain.View(); strings.Contains(v, "#") || !strings.Contains(v, "Conversations · 1") {
		t.Fatalf("a source without groups should list peers only:\n%s", v)
	}
}

// TestChooseGroup: down past the peers chooses a group, reported with its
// name; up comes back to the peer.
func TestChooseGroup(t *testing.T) {
	gid := wire.GroupID{7}
	src := &groupSource{fakeSource: fakeSource{list: []engine.Conversation{{Peer: bob}}},
		groups: []engine.GroupInfo{{ID: gid, Name: "team"}}}
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(40, 8)
	m.Focus()
	for _, msg := range run(m.Reload()) {
		m, _ = m.Update(msg)
	}
	m.Select(bob)
	m, cmd := m.Update(keyMsg("down"))
	var got SelectedMsg
	for _, msg := range run(cmd) {
		if s, ok := msg.(SelectedMsg); ok {
			got = s
		}
	}
	if got.Group == nil || *got.Group != gid || got.Name != "team" {
		t.Fatalf("got %+v, want the group team chosen", got)
	}
	if id, ok := m.SelectedGroup(); !ok || id != gid || !strings.Contains(m.View(), "▸ # team") {
		t.Fatalf("the group is not shown chosen:\n%s", m.View())
	}
	m, cmd = m.Update(keyMsg("up"))
	if p, ok := selected(run(cmd)); !ok || p != bob {
		t.Fatalf("up should choose bob/1 again, got %v %v", p, ok)
	}
	if _, ok := m.SelectedGroup(); ok {
		t.Fatal("a group is still chosen after up")
	}
}

// TestGroupPendingCounted: a group's messages still pending count with the
// group (in, out), never with their sender or recipient, and the counts
// come before the member count, so that a column as narrow as the demo's at
// 120 columns shows them.
func TestGroupPendingCounted(t *testing.T) {
	gid := wire.GroupID{7}
	alice := engine.MustParseAddress("alice/1")
	team := engine.GroupInfo{ID: gid, Name: "trio", Roster: engine.Roster{Generation: 1, Name: "trio",
		Members: []wire.RosterMember{{Address: "alice/1"}, {Address: "bob/1"}, {Address: "carol/1"}}}}
	src := &groupSource{
		fakeSource: fakeSource{list: []engine.Conversation{{Peer: alice, PendingIn: 3}, {Peer: carol, PendingOut: 1}}},
		groups:     []engine.GroupInfo{team},
		in: []engine.InboundMessage{{Sender: alice, ID: wire.LogicalID{1}, Group: &gid}, {Sender: alice, ID: wire.LogicalID{2}, Group: &gid},
			{Sender: alice, ID: wire.LogicalID{3}}},
		out: []engine.OutboundMessage{{Recipient: carol, ID: wire.LogicalID{4}, Group: &gid}},
	}
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(40, 8)
	for _, msg := range run(m.Reload()) {
		m, _ = m.Update(msg)
	}
	v := m.View()
	for _, want := range []string{"alice/1 in 1", "# trio in 2 out 1 · 3 members"} {
		if !strings.Contains(v, want) {
			t.Errorf("the list lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "alice/1 in 3") || strings.Contains(v, "carol/2 out") {
		t.Errorf("group messages count with their peers:\n%s", v)
	}
	m.SetSize(14, 8)
	if v := m.View(); !strings.Contains(v, "# trio in 2") {
		t.Errorf("at 14 columns the group's counts are cut:\n%s", v)
	}
}

// TestGroupNameDrawnClean: a group name kept from before names were checked
// (a right-to-left override, an escape) is drawn without the characters
// that would act on the terminal.
func TestGroupNameDrawnClean(t *testing.T) {
	odd := engine.GroupInfo{ID: wire.GroupID{9}, Name: "ev\u202eil\x1b[2J", Roster: engine.Roster{Generation: 1,
		Members: []wire.RosterMember{{Address: "alice/1"}}}}
	src := &groupSource{fakeSource: fakeSource{list: nil}, groups: []engine.GroupInfo{odd}}
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(40, 8)
	for _, msg := range run(m.Reload()) {
		m, _ = m.Update(msg)
	}
	v := m.View()
	if strings.ContainsRune(v, '\u202e') || strings.Contains(v, "\x1b[2J") || !strings.Contains(v, "# evil[2J") {
		t.Fatalf("the group name is drawn raw:\n%q", v)
	}
}
