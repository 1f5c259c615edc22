// Package storetest is the conformance suite of relaystore.Store: every
// backend (memory, SQLite, NATS JetStream) must pass it. Tests of a backend
// call Run with a function that opens a fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// Open opens a fresh, empty store with the given limits; the suite closes
// it.
type Open func(t *testing.T, l relaystore.Limits) relaystore.Store

// Run runs every conformance test against the stores open makes.
func Run(t *testing.T, open Open) {
	t.Run("register", func(t *testing.T) { testRegister(t, open) })
	t.Run("one-time prekeys", func(t *testing.T) { testBundleOneTimePreKeys(t, open) })
	t.Run("mailbox", func(t *testing.T) { testMailbox(t, open) })
	t.Run("quotas", func(t *testing.T) { testQuotas(t, open) })
	t.Run("bundle without a one-time prekey", func(t *testing.T) { testTakeBundleWithoutOneTime(t, open) })
	t.Run("removed rows name their senders", func(t *testing.T) { testRemovedSenders(t, open) })
	t.Run("expire", func(t *testing.T) { testExpire(t, open) })
	t.Run("accepted peers", func(t *testing.T) { testAcceptedPeers(t, open) })
	t.Run("accepted lifetime", func(t *testing.T) { testAcceptedLifetime(t, open) })
	t.Run("block list", func(t *testing.T) { testBlockList(t, open) })
	t.Run("room for strangers", func(t *testing.T) { testStrangerRoom(t, open) })
	t.Run("append batch", func(t *testing.T) { testAppendBatch(t, open) })
	t.Run("append batch of the largest count", func(t *testing.T) { testAppendBatchLarge(t, open) })
	t.Run("shared payload", func(t *testing.T) { testSharedPayload(t, open) })
	t.Run("device lists", func(t *testing.T) { testDeviceLists(t, open) })
	t.Run("device list quota", func(t *testing.T) { testDeviceListQuota(t, open) })
}

// testExpire: Expire deletes rows accepted before its bound, oldest first
// and at most max, passes over rows under a live lease, frees every quota
// scope as Ack does, and returns each row with its recipient, sender and
// envelope ID.
func testExpire(t *testing.T, open Open) {
	l := relaystore.Limits{MailboxEnvelopes: 3, SenderEnvelopes: 3, IPEnvelopes: 4, TotalEnvelopes: 4}
	run(t, open, l, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(2))
		mustRegister(t, s, "carol/1", key(3))
		before := time.Now().Add(-time.Second)
		type sent struct {
			to   string
			from relaystore.Origin
			row  uint64
		}
		var all []sent
		for i, to := range []string{"bob/1", "bob/1", "carol/1", "bob/1"} {
			o := alice
			o.Envelope = wire.EnvelopeID{byte(i + 1)}
			rows, err := s.Append(ctx, to, []byte(fmt.Sprint("env", i)), 1, o)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, sent{to, o, rows[0]})
		}
		if _, err := s.Append(ctx, "carol/1", []byte("more"), 1, alice); !errors.Is(err, relaystore.ErrStoreFull) {
			t.Fatalf("a fifth envelope: %v, want relaystore.ErrStoreFull", err)
		}
		now := time.Now()
		if got, err := s.Expire(ctx, now, before, 10); err != nil || len(got) != 0 {
			t.Fatalf("Expire of nothing old enough: %+v, %v", got, err)
		}
		leased, err := s.Lease(ctx, "bob/1", "h", 1, now, now.Add(time.Minute))
		if err != nil || len(leased) != 1 || leased[0].ID != all[0].row {
			t.Fatalf("lease: %v, %v", leased, err)
		}
		removed := func(i int) relaystore.Removed {
			return relaystore.Removed{Recipient: all[i].to, Row: all[i].row, Sender: all[i].from.Address, Envelope: all[i].from.Envelope}
		}
		future := time.Now().Add(time.Hour)
		got, err := s.Expire(ctx, now, future, 1)
		if err != nil || !slices.Equal(got, []relaystore.Removed{removed(1)}) {
			t.Fatalf("Expire of one: %+v, %v; want %+v (the oldest not leased)", got, err, removed(1))
		}
		got, err = s.Expire(ctx, now, future, 10)
		slices.SortFunc(got, func(a, b relaystore.Removed) int { return cmpRow(a.Row, b.Row) })
		if err != nil || !slices.Equal(got, []relaystore.Removed{removed(2), removed(3)}) {
			t.Fatalf("Expire of the rest: %+v, %v; want rows 2 and 3, not the leased row 0", got, err)
		}
		if st, _ := s.Stats(ctx); st.Envelopes != 1 {
			t.Fatalf("Stats after the sweep: %+v, want the leased envelope", st)
		}
		// Every scope is free again: the mailbox, the IP and the total.
		if _, err := s.Append(ctx, "bob/1", []byte("x"), 2, alice); err != nil {
			t.Fatalf("after the sweep: %v", err)
		}
		later := now.Add(2 * time.Minute)
		got, err = s.Expire(ctx, later, future, 1)
		if err != nil || !slices.Equal(got, []relaystore.Removed{removed(0)}) {
			t.Fatalf("once its lease ran out: %+v, %v; want row 0", got, err)
		}
		if n, err := s.Ack(ctx, "bob/1", []uint64{all[0].row}); err != nil || len(n) != 0 {
			t.Fatalf("acknowledging an expired row: %+v, %v; want nothing", n, err)
		}
	})
}

