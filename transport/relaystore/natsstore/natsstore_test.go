package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

// TestUsageCountsGoAway: the usage bucket holds a key for a mailbox, a
// sender in it and an IP only while they hold envelopes or a relay's grant;
// once everything is acknowledged and the grants returned it holds none,
// and counting starts again from zero.
func TestUsageCountsGoAway(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	prefix := fmt.Sprintf("U%d_", next.Add(1))
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Prefix: prefix,
		Limits: relaystore.Limits{MailboxEnvelopes: 10, SenderEnvelopes: 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	nc, err := nats.Connect(strings.Join(c.URLs(), ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	usage, err := js.KeyValue(ctx, prefix+"PARLEY_USAGE")
	if err != nil {
		t.Fatal(err)
	}
	keys := func() int {
		t.Helper()
		l, err := usage.ListKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for range l.Keys() {
			n++
		}
		return n
	}
	if _, err := s.Register(ctx, "bob/1", [32]byte{1}, false, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	from := relaystore.Origin{Address: "alice/1", IP: "192.0.2.7"}
	for round := range 2 {
		for i := range 3 {
			if _, err := s.Append(ctx, "bob/1", []byte(fmt.Sprint("hello ", i)), 1, from); err != nil {
				t.Fatalf("round %d, append %d: %v", round, i, err)
			}
		}
		if _, err := s.Append(ctx, "bob/1", []byte("one too many"), 1, from); !errors.Is(err, relaystore.ErrSenderQuota) {
			t.Fatalf("round %d: a fourth envelope from one sender: %v, want relaystore.ErrSenderQuota", round, err)
		}
		if n := keys(); n != 3 {
			t.Fatalf("round %d: %d usage keys while envelopes are held, want 3 (mailbox, sender, IP)", round, n)
		}
		now := time.Now()
		rows, err := s.Lease(ctx, "bob/1", "h", 10, now, now.Add(time.Minute))
		if err != nil || len(rows) != 3 {
			t.Fatalf("round %d: leased %d rows (%v), want 3", round, len(rows), err)
		}
		ids := make([]uint64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		if n, err := s.Ack(ctx, "bob/1", ids); err != nil || len(n) != 3 {
			t.Fatalf("round %d: acknowledged %d (%v), want 3", round, len(n), err)
		}
		s.ReturnGrants() // as the relay does once they fall idle
		if n := keys(); n != 0 {
			t.Fatalf("round %d: %d usage keys once everything was acknowledged and the grants returned, want 0", round, n)
		}
	}
}

// TestDeviceListAcrossRelays: two relays on one 3-node cluster race to
// store the next generation of one list: exactly one wins, and both then
// read the winner's.
func TestDeviceListAcrossRelays(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	ctx := context.Background()
	prefix := fmt.Sprintf("D%d_", next.Add(1))
	var stores [2]*natsstore.Store
	for i := range stores {
		s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 3, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	g1 := relaystore.HeldDeviceList{Generation: 1, Digest: [32]byte{1}, Encoded: []byte("g1")}
	if err := stores[0].PutDeviceList(ctx, "alice", g1, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i, s := range stores {
		wg.Go(func() {
			errs[i] = s.PutDeviceList(ctx, "alice", relaystore.HeldDeviceList{Generation: 2, Parent: g1.Digest, Digest: [32]byte{2, byte(i)}, Encoded: []byte{byte(i)}}, "")
		})
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("racing generation 2: %v and %v, want exactly one stored", errs[0], errs[1])
	}
	won := 0
	if errs[0] != nil {
		won = 1
	}
	if !errors.Is(errs[1-won], relaystore.ErrDeviceListStale) {
		t.Fatalf("the loser got %v, want ErrDeviceListStale", errs[1-won])
	}
	for i, s := range stores {
		got, err := s.DeviceList(ctx, "alice")
		if err != nil || got.Generation != 2 || got.Digest != [32]byte{2, byte(won)} {
			t.Fatalf("relay %d reads %+v, %v; want the winner's generation 2", i, got, err)
		}
	}
}
