package relaystore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
)

// TestBlobConformance runs the blob store's conformance suite against the
// memory and SQLite blob stores.
func TestBlobConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.RunBlobs(t, func(t *testing.T, l relaystore.BlobLimits) relaystore.BlobStore { return relaystore.NewMemoryBlobs(l) })
	})
	t.Run("sqlite", func(t *testing.T) {
		storetest.RunBlobs(t, func(t *testing.T, l relaystore.BlobLimits) relaystore.BlobStore {
			s, err := relaystore.OpenSQLiteBlobs(context.Background(), t.TempDir(), l)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

// TestSQLiteBlobsSurviveReopen: what the SQLite blob store said it held is
// there after it is closed and opened again, and the upload resumes there.
func TestSQLiteBlobsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now()
	s, err := relaystore.OpenSQLiteBlobs(ctx, dir, relaystore.BlobLimits{})
	if err != nil {
		t.Fatal(err)
	}
	owner := relaystore.BlobOwner{Address: "alice/1", IP: "192.0.2.1"}
	id, err := s.CreateBlob(ctx, 6, owner, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBlob(ctx, id, owner.Address, 0, []byte("abc"), now); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.BlobInfo(ctx, id, now); !errors.Is(err, relaystore.ErrClosed) {
		t.Fatalf("BlobInfo after Close: %v, want ErrClosed", err)
	}
	s, err = relaystore.OpenSQLiteBlobs(ctx, dir, relaystore.BlobLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if info, err := s.BlobInfo(ctx, id, now); err != nil || info.Held != 3 || info.Size != 6 {
		t.Fatalf("after reopening: %+v, %v; want 3 of 6 held", info, err)
	}
	if _, err := s.PutBlob(ctx, id, owner.Address, 3, []byte("def"), now); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetBlob(ctx, id, 0, 6, now); err != nil || string(got) != "abcdef" {
		t.Fatalf("read: %q, %v", got, err)
	}
}