// testRemovedSenders: Ack returns each row it deleted with the sender and
// the envelope ID given at Append, whether the row was leased through this
// store or not, and nothing for rows it did not delete.
func testRemovedSenders(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(2))
		from := []relaystore.Origin{
			{Address: "alice/1", IP: "192.0.2.1", Envelope: wire.EnvelopeID{1, 2, 3}},
			{Address: "carol/1", IP: "192.0.2.1", Envelope: wire.EnvelopeID{4, 5, 6}},
			{Address: "alice/1", IP: "192.0.2.2", Envelope: wire.EnvelopeID{7, 8, 9}},
		}
		var rows []uint64
		for i, o := range from {
			r, err := s.Append(ctx, "bob/1", []byte(fmt.Sprint("env", i)), 1, o)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r...)
		}
		now := time.Unix(1000, 0)
		if got, err := s.Lease(ctx, "bob/1", "a", 2, now, now.Add(time.Minute)); err != nil || len(got) != 2 {
			t.Fatalf("lease: %v, %v", got, err)
		}
		got, err := s.Ack(ctx, "bob/1", []uint64{rows[2], rows[0], rows[0], rows[1] + 1000})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b relaystore.Removed) int { return cmpRow(a.Row, b.Row) })
		want := []relaystore.Removed{
			{Recipient: "bob/1", Row: rows[0], Sender: "alice/1", Envelope: from[0].Envelope},
			{Recipient: "bob/1", Row: rows[2], Sender: "alice/1", Envelope: from[2].Envelope},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Ack returned %+v, want %+v", got, want)
		}
		if got, _ := s.Ack(ctx, "bob/1", rows); len(got) != 1 || got[0] != (relaystore.Removed{Recipient: "bob/1", Row: rows[1], Sender: "carol/1", Envelope: from[1].Envelope}) {
			t.Fatalf("the last row: got %+v, want carol's", got)
		}
		if got, _ := s.Ack(ctx, "bob/1", rows); len(got) != 0 {
			t.Fatalf("rows acknowledged twice: got %+v, want none", got)
		}
	})
}

