package natsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Relation is on every append, and the lists it reads change rarely (an
// accepted pair is written once an hour per relay, a block list when its
// owner says so), so this process keeps each owner's two lists as last
// read. A watch of both buckets (metadata only) drops an owner's lists as
// soon as any relay changes either; this relay's own Accept and Block drop
// them before they return. Between another relay's change and the watch's
// delivery (milliseconds on a healthy cluster) this relay still answers
// from the old lists; relationTTL bounds that window when the watch itself
// is cut (a reconnect replays what it missed, but a cache may outlive it).

// relationTTL is the longest a cached owner's lists answer without being
// read again, whatever the watch says.
const relationTTL = 10 * time.Second

// maxRelations bounds the owners cached; past it the cache is dropped,
// which costs only reads done again.
const maxRelations = 100000

// relationCache holds owners' accepted peers and block lists.
type relationCache struct {
	mu    sync.Mutex
	gen   uint64 // bumped by every drop, so that a read racing one is not kept
	lists map[string]peerLists
	live  int // the watches running; the cache answers only while both do
}

// peerLists is one owner's two lists and when they were read.
type peerLists struct {
	accepted, blocked relaystore.PeerList
	at                time.Time
}

// get returns owner's lists when cached and fresh, and the generation a
// read of them must still find to be kept.
func (c *relationCache) get(owner string, now time.Time) (peerLists, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lists[owner]
	if ok && (c.live < 2 || now.Sub(l.at) >= relationTTL) {
		delete(c.lists, owner)
		ok = false
	}
	return l, ok, c.gen
}

// put keeps lists read for owner, unless something was dropped since gen.
func (c *relationCache) put(owner string, l peerLists, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.lists == nil || len(c.lists) >= maxRelations {
		c.lists = make(map[string]peerLists)
	}
	c.lists[owner] = l
}

// watching counts a watch that starts (+1) or ends (-1); when one ends,
// every cached list goes, since nothing would drop it any more.
func (c *relationCache) watching(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live += d
	if d < 0 {
		c.gen++
		clear(c.lists)
	}
}

// drop forgets owner's lists (the key of either bucket, ownerKey).
func (c *relationCache) drop(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.lists, owner)
}

// watchPeers starts the watch of both buckets that keeps the cache
// current. The watchers live as long as ctx (the client library ends a
// watch when the context of its creation ends): Close cancels it.
func (s *Store) watchPeers(ctx context.Context) error {
	for _, kv := range []jetstream.KeyValue{s.accepted, s.blocked} {
		w, err := kv.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.MetaOnly())
		if err != nil {
			return fmt.Errorf("watch peer lists: %w", err)
		}
		s.relations.watching(1)
		go func() {
			defer s.relations.watching(-1)
			for e := range w.Updates() {
				if e != nil {
					s.relations.drop(e.Key())
				}
			}
		}()
	}
	return nil
}

// Relation implements relaystore.Store, from the cache when it holds the
// owner's lists; otherwise both lists are read at once (one round trip).
func (s *Store) Relation(ctx context.Context, owner, sender string, now time.Time) (relaystore.Relation, error) {
	key := ownerKey(owner)
	l, ok, gen := s.relations.get(key, time.Now())
	if !ok {
		var err error
		if l, err = s.readPeerLists(ctx, key); err != nil {
			return relaystore.Relation{}, fmt.Errorf("relation of %s to %s: %w", owner, sender, err)
		}
		s.relations.put(key, l, gen)
	}
	return relaystore.Relation{
		Accepted: l.accepted.HasSince(sender, now.Add(-s.limits.AcceptedLifetime)),
		Blocked:  l.blocked.Has(sender),
	}, nil
}

// readPeerLists reads both of an owner's lists from the cluster, at once.
func (s *Store) readPeerLists(ctx context.Context, key string) (peerLists, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	l := peerLists{at: time.Now()}
	read := func(kv jetstream.KeyValue) (relaystore.PeerList, error) {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		return decodePeers(e.Value()), nil
	}
	var errBlocked error
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.blocked, errBlocked = read(s.blocked)
	}()
	var err error
	l.accepted, err = read(s.accepted)
	<-done
	return l, errors.Join(err, errBlocked)
}

// startWatch starts the watches of the peer lists once the store is set
// up; on failure it stops any it
// started, so that Open can try again. Creating a watch is bounded by the
// store's timeout, though the watch lives on: its context cannot carry a
// deadline, since the client library ends a watch with its context.
func (s *Store) startWatch() error {
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	finished := false
	t := time.AfterFunc(s.timeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			stop()
		}
	})
	err := s.watchPeers(ctx)
	mu.Lock()
	finished = true
	mu.Unlock()
	t.Stop()
	if err == nil {
		err = ctx.Err() // the timer stopped them as they were made
	}
	if err != nil {
		stop()
		return err
	}
	s.stopWatch = stop
	return nil
}
