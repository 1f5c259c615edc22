package eventlog

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// TestRepeatedDeliveryIsOneLine: envelopes that deliver a message already
// pending add no line; the first delivery's line counts them ("again,
// envelope 3"). Once the message is committed, a delivery of the same ID
// (after a prune) is a new line again; other messages are not folded.
func TestRepeatedDeliveryIsOneLine(t *testing.T) {
	m := New(themes.MustGet("dark"))
	m.SetSize(120, 10)
	other := wire.LogicalID{0x99}
	deliver := func(id wire.LogicalID) {
		m.Add(FromEvent(received(engine.ReceiveResult{Kind: engine.ResultDelivery, ID: id, Body: []byte("hi")})))
	}
	deliver(id)
	deliver(id)
	deliver(other)
	deliver(id)
	names := func() []string {
		var out []string
		for _, e := range m.Entries() {
			out = append(out, e.Name+" "+e.Text)
		}
		return out
	}
	got := names()
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2 (one per message):\n%s", len(got), strings.Join(got, "\n"))
	}
	if !strings.HasSuffix(got[0], `"hi" (pending: commit or discard) · again, envelope 3`) || strings.Contains(got[1], "again") {
		t.Fatalf("the first line does not count 3 envelopes, or the other message's does:\n%s", strings.Join(got, "\n"))
	}
	if v := m.View(); !strings.Contains(v, "again, envelope 3") {
		t.Fatalf("the panel does not show the count:\n%s", v)
	}
	m.Add(FromEvent(engine.Event{Kind: engine.EventFinalized, At: at, Peer: bob, ID: id, Outcome: engine.OutcomeCommitted, AckSent: true}))
	deliver(id)
	if got := names(); len(got) != 4 || strings.Contains(got[3], "again") || !strings.HasPrefix(got[3], "delivery") {
		t.Fatalf("a delivery after the commit is not a line of its own:\n%s", strings.Join(got, "\n"))
	}
}
