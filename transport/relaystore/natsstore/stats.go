package natsstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
)

// regsEvery is how old the count of registrations Stats reports may be:
// reading it is a request to the bucket's leader, and /metrics must not let
// a scraper make one at will.
const regsEvery = 5 * time.Second

// regCount caches the number of registrations.
type regCount struct {
	mu sync.Mutex
	n  int
	at time.Time
}

// Stats implements relaystore.Store from cached figures: the mailbox
// streams' totals and the bytes kept with the payload stream's (at most totalEvery old, as the quotas read them) and
// the registrations (at most regsEvery old). No lock is held across a
// request to the cluster.
func (s *Store) Stats(ctx context.Context) (relaystore.Stats, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	t, kept, err := s.totals(ctx)
	if err != nil {
		return relaystore.Stats{}, fmt.Errorf("relay stats: %w", err)
	}
	s.regs.mu.Lock()
	n, fresh := s.regs.n, time.Since(s.regs.at) < regsEvery
	s.regs.mu.Unlock()
	if !fresh {
		st, err := s.reg.Status(ctx)
		if err != nil {
			return relaystore.Stats{}, fmt.Errorf("relay stats: %w", err)
		}
		n = int(st.Values())
		s.regs.mu.Lock()
		s.regs.n, s.regs.at = n, time.Now()
		s.regs.mu.Unlock()
	}
	return relaystore.Stats{Registrations: n, Envelopes: t.Envelopes, Bytes: t.Bytes, Stored: kept}, nil
}
