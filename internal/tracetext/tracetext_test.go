package tracetext

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var (
	demoAlice = engine.MustParseAddress("alice/1")
	demoBob   = engine.MustParseAddress("bob/1")
)

// TestTraceAfterReinstall: a message bob acknowledged before he was
// reinstalled is unknown to his new store; its trace says so, not "not
// delivered yet", which only a message without an ACK can be.
func TestTraceAfterReinstall(t *testing.T) {
	id := wire.LogicalID{0xe1, 0x81}
	own := engine.Trace{Peer: demoBob, ID: id, Direction: engine.DirectionOut, State: "acknowledged", Body: []byte("hello")}
	bob := engine.Trace{Peer: demoAlice, ID: id, Direction: engine.DirectionIn, State: "unknown"}
	got := Draw(demoAlice, own, &bob)
	if !strings.Contains(got, "at bob/1: unknown (reinstalled") || strings.Contains(got, "not delivered yet") {
		t.Fatalf("an acknowledged message unknown to its receiver:\n%s", got)
	}
	own.State = "pending"
	if got := Draw(demoAlice, own, &bob); !strings.Contains(got, "at bob/1: not delivered yet") {
		t.Fatalf("a pending message unknown to its receiver:\n%s", got)
	}
}
