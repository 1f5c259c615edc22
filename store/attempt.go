package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// MaxAttempts is the most attempts kept per message: a message retried
// more often keeps its first and its latest ones.
const MaxAttempts = 32

const (
	sqlInsertAttempt = "INSERT INTO attempt (peer, id, n, at, sealed) VALUES (?, ?, ?, ?, ?)"
	sqlLastAttempt   = "SELECT COALESCE(MAX(n), 0) FROM attempt WHERE peer = ? AND id = ?"
	sqlTrimAttempts  = "DELETE FROM attempt WHERE peer = ? AND id = ? AND n > 1 AND n <= ?"
	sqlAttempts      = "SELECT n, at, sealed, taken_at FROM attempt WHERE peer = ? AND id = ? ORDER BY n"
	// Only a pending message's attempt is marked: one acknowledged meanwhile
	// has its place already.
	sqlMarkTaken = `UPDATE attempt SET taken_at = ?1 WHERE peer = ?2 AND id = ?3 AND n = ?4 AND taken_at IS NULL
		AND EXISTS (SELECT 1 FROM outbound o WHERE o.recipient = ?2 AND o.id = ?3)`
	// A message still pending keeps its whole log, however old.
	sqlPruneAttempts = "DELETE FROM attempt WHERE at < ? AND NOT EXISTS (SELECT 1 FROM outbound o WHERE o.recipient = attempt.peer AND o.id = attempt.id)"
)

// attemptRecord is the sealed content of an attempt: envelope ID (16
// bytes), envelope type (1), initiation ID (32).
const attemptRecord = 16 + 1 + 32

func attemptKey(peer engine.Address, id wire.LogicalID, n int64) []byte {
	k := messageKey(peer, id)
	return binary.BigEndian.AppendUint64(k, uint64(n))
}

// recordAttempt logs the envelope out carrying message id to peer, on the
// session initiation init; n is its number (1: the send).
func (t *tx) recordAttempt(ctx context.Context, peer engine.Address, id wire.LogicalID, n int64, at time.Time, out wire.Envelope, init engine.InitiationID) error {
	rec := make([]byte, 0, attemptRecord)
	rec = append(rec, out.ID[:]...)
	rec = append(rec, byte(out.Type))
	rec = append(rec, init[:]...)
	sealed := t.db.seal.seal(kindAttempt, attemptKey(peer, id, n), rec)
	if _, err := t.run(ctx, "attempt-insert", sqlInsertAttempt, peer.String(), id[:], n, at.UnixNano(), sealed); err != nil {
		return fmt.Errorf("log attempt %d of %x to %s: %w", n, id[:4], peer, err)
	}
	return nil
}

// nextAttempt numbers a retry's attempt and trims the log of a message
// retried more than MaxAttempts times (the send stays).
func (t *tx) nextAttempt(ctx context.Context, peer engine.Address, id wire.LogicalID) (int64, error) {
	var last int64
	if _, err := t.scan(ctx, "attempt-last", sqlLastAttempt, []any{peer.String(), id[:]}, &last); err != nil {
		return 0, err
	}
	n := last + 1
	if n > MaxAttempts {
		// Keep the send (1) and the newest MaxAttempts-1 before this one.
		if _, err := t.run(ctx, "attempt-trim", sqlTrimAttempts, peer.String(), id[:], n-MaxAttempts+1); err != nil {
			return 0, fmt.Errorf("trim the attempts of %x to %s: %w", id[:4], peer, err)
		}
	}
	return n, nil
}

// Attempts returns the logged attempts of the message id sent to peer,
// oldest first.
func (db *DB) Attempts(ctx context.Context, peer engine.Address, id wire.LogicalID) ([]engine.Attempt, error) {
	if err := db.checkOpen("read attempts"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlAttempts, peer.String(), id[:])
	if err != nil {
		return nil, db.readErr("read attempts", err)
	}
	defer rows.Close()
	var out []engine.Attempt
	for rows.Next() {
		var n, at int64
		var sealed []byte
		var taken sql.NullInt64
		if err := rows.Scan(&n, &at, &sealed, &taken); err != nil {
			return nil, db.readErr("read attempts", err)
		}
		rec, err := db.seal.open(kindAttempt, attemptKey(peer, id, n), sealed)
		if err != nil {
			return nil, fmt.Errorf("store: attempt %d of %x to %s: %w", n, id[:4], peer, err)
		}
		if len(rec) != attemptRecord {
			return nil, fmt.Errorf("store: attempt %d of %x to %s: %d bytes, want %d: %w", n, id[:4], peer, len(rec), attemptRecord, engine.ErrMalformedState)
		}
		a := engine.Attempt{N: int(n), At: nsTime(at), Type: wire.EnvelopeType(rec[16])}
		copy(a.Envelope[:], rec[:16])
		copy(a.Initiation[:], rec[17:])
		if taken.Valid {
			a.TakenAt = nsTime(taken.Int64)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read attempts", err)
	}
	return out, nil
}

// markTaken stamps the attempt the relay reported taken.
func (t *tx) markTaken(ctx context.Context, p engine.MarkTaken) (engine.Receipt, error) {
	if _, err := t.runOne(ctx, "attempt-taken", engine.ErrNotPending, sqlMarkTaken, p.At.UnixNano(), p.Peer.String(), p.ID[:], p.N); err != nil {
		return engine.Receipt{}, fmt.Errorf("mark attempt %d of %x to %s taken: %w", p.N, p.ID[:4], p.Peer, err)
	}
	// Visible: the outbox shows the message on the device.
	return t.visible(ctx)
}
