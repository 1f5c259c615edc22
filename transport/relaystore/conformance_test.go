package relaystore_test

import (
	"context"
	"testing"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
)

// TestConformance runs the conformance suite against the memory and SQLite
// stores.
func TestConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, l relaystore.Limits) relaystore.Store { return relaystore.NewMemory(l) })
	})
	t.Run("sqlite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, l relaystore.Limits) relaystore.Store {
			s, err := relaystore.OpenSQLite(context.Background(), t.TempDir(), l)
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}
