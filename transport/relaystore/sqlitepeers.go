package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The peers each owner accepts and the senders it blocks, on SQLite
// (peers.go says what they are for).

// Accept implements Store.
func (s *SQLite) Accept(ctx context.Context, owner, peer string, now time.Time) (int, error) {
	var forgot int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO accepted_peers (owner, peer, seen) VALUES (?, ?, ?)
			ON CONFLICT (owner, peer) DO UPDATE SET seen = excluded.seen`, owner, peer, now.UnixNano()); err != nil {
			return err
		}
		// Past the limit, the least recently seen go (ties by address, so
		// that every backend forgets the same ones).
		res, err := tx.ExecContext(ctx, `DELETE FROM accepted_peers WHERE owner = ? AND peer NOT IN
			(SELECT peer FROM accepted_peers WHERE owner = ? ORDER BY seen DESC, peer DESC LIMIT ?)`, owner, owner, s.limits.AcceptedPeers)
		if err != nil {
			return err
		}
		forgot, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record that %s accepts %s: %w", owner, peer, err)
	}
	return int(forgot), nil
}

// Block implements Store.
func (s *SQLite) Block(ctx context.Context, owner, sender string, blocked bool) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if !blocked {
			_, err := tx.ExecContext(ctx, "DELETE FROM blocked_senders WHERE owner = ? AND sender = ?", owner, sender)
			return err
		}
		var listed, n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(sender = ?), 0) FROM blocked_senders WHERE owner = ?", sender, owner).Scan(&n, &listed); err != nil {
			return err
		}
		switch {
		case listed > 0:
			return nil
		case n >= s.limits.BlockedSenders:
			return ErrBlockListFull
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO blocked_senders (owner, sender, since) VALUES (?, ?, ?)", owner, sender, time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("block %s for %s: %w", sender, owner, err)
	}
	return nil
}

// Relation implements Store.
func (s *SQLite) Relation(ctx context.Context, owner, sender string, now time.Time) (Relation, error) {
	var r Relation
	since := now.Add(-s.limits.AcceptedLifetime).UnixNano()
	err := s.db.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM accepted_peers WHERE owner = ? AND peer = ? AND seen >= ?),
		EXISTS (SELECT 1 FROM blocked_senders WHERE owner = ? AND sender = ?)`, owner, sender, since, owner, sender).Scan(&r.Accepted, &r.Blocked)
	if errors.Is(err, sql.ErrNoRows) {
		return Relation{}, nil
	}
	if err != nil {
		return Relation{}, fmt.Errorf("relation of %s to %s: %w", owner, sender, err)
	}
	return r, nil
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
	if err != nil {
		return 0, fmt.Errorf("forget accepted peers: %w", err)
	}
	return int(n), nil
}
