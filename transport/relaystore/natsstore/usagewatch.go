package natsstore

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Every append checks the mailbox's, the sender's and the IP's counts
// (and a stranger's two more), which were a read each. The usage writer
// already keeps the value and revision of this process's last write of a
// key; a watch of each usage bucket (metadata only: key and revision)
// reports every write of every relay, and a revision other than this
// process's own marks the key unknown, so that the next check reads it.
// A check that trusts a known value therefore misses only what another
// relay wrote and the watch has not delivered yet, the same kind of window
// as the one between a check and its charge (docs/relay.md): quotas stay
// as exact as they were across relays, and exact within one.

// usageTrust bounds how long after this process's last write of a key its
// value is trusted without a read, whatever the watch says: a key written
// by this relay alone stays known while it keeps writing it.
const usageTrust = 10 * time.Second

// known returns the value this process last wrote under key, when the
// watch runs, reported no later write by another relay, and the write is
// recent (usageTrust).
func (w *usageWriter) known(key string, now time.Time) (relaystore.Usage, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[key]
	if !w.watching[usageShardOf(key, len(w.buckets))] || k == nil || !k.known || now.Sub(k.at) >= usageTrust {
		return relaystore.Usage{}, false
	}
	return relaystore.Usage{Envelopes: k.have, Bytes: k.hold}, true
}

// saw notes that the watch reported a write of key at rev.
func (w *usageWriter) saw(key string, rev uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[key]
	if k == nil || rev <= k.seen {
		return
	}
	k.seen = rev
	if rev != k.rev {
		k.known = false
	}
}

// setWatching says whether the watch of bucket i runs; when it stops, no
// value of that bucket's keys is trusted until it runs again.
func (w *usageWriter) setWatching(i int, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watching[i] = on
}

// watchUsage starts a watch of every usage bucket (one per usage shard);
// they live as long as ctx.
func (s *Store) watchUsage(ctx context.Context) error {
	w := s.usageW // Open may set up another after a failed start
	for i, b := range w.buckets {
		wt, err := b.kv.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.MetaOnly())
		if err != nil {
			return fmt.Errorf("watch usage in %s: %w", b.name, err)
		}
		w.setWatching(i, true)
		go func() {
			defer w.setWatching(i, false)
			for e := range wt.Updates() {
				if e != nil {
					w.saw(e.Key(), e.Revision())
				}
			}
		}()
	}
	return nil
}
