package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// drainEvents returns every event d's channel holds now.
func drainEvents(d *device) []engine.Event {
	var out []engine.Event
	for {
		select {
		case e := <-d.c.Events():
			out = append(out, e)
		default:
			return out
		}
	}
}

// receivedEvents counts d's EventReceived events whose result matches.
func receivedEvents(evs []engine.Event, match func(engine.ReceiveResult) bool) int {
	n := 0
	for _, e := range evs {
		if e.Kind == engine.EventReceived && e.Result != nil && match(*e.Result) {
			n++
		}
	}
	return n
}

// TestSettledResultsAreEvents: what a round's passes after the receive
// batch do reaches the events, once each, as a running loop (which never
// reads Sync's results) needs for a view to show it: bob/1's sent copy
// of a reaction waits on bob/2 for alice's message, and the hold's pass
// commits it once bob/2 commits that message (ResultApplied naming
// alice's conversation, the TUI's cue to read it again); bob/1's decision
// on a message pending on bob/2 applies as a kept decision (ResultDecided).
// Before the fix these were only in Sync's results, and the TUI's reload
// for a waiting copy never fired.
func TestSettledResultsAreEvents(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	m := alice.enqueue(bob, "lunch?")
	bob2.sync()
	copyID := wire.LogicalID{0xc0, 0x02}
	cp, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: copyID, To: alice.addr.String(),
		Action: wire.Action{Content: wire.ContentReaction, Target: m, Emoji: thumbs}})
	if err != nil {
		t.Fatal(err)
	}
	bob.raw(bob2, cp)
	bob2.sync()
	if n := bob2.pendingFrom(bob); n != 1 {
		t.Fatalf("bob/2 holds %d of bob/1's copies, want the one waiting for its target", n)
	}
	if _, err := bob2.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	drainEvents(bob2)
	bob2.sync()
	evs := drainEvents(bob2)
	if n := receivedEvents(evs, func(r engine.ReceiveResult) bool {
		return r.Kind == engine.ResultApplied && r.ID == copyID && r.CopyTo != nil && *r.CopyTo == alice.addr
	}); n != 1 {
		t.Fatalf("bob/2's events hold %d ResultApplied of the waiting copy naming alice's conversation, want 1: %v", n, evs)
	}

	// A kept decision.
	later := alice.enqueue(bob, "or dinner?")
	bob.sync()
	bob2.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, later); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	drainEvents(bob2)
	bob2.sync()
	evs = drainEvents(bob2)
	if n := receivedEvents(evs, func(r engine.ReceiveResult) bool {
		return r.Kind == engine.ResultDecided && r.ID == later && r.Sender == alice.addr
	}); n != 1 {
		t.Fatalf("bob/2's events hold %d ResultDecided of bob/1's commit, want 1: %v", n, evs)
	}
}
