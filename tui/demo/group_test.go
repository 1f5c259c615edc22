package demo

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
)

// TestDemoGroupLaneLost plays the group scenario (ctrl+x 7): carol joins,
// alice creates #trio and writes to it from the composer, her envelope to
// carol is lost while bob commits, and the retry sends carol's lane alone.
// Each member has the message once, and bob's lane went out once.
func TestDemoGroupLaneLost(t *testing.T) {
	t.Parallel()
	d := startDemo(t, demoConfig{})
	d.waitFor("Composer → bob/1", "exactly once ·")
	n := 7
	if scenarios()[n-1].name != "group lane lost" {
		t.Fatalf("scenario %d is %q", n, scenarios()[n-1].name)
	}
	d.demo(rune('0' + n))
	plain := func(want string) func(string) bool {
		return func(s string) bool { return strings.Contains(ansi.Strip(s), want) }
	}
	d.waitUntil("carol joining", plain("carol/1 joined the demo"))
	d.key(tea.KeySpace)
	d.waitUntil("the group created", plain("created #trio with bob/1, carol/1"))
	d.waitUntil("the group in the list", plain("# trio · 3 members"))
	d.key(tea.KeySpace)
	d.waitUntil("the composer on the group", plain("Composer → #trio"))
	d.key(tea.KeySpace)
	d.waitUntil("the envelope to carol lost", plain("demo_lost_envelope"))
	d.waitUntil("alice's message in the group", plain("you lunch at noon?"))
	d.key(tea.KeySpace)
	d.waitUntil("bob's lane acknowledged, carol's pending", plain("✓ 1/2 · carol/1 pending"))
	d.key(tea.KeySpace)
	d.waitUntil("the retry to carol alone", plain("retried 1 message(s) to carol/1 only"))
	d.waitUntil("every lane acknowledged", plain("✓ 2/2"))
	s := d.waitUntil("the exactly-once line per member", plain("#trio alice→bob 1 sent: 1 once · #trio alice→carol 1 sent: 1 once · no loss, no duplicate"))
	if strings.Contains(s, "LOST") || strings.Contains(s, "DUPLICATED") {
		t.Fatalf("the verdict found a loss or a duplicate:\n%s", s)
	}

	// The lanes' traces on alice's side: bob's envelope went once, carol's
	// twice (the lost one and the retry).
	alice := d.w.client(engine.MustParseAddress("alice/1"))
	gs, err := alice.Groups(context.Background())
	if err != nil || len(gs) != 1 {
		t.Fatalf("alice's groups: %v, %v", gs, err)
	}
	hist, err := alice.GroupHistory(context.Background(), gs[0].ID, 0, 10)
	if err != nil || len(hist) == 0 {
		t.Fatalf("alice's #trio: %v, %v", hist, err)
	}
	msg := hist[len(hist)-1]
	for who, want := range map[string]int{"bob/1": 1, "carol/1": 2} {
		l, err := alice.Trace(context.Background(), engine.MustParseAddress(who), msg.ID, engine.DirectionOut)
		if err != nil {
			t.Fatalf("the trace of the lane to %s: %v", who, err)
		}
		if len(l.Attempts) != want {
			t.Errorf("the lane to %s went %d times, want %d: %+v", who, len(l.Attempts), want, l.Attempts)
		}
	}
	d.key(tea.KeySpace)
	d.waitFor("7/7]")
	d.key(tea.KeySpace)
	d.waitUntil("the scenario to end", func(s string) bool { return !strings.Contains(s, "esc: stop") })
}
