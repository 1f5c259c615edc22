package engine_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
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

// sealedRecords reads every sealed record of d's profile that holds a key or
// a message body, as it is on disk now: prekeys, sessions and pending
// frames both ways. It reads through a connection of its own, behind the
// store's back.
func (d *device) sealedRecords() map[string]bool {
	d.w.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db")+"?mode=ro")
	if err != nil {
		d.w.t.Fatal(err)
	}
	defer db.Close()
	out := map[string]bool{}
	for _, q := range []string{
		"SELECT sealed FROM one_time_prekey", "SELECT sealed FROM signed_prekey", "SELECT sealed FROM session",
		"SELECT sealed_frame FROM inbound", "SELECT sealed_frame FROM outbound",
	} {
		rows, err := db.Query(q)
		if err != nil {
			d.w.t.Fatal(err)
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				d.w.t.Fatal(err)
			}
			out[string(b)] = true
		}
		if err := rows.Close(); err != nil {
			d.w.t.Fatal(err)
		}
	}
	return out
}

// filesContain reports which of the records has its first or last 32 bytes
// anywhere in the files of d's profile.
func (d *device) filesContain(records map[string]bool) []string {
	d.w.t.Helper()
	var all []byte
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		d.w.t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(d.dir, e.Name()))
		if err != nil {
			d.w.t.Fatal(err)
		}
		all = append(all, b...)
	}
	var found []string
	for r := range records {
		if len(r) < 64 {
			continue
		}
		if bytes.Contains(all, []byte(r[:32])) || bytes.Contains(all, []byte(r[len(r)-32:])) {
			found = append(found, fmt.Sprintf("%x…", r[:8]))
		}
	}
	return found
}

// TestDeletedSecretsLeaveNoTrace: every prekey, session state and pending
// frame that a conversation deleted or replaced is gone from every byte of
// the profile's files once the profile is closed, and, while it is open,
// once the batched scrub ran. Before the scrub the old versions are still in
// the write-ahead log, which is why it exists.
func TestDeletedSecretsLeaveNoTrace(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	seen := [2]map[string]bool{{}, {}}
	snap := func() {
		for i, d := range []*device{alice, bob} {
			for r := range d.sealedRecords() {
				seen[i][r] = true
			}
		}
	}
	snap()
	for i := 0; i < 3; i++ {
		alice.send(bob, fmt.Sprintf("secret body %d", i))
		snap()
	}
	bob.sync()
	snap()
	bob.send(alice, "reply")
	snap()
	bob.commitAll()
	snap()
	alice.sync()
	snap()
	alice.commitAll()
	snap()
	bob.sync()
	snap()
	gone := func(i int, d *device) map[string]bool {
		now := d.sealedRecords()
		out := map[string]bool{}
		for r := range seen[i] {
			if !now[r] {
				out[r] = true
			}
		}
		if len(out) == 0 {
			t.Fatalf("%s deleted nothing; the test is broken", d.addr)
		}
		return out
	}
	aliceGone, bobGone := gone(0, alice), gone(1, bob)
	if found := bob.filesContain(bobGone); len(found) == 0 {
		t.Fatalf("before the scrub no deleted record of %s is left in its write-ahead log; the test would not see a failure", bob.addr)
	}
	// While open: the scrub runs within its delay.
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := bob.filesContain(bobGone)
		if len(found) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deleted records of %s still in its files %v after the scrub delay: %v", len(found), bob.addr, store.DefaultScrubDelay, found)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Once closed: at once.
	if err := alice.c.Close(); err != nil {
		t.Fatal(err)
	}
	alice.c = nil
	if found := alice.filesContain(aliceGone); len(found) > 0 {
		t.Fatalf("%d of %d deleted records of %s are still in its files after close: %v", len(found), len(aliceGone), alice.addr, found)
	}
}
