package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
)

// oneTimeCount is how many one-time prekeys d holds on disk.
func (d *device) oneTimeCount() int {
	d.w.t.Helper()
	p, err := d.st.Profile(d.w.ctx)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return p.OneTimeCount
}

// TestCollisionConsumesLosingOneTimePreKey: the winner of a collision
// deletes the one-time prekey that the losing initiation used, in the
// transaction that retires that initiation, as the loser deletes the one
// the winning initiation used. One-time prekeys never expire: a key left
// behind would stay on disk for good.
func TestCollisionConsumesLosingOneTimePreKey(t *testing.T) {
	w := newWorld(t)
	alice, bob := startBoth(t, w)
	before := [2]int{alice.oneTimeCount(), bob.oneTimeCount()}
	w.net.Release(alice.addr)
	w.net.Release(bob.addr)
	ra, rb := alice.sync(), bob.sync()
	if hasError(ra, engine.ErrSessionCollision) == hasError(rb, engine.ErrSessionCollision) {
		t.Fatalf("want exactly one collision: %v / %v", errorsIn(ra), errorsIn(rb))
	}
	for i, d := range []*device{alice, bob} {
		if got := d.oneTimeCount(); got != before[i]-1 {
			t.Errorf("%s holds %d one-time prekeys after the collision, want %d (one used by the peer's initiation)", d.addr, got, before[i]-1)
		}
	}
	converge(t, alice, bob)
}
