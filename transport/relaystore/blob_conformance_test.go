package relaystore_test

import (
	"testing"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
)

// TestBlobConformance runs the blob store's conformance suite against the
// memory and SQLite blob stores.
func TestBlobConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.RunBlobs(t, func(t *testing.T, l relaystore.BlobLimits) relaystore.BlobStore { return relaystore.NewMemoryBlobs(l) })
	})
}
