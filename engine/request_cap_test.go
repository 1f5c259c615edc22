package engine_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/store"
)

// withCaps reopens d with the stranger caps on, as profiles made by
// parley init have them.
func (d *device) withCaps() {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	st, err := store.Open(d.w.ctx, d.dir, passphrase, store.Options{})
	if err != nil {
		d.w.t.Fatal(err)
	}
	c, err := engine.Open(d.w.ctx, engine.Config{Store: st, Relay: d.w.net.Endpoint(d.addr), Now: d.w.clock.Now, Random: d.random,
		PollInterval: 10 * time.Millisecond, CapStrangers: true})
	if err != nil {
		d.w.t.Fatal(err)
	}
	d.c, d.st = c, st
}

// dirSize is the bytes of every file under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStrangerCannotFillAProfile: a stranger's 200 messages of 16 KiB leave
// at most MaxPendingPerStranger of them pending on bob (512 KiB of bodies)
// and bob's profile files under 12 MiB (freed staging pages and the log of
// the sync that fetched all 200 included); the rest are dropped without an ACK, each with a pending_cap
// result. A friend's 40 messages all arrive, and once bob commits, the
// stranger's retries deliver more.
func TestStrangerCannotFillAProfile(t *testing.T) {
	w := newWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("mallory/1")
	bob.send(alice, "hi alice") // bob accepts alice by writing to her
	converge(t, alice, bob)
	bob.withCaps()
	before := dirSize(t, bob.dir)
	body := string(bytes.Repeat([]byte("m"), 16<<10))
	for i := 0; i < 200; i++ {
		mallory.send(bob, body)
	}
	for i := 0; i < 40; i++ {
		alice.send(bob, "from alice")
	}
	capped := 0
	for round := 0; round < 10; round++ {
		for _, r := range bob.sync() {
			if r.Kind == engine.ResultError && errors.Is(r.Err, engine.ErrPendingCap) {
				if r.Sender != mallory.addr {
					t.Fatalf("a friend's message was capped: %+v", r)
				}
				capped++
			}
		}
	}
	fromMallory, err := bob.c.CountInbound(w.ctx, &mallory.addr)
	if err != nil {
		t.Fatal(err)
	}
	fromAlice, err := bob.c.CountInbound(w.ctx, &alice.addr)
	if err != nil {
		t.Fatal(err)
	}
	if fromMallory != engine.MaxPendingPerStranger || capped != 200-engine.MaxPendingPerStranger {
		t.Fatalf("pending from mallory %d, capped %d: want %d and %d", fromMallory, capped, engine.MaxPendingPerStranger, 200-engine.MaxPendingPerStranger)
	}
	if fromAlice != 40 {
		t.Fatalf("pending from alice %d, want all 40", fromAlice)
	}
	pending, err := bob.c.PendingInbound(w.ctx, engine.PageQuery{Limit: 1000, Peer: &mallory.addr})
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, m := range pending {
		held += len(m.Body)
	}
	if held > engine.MaxPendingPerStranger*16<<10 {
		t.Fatalf("bob holds %d bytes of mallory's bodies, over %d", held, engine.MaxPendingPerStranger*16<<10)
	}
	// The files also hold the freed staging pages and the write-ahead log
	// of the sync that fetched everything: transient, reused, and bounded
	// by what one sync fetches, not by what a stranger sends in all.
	const bound = 12 << 20
	if got := dirSize(t, bob.dir); got > bound {
		t.Fatalf("bob's profile grew from %d to %d bytes, over %d", before, got, bound)
	}
	t.Logf("bob's profile: %d bytes before, %d after", before, dirSize(t, bob.dir))
	// Repeats of the messages already pending are never capped: a retry
	// before bob commits is capped for the 168 new ones only.
	mallory.retry(bob)
	repeats, again := 0, 0
	for _, r := range bob.sync() {
		switch {
		case r.Kind == engine.ResultDelivery:
			repeats++
		case errors.Is(r.Err, engine.ErrPendingCap):
			again++
		}
	}
	if repeats != engine.MaxPendingPerStranger || again != 200-engine.MaxPendingPerStranger {
		t.Fatalf("a retry at the cap: %d repeats delivered, %d capped; want %d and %d", repeats, again, engine.MaxPendingPerStranger, 200-engine.MaxPendingPerStranger)
	}
	// Room again: mallory's retries deliver more.
	bob.commitAll()
	mallory.retry(bob)
	bob.sync()
	if n, _ := bob.c.CountInbound(w.ctx, &mallory.addr); n == 0 {
		t.Fatalf("after bob committed, mallory's retries delivered nothing")
	}
}
