package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/wire"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backends runs a test against every Store of this package.
func backends(t *testing.T, l Limits, test func(t *testing.T, s Store)) {
	t.Run("memory", func(t *testing.T) {
		s := NewMemory(l)
		defer s.Close()
		test(t, s)
	})
	t.Run("sqlite", func(t *testing.T) {
		s := mustOpenSQLite(t, t.TempDir(), l)
		defer s.Close()
		test(t, s)
	})
}

func mustOpenSQLite(tb testing.TB, dir string, l Limits) *SQLite {
	tb.Helper()
	s, err := OpenSQLite(context.Background(), dir, l)
	if err != nil {
		tb.Fatalf("OpenSQLite(%s): %v", dir, err)
	}
	return s
}

func key(b byte) [32]byte { return [32]byte{b} }

// alice is the sender of most test envelopes.
var alice = Origin{Address: "alice/1", IP: "192.0.2.1"}

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

func mustRegister(t *testing.T, s Store, addr string, k [32]byte) {
	t.Helper()
	if _, err := s.Register(context.Background(), addr, k, false, ""); err != nil {
		t.Fatalf("Register(%s): %v", addr, err)
	}
}

func TestRegister(t *testing.T) {
	backends(t, Limits{}, func(t *testing.T, s Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(1))
		mustRegister(t, s, "bob/1", key(1)) // the same key again: nothing changes
		if k, err := s.Registered(ctx, "bob/1"); err != nil || k != key(1) {
			t.Fatalf("Registered: got %x, %v", k[:1], err)
		}
		if _, err := s.Registered(ctx, "amy/1"); !errors.Is(err, ErrNotRegistered) {
			t.Fatalf("Registered(amy/1): got %v, want ErrNotRegistered", err)
		}
		if _, err := s.Register(ctx, "bob/1", key(2), false, ""); !errors.Is(err, ErrAddressTaken) {
			t.Fatalf("another key: got %v, want ErrAddressTaken", err)
		}
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), otks(1, 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutBundle(ctx, "bob/1", key(2), bundle("bob/1"), nil); !errors.Is(err, ErrKeyMismatch) {
			t.Fatalf("bundle under another key: got %v, want ErrKeyMismatch", err)
		}
		replaced, err := s.Register(ctx, "bob/1", key(2), true, "")
		if err != nil || !replaced {
			t.Fatalf("replace: got %v, %v; want true, nil", replaced, err)
		}
		if k, _ := s.Registered(ctx, "bob/1"); k != key(2) {
			t.Fatal("the new key does not own the address")
		}
		if _, _, err := s.TakeBundle(ctx, "bob/1", true); !errors.Is(err, ErrNoBundle) {
			t.Fatalf("after replacement the old bundle is gone: got %v, want ErrNoBundle", err)
		}
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), nil); !errors.Is(err, ErrKeyMismatch) {
			t.Fatalf("old key after replacement: got %v, want ErrKeyMismatch", err)
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

func TestBundleOneTimePreKeys(t *testing.T) {
	backends(t, Limits{OneTimePreKeys: 4}, func(t *testing.T, s Store) {
		ctx := context.Background()
		if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), nil); !errors.Is(err, ErrKeyMismatch) {
			t.Fatalf("bundle before registration: got %v, want ErrKeyMismatch", err)
		}
		mustRegister(t, s, "bob/1", key(1))
		if _, _, err := s.TakeBundle(ctx, "bob/1", true); !errors.Is(err, ErrNoBundle) {
			t.Fatalf("nothing published: got %v, want ErrNoBundle", err)
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

func TestMailbox(t *testing.T) {
	backends(t, Limits{MailboxEnvelopes: 5, MailboxBytes: 1000, SenderEnvelopes: 5, SenderBytes: 1000}, func(t *testing.T, s Store) {
		ctx := context.Background()
		if _, err := s.Append(ctx, "bob/1", []byte("x"), 1, alice); !errors.Is(err, ErrNotRegistered) {
			t.Fatalf("append to an unregistered address: got %v, want ErrNotRegistered", err)
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
		if _, err := s.Append(ctx, "bob/1", []byte("env5"), 1, alice); !errors.Is(err, ErrMailboxFull) {
			t.Fatalf("sixth envelope: got %v, want ErrMailboxFull", err)
		}
		if _, err := s.Append(ctx, "eve/1", make([]byte, 1001), 1, alice); !errors.Is(err, ErrMailboxFull) {
			t.Fatalf("over the byte limit: got %v, want ErrMailboxFull", err)
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
		if n, err := s.Ack(ctx, "eve/1", all); err != nil || n != 0 {
			t.Fatalf("eve acknowledges bob's rows: got %d, %v; want 0", n, err)
		}
		if n, err := s.Ack(ctx, "bob/1", []uint64{all[0], all[0], all[2], 1 << 63, 1<<64 - 1}); err != nil || n != 2 {
			t.Fatalf("Ack: got %d, %v; want 2", n, err)
		}
		st, _ := s.Stats(ctx)
		if st.Envelopes != 3 {
			t.Fatalf("Stats after ack: got %+v, want 3 envelopes", st)
		}
		e, _ := s.Lease(ctx, "bob/1", "e", 10, later.Add(2*time.Minute), later.Add(3*time.Minute))
		if len(e) != 3 || e[0].ID != all[1] || e[1].ID != all[3] {
			t.Fatalf("rows left: got %v", e)
		}
		if n, _ := s.Ack(ctx, "bob/1", all); n != 3 {
			t.Fatalf("ack the rest: got %d, want 3", n)
		}
		// Emptied, the mailbox's numbering still moves on.
		rows, err := s.Append(ctx, "bob/1", []byte("again"), 1, alice)
		if err != nil || rows[0] <= all[len(all)-1] {
			t.Fatalf("row after an emptied mailbox: got %v, %v; want above %d", rows, err, all[len(all)-1])
		}
	})
}

func TestSQLiteReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := mustOpenSQLite(t, dir, Limits{})
	id, _ := s.RelayID(ctx)
	mustRegister(t, s, "bob/1", key(1))
	if _, err := s.PutBundle(ctx, "bob/1", key(1), bundle("bob/1"), otks(7)); err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for i := range 10 {
		rows, err := s.Append(ctx, "bob/1", fmt.Appendf(nil, "env%d", i), 1, alice)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	now := time.Now()
	if rows, _ := s.Lease(ctx, "bob/1", "x", 4, now, now.Add(time.Hour)); len(rows) != 4 {
		t.Fatal("lease")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "bob/1", []byte("late"), 1, alice); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: got %v, want ErrClosed", err)
	}

	s = mustOpenSQLite(t, dir, Limits{})
	defer s.Close()
	if again, _ := s.RelayID(ctx); again != id {
		t.Fatal("relay id changed across a reopen")
	}
	if _, err := s.Register(ctx, "bob/1", key(2), false, ""); !errors.Is(err, ErrAddressTaken) {
		t.Fatalf("registration lost: got %v", err)
	}
	// Leases do not survive: every row is delivered again, in order.
	rows, err := s.Lease(ctx, "bob/1", "y", 100, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for i, r := range rows {
		got = append(got, r.ID)
		if string(r.Envelope) != fmt.Sprintf("env%d", i) {
			t.Fatalf("row %d holds %q", i, r.Envelope)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows after reopen: got %v, want %v", got, want)
	}
	b, _, err := s.TakeBundle(ctx, "bob/1", true)
	if err != nil || b.OneTimePreKey == nil || b.OneTimePreKey.ID != 7 {
		t.Fatalf("bundle after reopen: %+v, %v", b.OneTimePreKey, err)
	}
}

// TestSQLiteGroupCommit checks that concurrent appends all land, each in its
// sender's order.
func TestSQLiteGroupCommit(t *testing.T) {
	s := mustOpenSQLite(t, t.TempDir(), Limits{})
	defer s.Close()
	ctx := context.Background()
	mustRegister(t, s, "bob/1", key(1))
	const senders, each = 8, 25
	errs := make(chan error, senders)
	for i := range senders {
		go func() {
			for j := range each {
				if _, err := s.Append(ctx, "bob/1", fmt.Appendf(nil, "%d/%03d", i, j), 1, alice); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range senders {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	rows, _ := s.Lease(ctx, "bob/1", "x", 1000, now, now.Add(time.Hour))
	if len(rows) != senders*each {
		t.Fatalf("got %d rows, want %d", len(rows), senders*each)
	}
	last := map[byte]string{}
	for _, r := range rows {
		k := r.Envelope[0]
		if string(r.Envelope) <= last[k] {
			t.Fatalf("sender %c out of order: %s after %s", k, r.Envelope, last[k])
		}
		last[k] = string(r.Envelope)
	}
}

// TestQuotas: each limit refuses just above it and stores nothing, and
// frees up as rows are acknowledged: a sender's share of one mailbox, an
// IP's share of the relay, the relay in all, and registrations per IP.
func TestQuotas(t *testing.T) {
	l := Limits{MailboxEnvelopes: 100, MailboxBytes: 1 << 20, SenderEnvelopes: 3, SenderBytes: 1 << 20,
		IPEnvelopes: 5, IPBytes: 1 << 20, TotalEnvelopes: 8, TotalBytes: 1 << 20, RegistrationsPerIP: 2}
	backends(t, l, func(t *testing.T, s Store) {
		ctx := context.Background()
		for _, a := range []string{"bob/1", "carol/1", "dave/1"} {
			mustRegister(t, s, a, key(a[0]))
		}
		mallory := Origin{Address: "mallory/1", IP: "198.51.100.7"}
		var mrows []uint64
		for range 3 {
			rows, err := s.Append(ctx, "bob/1", []byte("junk"), 1, mallory)
			if err != nil {
				t.Fatal(err)
			}
			mrows = append(mrows, rows...)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("junk"), 1, mallory); !errors.Is(err, ErrSenderQuota) {
			t.Fatalf("a fourth envelope from one sender: got %v, want ErrSenderQuota", err)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("hello bob"), 1, alice); err != nil {
			t.Fatalf("another sender into the same mailbox: %v", err)
		}
		// mallory's IP holds 3 of its 5; two more fit elsewhere, the next not,
		// whichever address sends from it.
		sameIP := Origin{Address: "mallory/2", IP: mallory.IP}
		for _, to := range []string{"carol/1", "carol/1"} {
			if _, err := s.Append(ctx, to, []byte("junk"), 1, sameIP); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Append(ctx, "dave/1", []byte("junk"), 1, sameIP); !errors.Is(err, ErrStoreFull) {
			t.Fatalf("over the IP's share: got %v, want ErrStoreFull", err)
		}
		// The relay holds 6 of its 8; another IP fills it.
		other := Origin{Address: "erin/1", IP: "203.0.113.9"}
		if _, err := s.Append(ctx, "dave/1", []byte("x"), 2, other); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "dave/1", []byte("x"), 1, other); !errors.Is(err, ErrStoreFull) {
			t.Fatalf("over the total: got %v, want ErrStoreFull", err)
		}
		if st, _ := s.Stats(ctx); st.Envelopes != 8 {
			t.Fatalf("Stats: %+v, want 8 envelopes held", st)
		}
		// Acknowledged rows free every scope.
		if n, err := s.Ack(ctx, "bob/1", mrows); err != nil || n != 3 {
			t.Fatalf("Ack: %d, %v", n, err)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("junk"), 3, mallory); err != nil {
			t.Fatalf("after the ACK mallory's share is free again: %v", err)
		}

		for i, a := range []string{"x/1", "x/2"} {
			if _, err := s.Register(ctx, a, key(byte(10+i)), false, mallory.IP); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Register(ctx, "x/3", key(12), false, mallory.IP); !errors.Is(err, ErrRegistrationQuota) {
			t.Fatalf("a third registration from one IP: got %v, want ErrRegistrationQuota", err)
		}
		if _, err := s.Register(ctx, "x/1", key(10), false, mallory.IP); err != nil {
			t.Fatalf("registering an own address again costs nothing: %v", err)
		}
		if _, err := s.Register(ctx, "x/3", key(12), false, other.IP); err != nil {
			t.Fatalf("from another IP: %v", err)
		}
	})
}

// TestTakeBundleWithoutOneTime: a fetch may leave the pool alone, and every
// fetch reports the pool left.
func TestTakeBundleWithoutOneTime(t *testing.T) {
	backends(t, Limits{}, func(t *testing.T, s Store) {
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

// TestSQLiteMigratesVersion1: a version-1 database keeps its registrations
// and envelopes, which count in the totals (charged to no sender or IP).
func TestSQLiteMigratesVersion1(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) STRICT",
		"CREATE TABLE registrations (address TEXT PRIMARY KEY, signing_key BLOB NOT NULL) STRICT",
		"CREATE TABLE bundles (address TEXT PRIMARY KEY, bundle BLOB NOT NULL) STRICT",
		"CREATE TABLE one_time_prekeys (seq INTEGER PRIMARY KEY AUTOINCREMENT, address TEXT NOT NULL, id INTEGER NOT NULL, public_key BLOB NOT NULL, UNIQUE (address, id))",
		"CREATE TABLE envelopes (row INTEGER PRIMARY KEY AUTOINCREMENT, recipient TEXT NOT NULL, envelope BLOB NOT NULL)",
		"CREATE TABLE mailboxes (recipient TEXT PRIMARY KEY, envelopes INTEGER NOT NULL, bytes INTEGER NOT NULL) STRICT",
		"INSERT INTO meta VALUES ('relay_id', zeroblob(32))",
		"INSERT INTO registrations VALUES ('bob/1', x'01')",
		"INSERT INTO envelopes (recipient, envelope) VALUES ('bob/1', 'abc'), ('bob/1', 'de')",
		"INSERT INTO mailboxes VALUES ('bob/1', 2, 5)",
		"PRAGMA user_version = 1",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := mustOpenSQLite(t, dir, Limits{MailboxEnvelopes: 3})
	defer s.Close()
	ctx := context.Background()
	if st, err := s.Stats(ctx); err != nil || st.Envelopes != 2 || st.Bytes != 5 || st.Registrations != 1 {
		t.Fatalf("Stats after the migration: %+v, %v", st, err)
	}
	if _, err := s.Append(ctx, "bob/1", []byte("f"), 1, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "bob/1", []byte("g"), 1, alice); !errors.Is(err, ErrMailboxFull) {
		t.Fatalf("the migrated envelopes count in the mailbox: got %v, want ErrMailboxFull", err)
	}
	now := time.Now()
	rows, _ := s.Lease(ctx, "bob/1", "h", 10, now, now.Add(time.Minute))
	if n, err := s.Ack(ctx, "bob/1", []uint64{rows[0].ID, rows[1].ID}); err != nil || n != 2 {
		t.Fatalf("Ack of the migrated rows: %d, %v", n, err)
	}
	if st, _ := s.Stats(ctx); st.Envelopes != 1 || st.Bytes != 1 {
		t.Fatalf("Stats after the ACK: %+v, want the one new envelope", st)
	}
}
