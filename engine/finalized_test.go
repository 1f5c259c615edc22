package engine_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestDiscardedIDWithAnotherBodyIsAConflict: a discard keeps the body's
// digest as a commit does, so another body under the discarded ID is a
// logical_message_conflict: no ACK goes back, and the sender's copy stays
// pending, exactly as for a committed ID. Before, it was answered
// already_discarded and acknowledged, which told a modified client that its
// second body had been taken.
func TestDiscardedIDWithAnotherBodyIsAConflict(t *testing.T) {
	oneGoroutine(t)
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

// TestFinalizeAgain: committing a message committed before (or discarding
// one discarded before) changes nothing but sends its ACK again, which
// clears the sender's copy whose first ACK was lost; the other outcome is
// refused with the reason, and an unknown message is still not pending.
func TestFinalizeAgain(t *testing.T) {
	oneGoroutine(t)
	for _, outcome := range []engine.Outcome{engine.OutcomeCommitted, engine.OutcomeDiscarded} {
		other, refused := engine.OutcomeDiscarded, engine.ErrAlreadyCommitted
		name := "committed"
		if outcome == engine.OutcomeDiscarded {
			other, refused, name = engine.OutcomeCommitted, engine.ErrAlreadyDiscarded, "discarded"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			alice, bob := w.device("alice/1"), w.device("bob/1")
			id := alice.send(bob, "hello")
			bob.sync()
			w.net.DropNext(bob.addr, alice.addr, 1) // the first ACK is lost
			finalize := func(o engine.Outcome) engine.FinalizeResult {
				t.Helper()
				res, err := bob.c.FinalizeBatch(w.ctx, []engine.FinalizeRequest{{Sender: alice.addr, ID: id, Outcome: o}})
				if err != nil {
					t.Fatal(err)
				}
				return res[0]
			}
			if r := finalize(outcome); r.Err != nil || r.Already {
				t.Fatalf("first finalize: %+v, want done", r)
			}
			alice.sync()
			if n := alice.pendingOut(); n != 1 {
				t.Fatalf("alice holds %d pending after a lost ACK, want 1", n)
			}
			before := bob.received(alice)

			r := finalize(outcome)
			if r.Err != nil || !r.Already || !r.AckSent {
				t.Fatalf("finalize again: %+v, want already, ACK sent", r)
			}
			if got := bob.received(alice); len(got) != len(before) {
				t.Fatalf("bob's history from alice %q after finalizing again, want %q", got, before)
			}
			alice.sync()
			if n := alice.pendingOut(); n != 0 {
				t.Fatalf("alice holds %d pending after the ACK sent again, want 0", n)
			}

			if r := finalize(other); !errors.Is(r.Err, refused) || r.Already || r.AckSent {
				t.Fatalf("finalize with the other outcome: %+v, want %v", r, refused)
			}
			if _, err := bob.c.Commit(w.ctx, alice.addr, wire.LogicalID{1}); !errors.Is(err, engine.ErrNotPending) {
				t.Fatalf("commit of an unknown message: %v, want ErrNotPending", err)
			}
			if got := engine.ErrorName(refused); got != "already_"+name {
				t.Fatalf("ErrorName(%v) = %q, want already_%s", refused, got, name)
			}
		})
	}
}
