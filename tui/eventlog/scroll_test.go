package eventlog

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/themes"
)

// TestOpenEntryScrolls: an entry shown in full that is longer than the
// panel (a message's trace) says which lines show, and the list's keys
// scroll it to its last line and back; esc closes it.
func TestOpenEntryScrolls(t *testing.T) {
	m := New(themes.MustGet("dark"))
	m.SetSize(60, 8) // a title, six lines of text, a footer
	var text []string
	for i := 1; i <= 20; i++ {
		text = append(text, fmt.Sprintf("line %02d of the trace", i))
	}
	m.Show(Entry{At: at, Name: "trace", Text: strings.Join(text, "\n")})
	m.Focus()
	key := func(k tea.KeyMsg) { m, _ = m.Update(k) }
	v := m.View()
	if !strings.Contains(v, "line 01") || strings.Contains(v, "line 07") || !strings.Contains(v, "lines 1–6 of 20") {
		t.Fatalf("the open entry's first page:\n%s", v)
	}
	key(tea.KeyMsg{Type: tea.KeyDown})
	if v := m.View(); strings.Contains(v, "line 01") || !strings.Contains(v, "line 07") {
		t.Fatalf("down did not scroll a line:\n%s", v)
	}
	key(tea.KeyMsg{Type: tea.KeyPgDown})
	key(tea.KeyMsg{Type: tea.KeyPgDown})
	key(tea.KeyMsg{Type: tea.KeyPgDown})
	if v := m.View(); !strings.Contains(v, "line 20") || !strings.Contains(v, "lines 15–20 of 20") {
		t.Fatalf("page down did not reach the last line:\n%s", v)
	}
	key(tea.KeyMsg{Type: tea.KeyHome})
	if v := m.View(); !strings.Contains(v, "line 01") {
		t.Fatalf("home did not go back to the start:\n%s", v)
	}
	key(tea.KeyMsg{Type: tea.KeyEsc})
	if v := m.View(); !strings.Contains(v, "Events") {
		t.Fatalf("esc did not go back to the list:\n%s", v)
	}
}
