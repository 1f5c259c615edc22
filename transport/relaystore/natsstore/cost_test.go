package natsstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// envelopeCost is what one envelope's steps cost, in requests to the
// cluster, as the relay takes them: the sender's relation to the
// recipient, the append, the delivery (a Lease of one row) and the
// acknowledgement.
type envelopeCost struct{ relation, append, lease, ack uint64 }

func (c envelopeCost) total() uint64 { return c.relation + c.append + c.lease + c.ack }

// measureEnvelopes sends n envelopes from sender (a stranger or not) to
// bob/1 one at a time, each through the four steps, and returns the median
// cost of each step: a fallback read now and then (a watch's event that
// arrived late) is correct, and not what an envelope costs.
func measureEnvelopes(t *testing.T, s *natsstore.Store, sender string, stranger bool, n int) envelopeCost {
	t.Helper()
	ctx := context.Background()
	var costs [4][]uint64
	step := func(i int, f func() error) {
		t.Helper()
		before := s.Requests()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		costs[i] = append(costs[i], s.Requests()-before)
	}
	median := func(xs []uint64) uint64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	for i := range n {
		var rows []relaystore.Row
		step(0, func() error { _, err := s.Relation(ctx, "bob/1", sender, time.Now()); return err })
		step(1, func() error {
			_, err := s.Append(ctx, "bob/1", []byte(fmt.Sprint("env", i)), 1,
				relaystore.Origin{Address: sender, IP: "192.0.2.1", Envelope: [16]byte{byte(i)}, Stranger: stranger})
			return err
		})
		step(2, func() error {
			var err error
			now := time.Now()
			rows, err = s.Lease(ctx, "bob/1", "h", 1, now, now.Add(time.Minute))
			if err == nil && len(rows) != 1 {
				err = fmt.Errorf("leased %d rows, want 1", len(rows))
			}
			return err
		})
		step(3, func() error {
			removed, err := s.Ack(ctx, "bob/1", []uint64{rows[0].ID})
			if err == nil && len(removed) != 1 {
				err = fmt.Errorf("acknowledged %d rows, want 1", len(removed))
			}
			return err
		})
	}
	return envelopeCost{median(costs[0]), median(costs[1]), median(costs[2]), median(costs[3])}
}

// TestRequestsPerEnvelope counts the requests the store's connection sends
// for each step of an envelope, from an accepted peer and from a stranger,
// on a cluster of three with every stream and bucket replicated three
// times (a client's count does not depend on the replicas; the nodes'
// work does), and logs them for docs/performance.md. It fails when an
// envelope's median costs more than its budget of 3, the publish, the
// lease's read and the acknowledgement's delete (23 and 35 before the
// caches and the usage watch, 9 and 13 before grants): the relation is
// read from the relay's cache once it holds the recipient's lists, and the
// quotas are spent from this relay's grants. With three shards the budget
// is the same: spreading the mailboxes and the usage counts over several
// streams and buckets moves the writes to other leaders and adds none.
func TestRequestsPerEnvelope(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 3, Shards: shards, Prefix: fmt.Sprintf("T%d_", next.Add(1))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			requestsPerEnvelope(t, s)
		})
	}
}

func requestsPerEnvelope(t *testing.T, s *natsstore.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Register(ctx, "bob/1", [32]byte{2}, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Accept(ctx, "bob/1", "alice/1", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		sender   string
		stranger bool
		budget   uint64
	}{
		{"peer", "alice/1", false, 3},
		{"stranger", "mallory/1", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measureEnvelopes(t, s, tc.sender, tc.stranger, 3) // warm the caches
			got := measureEnvelopes(t, s, tc.sender, tc.stranger, 20)
			t.Logf("requests per envelope, %s: relation %d, append %d, lease %d, ack %d, total %d",
				tc.name, got.relation, got.append, got.lease, got.ack, got.total())
			if got.relation != 0 {
				t.Errorf("a cached relation cost %d requests, want 0", got.relation)
			}
			if got.total() > tc.budget {
				t.Errorf("an envelope cost %d requests, want at most %d", got.total(), tc.budget)
			}
		})
	}
}
