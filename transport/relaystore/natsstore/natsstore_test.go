package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
	"github.com/parley-chat/parley/wire"
)

// next gives each store of a test its own names: one cluster, many fresh
// stores.
var next atomic.Int64

func open(t *testing.T, c *natstest.Cluster, l relaystore.Limits) *natsstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 3, Limits: l, Prefix: fmt.Sprintf("T%d_", next.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the store conformance suite on a 3-node cluster with
// every stream and bucket replicated three times.
func TestConformance(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	storetest.Run(t, func(t *testing.T, l relaystore.Limits) relaystore.Store { return open(t, c, l) })
}

// TestAcrossRelays: two stores on one cluster (two relay processes): the
// first key to register an address owns it on both; a one-time prekey is
// handed out once under concurrent fetches through both; an envelope
// appended through one is signalled to a watcher on the other at once.
func TestAcrossRelays(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	ctx := context.Background()
	prefix := fmt.Sprintf("X%d_", next.Add(1))
	openShared := func() *natsstore.Store {
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 3, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openShared(), openShared()
	if ida, _ := a.RelayID(ctx); ida != func() [32]byte { id, _ := b.RelayID(ctx); return id }() {
		t.Fatal("two relays on one cluster present two IDs")
	}
	if _, err := a.Register(ctx, "bob/1", [32]byte{1}, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Register(ctx, "bob/1", [32]byte{2}, false, ""); err == nil {
		t.Fatal("a second key took bob/1 through the other relay")
	}
	bundle := wire.Bundle{Address: "bob/1"}
	bundle.SignedPreKey.ID, bundle.SignedPreKey.Expires = 1, 100
	bundle.KEMPreKey.ID, bundle.KEMPreKey.Expires = 2, 100
	var keys []wire.OneTimePreKeyPublic
	for i := range 40 {
		keys = append(keys, wire.OneTimePreKeyPublic{ID: uint32(i + 1), PublicKey: [32]byte{byte(i + 1)}})
	}
	if _, err := a.PutBundle(ctx, "bob/1", [32]byte{1}, bundle, keys); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[uint32]int{}
	var wg sync.WaitGroup
	for _, s := range []*natsstore.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				got, _, err := s.TakeBundle(ctx, "bob/1", true)
				if err != nil {
					t.Error(err)
					return
				}
				if got.OneTimePreKey != nil {
					mu.Lock()
					seen[got.OneTimePreKey.ID]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != 40 {
		t.Fatalf("%d distinct one-time prekeys handed out, want all 40", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("one-time prekey %d handed out %d times", id, n)
		}
	}

	got := make(chan relaystore.Signal, 1)
	stop, err := b.Watch("bob/1", func(s relaystore.Signal) { got <- s })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	start := time.Now()
	if _, err := a.Append(ctx, "bob/1", []byte("hi"), 1, relaystore.Origin{Address: "alice/1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Notify(ctx, "bob/1", relaystore.Signal{Mail: true, Pool: -1}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if !s.Mail {
			t.Fatalf("signal %+v, want mail", s)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("the other relay heard of the envelope after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other relay never heard of the envelope")
	}
	now := time.Now()
	rows, err := b.Lease(ctx, "bob/1", "h", 10, now, now.Add(time.Minute))
	if err != nil || len(rows) != 1 || string(rows[0].Envelope) != "hi" {
		t.Fatalf("lease through the other relay: %v, %v", rows, err)
	}
}
