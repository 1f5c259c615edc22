package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// TestRelationCacheAcrossRelays: a relay answers Relation from its cache,
// yet a block or an accepted peer recorded through this relay is seen by
// its next Relation at once, and one recorded through another relay is seen
// once that relay's change reaches the watch (well before the cache's
// bound, relationTTL, which the wait below stays under).
func TestRelationCacheAcrossRelays(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	ctx := context.Background()
	prefix := fmt.Sprintf("R%d_", next.Add(1))
	openShared := func() *natsstore.Store {
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 3, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openShared(), openShared()
	relation := func(s *natsstore.Store) relaystore.Relation {
		t.Helper()
		r, err := s.Relation(ctx, "bob/1", "alice/1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Both cache bob's empty lists.
	if ra, rb := relation(a), relation(b); ra != (relaystore.Relation{}) || rb != (relaystore.Relation{}) {
		t.Fatalf("before anything: %+v and %+v, want neither accepted nor blocked", ra, rb)
	}
	eventually := func(what string, s *natsstore.Store, want relaystore.Relation) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for got := relation(s); got != want; got = relation(s) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the other relay still answers %+v, want %+v", what, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := a.Block(ctx, "bob/1", "alice/1", true); err != nil {
		t.Fatal(err)
	}
	if got := relation(a); !got.Blocked {
		t.Fatalf("right after its own block, a relay answers %+v, want blocked", got)
	}
	eventually("block", b, relaystore.Relation{Blocked: true})
	if err := b.Block(ctx, "bob/1", "alice/1", false); err != nil {
		t.Fatal(err)
	}
	if got := relation(b); got.Blocked {
		t.Fatalf("right after its own unblock, a relay answers %+v, want not blocked", got)
	}
	eventually("unblock", a, relaystore.Relation{})
	if _, err := a.Accept(ctx, "bob/1", "alice/1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := relation(a); !got.Accepted {
		t.Fatalf("right after its own accept, a relay answers %+v, want accepted", got)
	}
	eventually("accept", b, relaystore.Relation{Accepted: true})
}
