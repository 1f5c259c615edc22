package eventlog

import (
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
)

// TestRelayTextCleaned: an error whose text a relay chose (concealed text,
// a clipboard write, a screen clear, a bidirectional override) is drawn
// without its controls, in the line, in full and in the log file.
func TestRelayTextCleaned(t *testing.T) {
	m := New(themes.MustGet("dark"))
	m.SetSize(80, 6)
	m.Focus()
	err := errors.New("refused\x1b[8m hidden\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\u202eevil\u009b1m")
	e := FromEvent(engine.Event{Kind: engine.EventNotSent, Peer: bob, ID: id, Err: err})
	m.Add(e)
	check := func(where, s string) {
		t.Helper()
		for _, bad := range []string{"\x1b[8m", "\x1b]52", "\x1b[2J", "\u202e", "\u009b", "\x07"} {
			if strings.Contains(s, bad) {
				t.Fatalf("%s holds %q:\n%q", where, bad, s)
			}
		}
		if !strings.Contains(s, "hidden") {
			t.Fatalf("%s lost the text around the controls:\n%q", where, s)
		}
	}
	check("the list", m.View())
	check("the log file line", e.String())
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	check("the entry in full", m.View())
}
