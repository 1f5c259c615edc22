package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

func TestCreateOpenRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "profile")
	db := mustCreate(t, dir)

	want := settings{address: engine.MustParseAddress("alice/1"), relayURL: "ws://127.0.0.1:7000"}
	if err := withTx(t, db, func(ctx context.Context, w *tx) error { return w.putSettings(ctx, want) }); err != nil {
		t.Fatalf("putSettings = %v", err)
	}
	rk := rowKey([]byte("bob/1"), bytes.Repeat([]byte{7}, 16))
	sealed := db.seal.seal(kindOutboundFrame, rk, []byte("hello"))
	mustClose(t, db)

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o700); got != want {
		t.Errorf("profile directory mode = %v, want %v", got, want)
	}
	got := dirNames(t, dir)
	if want := []string{dbFile, lockFile}; !slices.Equal(got, want) {
		t.Errorf("files after Close = %v, want %v", got, want)
	}

	db = mustOpen(t, dir)
	st, err := db.settings(ctx)
	if err != nil {
		t.Fatalf("settings() = %v", err)
	}
	if st != want {
		t.Errorf("settings() = %+v, want %+v", st, want)
	}
	// The storage key survived the round trip.
	pt, err := db.seal.open(kindOutboundFrame, rk, sealed)
	if err != nil || string(pt) != "hello" {
		t.Errorf("open record sealed before reopening = %q, %v; want \"hello\"", pt, err)
	}
}

func TestSettingsUnset(t *testing.T) {
	db := MustOpenDB(t)
	st, err := db.settings(context.Background())
	if err != nil || st != (settings{}) {
		t.Errorf("settings() of a new profile = %+v, %v; want zero", st, err)
	}
}

func TestOpenWrongPassphrase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mustClose(t, mustCreate(t, dir))
	before := dirDigest(t, dir)

	for _, pass := range [][]byte{nil, []byte("correct horse battery stapl"), []byte("correct horse battery staple ")} {
		db, err := Open(ctx, dir, pass, Options{})
		if !errors.Is(err, engine.ErrWrongPassphrase) {
			if db != nil {
				db.Close()
			}
			t.Fatalf("Open(%q) = %v, want ErrWrongPassphrase", pass, err)
		}
		if db != nil {
			t.Errorf("Open(%q) returned a DB with its error", pass)
		}
	}
	if after := dirDigest(t, dir); !sameProfileFiles(before, after) {
		t.Errorf("files after wrong passphrases = %v, want unchanged %v", after, before)
	}
	// The failed opens released the lock.
	mustClose(t, mustOpen(t, dir))
}

func TestCreateExisting(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, mustCreate(t, dir))
	before := dirDigest(t, dir)
	_, err := Create(context.Background(), dir, []byte("other"), Options{KDF: testKDF})
	if !errors.Is(err, engine.ErrProfileExists) {
		t.Fatalf("Create over a profile = %v, want ErrProfileExists", err)
	}
	if after := dirDigest(t, dir); !maps.Equal(before, after) {
		t.Errorf("files after a refused Create = %v, want unchanged %v", after, before)
	}
	mustClose(t, mustOpen(t, dir))
}

func TestOpenNoProfile(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name  string
		setup func(dir string)
	}{
		{"no directory", func(string) {}},
		{"empty directory", func(dir string) { os.Mkdir(dir, 0o700) }},
		{"half-made profile", func(dir string) {
			os.Mkdir(dir, 0o700)
			os.WriteFile(filepath.Join(dir, newDBFile), []byte("partial"), 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(tmp, strings.ReplaceAll(tt.name, " ", "-"))
			tt.setup(dir)
			before, _ := os.ReadDir(dir)
			_, err := Open(context.Background(), dir, testPassphrase, Options{})
			if !errors.Is(err, engine.ErrNoProfile) {
				t.Fatalf("Open = %v, want ErrNoProfile", err)
			}
			if after, _ := os.ReadDir(dir); len(after) != len(before) {
				t.Errorf("Open of no profile left %d files in the directory, want %d", len(after), len(before))
			}
		})
	}
}

