package timeline

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

type groupHistory struct{ entries []engine.GroupEntry }

func (s groupHistory) GroupHistory(_ context.Context, _ wire.GroupID, after int64, limit int) ([]engine.GroupEntry, error) {
	var out []engine.GroupEntry
	for _, e := range s.entries {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestGroupView: each message once with its sender; one's own message
// with its matrix, which l opens to the lanes.
func TestGroupView(t *testing.T) {
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	a := engine.MustParseAddress
	src := groupHistory{entries: []engine.GroupEntry{
		{Seq: 1, Sender: a("bob/1"), At: at, Body: []byte("hello all")},
		{Seq: 2, Own: true, Sender: a("alice/1"), At: at.Add(time.Minute), Body: []byte("hi"), Lanes: []engine.Lane{
			{Recipient: a("bob/1"), State: engine.LaneAcknowledged}, {Recipient: a("carol/1"), State: engine.LanePending}}},
	}}
	g := NewGroup(context.Background(), src, themes.MustGet("dark"))
	g.SetSize(60, 10)
	g.SetNames(map[engine.Address]string{a("carol/1"): "carol"})
	g, _ = g.Update(g.SetGroup(wire.GroupID{1}, "team")())
	now := at.Add(2*time.Hour + time.Minute)
	v := ansi.Strip(g.View(now, true))
	for _, want := range []string{"# team", "bob/1 hello all", "you hi", "✓ 1/2 · carol pending 2h"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "bob/1 acknowledged") {
		t.Errorf("lanes shown before l:\n%s", v)
	}
	g, _ = g.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l")})
	v = ansi.Strip(g.View(now, true))
	for _, want := range []string{"✓ bob/1 acknowledged", "· carol pending"} {
		if !strings.Contains(v, want) {
			t.Errorf("opened view lacks %q:\n%s", want, v)
		}
	}
}
