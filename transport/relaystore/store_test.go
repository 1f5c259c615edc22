package relaystore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
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

// TestSQLiteWritesShareCommits (issue 30, finding 5): block-list changes,
// accepted peers and bundle publications from many clients at once join
// the group commit instead of syncing a transaction each. 48 clients each
// block and unblock, record a peer and publish 10 times: 1,920 writes in
// far fewer transactions, every one applied.
func TestSQLiteWritesShareCommits(t *testing.T) {
	s := mustOpenSQLite(t, t.TempDir(), Limits{})
	defer s.Close()
	ctx := context.Background()
	const clients, rounds = 48, 10
	for i := range clients {
		mustRegister(t, s, fmt.Sprintf("c%d/1", i), key(byte(i)))
	}
	before := s.commits.Load()
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			owner := fmt.Sprintf("c%d/1", i)
			b := wire.Bundle{Address: owner}
			var err error
			for j := 0; j < rounds && err == nil; j++ {
				err = errors.Join(s.Block(ctx, owner, "mallory/1", true), s.Block(ctx, owner, "mallory/1", false))
				if err == nil {
					_, err = s.Accept(ctx, owner, fmt.Sprintf("p%d/1", j), time.Now())
				}
				if err == nil {
					_, err = s.PutBundle(ctx, owner, key(byte(i)), b, []wire.OneTimePreKeyPublic{{ID: uint32(j)}})
				}
			}
			errs <- err
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	writes := int64(clients * rounds * 4)
	commits := s.commits.Load() - before
	t.Logf("%d writes in %d transactions", writes, commits)
	if commits > writes/4 {
		t.Errorf("%d writes took %d transactions, want at most a quarter: they should share the group commit", writes, commits)
	}
	for i := range clients {
		owner := fmt.Sprintf("c%d/1", i)
		rel, err := s.Relation(ctx, owner, fmt.Sprintf("p%d/1", rounds-1), time.Now())
		if err != nil || !rel.Accepted {
			t.Fatalf("%s accepts its last peer: %+v, %v", owner, rel, err)
		}
		if rel, err := s.Relation(ctx, owner, "mallory/1", time.Now()); err != nil || rel.Blocked {
			t.Fatalf("%s blocks mallory after the last unblock: %+v, %v", owner, rel, err)
		}
		if n, err := s.OneTimePreKeys(ctx, owner); err != nil || n != rounds {
			t.Fatalf("%s's pool: %d, %v; want %d", owner, n, err, rounds)
		}
	}
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
	if n, err := s.Ack(ctx, "bob/1", []uint64{rows[0].ID, rows[1].ID}); err != nil || len(n) != 2 {
		t.Fatalf("Ack of the migrated rows: %d, %v", len(n), err)
	}
	if st, _ := s.Stats(ctx); st.Envelopes != 1 || st.Bytes != 1 {
		t.Fatalf("Stats after the ACK: %+v, want the one new envelope", st)
	}
}

// TestSQLiteMigratesVersion2: the envelopes of a version-2 database take
// their IDs from their own bytes, so that their senders are told when they
// go; an envelope too short to hold one is told by nothing.
func TestSQLiteMigratesVersion2(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenSQLite(t, dir, Limits{})
	ctx := context.Background()
	if _, err := s.Register(ctx, "bob/1", [32]byte{1}, false, ""); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	env := append([]byte{2, 2}, bytes.Repeat([]byte{0xab}, 16)...)
	for _, q := range []string{
		"DROP INDEX envelopes_by_accepted",
		"ALTER TABLE envelopes DROP COLUMN envelope_id",
		// What version 3 added (the stranger room, accepted peers, block lists).
		"ALTER TABLE envelopes DROP COLUMN stranger",
		"DROP TABLE accepted_peers",
		"DROP TABLE blocked_senders",
		// What version 5 added (payloads kept once).
		"ALTER TABLE envelopes DROP COLUMN payload",
		"DROP TABLE payloads",
		"INSERT INTO envelopes (recipient, envelope, sender) VALUES ('bob/1', x'" + hex.EncodeToString(append(env, 'x')) + "', 'alice/1'), ('bob/1', 'short', 'carol/1')",
		"PRAGMA user_version = 2",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s = mustOpenSQLite(t, dir, Limits{})
	defer s.Close()
	now := time.Now()
	rows, _ := s.Lease(ctx, "bob/1", "h", 10, now, now.Add(time.Minute))
	if len(rows) != 2 {
		t.Fatalf("leased %d rows, want the 2 of version 2", len(rows))
	}
	got, err := s.Ack(ctx, "bob/1", []uint64{rows[0].ID, rows[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	var id wire.EnvelopeID
	copy(id[:], env[2:])
	want := []Removed{{Recipient: "bob/1", Row: rows[0].ID, Sender: "alice/1", Envelope: id}, {Recipient: "bob/1", Row: rows[1].ID, Sender: "carol/1"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Ack after the migration: %+v, want %+v", got, want)
	}
}

// TestSQLiteStatsRunningCounts: Stats comes from running totals (no count
// over the tables), which follow registrations, appends, acknowledgements
// and expiries, and are read back when the database opens again.
func TestSQLiteStatsRunningCounts(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenSQLite(t, dir, Limits{})
	ctx := context.Background()
	for i, a := range []string{"bob/1", "carol/1", "dave/1"} {
		if _, err := s.Register(ctx, a, [32]byte{byte(i + 1)}, false, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Register(ctx, "bob/1", [32]byte{1}, false, ""); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Append(ctx, "bob/1", []byte("hello"), 2, alice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ack(ctx, "bob/1", rows[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "carol/1", []byte("old"), 1, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expire(ctx, time.Now(), time.Now().Add(time.Hour), 1); err != nil {
		t.Fatal(err)
	}
	want := Stats{Registrations: 3, Envelopes: 1, Bytes: 3, Stored: 3}
	if st, err := s.Stats(ctx); err != nil || st != want {
		t.Fatalf("Stats: %+v, %v; want %+v", st, err, want)
	}
	s.Close()
	s = mustOpenSQLite(t, dir, Limits{})
	defer s.Close()
	if st, err := s.Stats(ctx); err != nil || st != want {
		t.Fatalf("Stats after reopening: %+v, %v; want %+v", st, err, want)
	}
}

// TestSQLiteAppendBatchOneCommit: a batch of appends, refused items
// among them, is one transaction (one sync), not one per item.
func TestSQLiteAppendBatchOneCommit(t *testing.T) {
	s := mustOpenSQLite(t, t.TempDir(), Limits{})
	defer s.Close()
	ctx := context.Background()
	mustRegister(t, s, "bob/1", key(2))
	var items []AppendItem
	for i := range 64 {
		to := "bob/1"
		if i%8 == 7 {
			to = "nobody/1"
		}
		items = append(items, AppendItem{Recipient: to, Env: []byte(fmt.Sprint("e", i)), Copies: 1, From: Origin{Address: "alice/1"}})
	}
	before := s.commits.Load()
	stored := 0
	for i, r := range s.AppendBatch(ctx, items) {
		if (r.Err == nil) != (i%8 != 7) {
			t.Fatalf("item %d: %v, %v", i, r.Rows, r.Err)
		}
		if r.Err == nil {
			stored++
		}
	}
	if got := s.commits.Load() - before; got != 1 || stored != 56 {
		t.Fatalf("a batch of 64 (56 stored, got %d) took %d transactions, want 1", stored, got)
	}
}
