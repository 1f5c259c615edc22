package relaystore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSQLiteBlobsMigrateVersion1: a blob database of version 1 (charges
// taken whole at creation, no chunk size, no time of the last write) opens
// at version 2: a blob held in part keeps its charge, takes its chunk size
// from its first chunk, starts its idle time at the opening, and its upload
// goes on in chunks of that size.
func TestSQLiteBlobsMigrateVersion1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, BlobFileName)))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range strings.Split(blobSchema, ";") {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	id := NewBlobID()
	exp := time.Now().Add(24 * time.Hour)
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{"PRAGMA user_version = 1", nil},
		{"INSERT INTO blobs (id, owner, ip, size, charge, held, expires, gone) VALUES (?, 'alice/1', '192.0.2.1', 30, 30, 20, ?, 0)", []any{id[:], exp.UnixNano()}},
		{"INSERT INTO blob_chunks (blob, offset, data) VALUES (?, 0, ?), (?, 10, ?)", []any{id[:], []byte("0123456789"), id[:], []byte("abcdefghij")}},
	} {
		if _, err := db.Exec(stmt.q, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := OpenSQLiteBlobs(ctx, dir, BlobLimits{MinCharge: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	if st, err := s.BlobStats(ctx); err != nil || st != (BlobStats{Blobs: 1, Charged: 30, Held: 20}) {
		t.Fatalf("stats after the migration: %+v, %v; want the blob's whole charge", st, err)
	}
	if _, err := s.PutBlob(ctx, id, "alice/1", 20, []byte("KLMNOPQRST"), now.Add(50*time.Minute)); err != nil {
		t.Fatalf("the upload goes on in chunks of 10: %v", err)
	}
	if got, err := s.GetBlob(ctx, id, 5, 20, now.Add(50*time.Minute)); err != nil || string(got) != "56789abcdefghijKLMNO" {
		t.Fatalf("read: %q, %v", got, err)
	}
	if st, err := s.BlobStats(ctx); err != nil || st != (BlobStats{Blobs: 1, Charged: 30, Held: 30}) {
		t.Fatalf("stats after the upload: %+v, %v", st, err)
	}
	var version int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != blobSchemaVersion {
		t.Fatalf("version %d, %v; want %d", version, err, blobSchemaVersion)
	}
}
