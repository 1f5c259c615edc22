package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
)

// TestShardsConformance runs the store conformance suite with the
// mailboxes spread over two shards on one node.
func TestShardsConformance(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	storetest.Run(t, func(t *testing.T, l relaystore.Limits) relaystore.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Limits: l, Shards: 2, Prefix: fmt.Sprintf("K%d_", next.Add(1))})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestShardsAcrossRelays: two relays on one cluster with two shards (one
// R1 node): what one relay accepts for recipients in either shard the
// other leases and acknowledges, and a relay given another number of
// shards refuses to start.
func TestShardsAcrossRelays(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	prefix := fmt.Sprintf("S%d_", next.Add(1))
	openShards := func(k int) (*natsstore.Store, error) {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := natsstore.Open(octx, c.URLs(), natsstore.Options{Replicas: 1, Shards: k, Prefix: prefix})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	a, err := openShards(2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openShards(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 3} {
		if _, err := openShards(k); !errors.Is(err, natsstore.ErrShards) {
			t.Fatalf("a relay given %d shards on a cluster of 2: %v, want natsstore.ErrShards", k, err)
		}
	}
	// Enough recipients that both shards hold some (the hash is fixed: 16
	// addresses in one shard would be a 1 in 32,768 chance).
	const n = 16
	for i := range n {
		if _, err := a.Register(ctx, fmt.Sprintf("r%d/1", i), [32]byte{byte(i + 1)}, false, ""); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		for i := range n {
			to := fmt.Sprintf("r%d/1", i)
			for j := range 2 {
				body := fmt.Sprintf("%s %d.%d", to, round, j)
				if _, err := a.Append(ctx, to, []byte(body), 1, relaystore.Origin{Address: "alice/1"}); err != nil {
					t.Fatalf("append to %s: %v", to, err)
				}
			}
		}
		for i := range n {
			to := fmt.Sprintf("r%d/1", i)
			now := time.Now()
			rows, err := b.Lease(ctx, to, "h", 10, now, now.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var ids []uint64
			for _, r := range rows {
				got, ids = append(got, string(r.Envelope)), append(ids, r.ID)
			}
			want := []string{fmt.Sprintf("%s %d.0", to, round), fmt.Sprintf("%s %d.1", to, round)}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("round %d: %s leased through the other relay %q, want %q (in order)", round, to, got, want)
			}
			removed, err := b.Ack(ctx, to, ids)
			if err != nil || len(removed) != 2 {
				t.Fatalf("round %d: acknowledged %d rows of %s (%v), want 2", round, len(removed), to, err)
			}
		}
	}
	// Both shards' totals, read again once a's cache is older than 250 ms.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := a.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Envelopes == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d envelopes held once all were acknowledged, want 0", st.Envelopes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
