package relayserver

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/wire"
)

// The envelope lifetime: a sweep deletes the envelopes that waited longer
// than Limits.EnvelopeLifetime unacknowledged, through the store's Expire
// (the same accounting as an acknowledgement, so every quota is freed), and
// tells their senders they expired. And the record of which mailboxes are
// read, for the storage reserve (relaystore.Limits.ReserveBytes).

// sweepBatch is the most rows one Expire call deletes: a sweep calls it
// again while batches come back full.
const sweepBatch = 1000

// sweeper runs until ctx ends, then closes done.
func (s *Server) sweeper(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.lim.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep(ctx)
		}
	}
}

// sweep expires what outlived its lifetime: envelopes, and the records of
// accepted peers (peers.go).
func (s *Server) sweep(ctx context.Context) {
	s.sweepBlobs(ctx)
	if n, err := s.store.ForgetAccepted(ctx, s.now().Add(-s.lim.AcceptedLifetime)); err != nil {
		if ctx.Err() == nil {
			s.log.Error("forget accepted peers", "err", cause(err))
		}
	} else {
		s.metrics.acceptForgotten.Add(float64(n))
	}
	for ctx.Err() == nil {
		now := s.now()
		gone, err := s.store.Expire(ctx, now, now.Add(-s.lim.EnvelopeLifetime), sweepBatch)
		if len(gone) > 0 {
			s.metrics.expired.Add(float64(len(gone)))
			s.tellStatus(ctx, gone, wire.EnvelopeExpired)
		}
		if err != nil {
			if ctx.Err() == nil {
				s.storeFailing.Store(true)
				s.log.Error("expire envelopes", "err", cause(err))
			}
			return
		}
		s.storeFailing.Store(false)
		if len(gone) < sweepBatch {
			return
		}
	}
}

// readers remembers which addresses read their mail (acknowledged rows)
// through this relay lately, for the reserve. It forgets an address after
// the envelope lifetime, and holds at most maxReaders of them: beyond, a new
// reader is not remembered until old ones are forgotten (it still counts
// while connected).
type readers struct {
	mu   sync.Mutex
	ttl  time.Duration
	seen map[string]time.Time
}

const maxReaders = 1 << 20

func newReaders(ttl time.Duration) *readers {
	return &readers{ttl: ttl, seen: make(map[string]time.Time)}
}

// read records that address read its mail at now.
func (r *readers) read(address string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[address]; !ok && len(r.seen) >= maxReaders {
		for a, at := range r.seen {
			if now.Sub(at) > r.ttl {
				delete(r.seen, a)
			}
		}
		if len(r.seen) >= maxReaders {
			return
		}
	}
	r.seen[address] = now
}

// recent reports whether address read its mail within the lifetime.
func (r *readers) recent(address string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.seen[address]
	return ok && now.Sub(at) <= r.ttl
}

// reads reports whether address reads its mail: it is connected to this
// relay now, or acknowledged rows through it within the envelope lifetime.
func (s *Server) reads(address string) bool {
	s.mu.RLock()
	_, connected := s.byAddr[address]
	s.mu.RUnlock()
	return connected || s.readers.recent(address, s.now())
}
