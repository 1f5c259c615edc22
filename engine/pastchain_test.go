package engine_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestRedeliveryAcrossARatchetStep: a relay redelivers a batch (its lease
// acknowledgement was lost) that held one message from each of two of the
// sender's chains. Both copies are duplicates: the one from the chain the
// session has since left too, remembered across a restart. No recovery is
// asked, the conversation goes on, each message is in the history once.
func TestRedeliveryAcrossARatchetStep(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	// A round trip: alice's messages are now plain ratchet messages.
	alice.send(bob, "hello")
	bob.sync()
	bob.commitAll()
	bob.send(alice, "hi")
	alice.sync()
	alice.send(bob, "p1") // alice's second chain
	bob.sync()
	bob.send(alice, "turn") // bob's new key
	alice.send(bob, "p2")   // still on the second chain
	alice.sync()            // alice turns
	alice.send(bob, "q1")   // her third chain

	batch := w.net.Seen()
	batch = batch[len(batch)-2:] // p2 and q1, as the relay holds them
	res := bob.sync()
	if n := count(res, engine.ResultDelivery); n != 2 {
		t.Fatalf("first delivery of the batch: %+v, want two deliveries", res)
	}
	bob.reopen()

	for _, env := range batch {
		w.net.Inject(bob.addr, env)
	}
	res = bob.sync()
	if len(res) != 2 {
		t.Fatalf("redelivery gave %+v, want two results", res)
	}
	for _, r := range res {
		if r.Kind != engine.ResultError || !errors.Is(r.Err, engine.ErrDuplicateMessage) || r.RecoveryRequested {
			t.Fatalf("a redelivered copy gave %+v (%v), want duplicate_message without recovery", r, r.Err)
		}
	}
	if n := w.net.Pending(alice.addr); n != 0 {
		t.Fatalf("alice's mailbox holds %d envelopes after the redelivery, want none (no recovery request)", n)
	}
	converge(t, alice, bob)
	alice.send(bob, "after")
	converge(t, alice, bob)
	if got := bob.received(alice); !reflect.DeepEqual(got, []string{"hello", "p1", "p2", "q1", "after"}) {
		t.Fatalf("bob's history %q", got)
	}
}
