package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// testKDF is the cheapest Argon2id setting: tests open hundreds of profiles.
// Real profiles always use defaultKDF.
var testKDF = KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}

var testPassphrase = []byte("correct horse battery staple")

// MustOpenDB creates a fresh profile in a temporary directory with a cheap
// KDF and closes it when the test ends.
func MustOpenDB(tb testing.TB) *DB {
	tb.Helper()
	return mustCreate(tb, filepath.Join(tb.TempDir(), "profile"))
}

// mustCreate creates a profile in dir and closes it when the test ends.
func mustCreate(tb testing.TB, dir string) *DB {
	tb.Helper()
	db, err := Create(context.Background(), dir, testPassphrase, Options{KDF: testKDF})
	if err != nil {
		tb.Fatalf("Create(%s) = %v, want a profile", dir, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// mustOpen opens the profile in dir and closes it when the test ends.
func mustOpen(tb testing.TB, dir string) *DB {
	tb.Helper()
	db, err := Open(context.Background(), dir, testPassphrase, Options{})
	if err != nil {
		tb.Fatalf("Open(%s) = %v, want the profile", dir, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// mustClose closes db and fails the test on an error.
func mustClose(tb testing.TB, db *DB) {
	tb.Helper()
	if err := db.Close(); err != nil {
		tb.Fatalf("Close() = %v", err)
	}
}

// rawDB opens the database file at path on a connection of its own, without
// the profile lock, for tests that must look behind the store's back. The
// caller must close the store's DB first unless the test is about two
// connections.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := openSQL(context.Background(), path)
	if err != nil {
		tb.Fatalf("openSQL(%s) = %v", path, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// dirDigest returns the name and SHA-256 of every file in dir. Call it only
// while no store has the profile open: reading a database file through a
// second descriptor and closing it would drop SQLite's POSIX locks.
func dirDigest(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		sum := sha256.Sum256(b)
		m[e.Name()] = hex.EncodeToString(sum[:])
	}
	return m
}

// withTx runs f in a write transaction of db and commits.
func withTx(tb testing.TB, db *DB, f func(ctx context.Context, t *tx) error) error {
	tb.Helper()
	ctx := context.Background()
	t, err := db.beginImmediate(ctx)
	if err != nil {
		return err
	}
	defer t.rollback()
	if err := f(ctx, t); err != nil {
		return err
	}
	return t.persist()
}
