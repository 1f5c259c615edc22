package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The peers each owner accepts and the senders it blocks, on SQLite
// (peers.go says what they are for).

// Accept and Block join the group commit (sqliteack.go): each is a write
// a client can cause many times a second, which on a transaction of its
// own would cost a sync each.

// acceptWork records that owner accepts peer.
type acceptWork struct {
	owner, peer string
	now         time.Time
	forgot      int64
}

func (a *acceptWork) run(ctx context.Context, s *SQLite, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO accepted_peers (owner, peer, seen) VALUES (?, ?, ?)
		ON CONFLICT (owner, peer) DO UPDATE SET seen = excluded.seen`, a.owner, a.peer, a.now.UnixNano()); err != nil {
		return err
	}
	// Past the limit, the least recently seen go (ties by address, so
	// that every backend forgets the same ones).
	res, err := tx.ExecContext(ctx, `DELETE FROM accepted_peers WHERE owner = ? AND peer NOT IN
		(SELECT peer FROM accepted_peers WHERE owner = ? ORDER BY seen DESC, peer DESC LIMIT ?)`, a.owner, a.owner, s.limits.AcceptedPeers)
	if err != nil {
		return err
	}
	a.forgot, err = res.RowsAffected()
	return err
}

// done drops what the cache knew of the pair whatever the outcome (a
// failed commit may have happened), and all of it when peers were
// forgotten.
func (a *acceptWork) done(s *SQLite, err error) {
	s.relations.drop(a.owner, a.peer)
	if a.forgot > 0 || err != nil {
		s.relations.drop("", "")
	}
}

// Accept implements Store. The write joins the next group commit.
func (s *SQLite) Accept(ctx context.Context, owner, peer string, now time.Time) (int, error) {
	a := &acceptWork{owner: owner, peer: peer, now: now}
	if err := s.commitWork(ctx, a); err != nil {
		return 0, fmt.Errorf("record that %s accepts %s: %w", owner, peer, err)
	}
	return int(a.forgot), nil
}

// blockWork adds sender to owner's block list, or takes it off.
type blockWork struct {
	owner, sender string
	blocked       bool
}

func (b *blockWork) run(ctx context.Context, s *SQLite, tx *sql.Tx) error {
	if !b.blocked {
		_, err := tx.ExecContext(ctx, "DELETE FROM blocked_senders WHERE owner = ? AND sender = ?", b.owner, b.sender)
		return err
	}
	var listed, n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(sender = ?), 0) FROM blocked_senders WHERE owner = ?", b.sender, b.owner).Scan(&n, &listed); err != nil {
		return err
	}
	switch {
	case listed > 0:
		return nil
	case n >= s.limits.BlockedSenders:
		return ErrBlockListFull // nothing written: a refusal of this request alone
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO blocked_senders (owner, sender, since) VALUES (?, ?, ?)", b.owner, b.sender, time.Now().UnixNano())
	return err
}

func (b *blockWork) done(s *SQLite, _ error) { s.relations.drop(b.owner, b.sender) }

// Block implements Store. The write joins the next group commit.
func (s *SQLite) Block(ctx context.Context, owner, sender string, blocked bool) error {
	if err := s.commitWork(ctx, &blockWork{owner: owner, sender: sender, blocked: blocked}); err != nil {
		return fmt.Errorf("block %s for %s: %w", sender, owner, err)
	}
	return nil
}

// Relation implements Store. It is on every append, and a query on the
// store's one connection waits for the group commit in flight, so the
// answers are cached per owner and sender (sqliteRelMap): this process is
// the tables' only writer, and each of its writes drops what it changes.
func (s *SQLite) Relation(ctx context.Context, owner, sender string, now time.Time) (Relation, error) {
	since := now.Add(-s.limits.AcceptedLifetime).UnixNano()
	e, ok, gen := s.relations.get(owner, sender)
	if !ok {
		var seen sql.NullInt64
		err := s.db.QueryRowContext(ctx, `SELECT
			(SELECT seen FROM accepted_peers WHERE owner = ? AND peer = ?),
			EXISTS (SELECT 1 FROM blocked_senders WHERE owner = ? AND sender = ?)`, owner, sender, owner, sender).Scan(&seen, &e.blocked)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Relation{}, fmt.Errorf("relation of %s to %s: %w", owner, sender, err)
		}
		e.seen = seen.Int64
		e.accepted = seen.Valid
		s.relations.put(owner, sender, e, gen)
	}
	return Relation{Accepted: e.accepted && e.seen >= since, Blocked: e.blocked}, nil
}

// maxRelEntries bounds the cached pairs; past it the cache is dropped.
const maxRelEntries = 100000

// sqliteRelMap caches what the tables say of pairs of owner and sender.
type sqliteRelMap struct {
	mu  sync.Mutex
	gen uint64 // bumped by every drop, so that a read racing one is not kept
	m   map[[2]string]relEntry
}

// relEntry is one pair: when owner last sent to sender (when accepted)
// and whether owner blocks sender.
type relEntry struct {
	accepted, blocked bool
	seen              int64
}

func (c *sqliteRelMap) get(owner, sender string) (relEntry, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[[2]string{owner, sender}]
	return e, ok, c.gen
}

func (c *sqliteRelMap) put(owner, sender string, e relEntry, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil || len(c.m) >= maxRelEntries {
		c.m = make(map[[2]string]relEntry)
	}
	c.m[[2]string{owner, sender}] = e
}

// drop forgets one pair, or every pair when owner is "" (a write that
// may change many: an accept that forgot peers, the sweep).
func (c *sqliteRelMap) drop(owner, sender string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if owner == "" {
		clear(c.m)
		return
	}
	delete(c.m, [2]string{owner, sender})
}

// ForgetAccepted implements Store.
func (s *SQLite) ForgetAccepted(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM accepted_peers WHERE seen < ?", before.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	s.relations.drop("", "")
	if err != nil {
		return 0, fmt.Errorf("forget accepted peers: %w", err)
	}
	return int(n), nil
}
