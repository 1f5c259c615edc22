package relaystore_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
	"github.com/parley-chat/parley/wire"
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
	lim := relaystore.BlobLimits{MinChunk: 3}
	s, err := relaystore.OpenSQLiteBlobs(ctx, dir, lim)
	if err != nil {
		t.Fatal(err)
	}
	owner := relaystore.BlobOwner{Address: "alice/1", IP: "192.0.2.1"}
	id, err := s.CreateBlob(ctx, 6, owner, now, now.Add(time.Hour))
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
	s, err = relaystore.OpenSQLiteBlobs(ctx, dir, lim)
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

// TestMemoryBlobsKeepLittlePerByte (issue 30, finding 2): a blob written in
// the least chunks allowed plus one byte, the worst for Go's allocator
// (65,537 bytes take 73,728), grows the heap by at most 1.15 bytes per
// blob byte, where one-byte writes took 136 to 143.
func TestMemoryBlobsKeepLittlePerByte(t *testing.T) {
	const size = 16 << 20
	ctx := context.Background()
	now := time.Now()
	s := relaystore.NewMemoryBlobs(relaystore.BlobLimits{})
	owner := relaystore.BlobOwner{Address: "mallory/1", IP: "192.0.2.2"}
	id, err := s.CreateBlob(ctx, size, owner, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBlob(ctx, id, owner.Address, 0, []byte{1}, now); !errors.Is(err, relaystore.ErrBlobChunk) {
		t.Fatalf("a one-byte write: %v, want ErrBlobChunk", err)
	}
	chunk := make([]byte, wire.MinBlobChunk+1)
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	for off := int64(0); off < size; off += int64(len(chunk)) {
		n := min(int64(len(chunk)), size-off)
		if _, err := s.PutBlob(ctx, id, owner.Address, off, chunk[:n], now); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(heap()-before) / size
	t.Logf("%.4f bytes of heap per blob byte", per)
	if per > 1.15 {
		t.Errorf("%.3f bytes of heap per blob byte, want at most 1.15", per)
	}
	runtime.KeepAlive(s)
}
