package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/wire"
)

// A not_a_member answer ends a lane of the group it names only: naming
// the ID of a one-to-one message pending to its sender (under any group
// ID) ends nothing, and the message stays pending until its recipient
// decides it.
func TestNotAMemberEndsOnlyAGroupLane(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.send(bob, "hello")
	bob.sync()
	frame, err := wire.EncodeNotAMember(wire.NotAMember{ID: id, Group: wire.GroupID{9}, Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.c.SendRawFrame(w.ctx, alice.addr, frame); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	if n := alice.pendingOut(); n != 1 {
		t.Fatalf("alice has %d messages pending after bob's not_a_member, want the one to bob still pending", n)
	}
	bob.commitAll()
	alice.sync()
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("alice has %d messages pending after bob committed, want 0", n)
	}
}
