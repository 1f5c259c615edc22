package relaystore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// counts are the SQLite store's running totals for Stats: read once when
// the database opens, then moved by every committed registration, append,
// acknowledgement and expiry. One process owns the file, so they stay exact,
// and Stats never touches the database (an unauthenticated /metrics scrape
// used to run a count(*) over a million registrations on the relay's one
// connection).
type counts struct {
	mu     sync.Mutex
	regs   int
	total  Usage
	stored int64 // bytes kept for envelopes: heads, whole envelopes and each shared payload once
}

func (c *counts) load(ctx context.Context, tx *sql.Tx) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM registrations),
		(SELECT coalesce(sum(envelopes), 0) FROM usage WHERE scope = 'total'), (SELECT coalesce(sum(bytes), 0) FROM usage WHERE scope = 'total'),
		(SELECT coalesce(sum(length(envelope)), 0) FROM envelopes) + (SELECT coalesce(sum(length(payload)), 0) FROM payloads)`).
		Scan(&c.regs, &c.total.Envelopes, &c.total.Bytes, &c.stored)
}

// addStored moves the bytes kept by n (negative to remove).
func (c *counts) addStored(n int64) {
	c.mu.Lock()
	c.stored += n
	c.mu.Unlock()
}

// add moves the totals by regs registrations and u (negative to remove).
func (c *counts) add(regs int, u Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.regs += regs
	c.total.Envelopes += u.Envelopes
	c.total.Bytes += u.Bytes
}

// Stats implements Store from the running totals.
func (s *SQLite) Stats(context.Context) (Stats, error) {
	select {
	case <-s.stop:
		return Stats{}, fmt.Errorf("relay stats: %w", ErrClosed)
	default:
	}
	s.counts.mu.Lock()
	defer s.counts.mu.Unlock()
	return Stats{Registrations: s.counts.regs, Envelopes: s.counts.total.Envelopes, Bytes: s.counts.total.Bytes, Stored: s.counts.stored}, nil
}
