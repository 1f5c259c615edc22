package natsstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/transport/relaystore/storetest"
)

// headOverhead bounds what JetStream keeps per message beyond its data:
// the subject, the headers (sender, IP, envelope ID, payload reference)
// and the store's framing, and per row a payload record's ten bytes.
const headOverhead = 320

func kept(t *testing.T, s relaystore.Store) int64 {
	t.Helper()
	n, err := s.(*natsstore.Store).Kept(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSharedPayloadOnce: the NATS store keeps a payload sent to a group of
// 50 once, with a head per mailbox, as the memory and SQLite stores do
// (relaystore.TestSharedPayloadOnce), measured by stream info; the payload
// goes with the last head, not before.
func TestSharedPayloadOnce(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	storetest.RunSharedOnceBy(t, func(t *testing.T, l relaystore.Limits) relaystore.Store { return openReplicas(t, c, l, 1) },
		49, 1200, storetest.Measure{Kept: kept, Overhead: headOverhead})
}

func openReplicas(t *testing.T, c *natstest.Cluster, l relaystore.Limits, replicas int) *natsstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: replicas, Limits: l, Prefix: fmt.Sprintf("P%d_", next.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sharedItems is a payload of size bytes to n mailboxes, registered on s.
func sharedItems(t *testing.T, s relaystore.Store, n, size int) []relaystore.AppendItem {
	t.Helper()
	p := &relaystore.SharedPayload{Payload: bytes.Repeat([]byte{0x5a}, size)}
	items := make([]relaystore.AppendItem, n)
	for i := range items {
		to := fmt.Sprintf("member%d/1", i)
		if _, err := s.Register(context.Background(), to, [32]byte{1}, false, ""); err != nil {
			t.Fatal(err)
		}
		// A head as the relay makes it: 41 bytes and the two addresses.
		head := append(bytes.Repeat([]byte{1}, 41), "alice/1"+to...)
		items[i] = relaystore.AppendItem{Recipient: to, Env: head, Copies: 1, Shared: p,
			From: relaystore.Origin{Address: "alice/1", IP: "192.0.2.1"}}
	}
	return items
}

// TestSharedPayloadBytes measures the bytes a group message of 49
// mailboxes keeps in the streams, each payload whole per mailbox (what
// the store did before, and does for items that share nothing) and kept
// once, and the requests its append, the members' leases and their
// acknowledgements cost, for docs/performance.md:
//
//	go test -count=1 -run TestSharedPayloadBytes -v ./transport/relaystore/natsstore
func TestSharedPayloadBytes(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	const members = 49
	for _, size := range []int{1200, 4096} {
		type cost struct{ kept, appends, leases, acks int64 }
		measure := func(once bool) cost {
			s := openReplicas(t, c, relaystore.Limits{}, 1)
			defer s.Close()
			items := sharedItems(t, s, members, size)
			if !once {
				for i := range items {
					items[i].Env, items[i].Shared = items[i].Envelope(), nil
				}
			}
			var k cost
			at := int64(s.Requests())
			step := func() int64 { n := int64(s.Requests()); d := n - at; at = n; return d }
			for i, r := range s.AppendBatch(ctx, items) {
				if r.Err != nil {
					t.Fatalf("item %d: %v", i, r.Err)
				}
			}
			k.appends = step()
			k.kept = kept(t, s)
			step()
			now := time.Now()
			rows := make([][]uint64, len(items))
			for i, it := range items {
				got, err := s.Lease(ctx, it.Recipient, "h", 10, now, now.Add(time.Minute))
				if err != nil || len(got) != 1 || !bytes.Equal(got[0].Envelope, it.Envelope()) {
					t.Fatalf("lease of %s: %v, %v", it.Recipient, got, err)
				}
				rows[i] = []uint64{got[0].ID}
			}
			k.leases = step()
			for i, it := range items {
				if _, err := s.Ack(ctx, it.Recipient, rows[i]); err != nil {
					t.Fatal(err)
				}
			}
			k.acks = step()
			if n := kept(t, s); n != 0 {
				t.Fatalf("after every ack: %d bytes kept", n)
			}
			return k
		}
		whole, once := measure(false), measure(true)
		for _, m := range []struct {
			name string
			k    cost
		}{{"whole per mailbox", whole}, {"kept once", once}} {
			t.Logf("payload %d bytes, %d mailboxes, %s: %d bytes kept (%d a mailbox over the payload); requests: append %d, leases %d, acks %d",
				size, members, m.name, m.k.kept, (m.k.kept-int64(size))/members, m.k.appends, m.k.leases, m.k.acks)
		}
		if once.kept-int64(size) > (members+2)*headOverhead || once.kept >= whole.kept/3 {
			t.Fatalf("kept once: %d bytes, whole: %d; want the payload once and at most %d a mailbox", once.kept, whole.kept, headOverhead)
		}
	}
}

// TestSharedPayloadAcrossRelays: two relays share one JetStream; a payload
// appended through one is leased whole through both, stays while any head
// is left whichever relay acknowledged the others, and goes with the last,
// acknowledged through the other relay; the heads acknowledged at once
// through both relays race on the payload's record without losing a row.
func TestSharedPayloadAcrossRelays(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	prefix := fmt.Sprintf("PX%d_", next.Add(1))
	openShared := func() *natsstore.Store {
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openShared(), openShared()
	items := sharedItems(t, a, 12, 2000)
	for i, r := range a.AppendBatch(ctx, items) {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	now := time.Now()
	rows := make([]uint64, len(items))
	for i, it := range items {
		relay := []*natsstore.Store{a, b}[i%2]
		got, err := relay.Lease(ctx, it.Recipient, "h", 10, now, now.Add(time.Minute))
		if err != nil || len(got) != 1 || !bytes.Equal(got[0].Envelope, it.Envelope()) {
			t.Fatalf("lease of %s through relay %d: %v, %v; want its whole envelope", it.Recipient, i%2, got, err)
		}
		rows[i] = got[0].ID
	}
	// All but the last at once, each through the relay that leased it
	// (the other half read the row first).
	var wg sync.WaitGroup
	for i := range len(items) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay := []*natsstore.Store{a, b}[(i+i/2)%2]
			if gone, err := relay.Ack(ctx, items[i].Recipient, []uint64{rows[i]}); err != nil || len(gone) != 1 {
				t.Errorf("ack of %s: %v, %v", items[i].Recipient, gone, err)
			}
		}()
	}
	wg.Wait()
	if p, r, err := a.Payloads(ctx); err != nil || p != 1 || r != 1 {
		t.Fatalf("with one head left: %d payloads, %d records, %v; want the payload and its record", p, r, err)
	}
	last := items[len(items)-1]
	if got, err := b.Lease(ctx, last.Recipient, "h2", 10, now.Add(2*time.Minute), now.Add(3*time.Minute)); err != nil || len(got) != 1 || !bytes.Equal(got[0].Envelope, last.Envelope()) {
		t.Fatalf("lease of the last head through the other relay: %v, %v", got, err)
	}
	if gone, err := b.Ack(ctx, last.Recipient, []uint64{rows[len(rows)-1]}); err != nil || len(gone) != 1 {
		t.Fatalf("ack of the last head: %v, %v", gone, err)
	}
	if p, r, err := a.Payloads(ctx); err != nil || p != 0 || r != 0 {
		t.Fatalf("after the last head: %d payloads, %d records, %v; want none", p, r, err)
	}
	if k := kept(t, a); k != 0 {
		t.Fatalf("after the last head: %d bytes kept", k)
	}
}

// TestSharedPayloadCrash: what a relay that died mid-way leaves is
// settled by the sweep (Expire) once it is older than the grace, and not
// before: a payload stored without heads; heads whose payload's record
// stayed pending (the heads become orphans: a lease drops them, without
// an error, and frees their quotas; the relay, if it was only slow, fails
// to finish its append); a head deleted without its record being told.
func TestSharedPayloadCrash(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	late := func() time.Time { return time.Now().Add(natsstore.PayloadGrace + time.Minute) }
	longAgo := time.Now().Add(-time.Hour) // Expire's bound: no head expires
	payloads := func(s *natsstore.Store) (uint64, uint64) {
		p, r, err := s.Payloads(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p, r
	}

	t.Run("between the payload and the heads", func(t *testing.T) {
		s := openReplicas(t, c, relaystore.Limits{}, 1)
		defer s.Close()
		if err := s.StorePayloadOnly(ctx, make([]byte, 3000)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Expire(ctx, time.Now(), longAgo, 10); err != nil {
			t.Fatal(err)
		}
		if p, r := payloads(s); p != 1 || r != 1 {
			t.Fatalf("within the grace: %d payloads, %d records; want both kept (the append may be running)", p, r)
		}
		if _, err := s.Expire(ctx, late(), longAgo, 10); err != nil {
			t.Fatal(err)
		}
		if p, r := payloads(s); p != 0 || r != 0 || kept(t, s) != 0 {
			t.Fatalf("after the sweep: %d payloads, %d records, %d bytes; want nothing", p, r, kept(t, s))
		}
	})

	t.Run("between the heads and the answer", func(t *testing.T) {
		s := openReplicas(t, c, relaystore.Limits{}, 1)
		defer s.Close()
		items := sharedItems(t, s, 5, 3000)
		finish, err := s.AppendUnfinished(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Expire(ctx, late(), longAgo, 10); err != nil {
			t.Fatal(err)
		}
		if p, r := payloads(s); p != 0 || r != 0 {
			t.Fatalf("after the sweep: %d payloads, %d records; want none", p, r)
		}
		// A relay that was only slow learns that its payload was swept,
		// and answers its items with an error.
		if err := finish(); !errors.Is(err, natsstore.ErrRecordGone) {
			t.Fatalf("finishing after the sweep: %v, want ErrRecordGone", err)
		}
		now := time.Now()
		for _, it := range items {
			got, err := s.Lease(ctx, it.Recipient, "h", 10, now, now.Add(time.Minute))
			if err != nil || len(got) != 0 {
				t.Fatalf("lease of an orphan head of %s: %v, %v; want nothing and no error", it.Recipient, got, err)
			}
		}
		if k := kept(t, s); k != 0 {
			t.Fatalf("after the leases: %d bytes kept, want the orphan heads gone", k)
		}
		// Their mailboxes work on.
		if _, err := s.Append(ctx, items[0].Recipient, []byte("next"), 1, relaystore.Origin{Address: "alice/1"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Lease(ctx, items[0].Recipient, "h", 10, now, now.Add(time.Minute)); err != nil || len(got) != 1 || string(got[0].Envelope) != "next" {
			t.Fatalf("lease after the orphans: %v, %v", got, err)
		}
	})

	t.Run("between a head's deletion and its record", func(t *testing.T) {
		s := openReplicas(t, c, relaystore.Limits{}, 1)
		defer s.Close()
		items := sharedItems(t, s, 4, 3000)
		res := s.AppendBatch(ctx, items)
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("item %d: %v", i, r.Err)
			}
		}
		if err := s.DeleteRowOnly(ctx, items[0].Recipient, res[0].Rows[0]); err != nil {
			t.Fatal(err)
		}
		for i, it := range items[1:] {
			if _, err := s.Ack(ctx, it.Recipient, res[i+1].Rows); err != nil {
				t.Fatal(err)
			}
		}
		if p, r := payloads(s); p != 1 || r != 1 {
			t.Fatalf("with a row still listed: %d payloads, %d records; want both kept", p, r)
		}
		// Until the payload is older than Expire's bound, its heads may
		// be waiting for their members: nothing is looked up.
		if _, err := s.Expire(ctx, late(), longAgo, 10); err != nil {
			t.Fatal(err)
		}
		if p, _ := payloads(s); p != 1 {
			t.Fatalf("a young payload's rows were judged: %d payloads", p)
		}
		if _, err := s.Expire(ctx, late(), late(), 10); err != nil {
			t.Fatal(err)
		}
		if p, r := payloads(s); p != 0 || r != 0 || kept(t, s) != 0 {
			t.Fatalf("after the sweep: %d payloads, %d records, %d bytes; want nothing", p, r, kept(t, s))
		}
	})
}
