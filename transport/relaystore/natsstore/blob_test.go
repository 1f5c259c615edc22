package natsstore_test

import (
	"context"
	"fmt"
	"testing"

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
