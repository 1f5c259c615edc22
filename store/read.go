package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
)

// maxPage bounds every page a read model returns; a limit of 0 or less, or
// above it, means maxPage.
const maxPage = 1000

func pageLimit(limit int) int {
	if limit <= 0 || limit > maxPage {
		return maxPage
	}
	return limit
}

// checkOpen fails with engine.ErrClosed once the store is closed.
func (db *DB) checkOpen(what string) error {
	if db.closed.Load() {
		return fmt.Errorf("store: %s: %w", what, engine.ErrClosed)
	}
	return nil
}

// readErr maps the error of a read: engine.ErrClosed when the store was
// closed under it, the mapped driver error otherwise.
func (db *DB) readErr(what string, err error) error {
	if db.closed.Load() {
		return fmt.Errorf("store: %s: %w", what, engine.ErrClosed)
	}
	return fmt.Errorf("store: %s: %w", what, mapErr(err))
}

// queryRow runs a one-row read outside any write transaction, on the
// prepared statement when the query is a hot one.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = quiet(ctx)
	if s := db.stmts.get(ctx, db.sql, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return db.sql.QueryRowContext(ctx, query, args...)
}

// query runs a read outside any write transaction. Errors are not mapped.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = quiet(ctx)
	if s := db.stmts.get(ctx, db.sql, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return db.sql.QueryContext(ctx, query, args...)
}

// nsTime is the time of a column in Unix nanoseconds.
func nsTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }
