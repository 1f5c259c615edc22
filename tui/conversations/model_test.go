package conversations

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

type fakeSource struct {
	list  []engine.Conversation
	reads int
}

func (f *fakeSource) ConversationsByPerson(context.Context) ([]engine.Conversation, error) {
	f.reads++
	return f.list, nil
}

var (
	bob   = engine.MustParseAddress("bob/1")
	carol = engine.MustParseAddress("carol/2")
)

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// run executes a command and the commands of a batch, returning their
// messages.
func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, run(c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

func selected(msgs []tea.Msg) (engine.Address, bool) {
	for _, m := range msgs {
		if s, ok := m.(SelectedMsg); ok {
			return s.Peer, true
		}
	}
	return engine.Address{}, false
}

func newModel(src *fakeSource) Model {
	m := New(context.Background(), src, themes.MustGet("dark"))
	m.SetSize(40, 8)
	m.Focus()
	return m
}

func TestLoadSelectsFirst(t *testing.T) {
	src := &fakeSource{list: []engine.Conversation{{Peer: bob, PendingIn: 2, PendingOut: 1}, {Peer: carol}}}
	m := newModel(src)
	msgs := run(m.Reload())
	var cmd tea.Cmd
	m, cmd = m.Update(msgs[0])
	if got, ok := selected(run(cmd)); !ok || got != bob {
		t.Fatalf("selected %v (%v) after the first read, want bob/1", got, ok)
	}
	if v := m.View(); !strings.Contains(v, "bob/1 in 2 out 1") {
		t.Fatalf("counts missing:\n%s", v)
	}
	m, cmd = m.Update(keyMsg("down"))
	if got, _ := selected(run(cmd)); got != carol {
		t.Fatalf("down selected %v, want carol/2", got)
	}
	m, cmd = m.Update(keyMsg("down"))
	if _, ok := selected(run(cmd)); ok || m.Selected() != carol {
		t.Fatal("down past the last item moved")
	}
	m, cmd = m.Update(keyMsg("up"))
	if got, _ := selected(run(cmd)); got != bob {
		t.Fatalf("up selected %v, want bob/1", got)
	}
}

// TestReloadCoalesces: reloads asked while one is in flight make exactly
// one more read after it.
func TestReloadCoalesces(t *testing.T) {
	src := &fakeSource{}
	m := newModel(src)
	first := m.Reload()
	second, third := m.Reload(), m.Reload()
	if second != nil || third != nil {
		t.Fatal("a second read started while one was in flight")
	}
	msgs := run(first)
	m, cmd := m.Update(msgs[0])
	if cmd == nil || src.reads != 1 {
		t.Fatalf("after the first read: cmd %v, reads %d; want one more read queued", cmd, src.reads)
	}
	run(cmd)
	if src.reads != 2 {
		t.Fatalf("reads %d, want 2", src.reads)
	}
}

func TestStartByAddress(t *testing.T) {
	m := newModel(&fakeSource{})
	m, _ = m.Update(keyMsg("n"))
	if !m.Capturing() {
		t.Fatal("n does not open the address prompt")
	}
	for _, r := range "not an address" {
		m, _ = m.Update(keyMsg(string(r)))
	}
	m, _ = m.Update(keyMsg("enter"))
	if !m.Capturing() || !strings.Contains(m.View(), "invalid_address") {
		t.Fatalf("an invalid address was taken:\n%s", m.View())
	}
	m, _ = m.Update(keyMsg("esc"))
	m, _ = m.Update(keyMsg("n"))
	for _, r := range "carol/2" {
		m, _ = m.Update(keyMsg(string(r)))
	}
	m, cmd := m.Update(keyMsg("enter"))
	if got, _ := selected(run(cmd)); got != carol || m.Capturing() {
		t.Fatalf("started %v (capturing %v), want carol/2", got, m.Capturing())
	}
	if items := m.Items(); len(items) != 1 || items[0].Peer != carol {
		t.Fatalf("items %+v, want carol/2 alone", items)
	}
}

func TestUnreadAndChanged(t *testing.T) {
	src := &fakeSource{list: []engine.Conversation{{Peer: bob}, {Peer: carol}}}
	m := newModel(src)
	m.Select(bob)
	id := wire.LogicalID{1}
	delivery := engine.Event{Kind: engine.EventReceived, Result: &engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: carol, ID: id}}
	m, _ = m.Update(delivery)
	m, _ = m.Update(delivery) // a repeat counts once
	m, _ = m.Update(LoadedMsg{List: src.list})
	if v := m.View(); !strings.Contains(v, "carol/2 new 1") {
		t.Fatalf("unread not shown:\n%s", v)
	}
	m.SetChanged(carol, true)
	if v := m.View(); !strings.Contains(v, "identity changed") {
		t.Fatalf("identity change not shown:\n%s", v)
	}
	m, _ = m.Update(engine.Event{Kind: engine.EventIdentityAccepted, Peer: carol})
	m.Select(carol)
	if v := m.View(); strings.Contains(v, "new 1") || strings.Contains(v, "identity changed") {
		t.Fatalf("selecting and accepting should clear the marks:\n%s", v)
	}
}

