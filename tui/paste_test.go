package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// typeKeys types s into m one rune per key message, as a terminal without
// bracketed paste delivers a paste, drawing after each as a program does.
func typeKeys(m Model, s string) Model {
	for _, r := range s {
		k := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}
		if r == ' ' {
			k = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{r}}
		}
		m, _ = update(m, k)
		m.View()
	}
	return m
}

// pasteText is 5,000 characters of prose.
var pasteText = strings.Repeat("the quick brown fox jumps over the lazy dog ", 114)[:5000]

// TestPasteByKeys: 5,000 characters arriving key by key (a paste without
// bracketed paste) reach the composer whole and in order, and the keys are
// inserted together, not one rewrap of the growing line each: the
// composer gathers them until the frame's insertion. (The cost is
// BenchmarkPasteByKeys; no test here measures time.)
func TestPasteByKeys(t *testing.T) {
	m, _, _ := newTestRoot(t)
	m = typeKeys(m, pasteText[:2500])
	if got := m.panes[0].comp().Value(); got != pasteText[:2500] {
		t.Fatalf("before the frame's insertion the composer holds %d characters, want the 2,500 typed", len(got))
	}
	if n := len(m.panes[0].comp().Model.Pending()); n != 2500 {
		t.Fatalf("%d keys gathered, want all 2,500 (one insertion)", n)
	}
	m = flushed(m)
	m = typeKeys(m, pasteText[2500:])
	m = flushed(m)
	if got := m.panes[0].comp().Value(); got != pasteText {
		t.Fatalf("the composer holds %d characters, want the 5,000 pasted in order", len(got))
	}
	if v := m.View(); !strings.Contains(v, "4.9 KiB") {
		t.Fatalf("the composer's title does not count the paste:\n%s", v)
	}
}

// BenchmarkPasteByKeys is the cost of a 5,000-character paste that arrives
// key by key (no bracketed paste), drawn after each key, with the frame's
// insertion every 100 keys (a fast link delivers far more in a frame).
func BenchmarkPasteByKeys(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		m, _, _ := newTestRoot(&testing.T{})
		b.StartTimer()
		for i := 0; i < len(pasteText); i += 100 {
			m = flushed(typeKeys(m, pasteText[i:min(i+100, len(pasteText))]))
		}
	}
}
