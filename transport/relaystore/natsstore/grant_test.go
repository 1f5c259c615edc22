package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// TestGrantsFillAQuotaThroughTwoRelays: two relays on one cluster append
// from one sender to one mailbox in turn, each spending the grants it took
// of the sender's count (a 64th of the quota each), until both refuse: they
// stored exactly the quota between them, not a grant more. Freeing rows
// through one lets exactly that many through the other. A third relay that
// dies holding a grant keeps the others from its unspent room until the
// grant expires, and then its net spending is counted no more: the quota
// is passed by at most what it spent, the bound docs/relay.md states. An
// IP's byte quota filled through both relays, at once and then in turn,
// holds exactly too.
func TestGrantsFillAQuotaThroughTwoRelays(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	prefix := fmt.Sprintf("G%d_", next.Add(1))
	const quota = 128 // a grant: the envelope at hand and two more
	const life = time.Second
	openShared := func() *natsstore.Store {
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Prefix: prefix, GrantLife: life,
			Limits: relaystore.Limits{MailboxEnvelopes: 4 * quota, SenderEnvelopes: quota, IPBytes: 64 * 100}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openShared(), openShared()
	if _, err := a.Register(ctx, "bob/1", [32]byte{2}, false, ""); err != nil {
		t.Fatal(err)
	}
	from := relaystore.Origin{Address: "alice/1"}
	relays := []*natsstore.Store{a, b}
	// fill appends through a and b in turn until both refuse, and
	// returns how many each stored.
	fill := func(what string) [2]int {
		t.Helper()
		var stored [2]int
		for full := [2]bool{}; !full[0] || !full[1]; {
			for i, s := range relays {
				if full[i] {
					continue
				}
				_, err := s.Append(ctx, "bob/1", []byte("x"), 1, from)
				switch {
				case errors.Is(err, relaystore.ErrSenderQuota):
					full[i] = true
				case err != nil:
					t.Fatalf("%s: append through relay %d: %v", what, i, err)
				default:
					stored[i]++
				}
			}
		}
		return stored
	}
	got := fill("the first fill")
	if got[0]+got[1] != quota || got[0] == 0 || got[1] == 0 {
		t.Fatalf("the two relays stored %d and %d envelopes of one sender, want %d in all from both", got[0], got[1], quota)
	}
	if g := a.SenderGrant("bob/1", "alice/1"); g.Envelopes > quota/64+1 {
		t.Errorf("relay a holds a grant of %d envelopes, want at most a slice and one (%d)", g.Envelopes, quota/64+1)
	}

	// Four rows freed through a: four more through either.
	now := time.Now()
	rows, err := a.Lease(ctx, "bob/1", "h", 4, now, now.Add(time.Minute))
	if err != nil || len(rows) != 4 {
		t.Fatalf("leased %d rows (%v), want 4", len(rows), err)
	}
	ids := make([]uint64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	if removed, err := a.Ack(ctx, "bob/1", ids); err != nil || len(removed) != 4 {
		t.Fatalf("acknowledged %d rows (%v), want 4", len(removed), err)
	}
	if got := fill("after four rows freed"); got[0]+got[1] != 4 {
		t.Fatalf("after four rows freed the relays stored %d and %d, want 4 in all", got[0], got[1])
	}

	// Four more freed; a third relay takes a grant (one envelope and two
	// more) and dies with it. The others get only the one left until
	// the grant expires, then the rest, and the dead relay's envelope is
	// no longer counted: one past the quota, no more.
	rows, err = b.Lease(ctx, "bob/1", "h2", 4, now, now.Add(time.Minute))
	if err != nil || len(rows) != 4 {
		t.Fatalf("leased %d rows (%v), want 4", len(rows), err)
	}
	for i, r := range rows {
		ids[i] = r.ID
	}
	if removed, err := b.Ack(ctx, "bob/1", ids); err != nil || len(removed) != 4 {
		t.Fatalf("acknowledged %d rows (%v), want 4", len(removed), err)
	}
	dead := openShared()
	if _, err := dead.Append(ctx, "bob/1", []byte("x"), 1, from); err != nil {
		t.Fatal(err)
	}
	if g := dead.SenderGrant("bob/1", "alice/1"); g.Envelopes != 3 {
		t.Fatalf("the third relay took a grant of %d envelopes, want 3", g.Envelopes)
	}
	dead.Crash()
	crashed := time.Now()
	if got := fill("beside a dead relay's grant"); got[0]+got[1] != 1 {
		t.Fatalf("beside a dead relay's grant of two unspent the relays stored %d and %d, want 1 in all", got[0], got[1])
	}
	time.Sleep(time.Until(crashed.Add(life + life/5 + 100*time.Millisecond)))
	if got := fill("once the dead relay's grant expired"); got[0]+got[1] != 3 {
		t.Fatalf("once the dead relay's grant expired the relays stored %d and %d, want 3 (2 it held, 1 it spent)", got[0], got[1])
	}

	// An IP's bytes: 64 envelopes of 100 bytes from many senders to many
	// mailboxes, through both relays at once.
	for i := range 8 {
		if _, err := a.Register(ctx, fmt.Sprintf("r%d/1", i), [32]byte{byte(i + 3)}, false, ""); err != nil {
			t.Fatal(err)
		}
	}
	results := make(chan error, 100)
	for i := range 100 {
		go func() {
			_, err := relays[i%2].Append(ctx, fmt.Sprintf("r%d/1", i%8), make([]byte, 100), 1,
				relaystore.Origin{Address: fmt.Sprintf("s%d/1", i), IP: "192.0.2.4"})
			results <- err
		}()
	}
	stored := 0
	for range 100 {
		switch err := <-results; {
		case err == nil:
			stored++
		case !errors.Is(err, relaystore.ErrIPQuota):
			t.Fatalf("append from the IP: %v, want nil or ErrIPQuota", err)
		}
	}
	// At once, a relay may refuse while the other takes a grant again:
	// then one at a time through each until both refuse.
	for i, full := 0, [2]bool{}; !full[0] || !full[1]; i++ {
		_, err := relays[i%2].Append(ctx, fmt.Sprintf("r%d/1", i%8), make([]byte, 100), 1,
			relaystore.Origin{Address: fmt.Sprintf("t%d/1", i), IP: "192.0.2.4"})
		switch {
		case errors.Is(err, relaystore.ErrIPQuota):
			full[i%2] = true
		case err != nil:
			t.Fatal(err)
		default:
			stored++
		}
	}
	if stored != 64 {
		t.Fatalf("appends of 100 bytes through two relays against an IP's 6,400 bytes stored %d, want 64", stored)
	}
}

// TestGrantsReturned: a relay returns its grant of a count once the grant
// has been unused for a while (the idle time, 3/10 of its life), and when
// it closes. The other relay then fills the quota exactly without asking:
// the grant's life here is a minute, so nothing but the return can have
// freed the room in time, and an ask would show as a slower fill only, so
// the test reads the record's grants through SenderGrant instead.
func TestGrantsReturned(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	prefix := fmt.Sprintf("R%d_", next.Add(1))
	const quota = 64
	open := func(life time.Duration) *natsstore.Store {
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Prefix: prefix, GrantLife: life,
			Limits: relaystore.Limits{MailboxEnvelopes: 4 * quota, SenderEnvelopes: quota}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	from := relaystore.Origin{Address: "alice/1"}
	idle := open(time.Second) // idle after 300 ms
	if _, err := idle.Register(ctx, "bob/1", [32]byte{2}, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := idle.Append(ctx, "bob/1", []byte("x"), 1, from); err != nil {
		t.Fatal(err)
	}
	if g := idle.SenderGrant("bob/1", "alice/1"); g.Envelopes != 2 {
		t.Fatalf("a grant of %d envelopes, want 2 (the envelope and a 64th of %d)", g.Envelopes, quota)
	}
	deadline := time.Now().Add(5 * time.Second)
	for idle.SenderGrant("bob/1", "alice/1") != (relaystore.Usage{}) {
		if time.Now().After(deadline) {
			t.Fatal("an unused grant was not returned within 5 s (its idle time is 300 ms)")
		}
		time.Sleep(50 * time.Millisecond)
	}

	closing := open(time.Minute)
	if _, err := closing.Append(ctx, "bob/1", []byte("x"), 1, from); err != nil {
		t.Fatal(err)
	}
	if g := closing.SenderGrant("bob/1", "alice/1"); g.Envelopes != 2 {
		t.Fatalf("a grant of %d envelopes, want 2", g.Envelopes)
	}
	closing.Close()
	other := open(time.Minute)
	stored := 0
	for {
		_, err := other.Append(ctx, "bob/1", []byte("x"), 1, from)
		if errors.Is(err, relaystore.ErrSenderQuota) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	if stored != quota-2 {
		t.Fatalf("after the others returned their grants a relay stored %d envelopes, want %d (the quota less the 2 the others spent)", stored, quota-2)
	}
}