func cmpRow(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func run(t *testing.T, open Open, l relaystore.Limits, test func(t *testing.T, s relaystore.Store)) {
	t.Helper()
	s := open(t, l)
	defer s.Close()
	test(t, s)
}

func key(b byte) [32]byte { return [32]byte{b} }

// alice is the sender of most test envelopes.
var alice = relaystore.Origin{Address: "alice/1", IP: "192.0.2.1"}

func bundle(addr string) wire.Bundle {
	b := wire.Bundle{Address: addr}
	b.SignedPreKey.ID, b.SignedPreKey.Expires = 1, 100
	b.KEMPreKey.ID, b.KEMPreKey.Expires = 2, 100
	return b
}

func otks(ids ...uint32) []wire.OneTimePreKeyPublic {
	var out []wire.OneTimePreKeyPublic
	for _, id := range ids {
		out = append(out, wire.OneTimePreKeyPublic{ID: id, PublicKey: [32]byte{byte(id)}})
	}
	return out
}

func mustRegister(t *testing.T, s relaystore.Store, addr string, k [32]byte) {
	t.Helper()
	if _, err := s.Register(context.Background(), addr, k, false, ""); err != nil {
		t.Fatalf("Register(%s): %v", addr, err)
	}
}

func testRegister(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(1))
		mustRegister(t, s, "bob/1", key(1)) // the same key again: nothing changes
		if k, err := s.Registered(ctx, "bob/1"); err != nil || k != key(1) {
			t.Fatalf("Registered: got %x, %v", k[:1], err)
		}
		if _, err := s.Registered(ctx, "amy/1"); !errors.Is(err, relaystore.ErrNotRegistered) {
			t.Fatalf("Registered(amy/1): got %v, want relaystore.ErrNotRegistered", err)
		}
		if _, err := s.Register(ctx, "bob/1", key(2), false, ""); !errors.Is(err, relaystore.ErrAddressTaken) {
			t.Fatalf("another key: got %v, want relaystore.ErrAddressTaken", err)
		}
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), otks(1, 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutBundle(ctx, "bob/1", key(2), bundle("bob/1"), nil); !errors.Is(err, relaystore.ErrKeyMismatch) {
			t.Fatalf("bundle under another key: got %v, want relaystore.ErrKeyMismatch", err)
		}
		replaced, err := s.Register(ctx, "bob/1", key(2), true, "")
		if err != nil || !replaced {
			t.Fatalf("replace: got %v, %v; want true, nil", replaced, err)
		}
		if k, _ := s.Registered(ctx, "bob/1"); k != key(2) {
			t.Fatal("the new key does not own the address")
		}
		if _, _, err := s.TakeBundle(ctx, "bob/1", true); !errors.Is(err, relaystore.ErrNoBundle) {
			t.Fatalf("after replacement the old bundle is gone: got %v, want relaystore.ErrNoBundle", err)
		}
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), nil); !errors.Is(err, relaystore.ErrKeyMismatch) {
			t.Fatalf("old key after replacement: got %v, want relaystore.ErrKeyMismatch", err)
		}
		if n, _ := s.OneTimePreKeys(ctx, "bob/1"); n != 0 {
			t.Fatalf("one-time prekeys after replacement: got %d, want 0", n)
		}
		st, err := s.Stats(ctx)
		if err != nil || st.Registrations != 1 {
			t.Fatalf("Stats: got %+v, %v; want 1 registration", st, err)
		}
	})
}

func testBundleOneTimePreKeys(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{OneTimePreKeys: 4}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), nil); !errors.Is(err, relaystore.ErrKeyMismatch) {
			t.Fatalf("bundle before registration: got %v, want relaystore.ErrKeyMismatch", err)
		}
		mustRegister(t, s, "bob/1", key(1))
		if _, _, err := s.TakeBundle(ctx, "bob/1", true); !errors.Is(err, relaystore.ErrNoBundle) {
			t.Fatalf("nothing published: got %v, want relaystore.ErrNoBundle", err)
		}
		added, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), otks(1, 2, 2, 3))
		if err != nil || added != 3 {
			t.Fatalf("PutBundle: got %d, %v; want 3 added (2 is a duplicate)", added, err)
		}
		// 3 again is a duplicate; the pool then holds 4, its cap, so 6 is dropped.
		added, err = s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), otks(3, 4, 5, 6))
		if err != nil || added != 1 {
			t.Fatalf("PutBundle at the cap: got %d, %v; want 1 added", added, err)
		}
		var got []uint32
		for range 6 {
			b, _, err := s.TakeBundle(ctx, "bob/1", true)
			if err != nil {
				t.Fatal(err)
			}
			if b.Address != "bob/1" {
				t.Fatalf("bundle address %q", b.Address)
			}
			if b.OneTimePreKey != nil {
				got = append(got, b.OneTimePreKey.ID)
				if b.OneTimePreKey.PublicKey[0] != byte(b.OneTimePreKey.ID) {
					t.Fatalf("one-time prekey %d has the wrong key", b.OneTimePreKey.ID)
				}
			}
		}
		if want := []uint32{1, 2, 3, 4}; !slices.Equal(got, want) {
			t.Fatalf("one-time prekeys handed out: got %v, want %v, each once", got, want)
		}
	})
}

