package outbox

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestLanesUnderTheirMessage: the pending lanes of one group message are
// drawn as the message once and each further lane under it; a one-to-one
// message keeps its row.
func TestLanesUnderTheirMessage(t *testing.T) {
	gid := wire.GroupID{0x21, 0x22, 0x23, 0x24}
	s := newSent(bob)
	id := wire.LogicalID{9}
	s.msgs = append(s.msgs,
		engine.OutboundMessage{Seq: 2, Recipient: bob, ID: id, Body: []byte("to the team"), Group: &gid},
		engine.OutboundMessage{Seq: 3, Recipient: carol, ID: id, Body: []byte("to the team"), Group: &gid})
	m := newOutbox(s)
	v := ansi.Strip(m.View())
	lines := strings.Split(v, "\n")
	if len(lines) < 4 {
		t.Fatalf("too few lines:\n%s", v)
	}
	if !strings.Contains(lines[1], "bob/1") || !strings.Contains(lines[1], "to bob/1 1") {
		t.Errorf("the one-to-one row changed: %q", lines[1])
	}
	if !strings.Contains(lines[2], "#21222324") || !strings.Contains(lines[2], "to the team") || !strings.Contains(lines[2], "→ bob/1") {
		t.Errorf("the group message's first lane: %q", lines[2])
	}
	if !strings.Contains(lines[3], "└ → carol/1") || strings.Contains(lines[3], "to the team") {
		t.Errorf("the second lane should sit under its message without the body: %q", lines[3])
	}
}
