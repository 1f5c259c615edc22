package relaystore

import (
	"context"
	"database/sql"
	"fmt"
)

// ackWork is an acknowledgement queued for the group commit: its rows are
// deleted in the same transaction as the appends and acknowledgements of
// other clients that arrived with it, so that one fsync serves them all.
type ackWork struct {
	rows    []uint64
	removed []Removed
	freed   Usage
}

func (a *ackWork) run(ctx context.Context, s *SQLite, tx *sql.Tx, recipient string) error {
	var err error
	a.removed, a.freed, err = s.deleteRows(ctx, tx, recipient, a.rows)
	return err
}

// acked applies a committed acknowledgement to the running totals and the
// leases.
func (s *SQLite) acked(r *appendReq) {
	s.counts.add(0, Usage{-r.ack.freed.Envelopes, -r.ack.freed.Bytes})
	s.leases.Forget(r.recipient, r.ack.rows)
}

// Ack implements Store. The request joins the next group commit (see
// Append), and returns once it is committed.
func (s *SQLite) Ack(ctx context.Context, recipient string, rows []uint64) ([]Removed, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	r := &appendReq{recipient: recipient, ack: &ackWork{rows: rows}, done: make(chan struct{})}
	if err := s.groupCommit(ctx, r); err != nil {
		return nil, fmt.Errorf("acknowledge rows of %s: %w", recipient, err)
	}
	return r.ack.removed, nil
}

// groupCommit queues r for the next group commit and waits for it. Once
// queued, the request is committed or failed whatever ctx says: the caller
// must not report it refused while it may be on disk. A request never
// queued fails with ErrClosed or ctx's error.
func (s *SQLite) groupCommit(ctx context.Context, r *appendReq) error {
	s.sendMu.RLock()
	if s.closed {
		s.sendMu.RUnlock()
		return ErrClosed
	}
	select {
	case s.appends <- r:
		s.sendMu.RUnlock()
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return ctx.Err()
	}
	<-r.done
	return r.err
}
