package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/conversations"
	"github.com/parley-chat/parley/tui/timeline"
	"github.com/parley-chat/parley/wire"
)

var (
	demoCarol = engine.MustParseAddress("carol/1")
	teamID    = wire.GroupID{0x21}
)

// teamHistory is a group of alice, bob and carol: bob wrote, alice
// answered, and bob has acknowledged while carol has not for two hours.
func teamHistory() []engine.GroupEntry {
	at := testNow.Add(-2*time.Hour - 5*time.Minute)
	return []engine.GroupEntry{
		{Seq: 1, Sender: demoBob, At: at, Body: []byte("lunch at noon?")},
		{Seq: 2, Own: true, Sender: demoAlice, At: at.Add(time.Minute), Body: []byte("yes, the usual place"), Lanes: []engine.Lane{
			{Recipient: demoBob, State: engine.LaneAcknowledged}, {Recipient: demoCarol, State: engine.LanePending}}},
	}
}

// TestGroupScreens: the group in the conversation list, its timeline with
// each sender and the delivery matrix, and the matrix opened to the lanes
// (go test ./tui -run TestGroupScreens -update).
func TestGroupScreens(t *testing.T) {
	m := newChatRoot(t, 160, 48)
	gen := m.panes[0].gen
	to := func(msg tea.Msg) tea.Msg { return paneMsg{pane: 0, gen: gen, msg: msg} }
	team := engine.GroupInfo{ID: teamID, Name: "team", Roster: engine.Roster{Generation: 1, Name: "team",
		Members: []wire.RosterMember{{Address: demoAlice.String(), Admin: true}, {Address: demoBob.String()}, {Address: demoCarol.String()}}}}
	m, _ = update(m, to(conversations.GroupsLoadedMsg{List: []engine.GroupInfo{team}}))
	screens := map[string]string{"list": m.View()}
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'1'}, Alt: true})
	m, cmd := update(m, tea.KeyMsg{Type: tea.KeyDown})
	if cmd == nil {
		t.Fatal("down in the conversations chose nothing")
	}
	chosen := cmd()
	if pm, ok := chosen.(paneMsg); !ok || pm.msg.(conversations.SelectedMsg).Group == nil {
		t.Fatalf("down chose %#v, want the group", chosen)
	}
	m, _ = update(m, chosen)
	m, _ = update(m, to(timeline.GroupLoadedMsg{Group: teamID, Entries: teamHistory(), Members: 3}))
	screens["timeline"] = m.View()
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'2'}, Alt: true})
	m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'l'}})
	screens["lanes"] = m.View()
	for name, want := range map[string][]string{
		"list":     {"# team · 3 members"},
		"timeline": {"# team · 3 members · 2 shown", "09:55:00 bob/1 lunch at noon?", "09:56:00 you yes, the usual place", "✓ 1/2 · carol/1 pending 2h"},
		"lanes":    {"✓ bob/1 acknowledged", "· carol/1 pending"},
	} {
		for _, w := range want {
			if !strings.Contains(ansi.Strip(screens[name]), w) {
				t.Errorf("the %s screen lacks %q:\n%s", name, w, ansi.Strip(screens[name]))
			}
		}
	}
	for _, name := range []string{"list", "timeline", "lanes"} {
		t.Run(name, func(t *testing.T) { golden.RequireEqual(t, []byte(screens[name])) })
	}
}
