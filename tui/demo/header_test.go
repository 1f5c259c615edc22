package demo

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
)

// TestHeaderNeverCutsItsPoint: at 80 and 100 columns the exactly-once line
// ends with its verdict and every narration of the guided scenarios shows
// whole, each taking the lines it needs, none wider than the window.
func TestHeaderNeverCutsItsPoint(t *testing.T) {
	alice, bob := engine.MustParseAddress("alice/1"), engine.MustParseAddress("bob/1")
	for _, w := range []int{80, 100} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			m := Model{th: themes.MustGet("dark"), w: w, h: 40}
			m.verdict = verdictMsg{flows: []flow{
				{from: alice, to: bob, sent: 3, once: 1, pending: 1, dropped: 1},
				{from: bob, to: alice, sent: 2, once: 1, given: 1},
			}}
			check := func(what string, lines []string, want string) {
				t.Helper()
				for _, l := range lines {
					if ansi.StringWidth(l) > w {
						t.Fatalf("%s: a line of %d cells at %d columns: %q", what, ansi.StringWidth(l), w, l)
					}
				}
				flat := strings.Join(strings.Fields(ansi.Strip(strings.Join(lines, " "))), " ")
				if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
					t.Fatalf("%s: %q is cut:\n%s", what, want, strings.Join(lines, "\n"))
				}
			}
			check("verdict", m.verdictView(), "no loss, no duplicate")
			for n, sc := range scenarios() {
				for i, st := range sc.steps {
					m.scen = &scenarioRun{n: n + 1, s: sc, next: i + 1}
					lines := m.hintView()
					if len(lines) > maxHintLines {
						t.Fatalf("scenario %d step %d takes %d lines", n+1, i+1, len(lines))
					}
					check(fmt.Sprintf("scenario %d step %d", n+1, i+1), lines, st.say)
				}
			}
		})
	}
}

// TestHeaderCompactAt80x24: at 80x24 the hint and the exactly-once line
// take one line each, so that alice's conversation keeps five rows; f1
// shows both whole.
func TestHeaderCompactAt80x24(t *testing.T) {
	t.Parallel()
	d := startDemo(t, demoConfig{w: 80, h: 24})
	d.waitFor("Composer → bob/1", "exactly once")
	d.send("a message on a small screen")
	s := d.waitFor("1 pending received", "no loss, no duplicate")
	lines := strings.Split(ansi.Strip(s), "\n")
	if !strings.Contains(lines[2], "alice/1") || !strings.Contains(lines[2], "relay") {
		t.Fatalf("the header takes more than two lines:\n%s", s)
	}
	if !strings.Contains(lines[0], "(f1: all)") {
		t.Fatalf("the cut hint does not say where the rest is:\n%s", s)
	}
	rows := 0
	for i, l := range lines {
		if strings.Contains(l, "Timeline · bob/1") {
			for _, r := range lines[i+1:] {
				if strings.Contains(r, "Composer → bob/1") {
					break
				}
				rows++
			}
			break
		}
	}
	if rows < 5 {
		t.Fatalf("alice's conversation has %d rows at 80x24, want at least 5:\n%s", rows, s)
	}
	d.key(tea.KeyF1)
	d.waitUntil("the whole hint and line with f1", func(s string) bool {
		f := flat(s)
		return strings.Contains(f, "(ctrl+x a first loses the ACK)") && strings.Contains(f, "alice→bob 1 sent: 0 once, 1 pending · bob→alice 0 sent: 0 once")
	})
}
