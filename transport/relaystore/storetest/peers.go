package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
)

// relation reads Relation and fails the test on an error.
func relation(t *testing.T, s relaystore.Store, owner, sender string) relaystore.Relation {
	t.Helper()
	return relationAt(t, s, owner, sender, time.Now())
}

// relationAt reads Relation at now.
func relationAt(t *testing.T, s relaystore.Store, owner, sender string, now time.Time) relaystore.Relation {
	t.Helper()
	r, err := s.Relation(context.Background(), owner, sender, now)
	if err != nil {
		t.Fatalf("Relation(%s, %s): %v", owner, sender, err)
	}
	return r
}

// testAcceptedPeers: Accept records a peer for its owner only; past
// AcceptedPeers the least recently recorded is forgotten, and recording a
// peer again makes it the most recent.
func testAcceptedPeers(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{AcceptedPeers: 3}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		t0 := time.Now().Add(-time.Minute)
		if got := relation(t, s, "bob/1", "alice/1"); got.Accepted || got.Blocked {
			t.Fatalf("a fresh store: %+v, want nothing", got)
		}
		// Read before it changes, so that a backend answering from a cache
		// must see the change.
		if relation(t, s, "bob/1", "p/1").Accepted {
			t.Fatal("a fresh store accepts p/1")
		}
		for i, p := range []string{"p/1", "p/2", "p/3"} {
			if forgot, err := s.Accept(ctx, "bob/1", p, t0.Add(time.Duration(i)*time.Second)); err != nil || forgot != 0 {
				t.Fatalf("Accept(%s) = %d, %v; want nothing forgotten within the bound", p, forgot, err)
			}
		}
		if !relation(t, s, "bob/1", "p/1").Accepted {
			t.Fatal("bob accepts p/1: not recorded")
		}
		if relation(t, s, "p/1", "bob/1").Accepted {
			t.Fatal("bob accepting p/1 made p/1 accept bob; the record is one way")
		}
		if !relation(t, s, "bob/1", "p/2").Accepted {
			t.Fatal("bob accepts p/2: not recorded")
		}
		// p/1 seen again: p/2 is now the least recent, and goes first.
		if forgot, err := s.Accept(ctx, "bob/1", "p/1", t0.Add(10*time.Second)); err != nil || forgot != 0 {
			t.Fatalf("Accept(p/1) again = %d, %v; want a refresh", forgot, err)
		}
		if forgot, err := s.Accept(ctx, "bob/1", "p/4", t0.Add(11*time.Second)); err != nil || forgot != 1 {
			t.Fatalf("Accept(p/4) past the bound = %d, %v; want one peer forgotten", forgot, err)
		}
		for p, want := range map[string]bool{"p/1": true, "p/2": false, "p/3": true, "p/4": true} {
			if got := relation(t, s, "bob/1", p).Accepted; got != want {
				t.Errorf("bob accepts %s: %v, want %v (bound 3, least recent forgotten)", p, got, want)
			}
		}
	})
}

// testBlockList: Block adds and removes one sender for its owner; adding
// one past BlockedSenders fails with ErrBlockListFull, adding one listed
// already or removing one that is not changes nothing.
func testBlockList(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{BlockedSenders: 2}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		for _, p := range []string{"x/1", "y/1", "x/1"} {
			if err := s.Block(ctx, "bob/1", p, true); err != nil {
				t.Fatalf("block %s: %v", p, err)
			}
		}
		if !relation(t, s, "bob/1", "x/1").Blocked || relation(t, s, "carol/1", "x/1").Blocked {
			t.Fatal("x/1 must be blocked by bob only")
		}
		if err := s.Block(ctx, "bob/1", "z/1", true); !errors.Is(err, relaystore.ErrBlockListFull) {
			t.Fatalf("a third sender over a list of 2: %v, want relaystore.ErrBlockListFull", err)
		}
		if relation(t, s, "bob/1", "z/1").Blocked {
			t.Fatal("a refused block was recorded")
		}
		if err := s.Block(ctx, "bob/1", "x/1", false); err != nil {
			t.Fatal(err)
		}
		if err := s.Block(ctx, "bob/1", "never/1", false); err != nil {
			t.Fatalf("unblocking a sender never blocked: %v", err)
		}
		if relation(t, s, "bob/1", "x/1").Blocked {
			t.Fatal("x/1 unblocked: still blocked")
		}
		if err := s.Block(ctx, "bob/1", "z/1", true); err != nil {
			t.Fatalf("z/1 once x/1 left the list: %v", err)
		}
	})
}