func TestCreateAfterCrashedCreate(t *testing.T) {
	dir := t.TempDir()
	// A Create that died before its rename leaves parley.db.new behind.
	for _, f := range []string{newDBFile, newDBFile + "-wal", newDBFile + "-shm"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, mustCreate(t, dir))
	if got, want := dirNames(t, dir), []string{dbFile, lockFile}; !slices.Equal(got, want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	mustClose(t, mustOpen(t, dir))
}

func TestCreateRejectsBadKDF(t *testing.T) {
	tests := []KDFParams{
		{Time: 0, MemoryKiB: 8, Threads: 1},
		{Time: 1, MemoryKiB: 0, Threads: 1},
		{Time: 1, MemoryKiB: 8, Threads: 0},
		{Time: maxKDFTime + 1, MemoryKiB: 8, Threads: 1},
		{Time: 1, MemoryKiB: maxKDFMemoryKiB + 1, Threads: 1},
	}
	for _, p := range tests {
		dir := filepath.Join(t.TempDir(), "p")
		if db, err := Create(context.Background(), dir, testPassphrase, Options{KDF: p}); err == nil {
			db.Close()
			t.Errorf("Create with KDF %+v succeeded, want an error", p)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Create with KDF %+v made the directory (%v), want nothing", p, err)
		}
	}
}

func TestKDFRecordRoundTrip(t *testing.T) {
	r, err := newKDFRecord(defaultKDF)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeKDFRecord(r.encode())
	if err != nil || got != r {
		t.Errorf("decodeKDFRecord(encode(%+v)) = %+v, %v", r, got, err)
	}
	bad := map[string][]byte{
		"short":     r.encode()[:kdfRecordSize-1],
		"long":      append(r.encode(), 0),
		"algorithm": append([]byte{2}, r.encode()[1:]...),
		"time 0":    append(append([]byte{1}, 0, 0, 0, 0), r.encode()[5:]...),
		"huge time": append(append([]byte{1}, 0xff, 0xff, 0xff, 0xff), r.encode()[5:]...),
	}
	for name, b := range bad {
		if _, err := decodeKDFRecord(b); err == nil {
			t.Errorf("decodeKDFRecord(%s) succeeded, want an error", name)
		}
	}
}

func TestPragmas(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	tests := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"busy_timeout", "5000"},
		{"foreign_keys", "1"},
		{"secure_delete", "1"},
	}
	for _, tt := range tests {
		var got string
		if err := db.sql.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tt.pragma, err)
		}
		if got != tt.want {
			t.Errorf("PRAGMA %s = %s, want %s", tt.pragma, got, tt.want)
		}
	}
	// The pragmas hold inside a write transaction too (the same connection).
	err := withTx(t, db, func(ctx context.Context, w *tx) error {
		var got int
		if err := w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
			return err
		}
		if got != 2 {
			return errors.New("synchronous is not FULL inside a transaction")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestBeginImmediate checks that a write transaction holds SQLite's write
// lock from its first statement: another connection cannot start one.
func TestBeginImmediate(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	tx, err := db.beginImmediate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.rollback()

	other := rawDB(t, filepath.Join(db.dir, dbFile))
	if _, err := other.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	otx, err := other.BeginTx(ctx, nil)
	if err == nil {
		otx.Rollback()
		t.Fatal("a second BEGIN IMMEDIATE succeeded while a write transaction was open, want SQLITE_BUSY")
	}
	if !errors.Is(mapErr(err), engine.ErrProfileOpen) {
		t.Errorf("second BEGIN IMMEDIATE = %v, want it mapped to ErrProfileOpen", mapErr(err))
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	mustClose(t, db)
	if err := db.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if _, err := db.beginImmediate(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("beginImmediate after Close = %v, want ErrClosed", err)
	}
	if _, err := db.settings(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("settings after Close = %v, want ErrClosed", err)
	}
}

// TestStatementsPreparedOnFirstUse: a statement that is not hot is prepared
// at its first read outside a transaction, and one first met inside a
// transaction (whose connection is the only one) runs as text and is
// prepared before the next transaction.
func TestStatementsPreparedOnFirstUse(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	const read = "SELECT count(*) FROM meta WHERE k <> 'a-statement-no-plan-uses'"
	var n int
	if err := db.queryRow(ctx, read).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if db.stmts.m[read] == nil {
		t.Errorf("read outside a transaction not prepared")
	}
	const write = "UPDATE meta SET v = v WHERE k = 'a-statement-no-plan-uses'"
	for i := range 2 {
		err := withTx(t, db, func(ctx context.Context, w *tx) error {
			_, err := w.exec(ctx, write)
			return err
		})
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if i == 0 && (db.stmts.m[write] != nil || !db.stmts.want[write]) {
			t.Errorf("statement met in a transaction: prepared %v, wanted %v; want not yet, wanted", db.stmts.m[write] != nil, db.stmts.want[write])
		}
	}
	if db.stmts.m[write] == nil || db.stmts.want[write] {
		t.Errorf("statement met in a transaction not prepared by the next one")
	}
}

func TestPreparedStatements(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	for _, q := range hotStatements {
		if db.stmts.m[q] == nil {
			t.Errorf("hot statement %q not prepared", q)
		}
	}
	// Many transactions reuse the prepared statements and see each other's
	// writes.
	for i := range 20 {
		err := withTx(t, db, func(ctx context.Context, w *tx) error {
			return w.putMeta(ctx, "counter", []byte{byte(i)})
		})
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	got, err := getMeta(ctx, db.sql, "counter")
	if err != nil || !bytes.Equal(got, []byte{19}) {
		t.Errorf("counter = %v, %v; want [19]", got, err)
	}
	err = withTx(t, db, func(ctx context.Context, w *tx) error {
		rows, err := w.query(ctx, "SELECT k FROM meta ORDER BY k")
		if err != nil {
			return err
		}
		defer rows.Close()
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		if want := []string{"counter", metaKDF, metaStorageKey}; !slices.Equal(keys, want) {
			t.Errorf("meta keys = %v, want %v", keys, want)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestContextCanceled checks that a canceled context comes back as itself.
func TestContextCanceled(t *testing.T) {
	db := MustOpenDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := db.beginImmediate(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("beginImmediate(expired ctx) = %v, want context.DeadlineExceeded", err)
	}
}

func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// crashedProfile returns a copy of a profile taken while it was open with
// committed transactions still only in its write-ahead log: what a process
// killed after a commit leaves behind.
func crashedProfile(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := MustOpenDB(t)
	if _, err := db.sql.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := withTx(t, db, func(ctx context.Context, w *tx) error {
			return w.putMeta(ctx, fmt.Sprintf("k%d", i), bytes.Repeat([]byte{byte(i)}, 1000))
		}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, f := range []string{dbFile, dbFile + "-wal", lockFile} {
		b, err := os.ReadFile(filepath.Join(db.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == dbFile+"-wal" && len(b) == 0 {
			t.Fatal("the write-ahead log is empty; the test needs committed frames in it")
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOpenWrongPassphraseAfterCrash(t *testing.T) {
	dir := crashedProfile(t)
	before := dirDigest(t, dir)
	if _, err := Open(context.Background(), dir, []byte("wrong"), Options{}); !errors.Is(err, engine.ErrWrongPassphrase) {
		t.Fatalf("Open(wrong) = %v, want ErrWrongPassphrase", err)
	}
	if after := dirDigest(t, dir); !sameProfileFiles(before, after) {
		t.Errorf("files after a wrong passphrase = %v, want unchanged %v", after, before)
	}
	// The right passphrase recovers the committed writes.
	db := mustOpen(t, dir)
	got, err := getMeta(context.Background(), db.sql, "k4")
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{4}, 1000)) {
		t.Errorf("k4 after recovery = %d bytes, %v; want 1000 bytes of 4", len(got), err)
	}
}

// emptyDigest is the SHA-256 of no bytes.
const emptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// sameProfileFiles reports whether two dirDigests show the same profile
// content. SQLite's -shm index is derived from the log and ignored, and a
// missing -wal equals an empty one: a read-only connection creates both.
func sameProfileFiles(before, after map[string]string) bool {
	norm := func(m map[string]string) map[string]string {
		m = maps.Clone(m)
		delete(m, dbFile+"-shm")
		if m[dbFile+"-wal"] == emptyDigest {
			delete(m, dbFile+"-wal")
		}
		return m
	}
	return maps.Equal(norm(before), norm(after))
}

func TestMeasureCommitRate(t *testing.T) {
	r, err := MeasureCommitRate(context.Background(), t.TempDir(), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Synchronous != "FULL" || r.Commits < 50 || r.PerSecond <= 0 {
		t.Fatalf("got %+v, want at least 50 commits at synchronous FULL", r)
	}
}
