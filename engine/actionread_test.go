package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestMessage: Message finds a message of the conversation whichever way
// it went, with its edits and tombstone, and says when there is none.
func TestMessage(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, m := actionPair(t)
	reply := bob.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("see you")})
	alice.sync()
	alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
	for _, tc := range []struct {
		d, peer *device
		id      wire.LogicalID
		dir     engine.Direction
		body    string
	}{
		{alice, bob, m, engine.DirectionOut, "lunch at one"},
		{bob, alice, m, engine.DirectionIn, "lunch at noon"}, // the edit not received yet
		{alice, bob, reply, engine.DirectionIn, "see you"},
		{bob, alice, reply, engine.DirectionOut, "see you"},
	} {
		e, ok, err := tc.d.c.Message(w.ctx, tc.peer.addr, tc.id)
		if err != nil || !ok || e.Direction != tc.dir || string(e.Body) != tc.body {
			t.Errorf("%s: Message(%x) = %v %q, %v, %v; want %v %q", tc.d.addr, tc.id[:4], e.Direction, e.Body, ok, err, tc.dir, tc.body)
		}
	}
	if e, ok, err := alice.c.Message(w.ctx, bob.addr, reply); err != nil || !ok || e.ReplyTo == nil || *e.ReplyTo != m {
		t.Errorf("the reply's entry does not name its target: %+v, %v, %v", e, ok, err)
	}
	if _, ok, err := alice.c.Message(w.ctx, bob.addr, wire.LogicalID{9}); ok || err != nil {
		t.Errorf("an unknown ID: found %v, %v", ok, err)
	}
}
