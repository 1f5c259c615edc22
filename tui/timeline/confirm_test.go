package timeline

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// TestDiscardAsksWhole: x asks, and the whole question shows even in a
// narrow timeline, its answer key included; y (the one confirmation key
// of every panel) discards, x again keeps asking, any other key keeps the
// message.
func TestDiscardAsksWhole(t *testing.T) {
	h := newHistory(0)
	h.waiting = []engine.InboundMessage{{Seq: 1, Sender: bob, ID: wire.LogicalID{0xa1}, ReceivedAt: at, Body: []byte("a rather long message body")}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(40, 10)
	m.Focus()
	m = load(t, m, m.SetPeer(bob))

	m = steps(m.Update(press("x")))
	flat := strings.Join(strings.Fields(m.View()), " ")
	if !strings.Contains(flat, "for good? y discards it, any other key keeps it") {
		t.Fatalf("the question is not whole at 40 columns:\n%s", m.View())
	}
	m = steps(m.Update(press("x")))
	if len(h.finalized) != 0 || !strings.Contains(m.View(), "y discards") {
		t.Fatalf("x again discarded (%v) or withdrew the question:\n%s", h.finalized, m.View())
	}
	m = steps(m.Update(press("k")))
	if len(h.finalized) != 0 || strings.Contains(m.View(), "y discards") {
		t.Fatalf("another key did not keep the message:\n%s", m.View())
	}
	m = steps(m.Update(press("x")))
	m = steps(m.Update(press("y")))
	if len(h.finalized) != 1 || h.finalized[0].Outcome != engine.OutcomeDiscarded {
		t.Fatalf("x then y finalized %+v, want the message discarded", h.finalized)
	}
}
