package store

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStatements bounds the statements prepared on first use, so that a
// query built at run time (an IN list of some length) cannot grow the cache
// without end; past it a statement is prepared by SQLite on each call.
const maxCachedStatements = 256

// stmtCache holds the statements prepared once per open profile: the hot
// ones at open (hotStatements), every other one on its first use. Parsing
// and planning a statement costs more CPU than running most of them, and
// every plan runs several.
//
// The profile has one connection: a statement first met inside a write
// transaction cannot be prepared there (the transaction holds the
// connection), so it runs as text that once and is prepared before the next
// transaction begins (prepareWanted).
type stmtCache struct {
	mu   sync.RWMutex
	m    map[string]*sql.Stmt
	want map[string]bool // met inside a transaction, not yet prepared
}

// get returns the prepared statement of query, or nil when it is not
// prepared yet (the caller runs the query text). With db, it prepares it
// now; without (inside a transaction), it is prepared at the next
// prepareWanted.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	c.mu.RLock()
	s, ok := c.m[query]
	full := len(c.m)+len(c.want) >= maxCachedStatements
	c.mu.RUnlock()
	if ok || full {
		return s
	}
	if db == nil {
		c.mu.Lock()
		if c.want == nil {
			c.want = make(map[string]bool)
		}
		c.want[query] = true
		c.mu.Unlock()
		return nil
	}
	return c.prepare(ctx, db, query)
}

// prepare prepares query on db and keeps it; nil when SQLite refuses it
// (the caller's run of the text then reports why).
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	s, err := db.PrepareContext(ctx, query)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.want, query)
	if err != nil {
		return nil
	}
	if old, ok := c.m[query]; ok {
		s.Close()
		return old
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = s
	return s
}

// prepareWanted prepares the statements met inside transactions since the
// last call. Called with the connection free.
func (c *stmtCache) prepareWanted(ctx context.Context, db *sql.DB) {
	c.mu.RLock()
	n := len(c.want)
	c.mu.RUnlock()
	if n == 0 {
		return
	}
	c.mu.Lock()
	qs := make([]string, 0, len(c.want))
	for q := range c.want {
		qs = append(qs, q)
	}
	c.mu.Unlock()
	for _, q := range qs {
		c.prepare(ctx, db, q)
	}
}

// quiet is ctx without its cancellation. The store's statements are short
// and bounded; run with a context that can end, modernc.org/sqlite starts
// a goroutine and installs a progress handler per statement to interrupt
// it, which cost more than most statements. Ending a statement early
// changes no durability either way: a transaction commits whole or not at
// all.
func quiet(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
