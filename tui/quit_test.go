package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/tui/composer"
)

// TestQuitKeepsQueuedMessages: messages entered while a send is in flight
// are not lost to one ctrl+c. The first press says how many are unsent and
// waits; the program quits by itself once the engine has answered for all
// of them; a second press quits at once.
func TestQuitKeepsQueuedMessages(t *testing.T) {
	ctrlC := tea.KeyMsg{Type: tea.KeyCtrlC}
	enter := func(m Model, text string) Model {
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(text)})
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyEnter})
		return m
	}
	sent := func(m Model, body string) (Model, tea.Cmd) {
		return update(m, paneMsg{pane: 0, gen: m.panes[0].gen, msg: composer.SentMsg{Peer: demoBob, Body: []byte(body)}})
	}
	bodies := []string{"one", "two", "three", "four", "five"}

	t.Run("waits", func(t *testing.T) {
		m, _, _ := newTestRoot(t)
		// The sends' commands are never run: storing them has not
		// finished.
		for _, b := range bodies {
			m = enter(m, b)
		}
		m, cmd := update(m, ctrlC)
		if isQuit(cmd) {
			t.Fatal("ctrl+c quit with five messages entered and none stored")
		}
		if v := m.View(); !strings.Contains(v, "5 unsent: quit once stored") {
			t.Fatalf("the question does not say that 5 are unsent:\n%s", v)
		}
		if v := m.View(); !strings.Contains(v, "5 storing") {
			t.Fatalf("the composer does not show the 5 messages being stored:\n%s", v)
		}
		for i, b := range bodies {
			m, cmd = sent(m, b)
			if last := i == len(bodies)-1; isQuit(cmd) != last {
				t.Fatalf("after %d of 5 sends returned: quit %v, want %v", i+1, isQuit(cmd), last)
			}
		}
	})

	t.Run("second press", func(t *testing.T) {
		m, _, _ := newTestRoot(t)
		m = enter(m, "one")
		m = enter(m, "two")
		m, _ = update(m, ctrlC)
		if _, cmd := update(m, ctrlC); !isQuit(cmd) {
			t.Fatal("a second ctrl+c did not quit")
		}
	})

	t.Run("another key stays", func(t *testing.T) {
		m, _, _ := newTestRoot(t)
		m = enter(m, "one")
		m, _ = update(m, ctrlC)
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")})
		if _, cmd := sent(m, "one"); isQuit(cmd) {
			t.Fatal("quit after the send returned, though a key after ctrl+c said stay")
		}
	})

	t.Run("then asks about the draft", func(t *testing.T) {
		m, _, _ := newTestRoot(t)
		m = enter(m, "one")
		m, _ = update(m, ctrlC)
		m, _ = update(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")})
		m, _ = update(m, ctrlC)
		m, cmd := sent(m, "one")
		if isQuit(cmd) || !strings.Contains(m.View(), "loses alice/1's draft") {
			t.Fatalf("with a draft left, the wait ended without asking:\n%s", m.View())
		}
	})
}
