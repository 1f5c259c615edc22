package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
)

// hotStatements are prepared once when a profile opens and reused by every
// transaction through tx.stmt. Add a statement here when it runs once per
// message; everything else is prepared by SQLite on the fly.
var hotStatements = []string{
	sqlGetMeta,
	sqlPutMeta,
	sqlSwapMeta,
	// Transitions, once per message.
	sqlInsertSession,
	sqlUpdateSession,
	sqlFlushSession,
	sqlInsertOutbound,
	sqlOutboundExists,
	sqlDeleteOutbound,
	sqlInsertHistory,
	sqlSetSentState,
	sqlCountStaged,
	sqlLastStagedRow,
	sqlInsertStaged,
	sqlDeleteStaged,
	sqlQuarantine,
	sqlInsertInbound,
	sqlInboundDigest,
	sqlDeleteInbound,
	sqlInsertFinalized,
	sqlInsertFinalizedGroup,
	sqlDeleteOneTimePreKey,
	// Reads, once per message.
	sqlPeer,
	sqlRetired,
	sqlOneTimePreKey,
	sqlOutbound,
	sqlInbound,
	sqlFinalized,
	sqlSeen,
	sqlPendingOutbound,
	sqlPendingOutboundPeer,
	sqlPendingInbound,
	sqlPendingInboundPeer,
	sqlCountOutbound,
	sqlCountOutboundPeer,
	sqlCountInbound,
	sqlCountInboundPeer,
	sqlStaged,
	sqlHistory,
}

// tx is one write transaction: BEGIN IMMEDIATE (the _txlock DSN option) up
// to commit. Store methods open one, defer rollback, hand it to small helpers
// and commit; the helpers run every statement through it.
type tx struct {
	db *DB
	tx *sql.Tx
	// now is the one time of the transaction, for the columns a plan does
	// not carry a time for.
	now time.Time
	// kind is the kind of the plan being applied, for failpoint names.
	kind string
	// sessions are the session writes of this transaction, by peer (see
	// writeSession).
	sessions map[string]*sessionWrites
	// plan is the index in the batch of the plan being applied.
	plan int
	// marker is marker_written as the transaction's plans raised it.
	marker txMarker
	// unforwarded are the forwards the plan being applied did not store
	// (forwardRoster), for its receipt.
	unforwarded []engine.Unforwarded
}

// txMarker is the presentation marker within one transaction: read once,
// raised in memory, written once (flushMarker).
type txMarker struct {
	loaded bool
	cur    uint64
	old    []byte // the stored value (nil: absent), for the swap
	plan   int    // the last plan that raised it
	kind   string // its kind; "" when nothing is left to write
}

// beginImmediate starts a write transaction. It takes SQLite's write lock at
// once, so a transaction never fails half-way for want of it.
func (db *DB) beginImmediate(ctx context.Context) (*tx, error) {
	if db.closed.Load() {
		return nil, fmt.Errorf("store: begin transaction: %w", engine.ErrClosed)
	}
	if db.readOnly {
		return nil, db.errReadOnly("begin transaction")
	}
	if err := ctx.Err(); err != nil {
		// Refused before it starts; once begun, a transaction runs to its
		// commit or rollback whatever ctx does (quiet).
		return nil, fmt.Errorf("store: begin transaction: %w", err)
	}
	ctx = quiet(ctx)
	db.stmts.prepareWanted(ctx, db.sql)
	t, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		if db.closed.Load() {
			return nil, fmt.Errorf("store: begin transaction: %w", engine.ErrClosed)
		}
		return nil, fmt.Errorf("store: begin transaction: %w", mapErr(err))
	}
	return &tx{db: db, tx: t}, nil
}

// rollback ends the transaction without its changes; after persist it does
// nothing. Deferred by every caller of beginImmediate.
func (t *tx) rollback() { _ = t.tx.Rollback() }

// persist makes the transaction durable: the SQL COMMIT (synchronous=FULL:
// the log is synced). In parley's code "commit" is a message's finalization;
// the SQL commit is "persist" (and the failpoints before-persist and
// after-persist).
func (t *tx) persist() error {
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("store: persist: %w", mapErr(err))
	}
	return nil
}

// stmt returns the transaction's use of query's prepared statement, or nil
// if it is not prepared yet.
func (t *tx) stmt(ctx context.Context, query string) *sql.Stmt {
	s := t.db.stmts.get(ctx, nil, query)
	if s == nil {
		return nil
	}
	// The statement was prepared on the transaction's connection (there is
	// only one), so database/sql reuses it instead of preparing it again.
	return t.tx.StmtContext(ctx, s)
}

// exec runs a statement that returns no rows. Errors come back mapped.
func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = quiet(ctx)
	var (
		r   sql.Result
		err error
	)
	if s := t.stmt(ctx, query); s != nil {
		r, err = s.ExecContext(ctx, args...)
	} else {
		r, err = t.tx.ExecContext(ctx, query, args...)
	}
	return r, mapErr(err)
}

// QueryRowContext runs a statement that returns at most one row; it makes tx
// a querier. Scan's error is not mapped: callers pass it through mapErr.
func (t *tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = quiet(ctx)
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// query runs a statement that returns rows. Errors come back mapped.
func (t *tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = quiet(ctx)
	var (
		rows *sql.Rows
		err  error
	)
	if s := t.stmt(ctx, query); s != nil {
		rows, err = s.QueryContext(ctx, args...)
	} else {
		rows, err = t.tx.QueryContext(ctx, query, args...)
	}
	return rows, mapErr(err)
}
