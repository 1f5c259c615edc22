package input

import (
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

func TestTextNeverMatches(t *testing.T) {
	enter := key.NewBinding(key.WithKeys("enter"))
	home := key.NewBinding(key.WithKeys("home"))
	q := key.NewBinding(key.WithKeys("q"))
	for _, tc := range []struct {
		name string
		k    tea.KeyMsg
		b    key.Binding
		want bool
	}{
		{"the enter key", tea.KeyMsg{Type: tea.KeyEnter}, enter, true},
		{"the word enter read in one chunk", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("enter")}, enter, false},
		{"the word home read in one chunk", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("home")}, home, false},
		{"one rune is a key", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}, q, true},
		{"a pasted rune is text", tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q"), Paste: true}, q, false},
	} {
		if got := Matches(tc.k, tc.b); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}