func testMailbox(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{MailboxEnvelopes: 5, MailboxBytes: 1000, SenderEnvelopes: 5, SenderBytes: 1000}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		if _, err := s.Append(ctx, "bob/1", []byte("x"), 1, alice); !errors.Is(err, relaystore.ErrNotRegistered) {
			t.Fatalf("append to an unregistered address: got %v, want relaystore.ErrNotRegistered", err)
		}
		mustRegister(t, s, "bob/1", key(1))
		mustRegister(t, s, "eve/1", key(2))
		var all []uint64
		for i := range 3 {
			rows, err := s.Append(ctx, "bob/1", fmt.Appendf(nil, "env%d", i), 1, alice)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, rows...)
		}
		dup, err := s.Append(ctx, "bob/1", []byte("env3"), 2, alice)
		if err != nil || len(dup) != 2 {
			t.Fatalf("two copies: got %v, %v", dup, err)
		}
		all = append(all, dup...)
		if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != 5 {
			t.Fatalf("rows are not strictly increasing: %v", all)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("env5"), 1, alice); !errors.Is(err, relaystore.ErrMailboxFull) {
			t.Fatalf("sixth envelope: got %v, want relaystore.ErrMailboxFull", err)
		}
		if _, err := s.Append(ctx, "eve/1", make([]byte, 1001), 1, alice); !errors.Is(err, relaystore.ErrMailboxFull) {
			t.Fatalf("over the byte limit: got %v, want relaystore.ErrMailboxFull", err)
		}

		now := time.Unix(1000, 0)
		a, err := s.Lease(ctx, "bob/1", "a", 2, now, now.Add(time.Minute))
		if err != nil || len(a) != 2 || a[0].ID != all[0] || a[1].ID != all[1] || string(a[0].Envelope) != "env0" {
			t.Fatalf("first lease: got %v, %v; want rows %v", a, err, all[:2])
		}
		b, err := s.Lease(ctx, "bob/1", "b", 10, now, now.Add(time.Minute))
		if err != nil || len(b) != 3 || b[0].ID != all[2] {
			t.Fatalf("second holder skips leased rows: got %v, %v", b, err)
		}
		if c, _ := s.Lease(ctx, "bob/1", "c", 10, now, now.Add(time.Minute)); len(c) != 0 {
			t.Fatalf("everything is leased, got %v", c)
		}
		if err := s.Release(ctx, "bob/1", "a"); err != nil {
			t.Fatal(err)
		}
		c, _ := s.Lease(ctx, "bob/1", "c", 10, now, now.Add(time.Minute))
		if len(c) != 2 || c[0].ID != all[0] {
			t.Fatalf("after release: got %v, want rows %v", c, all[:2])
		}
		later := now.Add(2 * time.Minute)
		d, _ := s.Lease(ctx, "bob/1", "d", 10, later, later.Add(time.Minute))
		if len(d) != 5 || d[0].ID != all[0] {
			t.Fatalf("after every lease expired: got %d rows, want 5 in order", len(d))
		}

		// Another address cannot acknowledge bob's rows.
		if n, err := s.Ack(ctx, "eve/1", all); err != nil || len(n) != 0 {
			t.Fatalf("eve acknowledges bob's rows: got %d, %v; want 0", len(n), err)
		}
		if n, err := s.Ack(ctx, "bob/1", []uint64{all[0], all[0], all[2], 1 << 63, 1<<64 - 1}); err != nil || len(n) != 2 {
			t.Fatalf("Ack: got %d, %v; want 2", len(n), err)
		}
		st, _ := s.Stats(ctx)
		if st.Envelopes != 3 {
			t.Fatalf("Stats after ack: got %+v, want 3 envelopes", st)
		}
		e, _ := s.Lease(ctx, "bob/1", "e", 10, later.Add(2*time.Minute), later.Add(3*time.Minute))
		if len(e) != 3 || e[0].ID != all[1] || e[1].ID != all[3] {
			t.Fatalf("rows left: got %v", e)
		}
		if n, _ := s.Ack(ctx, "bob/1", all); len(n) != 3 {
			t.Fatalf("ack the rest: got %d, want 3", len(n))
		}
		// Emptied, the mailbox's numbering still moves on.
		rows, err := s.Append(ctx, "bob/1", []byte("again"), 1, alice)
		if err != nil || rows[0] <= all[len(all)-1] {
			t.Fatalf("row after an emptied mailbox: got %v, %v; want above %d", rows, err, all[len(all)-1])
		}
	})
}

