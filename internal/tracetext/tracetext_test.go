package tracetext

import (
	"strings"
	"testing"
	"time"

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

// TestTraceImported: a message that came by import says from what and
// when, and a sent one does not claim its envelopes were pruned.
func TestTraceImported(t *testing.T) {
	id := wire.LogicalID{0x34}
	at := time.Date(2026, 12, 6, 9, 30, 0, 0, time.Local)
	for _, tt := range []struct {
		name string
		imp  engine.Imported
		want string
	}{
		{"link", engine.Imported{At: at, Link: true}, "imported with the account's history when this device was linked (2026-12-06 09:30)"},
		{"restore", engine.Imported{At: at}, "imported from a restored backup (2026-12-06 09:30)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			imp := tt.imp
			own := engine.Trace{Peer: demoBob, ID: id, Direction: engine.DirectionOut, State: "acknowledged", Body: []byte("hi"), Imported: &imp}
			got := Draw(demoAlice, own, nil)
			if !strings.Contains(got, tt.want) || strings.Contains(got, "no envelope logged") {
				t.Errorf("trace of an imported message:\n%s\nwant %q and no claim of pruned envelopes", got, tt.want)
			}
		})
	}
	plain := Draw(demoAlice, engine.Trace{Peer: demoBob, ID: id, Direction: engine.DirectionIn, State: "committed"}, nil)
	if strings.Contains(plain, "imported") {
		t.Errorf("a message received here reads as imported:\n%s", plain)
	}
}
