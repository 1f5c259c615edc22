package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// jsClient connects a JetStream client of its own to c, to look at what
// the stores wrote.
func jsClient(t *testing.T, c *natstest.Cluster) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(strings.Join(c.URLs(), ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// usageKeys lists the keys of the usage bucket name.
func usageKeys(t *testing.T, js jetstream.JetStream, name string) []string {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		t.Fatalf("usage bucket %s: %v", name, err)
	}
	l, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	return keys
}

// TestUsageShardsAcrossRelays: on a cluster with two shards, the usage
// counts are spread over PARLEY_USAGE_0 and PARLEY_USAGE_1, each key in the
// bucket its hash names (none in PARLEY_USAGE), and two relays still see
// each other's counts: a sender's quota and an IP's filled through one
// relay refuse at the other, also once the other holds a grant of the
// count itself.
func TestUsageShardsAcrossRelays(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	prefix := fmt.Sprintf("V%d_", next.Add(1))
	openShared := func() *natsstore.Store {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := natsstore.Open(octx, c.URLs(), natsstore.Options{Replicas: 1, Shards: 2, Prefix: prefix,
			Limits: relaystore.Limits{SenderEnvelopes: 2, IPEnvelopes: 40}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openShared(), openShared()
	js := jsClient(t, c)

	// Sixteen mailboxes, two senders each, one IP: 16 m. keys, 32 s. keys
	// and one i. key.
	const n = 16
	for i := range n {
		if _, err := a.Register(ctx, fmt.Sprintf("r%d/1", i), [32]byte{byte(i + 1)}, false, ""); err != nil {
			t.Fatal(err)
		}
	}
	const ip = "192.0.2.5"
	for i := range n {
		for _, sender := range []string{"alice/1", "carol/1"} {
			if _, err := a.Append(ctx, fmt.Sprintf("r%d/1", i), []byte("x"), 1, relaystore.Origin{Address: sender, IP: ip}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := js.KeyValue(ctx, prefix+"PARLEY_USAGE"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("PARLEY_USAGE on a cluster of two usage shards: %v, want no such bucket", err)
	}
	total := 0
	for i := range 2 {
		keys := usageKeys(t, js, fmt.Sprintf("%sPARLEY_USAGE_%d", prefix, i))
		if len(keys) == 0 {
			t.Errorf("PARLEY_USAGE_%d holds no key", i)
		}
		for _, k := range keys {
			h := fnv.New32a()
			h.Write([]byte(k))
			if want := int(h.Sum32() % 2); want != i {
				t.Errorf("key %s in PARLEY_USAGE_%d, its hash names %d", k, i, want)
			}
		}
		total += len(keys)
	}
	if want := n + 2*n + 1; total != want {
		t.Errorf("%d usage keys in all, want %d", total, want)
	}

	// 32 envelopes from the IP through a; eight more through b fill its
	// quota of 40, read from the cluster (b never wrote the key).
	for i := range 8 {
		if _, err := b.Append(ctx, fmt.Sprintf("r%d/1", i), []byte("x"), 1, relaystore.Origin{Address: "dave/1", IP: ip}); err != nil {
			t.Fatalf("append %d within the IP's quota through the other relay: %v", i, err)
		}
	}
	if _, err := a.Append(ctx, "r9/1", []byte("x"), 1, relaystore.Origin{Address: "dave/1", IP: ip}); !errors.Is(err, relaystore.ErrIPQuota) {
		t.Fatalf("a 41st envelope from one IP, after the other relay's: %v, want relaystore.ErrIPQuota", err)
	}

	// Alice holds 1 of 2 in r0's mailbox, written by a. b writes the second
	// itself (and then trusts its own last write); one more through a must
	// make b read again and refuse.
	if _, err := b.Append(ctx, "r0/1", []byte("x"), 1, relaystore.Origin{Address: "alice/1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, "r0/1", []byte("x"), 1, relaystore.Origin{Address: "alice/1"}); !errors.Is(err, relaystore.ErrSenderQuota) {
		t.Fatalf("a third envelope from alice through the first relay: %v, want relaystore.ErrSenderQuota", err)
	}
	// Lower alice's count through a (an acknowledgement of one row), then
	// fill it again through a: b must see both writes.
	now := time.Now()
	rows, err := a.Lease(ctx, "r0/1", "h", 1, now, now.Add(time.Minute))
	if err != nil || len(rows) != 1 {
		t.Fatalf("leased %d rows (%v), want 1", len(rows), err)
	}
	if _, err := a.Ack(ctx, "r0/1", []uint64{rows[0].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, "r0/1", []byte("y"), 1, relaystore.Origin{Address: "alice/1"}); err != nil {
		t.Fatalf("append after an acknowledgement freed room: %v", err)
	}
	if _, err := b.Append(ctx, "r0/1", []byte("z"), 1, relaystore.Origin{Address: "alice/1"}); !errors.Is(err, relaystore.ErrSenderQuota) {
		t.Fatalf("a third envelope from alice through the other relay: %v, want relaystore.ErrSenderQuota", err)
	}
}

// TestUsageShardsKeepOldBucket: a cluster that already holds PARLEY_USAGE
// (from before usage shards) keeps its counts there even with two mailbox
// shards, and a fresh cluster stores its number of usage shards for the
// relays that come later.
func TestUsageShardsKeepOldBucket(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	js := jsClient(t, c)
	prefix := fmt.Sprintf("W%d_", next.Add(1))
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: prefix + "PARLEY_USAGE", History: 1,
		LimitMarkerTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Shards: 2, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Register(ctx, "bob/1", [32]byte{1}, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "bob/1", []byte("x"), 1, relaystore.Origin{Address: "alice/1", IP: "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	if keys := usageKeys(t, js, prefix+"PARLEY_USAGE"); len(keys) != 3 {
		t.Errorf("PARLEY_USAGE holds %q, want the three counts of the append", keys)
	}
	if _, err := js.KeyValue(ctx, prefix+"PARLEY_USAGE_0"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("PARLEY_USAGE_0 on a cluster that had PARLEY_USAGE: %v, want no such bucket", err)
	}
	meta, err := js.KeyValue(ctx, prefix+"PARLEY_META")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := meta.Get(ctx, "usage-shards"); err != nil || string(e.Value()) != "1" {
		t.Errorf("usage-shards in PARLEY_META: %v, want 1", err)
	}
}
