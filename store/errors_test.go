package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"

	"github.com/parley-chat/parley/engine"
)

// TestMapErr provokes each kind of SQLite failure on a real profile and checks
// what mapErr makes of it.
func TestMapErr(t *testing.T) {
	db := MustOpenDB(t)
	id := bytes.Repeat([]byte{1}, 16)
	insertOutbound := func(ctx context.Context, w *tx) error {
		_, err := w.exec(ctx, "INSERT INTO outbound (recipient, id, created_at, sealed_frame) VALUES ('bob/1', ?, 1, x'00')", id)
		return err
	}
	if err := withTx(t, db, insertOutbound); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) func(context.Context, *tx) error {
		return func(ctx context.Context, w *tx) error {
			_, err := w.exec(ctx, q, args...)
			return err
		}
	}
	tests := []struct {
		name string
		f    func(context.Context, *tx) error
		want error // engine.ErrStorage: an opaque error matching no other sentinel
	}{
		{"unique", insertOutbound, engine.ErrConflict},
		{"primary key", exec("INSERT INTO meta (k, v) VALUES ('kdf', x'00')"), engine.ErrConflict},
		{"not null", exec("INSERT INTO peer (address, pinned_identity, pinned_at) VALUES ('bob/1', NULL, 1)"), engine.ErrConflict},
		{"check", exec("INSERT INTO outbound (recipient, id, created_at, sealed_frame) VALUES ('bob/1', x'01', 1, x'00')"), engine.ErrConflict},
		{"strict type", exec("INSERT INTO meta (k, v) VALUES ('x', 'text')"), engine.ErrConflict},
		// The session's reference to its peer is deferred: it fails at commit.
		{"deferred foreign key", exec("INSERT INTO session VALUES ('carol/1', 1, ?, 0, 1, x'00')", bytes.Repeat([]byte{1}, 32)), engine.ErrConflict},
		{"syntax", exec("INSERT INTO nosuch VALUES (1)"), engine.ErrStorage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := withTx(t, db, tt.f)
			if err == nil {
				t.Fatal("statement succeeded, want an error")
			}
			var se *sqlite.Error
			if errors.As(err, &se) {
				t.Errorf("error %v exposes the driver's type", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
			if tt.want == engine.ErrStorage && engine.ErrorName(err) != "storage_failed" {
				t.Errorf("error = %v, matches %s; want only storage_failed", err, engine.ErrorName(err))
			}
		})
	}
}

func TestMapErrPassesThrough(t *testing.T) {
	for _, err := range []error{nil, context.Canceled, fs.ErrNotExist, engine.ErrConflict, fmt.Errorf("x: %w", context.DeadlineExceeded)} {
		if got := mapErr(err); got != err {
			t.Errorf("mapErr(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestDiskFull caps the database's size and writes until it is full.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	var pages int
	if err := db.sql.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// max_page_count belongs to the connection; the store has only one.
	if _, err := db.sql.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+8)); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte{0xee}, 4096)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = withTx(t, db, func(ctx context.Context, w *tx) error {
			return w.putMeta(ctx, fmt.Sprintf("filler %d", i), body)
		})
	}
	if !errors.Is(err, engine.ErrStorageFull) {
		t.Fatalf("writing past max_page_count = %v, want ErrStorageFull", err)
	}
	if got := engine.ErrorName(err); got != "storage_full" {
		t.Errorf("ErrorName = %q, want storage_full", got)
	}
	// The failed transaction rolled back; the store still works.
	if _, err := db.settings(ctx); err != nil {
		t.Errorf("settings after a full disk = %v", err)
	}
}

// TestBusy holds SQLite's write lock from a foreign connection: the store's
// next write transaction gives up with ErrProfileOpen after busy_timeout.
func TestBusy(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	if _, err := db.sql.ExecContext(ctx, "PRAGMA busy_timeout = 10"); err != nil {
		t.Fatal(err)
	}
	other := rawDB(t, filepath.Join(db.dir, dbFile))
	otx, err := other.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		t.Fatal(err)
	}
	defer otx.Rollback()

	_, err = db.beginImmediate(ctx)
	if !errors.Is(err, engine.ErrProfileOpen) {
		t.Fatalf("beginImmediate while another program writes = %v, want ErrProfileOpen", err)
	}
	otx.Rollback()
	if err := withTx(t, db, func(ctx context.Context, w *tx) error { return w.putMeta(ctx, "x", nil) }); err != nil {
		t.Errorf("write after the other program let go = %v", err)
	}
}