// testQuotas: each limit refuses just above it and stores nothing, and
// frees up as rows are acknowledged: a sender's share of one mailbox, an
// IP's share of the relay, the relay in all, and registrations per IP.
func testQuotas(t *testing.T, open Open) {
	l := relaystore.Limits{MailboxEnvelopes: 100, MailboxBytes: 1 << 20, SenderEnvelopes: 3, SenderBytes: 1 << 20,
		IPEnvelopes: 5, IPBytes: 1 << 20, TotalEnvelopes: 8, TotalBytes: 1 << 20, RegistrationsPerIP: 2}
	run(t, open, l, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		for _, a := range []string{"bob/1", "carol/1", "dave/1"} {
			mustRegister(t, s, a, key(a[0]))
		}
		mallory := relaystore.Origin{Address: "mallory/1", IP: "198.51.100.7"}
		var mrows []uint64
		for range 3 {
			rows, err := s.Append(ctx, "bob/1", []byte("junk"), 1, mallory)
			if err != nil {
				t.Fatal(err)
			}
			mrows = append(mrows, rows...)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("junk"), 1, mallory); !errors.Is(err, relaystore.ErrSenderQuota) {
			t.Fatalf("a fourth envelope from one sender: got %v, want relaystore.ErrSenderQuota", err)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("hello bob"), 1, alice); err != nil {
			t.Fatalf("another sender into the same mailbox: %v", err)
		}
		// mallory's IP holds 3 of its 5; two more fit elsewhere, the next not,
		// whichever address sends from it.
		sameIP := relaystore.Origin{Address: "mallory/2", IP: mallory.IP}
		for _, to := range []string{"carol/1", "carol/1"} {
			if _, err := s.Append(ctx, to, []byte("junk"), 1, sameIP); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Append(ctx, "dave/1", []byte("junk"), 1, sameIP); !errors.Is(err, relaystore.ErrIPQuota) || !errors.Is(err, relaystore.ErrStoreFull) {
			t.Fatalf("over the IP's share: got %v, want relaystore.ErrIPQuota", err)
		}
		// The relay holds 6 of its 8; another IP fills it.
		other := relaystore.Origin{Address: "erin/1", IP: "203.0.113.9"}
		if _, err := s.Append(ctx, "dave/1", []byte("x"), 2, other); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "dave/1", []byte("x"), 1, other); !errors.Is(err, relaystore.ErrStoreFull) || errors.Is(err, relaystore.ErrIPQuota) {
			t.Fatalf("over the total: got %v, want relaystore.ErrStoreFull", err)
		}
		if st, _ := s.Stats(ctx); st.Envelopes != 8 {
			t.Fatalf("Stats: %+v, want 8 envelopes held", st)
		}
		// Acknowledged rows free every scope.
		if n, err := s.Ack(ctx, "bob/1", mrows); err != nil || len(n) != 3 {
			t.Fatalf("Ack: %d, %v", len(n), err)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("junk"), 3, mallory); err != nil {
			t.Fatalf("after the ACK mallory's share is free again: %v", err)
		}

		for i, a := range []string{"x/1", "x/2"} {
			if _, err := s.Register(ctx, a, key(byte(10+i)), false, mallory.IP); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Register(ctx, "x/3", key(12), false, mallory.IP); !errors.Is(err, relaystore.ErrRegistrationQuota) {
			t.Fatalf("a third registration from one IP: got %v, want relaystore.ErrRegistrationQuota", err)
		}
		if _, err := s.Register(ctx, "x/1", key(10), false, mallory.IP); err != nil {
			t.Fatalf("registering an own address again costs nothing: %v", err)
		}
		if _, err := s.Register(ctx, "x/3", key(12), false, other.IP); err != nil {
			t.Fatalf("from another IP: %v", err)
		}
	})
}

// testTakeBundleWithoutOneTime: a fetch may leave the pool alone, and every
// fetch reports the pool left.
func testTakeBundleWithoutOneTime(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(1))
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), otks(1, 2)); err != nil {
			t.Fatal(err)
		}
		b, pool, err := s.TakeBundle(ctx, "bob/1", false)
		if err != nil || b.OneTimePreKey != nil || pool != 2 {
			t.Fatalf("without: %v, pool %d, %v; want no key, pool 2", b.OneTimePreKey, pool, err)
		}
		b, pool, err = s.TakeBundle(ctx, "bob/1", true)
		if err != nil || b.OneTimePreKey == nil || pool != 1 {
			t.Fatalf("with: %v, pool %d, %v; want a key, pool 1", b.OneTimePreKey, pool, err)
		}
	})
}
