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

// keyMsg runs the command a key gave and returns its message (nil for no
// command).
func keyMsg(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	return cmd()
}

// TestGroupSiblingsMessageIsNotEditedHere: alice/1's group view shows the
// message alice/2 sent as alice's own ("you"), but e and D do not act on
// it: the engine's author of an edit is the device that sends it, so only
// alice/2 edits or deletes it. With alice/1's own message the newest, e
// edits that one.
func TestGroupSiblingsMessageIsNotEditedHere(t *testing.T) {
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	a := engine.MustParseAddress
	mine := engine.GroupEntry{Seq: 1, Own: true, Sender: a("alice/1"), ID: wire.LogicalID{1}, At: at, Body: []byte("from the phone")}
	sibling := engine.GroupEntry{Seq: 2, Own: true, Sibling: true, Sender: a("alice/2"), ID: wire.LogicalID{2}, At: at.Add(time.Minute), Body: []byte("from the laptop")}
	open := func(es ...engine.GroupEntry) Group {
		g := NewGroup(context.Background(), groupHistory{entries: es}, themes.MustGet("dark"))
		g.SetSize(70, 10)
		g.SetSelf(a("alice/1"))
		g, _ = g.Update(g.SetGroup(wire.GroupID{1}, "team")())
		return g
	}
	g := open(mine, sibling)
	if v := ansi.Strip(g.View(at.Add(time.Hour), true)); !strings.Contains(v, "you from the laptop") {
		t.Fatalf("alice/2's message is not shown as alice's own:\n%s", v)
	}
	for _, k := range []string{"e", "D"} {
		_, cmd := g.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
		n, ok := keyMsg(cmd).(NoticeMsg)
		if !ok || !strings.Contains(n.Text, "refused") || !strings.Contains(n.Text, "alice/2") {
			t.Fatalf("%s on alice/2's newest message gave %#v, want a refusal naming alice/2", k, keyMsg(cmd))
		}
	}
	g = open(sibling, engine.GroupEntry{Seq: 3, Own: true, Sender: a("alice/1"), ID: wire.LogicalID{3}, At: at.Add(2 * time.Minute), Body: []byte("newest here")})
	_, cmd := g.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("e")})
	if m, ok := keyMsg(cmd).(ActionMsg); !ok || m.Content != wire.ContentEdit || m.Target.ID != (wire.LogicalID{3}) {
		t.Fatalf("e with alice/1's own message newest gave %#v, want an edit of it", keyMsg(cmd))
	}
}

// TestSentCopyIsNotEditedHere: in a conversation, a sent copy (a message
// another device of this person sent, SentCopied) is shown as sent but e
// and D act on the newest message this device sent, and with none say so.
func TestSentCopyIsNotEditedHere(t *testing.T) {
	h := &history{entries: []engine.HistoryEntry{
		{Seq: 1, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{1}, At: at, Body: []byte("sent here"), State: engine.SentAcknowledged},
		{Seq: 2, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{2}, At: at, Body: []byte("sent from the laptop"), State: engine.SentCopied},
	}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(70, 10)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("e")})
	if a, ok := keyMsg(cmd).(ActionMsg); !ok || a.Content != wire.ContentEdit || a.Target.ID != (wire.LogicalID{1}) {
		t.Fatalf("e gave %#v, want an edit of the message sent here, not of the copy", keyMsg(cmd))
	}
	h.entries = h.entries[1:]
	m = load(t, m, m.Reload())
	for _, k := range []string{"e", "D"} {
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
		if n, ok := keyMsg(cmd).(NoticeMsg); !ok || !strings.Contains(n.Text, "none of your messages") {
			t.Fatalf("%s with only a sent copy gave %#v, want a notice", k, keyMsg(cmd))
		}
	}
	// A message of the history a link imported was sent by the linking
	// device; one of a restored backup was sent here.
	h.entries = []engine.HistoryEntry{
		{Seq: 1, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{3}, At: at, Body: []byte("restored"), State: engine.SentAcknowledged, Imported: &engine.Imported{}},
		{Seq: 2, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{4}, At: at, Body: []byte("before the link"), State: engine.SentAcknowledged, Imported: &engine.Imported{Link: true}},
	}
	m = load(t, m, m.Reload())
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("e")})
	if a, ok := keyMsg(cmd).(ActionMsg); !ok || a.Content != wire.ContentEdit || a.Target.ID != (wire.LogicalID{3}) {
		t.Fatalf("e gave %#v, want an edit of the restored message, not of the one from before the link", keyMsg(cmd))
	}
}