// TestPersonRow: bob's row folds his devices (a person whose list is
// held): a delivery from bob/2 while carol is chosen marks bob's row
// unread, an identity change of bob/2 shows on it, choosing bob clears the
// unread, and typing bob/2's address chooses bob's row.
func TestPersonRow(t *testing.T) {
	bob2 := engine.MustParseAddress("bob/2")
	src := &fakeSource{list: []engine.Conversation{
		{Peer: bob, PendingIn: 2, PendingOut: 3, Devices: []engine.Conversation{{Peer: bob, PendingIn: 1, PendingOut: 2}, {Peer: bob2, PendingIn: 1, PendingOut: 1}}},
		{Peer: carol},
	}}
	m := newModel(src)
	m, _ = m.Update(LoadedMsg{List: src.list})
	m.Select(carol)
	m, _ = m.Update(engine.Event{Kind: engine.EventReceived, Result: &engine.ReceiveResult{Kind: engine.ResultDelivery, Sender: bob2, ID: wire.LogicalID{1}}})
	m, _ = m.Update(LoadedMsg{List: src.list})
	if v := m.View(); !strings.Contains(v, "bob/1 in 2 out 3 new 1") || strings.Contains(v, "bob/2") {
		t.Fatalf("bob/2's delivery should mark bob's one row:\n%s", v)
	}
	m.SetChanged(bob2, true)
	if items := m.Items(); len(items) != 2 || !items[0].Changed || items[1].Changed {
		t.Fatalf("items %+v, want bob's row marked changed for bob/2", items)
	}
	m, _ = m.Update(keyMsg("n"))
	for _, r := range "bob/2" {
		m, _ = m.Update(keyMsg(string(r)))
	}
	m, cmd := m.Update(keyMsg("enter"))
	if got, _ := selected(run(cmd)); got != bob || len(m.Items()) != 2 {
		t.Fatalf("typing bob/2 chose %v (%d rows), want bob's row", got, len(m.Items()))
	}
	if v := m.View(); strings.Contains(v, "new 1") {
		t.Fatalf("choosing bob should clear bob/2's unread:\n%s", v)
	}
}

// TestAddressTypedInOneChunk: an address read in one chunk is text, even a
// word that names a key.
func TestAddressTypedInOneChunk(t *testing.T) {
	m := newModel(&fakeSource{})
	m, _ = m.Update(keyMsg("n"))
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("carol/2")})
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("home")})
	if got := m.input.Value(); got != "carol/2home" {
		t.Fatalf("the prompt holds %q, want carol/2home", got)
	}
}

// TestNameTheChosenDevice: e opens a name prompt with the current name, a
// bad name is refused in place, enter asks for the name to be set, and the
// list shows names next to addresses.
func TestNameTheChosenDevice(t *testing.T) {
	src := &fakeSource{list: []engine.Conversation{{Peer: bob}, {Peer: carol}}}
	m := newModel(src)
	m, _ = m.Update(LoadedMsg{List: src.list})
	m.SetNames(map[engine.Address]string{bob: "Bob"})
	if v := m.View(); !strings.Contains(v, "Bob · bob/1") || !strings.Contains(v, "carol/2") {
		t.Fatalf("names not shown:\n%s", v)
	}
	m, _ = m.Update(keyMsg("e"))
	if !m.Capturing() || m.input.Value() != "Bob" {
		t.Fatalf("e: capturing %v, prompt %q; want the current name", m.Capturing(), m.input.Value())
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(strings.Repeat("é", 40))})
	m, cmd := m.Update(keyMsg("enter"))
	if cmd != nil || !m.Capturing() || !strings.Contains(m.View(), "invalid_contact_name") {
		t.Fatalf("a name over %d bytes was taken:\n%s", engine.MaxContactName, m.View())
	}
	m.input.SetValue("Robert home")
	m, cmd = m.Update(keyMsg("enter"))
	msgs := run(cmd)
	if len(msgs) != 1 || msgs[0] != (NameMsg{Peer: bob, Name: "Robert home"}) || m.Capturing() {
		t.Fatalf("enter gave %v (capturing %v), want a NameMsg for bob/1", msgs, m.Capturing())
	}
}
