package natsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// usageWriter coalesces this process's changes to the usage counts. Every
// change to one key that arrives while a write of that key is in flight
// waits for the next write, which carries all of them: many clients behind
// one IP (the i.<ip> key) then cost one compare-and-set a round instead of
// one each, all but one of which would lose and retry. A caller still
// returns only once its change is written (or failed), as before.
//
// The value and revision of this process's last write of a key are kept,
// so that the next write goes straight to an update at that revision
// without reading the key first; a write by another relay meanwhile makes
// that update fail as a conflict, and the key is read again.
type usageWriter struct {
	buckets []usageBucket // the usage shards (usageshard.go)
	js      jetstream.JetStream
	timeout time.Duration

	mu       sync.Mutex
	keys     map[string]*usageKey
	watching []bool // per bucket: its watch runs (usagewatch.go)
}

// usageKey is one key's state in a usageWriter.
type usageKey struct {
	busy    bool // a writer goroutine owns the key
	n       int  // pending changes, not yet written
	bytes   int64
	waiters []chan error

	known bool // rev and the value below are this process's last write
	rev   uint64
	have  int
	hold  int64
	at    time.Time // when known was set
	seen  uint64    // the highest revision the watch reported (usagewatch.go)
}

// maxUsageKeys bounds the kept revisions; past it idle keys are dropped.
const maxUsageKeys = 100000

func newUsageWriter(js jetstream.JetStream, buckets []usageBucket, timeout time.Duration) *usageWriter {
	return &usageWriter{buckets: buckets, js: js, timeout: timeout, keys: make(map[string]*usageKey),
		watching: make([]bool, len(buckets))}
}

// bucket returns the bucket that holds key.
func (w *usageWriter) bucket(key string) usageBucket {
	return w.buckets[usageShardOf(key, len(w.buckets))]
}

// add queues n envelopes of size bytes (negative to remove) for key and
// returns the channel its write's outcome arrives on.
func (w *usageWriter) add(key string, n int, size int64) <-chan error {
	done := make(chan error, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[key]
	if k == nil {
		if len(w.keys) >= maxUsageKeys {
			for name, old := range w.keys {
				if !old.busy {
					delete(w.keys, name)
				}
			}
		}
		k = &usageKey{}
		w.keys[key] = k
	}
	k.n += n
	k.bytes += size
	k.waiters = append(k.waiters, done)
	if !k.busy {
		k.busy = true
		go w.run(key, k)
	}
	return done
}

// run writes key's pending changes until none are left.
func (w *usageWriter) run(key string, k *usageKey) {
	for {
		w.mu.Lock()
		n, size, waiters := k.n, k.bytes, k.waiters
		k.n, k.bytes, k.waiters = 0, 0, nil
		if len(waiters) == 0 {
			k.busy = false
			w.mu.Unlock()
			return
		}
		known, rev, have, hold := k.known, k.rev, k.have, k.hold
		w.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		rev, have, hold, err := w.write(ctx, key, n, size, known, rev, have, hold)
		cancel()

		w.mu.Lock()
		// A later revision the watch already reported is another
		// relay's write after this one: the value is not known then.
		k.known, k.rev, k.have, k.hold, k.at = err == nil && rev != 0 && k.seen <= rev, rev, have, hold, time.Now()
		w.mu.Unlock()
		for _, c := range waiters {
			c <- err
		}
	}
}

// write adds n and size to key, at rev when known (no read first), and
// returns the revision and value written (rev 0 when the count fell to
// zero and was purged).
func (w *usageWriter) write(ctx context.Context, key string, n int, size int64, known bool, rev uint64, have int, hold int64) (uint64, int, int64, error) {
	kv := w.bucket(key).kv
	for attempt := 0; ; attempt++ {
		if !known {
			rev, have, hold = 0, 0, 0
			e, err := kv.Get(ctx, key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
			case err != nil:
				return 0, 0, 0, err
			default:
				rev = e.Revision()
				have, hold = decodeUsage(e.Value())
			}
		}
		known = false // a conflict below reads the key again
		nh, nb := max(have+n, 0), max(hold+size, 0)
		var err error
		var newRev uint64
		switch {
		case nh == 0 && nb == 0 && rev == 0:
			return 0, 0, 0, nil
		case nh == 0 && nb == 0:
			newRev, err = w.purgeAt(ctx, key, rev)
		case rev == 0:
			newRev, err = kv.Create(ctx, key, encodeUsage(nh, nb))
		default:
			newRev, err = kv.Update(ctx, key, encodeUsage(nh, nb), rev)
		}
		if err == nil {
			return newRev, nh, nb, nil
		}
		if !isConflict(err) {
			return 0, 0, 0, err
		}
		wait := time.Duration(mrand.Int64N(int64(min(attempt+1, 20)) * int64(time.Millisecond)))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return 0, 0, 0, fmt.Errorf("%w (after %d conflicts)", ctx.Err(), attempt+1)
		}
	}
}

