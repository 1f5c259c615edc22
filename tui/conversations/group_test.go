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
}

func (g *groupSource) Groups(context.Context) ([]engine.GroupInfo, error) { return g.groups, nil }

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
	if v := m.View(); !strings.Contains(v, "# team · 3 members new 1") || strings.Contains(v, "carol/2 new") {
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
