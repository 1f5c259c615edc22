package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
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
