package engine_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// startBoth makes alice and bob each start a session with the other before
// either receives anything, and returns the winner and the loser: the side
// whose initiation has the smaller ID wins. Nothing has been delivered yet.
func startBoth(t *testing.T, w *world) (alice, bob *device) {
	alice, bob = w.device("alice/1"), w.device("bob/1")
	w.net.Hold(alice.addr)
	w.net.Hold(bob.addr)
	alice.send(bob, "from alice")
	bob.send(alice, "from bob")
	return alice, bob
}

// TestCollisionWalkthrough covers both winners (several random starts give
// each side the smaller ID in turn) and both delivery orders, with and
// without a restart before the retry.
func TestCollisionWalkthrough(t *testing.T) {
	wins := map[string]int{}
	for i := 0; i < 6; i++ {
		for _, bobFirst := range []bool{true, false} {
			for _, restart := range []bool{false, true} {
				t.Run(fmt.Sprintf("run%d/bobFirst=%v/restart=%v", i, bobFirst, restart), func(t *testing.T) {
					w := newWorld(t)
					alice, bob := startBoth(t, w)
					w.net.Release(alice.addr)
					w.net.Release(bob.addr)
					first, second := alice, bob
					if bobFirst {
						first, second = bob, alice
					}
					r1 := first.sync()
					r2 := second.sync()
					// Exactly one side reports the collision: the winner.
					c1, c2 := hasError(r1, engine.ErrSessionCollision), hasError(r2, engine.ErrSessionCollision)
					if c1 == c2 {
						t.Fatalf("collision reported by first=%v second=%v; want exactly one (%v / %v)", c1, c2, errorsIn(r1), errorsIn(r2))
					}
					winner := first
					if c2 {
						winner = second
					}
					wins[winner.addr.String()]++
					// The loser's message was dropped unread; the winner's was
					// delivered on the winning session.
					if winner.pendingIn() != 0 {
						t.Fatal("the winner stored the losing message")
					}
					if restart {
						alice.reopen()
						bob.reopen()
					}
					converge(t, alice, bob)
					if got := bob.received(alice); !reflect.DeepEqual(got, []string{"from alice"}) {
						t.Fatalf("bob's history %q", got)
					}
					if got := alice.received(bob); !reflect.DeepEqual(got, []string{"from bob"}) {
						t.Fatalf("alice's history %q", got)
					}
				})
			}
		}
	}
	if wins["alice/1"] == 0 || wins["bob/1"] == 0 {
		t.Fatalf("one side never won (%v): both winners must be covered", wins)
	}
}

// TestCollisionStaleRetry: the loser retries before the winner's message
// reaches it; the retry is another PreKeyMessage of the losing initiation,
// which the winner rejects as stale, and the message stays pending until the
// loser has the winning session.
func TestCollisionStaleRetry(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			w := newWorld(t)
			alice, bob := startBoth(t, w)
			// Find the winner: deliver alice's message to bob first.
			w.net.Release(bob.addr)
			res := bob.sync()
			winner, loser := bob, alice
			if !hasError(res, engine.ErrSessionCollision) {
				winner, loser = alice, bob
				// bob accepted alice's initiation: alice won. Start over the
				// other way round so that the loser's message is still in
				// flight: alice now holds bob's losing PreKeyMessage.
				w.net.Release(alice.addr)
				if r := alice.sync(); !hasError(r, engine.ErrSessionCollision) {
					t.Fatalf("alice won but did not report the collision: %+v", r)
				}
				w.net.Hold(bob.addr)
			} else {
				w.net.Hold(bob.addr)
			}
			_ = winner
			// The loser has not received the winner's message yet (it is held
			// for the loser), so its retry uses the losing initiation.
			if restart {
				loser.reopen()
			}
			if ids := loser.retry(winner); len(ids) != 1 {
				t.Fatalf("loser retried %d", len(ids))
			}
			w.net.Release(winner.addr)
			if r := winner.sync(); !hasError(r, engine.ErrStaleSessionInitiation) {
				t.Fatalf("winner's view of the stale retry: %+v", r)
			}
			if loser.pendingOut() != 1 {
				t.Fatal("the stale retry cleared the loser's message")
			}
			w.net.Release(loser.addr)
			w.net.Release(alice.addr)
			w.net.Release(bob.addr)
			converge(t, alice, bob)
			if got := bob.received(alice); !reflect.DeepEqual(got, []string{"from alice"}) {
				t.Fatalf("bob's history %q", got)
			}
			if got := alice.received(bob); !reflect.DeepEqual(got, []string{"from bob"}) {
				t.Fatalf("alice's history %q", got)
			}
		})
	}
}
