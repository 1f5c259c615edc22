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

// TestSharedPayloadOnce: the memory and SQLite stores keep a payload sent
// to a group of 50 once, with a head of a few dozen bytes per mailbox.
func TestSharedPayloadOnce(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.RunSharedOnce(t, func(t *testing.T, l relaystore.Limits) relaystore.Store { return relaystore.NewMemory(l) }, 49, 1200)
	})
	t.Run("sqlite", func(t *testing.T) {
		storetest.RunSharedOnce(t, func(t *testing.T, l relaystore.Limits) relaystore.Store {
			s, err := relaystore.OpenSQLite(context.Background(), t.TempDir(), l)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, 49, 1200)
	})
}