// purgeAt purges key at rev, as KeyValue.Purge with LastRevision and
// PurgeTTL does, and returns the marker's revision, which Purge does not:
// with it the next write of the key (a mailbox that fills again) is an
// update at that revision, one request, instead of a read, a create that
// fails on the marker, a read and an update.
func (w *usageWriter) purgeAt(ctx context.Context, key string, rev uint64) (uint64, error) {
	m := nats.NewMsg(w.bucket(key).subject + key)
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	ack, err := w.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(usageMarkerTTL))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

func encodeUsage(n int, bytes int64) []byte {
	out := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(n))
	return binary.BigEndian.AppendUint64(out, uint64(bytes))
}

// release takes what held says off each usage key, all keys at once, and
// returns once every write is done.
func (s *Store) release(ctx context.Context, held map[string]relaystore.Usage) error {
	done := make([]<-chan error, 0, len(held))
	for k, u := range held {
		done = append(done, s.usageW.add(k, -u.Envelopes, -u.Bytes))
	}
	var errs []error
	for _, c := range done {
		select {
		case err := <-c:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// readQuotas reads the usage under keys (mailbox, sender, IP when known)
// and the stream's totals, all at once: an append waits for the slowest
// read instead of their sum.
func (s *Store) readQuotas(ctx context.Context, keys []string) (u [3]relaystore.Usage, total relaystore.Usage, err error) {
	var errs [4]error
	var wg sync.WaitGroup
	for i, k := range keys[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u[i+1], errs[i+1] = s.readUsage(ctx, k)
		}()
	}
	u[0], errs[0] = s.readUsage(ctx, keys[0])
	total, errs[3] = s.total(ctx)
	wg.Wait()
	return u, total, errors.Join(errs[:]...)
}

// totalEvery is how old the cached totals of the mailbox stream may be:
// every append checks them, and reading them is a request to the stream's
// leader.
const totalEvery = 250 * time.Millisecond

// total returns what the mailbox stream holds in all (its messages and
// bytes, headers included), from a cache at most totalEvery old. The total
// quota is a bound on the cluster, not an exact count: a counter updated by
// every append would make every relay contend on one key.
func (s *Store) total(ctx context.Context) (relaystore.Usage, error) {
	s.totalMu.Lock()
	if time.Since(s.totalAt) < totalEvery {
		defer s.totalMu.Unlock()
		return s.totalUse, nil
	}
	s.totalMu.Unlock()
	// Not under the lock: a slow cluster must not stall the appends that
	// would find the cache fresh meanwhile.
	var all relaystore.Usage
	for _, sh := range s.shards {
		info, err := sh.stream.Info(ctx)
		if err != nil {
			return relaystore.Usage{}, err
		}
		all.Envelopes += int(info.State.Msgs)
		all.Bytes += int64(info.State.Bytes)
	}
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	s.totalUse = all
	s.totalAt = time.Now()
	return s.totalUse, nil
}

// noteTotal adds what this relay just appended or deleted to the cached
// totals, so that its own changes count at once; the other relays' count at
// the next refresh.
func (s *Store) noteTotal(n int, size int64) {
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	s.totalUse.Envelopes = max(s.totalUse.Envelopes+n, 0)
	s.totalUse.Bytes = max(s.totalUse.Bytes+size, 0)
}

func decodeUsage(v []byte) (n int, bytes int64) {
	if len(v) != 16 {
		return 0, 0
	}
	return int(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
}

// readUsage returns the count under key: the value this process wrote
// last when the watch says no relay wrote it since (usagewatch.go),
// otherwise read from the cluster.
func (s *Store) readUsage(ctx context.Context, key string) (relaystore.Usage, error) {
	if u, ok := s.usageW.known(key, time.Now()); ok {
		return u, nil
	}
	e, err := s.usageW.bucket(key).kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return relaystore.Usage{}, nil
	} else if err != nil {
		return relaystore.Usage{}, err
	}
	n, b := decodeUsage(e.Value())
	return relaystore.Usage{Envelopes: n, Bytes: b}, nil
}
