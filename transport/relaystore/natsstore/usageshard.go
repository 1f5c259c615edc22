package natsstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// The usage counts are spread over as many key-value buckets as the cluster
// has usage shards, so that their Raft leaders, like the mailbox streams',
// spread over the cluster's nodes: every envelope is six usage writes (three
// at the append, three at the acknowledgement), and with one bucket its one
// leader ordered all of them. With one shard the bucket is PARLEY_USAGE, the
// name from before shards; with K > 1, shard i is PARLEY_USAGE_<i>. A key's
// bucket is a fixed hash of the key (32-bit FNV-1a, modulo K, as shardOf
// does for mailboxes), so that a mailbox's, a sender's and an IP's counts
// land on different leaders.
//
// How many usage shards a cluster has is stored in PARLEY_META
// (usageShardsKey) by the first relay to use it: the relay's number of
// mailbox shards, or one for a cluster that already holds PARLEY_USAGE
// without the key (from before usage shards, whatever its mailbox shards),
// so that the counts it holds stay where every relay reads them. Every
// relay then uses the cluster's number, never its own: usage counts are
// never moved between buckets.

// usageShardsKey holds, in PARLEY_META, how many usage buckets the cluster
// has.
const usageShardsKey = "usage-shards"

// usageBucket is one bucket of usage counts.
type usageBucket struct {
	kv      jetstream.KeyValue
	name    string
	subject string // the bucket's subject prefix, with the trailing dot (purgeAt)
}

// usageShardOf returns the index of the bucket that holds key, of n.
func usageShardOf(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// setupUsage reads (or stores) the cluster's number of usage shards and
// creates or updates their buckets. A count that falls to zero is purged,
// and the purge's marker expires (LimitMarkerTTL), so that a bucket holds a
// key only for a mailbox, a sender in it or an IP that holds something
// now, not for every one that ever did.
func (s *Store) setupUsage(ctx context.Context, meta jetstream.KeyValue, replicas int) ([]usageBucket, error) {
	n, err := s.usageShards(ctx, meta)
	if err != nil {
		return nil, err
	}
	buckets := make([]usageBucket, 0, n)
	for i := range n {
		name := s.names.usage
		if n > 1 {
			name += "_" + strconv.Itoa(i)
		}
		kv, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1, Replicas: replicas,
			Storage: jetstream.FileStorage, LimitMarkerTTL: usageMarkerTTL})
		if err != nil {
			return nil, fmt.Errorf("usage bucket %s: %w", name, err)
		}
		buckets = append(buckets, usageBucket{kv: kv, name: name, subject: "$KV." + name + "."})
	}
	return buckets, nil
}

// usageShards returns the cluster's number of usage shards, storing the
// relay's number of mailbox shards when the cluster has none stored and
// holds no PARLEY_USAGE yet.
func (s *Store) usageShards(ctx context.Context, meta jetstream.KeyValue) (int, error) {
	e, err := meta.Get(ctx, usageShardsKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		stored := s.nShards
		if _, err := s.js.KeyValue(ctx, s.names.usage); err == nil {
			stored = 1
		} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return 0, err
		}
		if _, err := meta.Create(ctx, usageShardsKey, []byte(strconv.Itoa(stored))); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, err
		}
		e, err = meta.Get(ctx, usageShardsKey)
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(e.Value()))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s in the cluster's metadata: %q", usageShardsKey, e.Value())
	}
	return n, nil
}
