package demo

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestDemoSecondDeviceMidFlight plays guided scenario 9: delivery to
// bob's phone is held while alice writes; bob links his laptop (ctrl+x
// l); alice's next send learns bob's new list and gives both messages a
// lane to the laptop; bob commits there; his phone, released, shows them
// committed on bob/2 without a key, and alice's ticks count both devices.
func TestDemoSecondDeviceMidFlight(t *testing.T) {
	t.Parallel()
	d := startDemo(t, demoConfig{})
	d.waitFor("Composer → bob/1", "exactly once ·")
	n := 9
	if scenarios()[n-1].name != "second device mid-flight" {
		t.Fatalf("scenario %d is %q", n, scenarios()[n-1].name)
	}
	d.demo(rune('0' + n))
	plain := func(want ...string) func(string) bool {
		return func(s string) bool {
			s = ansi.Strip(s)
			for _, w := range want {
				if !strings.Contains(s, w) {
					return false
				}
			}
			return true
		}
	}
	// Each step's check held: the hint offers the next.
	checked := func(i int, want ...string) string {
		t.Helper()
		return d.waitUntil(fmt.Sprintf("step %d checked, and %q", i, want), func(s string) bool {
			s = strings.Join(strings.Fields(ansi.Strip(s)), " ") // the hint wraps
			if !strings.Contains(s, fmt.Sprintf("%d/7]", i)) || !(strings.Contains(s, "space: next step") || strings.Contains(s, "space: end")) {
				return false
			}
			return plain(want...)(s)
		})
	}
	checked(1, "holding delivery to bob/1")
	d.key(tea.KeySpace)
	checked(2, "dinner at eight?")
	d.key(tea.KeySpace)
	checked(3, "bob/1 linked bob/2")
	d.key(tea.KeySpace)
	// alice holds bob's list: his two devices are one conversation, its
	// row counting the lanes to both (two messages, two devices).
	if s := checked(4, "bring your laptop", "bob/1 out 4"); strings.Contains(ansi.Strip(s), "bob/2 out") {
		t.Fatalf("alice lists bob/2 apart from bob:\n%s", ansi.Strip(s))
	}
	d.key(tea.KeySpace)
	checked(5)
	d.key(tea.KeySpace)
	checked(6, "committed on bob/2", "✓ 2/2 devices")
	d.key(tea.KeySpace)
	s := checked(7, "alice→bob (2 devices) 2 sent: 2 once", "no loss, no duplicate")
	if strings.Contains(s, "LOST") || strings.Contains(s, "DUPLICATED") {
		t.Fatalf("the verdict found a loss or a duplicate:\n%s", s)
	}
	d.key(tea.KeySpace)
	d.waitUntil("the scenario to end", func(s string) bool { return !strings.Contains(s, "esc: stop") })

	// The demo keeps lists now: the reinstall scenario says it cannot
	// play, instead of stopping at its second step.
	for i, sc := range scenarios() {
		if sc.beforeLists {
			d.demo(rune('1' + i))
			d.waitUntil("scenario "+sc.name+" refused", func(s string) bool {
				return strings.Contains(strings.Join(strings.Fields(ansi.Strip(s)), " "), "restart parley demo to play this scenario")
			})
		}
	}
}
