package natsstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
	"github.com/parley-chat/parley/wire"
)

// TestBlobConformance runs the blob store's conformance suite on one node
// (the blob layout does not depend on the replicas).
func TestBlobConformance(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	storetest.RunBlobs(t, func(t *testing.T, l relaystore.BlobLimits) relaystore.BlobStore {
		s, err := natsstore.Open(context.Background(), c.URLs(), natsstore.Options{Prefix: fmt.Sprintf("B%d_", next.Add(1))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		b, err := natsstore.OpenBlobs(context.Background(), s, 1, l)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// TestBlobSweepOfNothing: the relay sweeps every minute, most often an
// empty store: that is no error.
func TestBlobSweepOfNothing(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Prefix: fmt.Sprintf("E%d_", next.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := natsstore.OpenBlobs(ctx, s, 1, relaystore.BlobLimits{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if n, err := b.ExpireBlobs(ctx, now, now, 10); err != nil || n != 0 {
		t.Fatalf("sweep of an empty store: %d, %v; want 0, nil", n, err)
	}
	if st, err := b.BlobStats(ctx); err != nil || st != (relaystore.BlobStats{}) {
		t.Fatalf("stats of an empty store: %+v, %v", st, err)
	}
}

// TestBlobRangeIsFewRequests (issue 30, finding 3): a read of the largest
// range costs the record, the last chunk and the chunks of the range: at
// most 7 requests, for a blob written in the least chunks allowed, wherever
// the range lies. (Before, the chunk holding an offset was searched for,
// and a blob of one-byte writes cost a request per byte read.)
func TestBlobRangeIsFewRequests(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Prefix: fmt.Sprintf("R%d_", next.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := natsstore.OpenBlobs(ctx, s, 1, relaystore.BlobLimits{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	owner := relaystore.BlobOwner{Address: "mallory/1", IP: "192.0.2.2"}
	const size = 32*wire.MinBlobChunk + 100
	id, err := b.CreateBlob(ctx, size, owner, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i * 7)
	}
	for off := 0; off < size; off += wire.MinBlobChunk {
		end := min(off+wire.MinBlobChunk, size)
		if _, err := b.PutBlob(ctx, id, owner.Address, int64(off), content[off:end], now); err != nil {
			t.Fatal(err)
		}
	}
	for _, off := range []int{0, 1, wire.MinBlobChunk - 1, 10*wire.MinBlobChunk + 12345, size - wire.MaxBlobChunk, size - 50} {
		before := s.Requests()
		got, err := b.GetBlob(ctx, id, int64(off), wire.MaxBlobChunk, now)
		cost := s.Requests() - before
		if err != nil || !bytes.Equal(got, content[off:min(off+wire.MaxBlobChunk, size)]) {
			t.Fatalf("read at %d: %d bytes, %v", off, len(got), err)
		}
		t.Logf("a read of %d bytes at %d: %d requests", len(got), off, cost)
		if cost > 7 {
			t.Errorf("a read of %d bytes at %d cost %d requests, want at most 7", len(got), off, cost)
		}
	}
}
