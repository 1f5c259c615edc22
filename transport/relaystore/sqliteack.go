package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// groupWork is a write other than an append that joins the group commit
// (see Append): it runs in the group's transaction, so that one fsync
// serves it with every append and other write that arrived with it. A
// request that writes on its own transaction would cost a sync each, and a
// client could send thousands a second (issue 30, finding 5: SenderBlock).
type groupWork interface {
	// run does the write within tx. A refusal (refused says which
	// errors are) must leave nothing written: it fails this request
	// alone; any other error fails the whole group.
	run(ctx context.Context, s *SQLite, tx *sql.Tx) error
	// done is called once the group's transaction ended, with the
	// request's outcome: nil when it is committed.
	done(s *SQLite, err error)
}

// refused reports whether err is a refusal of one request that wrote
// nothing, as opposed to a failure of the database.
func refused(err error) bool {
	for _, r := range []error{ErrNotRegistered, ErrMailboxFull, ErrSenderQuota, ErrStoreFull, ErrBlockListFull, ErrKeyMismatch, ErrNoBundle} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// batchWork is an AppendBatch queued for the group commit: its appends run
// in order in the group's transaction, each checked as Append checks it
// before it writes, so that a refused item writes nothing and leaves the
// others; one fsync makes the whole batch durable.
type batchWork struct {
	reqs []*appendReq
}

func (w *batchWork) run(ctx context.Context, s *SQLite, tx *sql.Tx) error {
	// The shared payloads this run inserted, by what the items point at:
	// each once, with the first item of it that is stored.
	payloads := make(map[*SharedPayload]int64)
	for _, r := range w.reqs {
		r.rows, r.err, r.stored = nil, nil, 0
		if err := s.appendTx(ctx, tx, r, payloads); refused(err) {
			r.rows, r.err = nil, err
		} else if err != nil {
			return err
		}
	}
	return nil
}

// done counts the committed appends, or fails every item with the
// transaction's error.
func (w *batchWork) done(s *SQLite, err error) {
	for _, r := range w.reqs {
		switch {
		case err != nil:
			r.rows, r.err = nil, err
		case r.err == nil:
			s.counts.add(0, Usage{len(r.rows), r.size() * int64(len(r.rows))})
			s.counts.addStored(r.stored)
		}
	}
}

// ackWork is an acknowledgement queued for the group commit: its rows are
// deleted in the same transaction as the appends and acknowledgements of
// other clients that arrived with it.
type ackWork struct {
	recipient string
	rows      []uint64
	removed   []Removed
	freed     Usage
	unstored  int64
}

func (a *ackWork) run(ctx context.Context, s *SQLite, tx *sql.Tx) error {
	var err error
	a.removed, a.freed, a.unstored, err = s.deleteRows(ctx, tx, a.recipient, a.rows)
	return err
}

// done applies a committed acknowledgement to the running totals and the
// leases.
func (a *ackWork) done(s *SQLite, err error) {
	if err != nil {
		return
	}
	s.counts.add(0, Usage{-a.freed.Envelopes, -a.freed.Bytes})
	s.counts.addStored(-a.unstored)
	s.leases.Forget(a.recipient, a.rows)
}

// Ack implements Store. The request joins the next group commit (see
// Append), and returns once it is committed.
func (s *SQLite) Ack(ctx context.Context, recipient string, rows []uint64) ([]Removed, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	a := &ackWork{recipient: recipient, rows: rows}
	if err := s.commitWork(ctx, a); err != nil {
		return nil, fmt.Errorf("acknowledge rows of %s: %w", recipient, err)
	}
	return a.removed, nil
}

// commitWork queues w for the next group commit and waits for it.
func (s *SQLite) commitWork(ctx context.Context, w groupWork) error {
	return s.groupCommit(ctx, &appendReq{work: w, done: make(chan struct{})})
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
