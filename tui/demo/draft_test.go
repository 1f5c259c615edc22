package demo

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/parley-chat/parley/engine"
)

// TestScenarioKeepsDraft: a guided scenario's message is sent alone. A
// draft in alice's composer is set aside while the step types its message
// and is there again after; a space pressed after a scenario's end (it
// lands in the composer) is not sent by the next scenario either.
func TestScenarioKeepsDraft(t *testing.T) {
	t.Parallel()
	d := startDemo(t, demoConfig{})
	d.waitFor("Composer → bob/1", "exactly once ·")
	d.typeText("my draft")
	d.waitFor("› my draft")

	// Scenario 3 (lost ACK) to its end; its first step: alice writes.
	d.demo('3')
	n := len(scenarios()[2].steps)
	for i := 1; i < n; i++ {
		d.waitFor(fmt.Sprintf("%d/%d]", i, n))
		d.settle()
		d.key(tea.KeySpace)
	}
	d.waitFor("no loss, no duplicate", "Done.")
	d.key(tea.KeySpace)
	d.waitUntil("the scenario to end", func(s string) bool { return !strings.Contains(s, "esc: stop") })
	// A space after Done.: text in the composer now.
	d.key(tea.KeySpace)
	d.alt('3')
	d.demo('6') // alice writes "remember me"
	d.waitFor("[6 pruned message retried · 1/")
	d.waitFor("alice→bob 2 sent")
	d.settle()

	alice := d.w.client(engine.MustParseAddress("alice/1"))
	h, err := alice.History(d.w.ctx, engine.MustParseAddress("bob/1"), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, e := range h {
		bodies = append(bodies, string(e.Body))
	}
	slices.Sort(bodies)
	if want := []string{"acknowledge me", "remember me"}; !slices.Equal(bodies, want) {
		t.Fatalf("alice sent %q, want %q", bodies, want)
	}
	if s := d.view(); !strings.Contains(s, "› my draft") {
		t.Fatalf("alice's draft is not in her composer after the scenarios:\n%s", s)
	}
}
