package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestDiscardedIDWithAnotherBodyIsAConflict: a discard keeps the body's
// digest as a commit does, so another body under the discarded ID is a
// logical_message_conflict: no ACK goes back, and the sender's copy stays
// pending, exactly as for a committed ID. Before, it was answered
// already_discarded and acknowledged, which told a modified client that its
// second body had been taken.
func TestDiscardedIDWithAnotherBodyIsAConflict(t *testing.T) {
	for _, outcome := range []engine.Outcome{engine.OutcomeDiscarded, engine.OutcomeCommitted} {
		t.Run(map[engine.Outcome]string{engine.OutcomeDiscarded: "discarded", engine.OutcomeCommitted: "committed"}[outcome], func(t *testing.T) {
			w := newWorld(t)
			alice, bob := w.device("alice/1"), w.device("bob/1")
			id := alice.send(bob, "the first body")
			bob.sync()
			// The ACK is lost: alice still holds the message pending.
			w.net.DropNext(bob.addr, alice.addr, 1)
			var err error
			if outcome == engine.OutcomeDiscarded {
				_, err = bob.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected)
			} else {
				_, err = bob.c.Commit(w.ctx, alice.addr, id)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := alice.c.RetryWithBody(w.ctx, bob.addr, id, []byte("another body")); err != nil {
				t.Fatal(err)
			}
			res := bob.sync()
			if !hasError(res, engine.ErrLogicalMessageConflict) {
				t.Fatalf("bob's results %+v, want a logical_message_conflict", res)
			}
			if n := count(res, engine.ResultAlreadyDiscarded) + count(res, engine.ResultAlreadyCommitted); n != 0 {
				t.Fatalf("bob answered %d repeats, want none", n)
			}
			alice.sync()
			if n := alice.pendingOut(); n != 1 {
				t.Fatalf("alice holds %d pending after the conflict, want 1 (no ACK came back)", n)
			}

			// The same body again is still the repeat it always was, and is
			// acknowledged.
			alice.retry(bob)
			if res := bob.sync(); count(res, engine.ResultAlreadyDiscarded)+count(res, engine.ResultAlreadyCommitted) != 1 {
				t.Fatalf("bob's results %+v for the same body again, want one repeat", res)
			}
			alice.sync()
			if n := alice.pendingOut(); n != 0 {
				t.Fatalf("alice holds %d pending after the repeat's ACK, want 0", n)
			}
		})
	}
}
