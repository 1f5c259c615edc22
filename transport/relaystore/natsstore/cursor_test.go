package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// TestLeaseCursor (finding 4): with rows held under leases, a recipient
// that leases and acknowledges one row at a time does not make Lease read
// the mailbox from its first message each time (it used to skip each held
// row with a request of its own, under a lock): each Lease costs a couple
// of requests. A released lease is read again.
func TestLeaseCursor(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	s := open(t, c, relaystore.Limits{})
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Register(ctx, "bob/1", [32]byte{2}, false, ""); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := s.Append(ctx, "bob/1", []byte(fmt.Sprint("env", i)), 1, relaystore.Origin{Address: "alice/1"}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	held, err := s.Lease(ctx, "bob/1", "a", 30, now, now.Add(time.Hour))
	if err != nil || len(held) != 30 {
		t.Fatalf("lease 30: %d, %v", len(held), err)
	}
	var most uint64
	for i := range 30 {
		before := s.Requests()
		rows, err := s.Lease(ctx, "bob/1", "b", 1, now, now.Add(time.Hour))
		if err != nil || len(rows) != 1 {
			t.Fatalf("lease %d: %v, %v", i, rows, err)
		}
		most = max(most, s.Requests()-before)
		if n, err := s.Ack(ctx, "bob/1", []uint64{rows[0].ID}); err != nil || len(n) != 1 {
			t.Fatalf("ack %d: %v, %v", i, n, err)
		}
	}
	if most > 3 {
		t.Fatalf("a Lease of one row past 30 held ones took %d requests, want at most 3", most)
	}
	if rows, _ := s.Lease(ctx, "bob/1", "b", 10, now, now.Add(time.Hour)); len(rows) != 0 {
		t.Fatalf("every row is held or gone, got %d", len(rows))
	}
	if err := s.Release(ctx, "bob/1", "a"); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Lease(ctx, "bob/1", "b", 100, now, now.Add(time.Hour))
	if err != nil || len(rows) != 30 || rows[0].ID != held[0].ID {
		t.Fatalf("after the release: %d rows (%v), want the 30 released from the first", len(rows), err)
	}
}

// TestFullPoolIsCounted (finding 4): publishing one-time prekeys to a full
// pool counts the pool (one request) instead of reading every key.
func TestFullPoolIsCounted(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	s := open(t, c, relaystore.Limits{OneTimePreKeys: 50})
	defer s.Close()
	ctx := context.Background()
	key := [32]byte{7}
	if _, err := s.Register(ctx, "bob/1", key, false, ""); err != nil {
		t.Fatal(err)
	}
	keys := make([]wire.OneTimePreKeyPublic, 50)
	for i := range keys {
		keys[i] = wire.OneTimePreKeyPublic{ID: uint32(i + 1), PublicKey: [32]byte{byte(i)}}
	}
	b := wire.Bundle{Address: "bob/1"}
	if n, err := s.PutBundle(ctx, "bob/1", key, b, keys); err != nil || n != 50 {
		t.Fatalf("first publish: %d, %v", n, err)
	}
	before := s.Requests()
	if n, err := s.PutBundle(ctx, "bob/1", key, b, keys); err != nil || n != 0 {
		t.Fatalf("publish to a full pool: %d, %v", n, err)
	}
	// The bundle's put, the owner's lookup (cached) and the count: not 50 reads.
	if got := s.Requests() - before; got > 4 {
		t.Fatalf("a publish to a full pool of 50 took %d requests, want at most 4", got)
	}
}
