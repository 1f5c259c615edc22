package demo

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestScenarioMenu: the first hint names the digits of every guided
// scenario (9 of them), and the menu ctrl+x opens lists each scenario by
// its digit and name.
func TestScenarioMenu(t *testing.T) {
	t.Parallel()
	if n := len(scenarios()); n != 9 {
		t.Fatalf("%d scenarios; this test names 9", n)
	}
	d := startDemo(t, demoConfig{})
	d.waitFor("ctrl+x 1…9 plays a guided scenario")
	d.key(tea.KeyCtrlX)
	s := d.waitFor("demo controls for alice/1")
	flat := strings.Join(strings.Fields(ansi.Strip(s)), " ")
	for i, sc := range scenarios() {
		if want := fmt.Sprintf("%d scenario: %s", i+1, sc.name); !strings.Contains(flat, want) {
			t.Errorf("the ctrl+x menu does not list %q:\n%s", want, s)
		}
	}
	d.key(tea.KeyEsc)
	d.waitUntil("the menu to close", func(s string) bool { return !strings.Contains(s, "demo controls for") })
}
