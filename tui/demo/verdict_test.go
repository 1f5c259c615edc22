package demo

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestVerdictCountsSenderPending: in the lost-ACK scenario, once bob has
// committed and his ACK is lost, the exactly-once line says that alice
// still holds the message pending (the narration says so too); after her
// retry brings a new ACK, it no longer does.
func TestVerdictCountsSenderPending(t *testing.T) {
	t.Parallel()
	d := startDemo(t, demoConfig{})
	d.waitFor("Composer → bob/1", "exactly once ·")
	d.demo('3')
	d.waitFor("[3 lost ACK · 1/4]", "alice→bob 1 sent: 0 once, 1 pending")
	d.key(tea.KeySpace)
	d.waitFor("[3 lost ACK · 2/4]", "alice→bob 1 sent: 1 once, 1 ACK pending")
	d.key(tea.KeySpace)
	d.waitForAckProcessed()
	s := d.waitFor("alice→bob 1 sent: 1 once · bob→alice")
	if strings.Contains(s, "ACK pending") {
		t.Fatalf("the ACK came back, yet the line still counts it pending:\n%s", s)
	}
}