// testStrangerRoom: strangers together hold at most StrangerEnvelopes of a
// mailbox and those behind one IP at most StrangerIPEnvelopes of it; an
// accepted sender is held by neither, and an acknowledgement frees the
// room.
func testStrangerRoom(t *testing.T, open Open) {
	l := relaystore.Limits{MailboxEnvelopes: 10, SenderEnvelopes: 10, StrangerEnvelopes: 4, StrangerIPEnvelopes: 2}
	run(t, open, l, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(2))
		stranger := func(i int, ip string) relaystore.Origin {
			return relaystore.Origin{Address: fmt.Sprintf("s%d/1", i), IP: ip, Stranger: true}
		}
		var rows []uint64
		for i, ip := range []string{"192.0.2.7", "192.0.2.7"} {
			r, err := s.Append(ctx, "bob/1", []byte("spam"), 1, stranger(i, ip))
			if err != nil {
				t.Fatalf("stranger %d: %v", i, err)
			}
			rows = append(rows, r...)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("spam"), 1, stranger(9, "192.0.2.7")); !errors.Is(err, relaystore.ErrStrangerIPShare) {
			t.Fatalf("a third stranger from one IP: %v, want relaystore.ErrStrangerIPShare", err)
		}
		for i, ip := range []string{"192.0.2.8", "192.0.2.9"} {
			if _, err := s.Append(ctx, "bob/1", []byte("spam"), 1, stranger(10+i, ip)); err != nil {
				t.Fatalf("a stranger from another IP: %v", err)
			}
		}
		if _, err := s.Append(ctx, "bob/1", []byte("spam"), 1, stranger(20, "192.0.2.10")); !errors.Is(err, relaystore.ErrStrangerRoom) {
			t.Fatalf("a fifth stranger: %v, want relaystore.ErrStrangerRoom", err)
		}
		// alice, accepted, has the rest of the mailbox, from the same IP.
		for i := range 6 {
			if _, err := s.Append(ctx, "bob/1", []byte("hi"), 1, relaystore.Origin{Address: "alice/1", IP: "192.0.2.7"}); err != nil {
				t.Fatalf("alice's envelope %d with the stranger room full: %v", i, err)
			}
		}
		if _, err := s.Append(ctx, "bob/1", []byte("hi"), 1, alice); !errors.Is(err, relaystore.ErrMailboxFull) {
			t.Fatalf("past the mailbox: %v, want relaystore.ErrMailboxFull", err)
		}
		// Acknowledging a stranger's envelope frees its room and its IP's.
		if _, err := s.Ack(ctx, "bob/1", rows[:1]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("spam"), 1, stranger(9, "192.0.2.7")); err != nil {
			t.Fatalf("a stranger from the first IP after one of its envelopes was acknowledged: %v", err)
		}
	})
}

// testAcceptedLifetime: a peer counts as accepted for AcceptedLifetime
// after it was last recorded, and ForgetAccepted deletes the older
// records (a backend whose records expire on their own reports none).
func testAcceptedLifetime(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{AcceptedLifetime: time.Hour}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		t0 := time.Now()
		if _, err := s.Accept(ctx, "bob/1", "alice/1", t0); err != nil {
			t.Fatal(err)
		}
		if !relationAt(t, s, "bob/1", "alice/1", t0.Add(59*time.Minute)).Accepted {
			t.Fatal("within the lifetime: not accepted")
		}
		if relationAt(t, s, "bob/1", "alice/1", t0.Add(61*time.Minute)).Accepted {
			t.Fatal("past the lifetime: still accepted")
		}
		n, err := s.ForgetAccepted(ctx, t0.Add(-time.Second))
		if err != nil || n != 0 {
			t.Fatalf("ForgetAccepted before the record = %d, %v; want nothing forgotten", n, err)
		}
		n, err = s.ForgetAccepted(ctx, t0.Add(time.Second))
		if err != nil || n > 1 {
			t.Fatalf("ForgetAccepted after the record = %d, %v", n, err)
		}
		if n == 1 && relationAt(t, s, "bob/1", "alice/1", t0).Accepted {
			t.Fatal("a forgotten record still counts")
		}
	})
}
