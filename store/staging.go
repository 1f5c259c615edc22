package store

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

// The quarantine keeps what could not be processed, for a person to look
// at, but a sender can make any number of envelopes fail: it keeps at most
// QuarantineRows rows and QuarantineBytes bytes of them, evicting the oldest.
const (
	QuarantineRows  = 1000
	QuarantineBytes = 4 << 20
)

// StagingQuota is the most envelopes the durable staging area holds. A Stage that
// would go past it stages nothing and fails with engine.ErrStagingFull; the
// relay keeps the envelopes until processing makes room.
const StagingQuota = 10000

// The staging area lives in the table named inbox (and its records keep the
// sealing label "inbox"): renaming either would make existing profiles
// unreadable.
const (
	sqlCountStaged = "SELECT count(*) FROM inbox"
	// sqlLastStagedRow is the highest row number ever handed out: the staging area
	// is AUTOINCREMENT, so sqlite_sequence remembers it after its row was
	// deleted; quarantine keeps the numbers of the rows it took.
	sqlLastStagedRow = `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'inbox'), 0),
		coalesce((SELECT max(row) FROM inbox), 0), coalesce((SELECT max(row) FROM quarantine), 0))`
	sqlInsertStaged = "INSERT INTO inbox (row, received_at, relay_row, sealed) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
	sqlDeleteStaged = "DELETE FROM inbox WHERE row = ?"
	// sqlQuarantine moves a staged row's record verbatim: it may not open.
	sqlQuarantine = `INSERT INTO quarantine (row, received_at, quarantined_at, reason, sealed)
		SELECT row, received_at, ?, ?, sealed FROM inbox WHERE row = ?`

	sqlStaged = "SELECT row, relay_row, received_at, sealed FROM inbox WHERE row > ? ORDER BY row LIMIT ?"

	sqlQuarantined     = "SELECT row, received_at, quarantined_at, reason, sealed FROM quarantine WHERE row > ? ORDER BY row LIMIT ?"
	sqlClearQuarantine = "DELETE FROM quarantine WHERE ?1 = 0 OR row <= ?1"

	// sqlQuarantineEvict deletes the oldest quarantined rows beyond the
	// bounds: a row goes when newer ones already fill the row count or,
	// with it, the byte budget.
	sqlQuarantineEvict = `DELETE FROM quarantine WHERE row IN (
		SELECT row FROM (
			SELECT row, count(*) OVER newer AS n, sum(length(sealed)) OVER newer AS bytes
			FROM quarantine WINDOW newer AS (ORDER BY row DESC ROWS UNBOUNDED PRECEDING))
		WHERE n > ? OR bytes > ?)`
)

func stagedKey(row int64) []byte { return rowKey(rowKeyInt(row)) }

// stage writes envelopes to the staging area under new row numbers, taken inside
// the transaction because each record is sealed to its row.
func (t *tx) stage(ctx context.Context, p engine.Stage) (engine.Receipt, error) {
	var n int
	if _, err := t.scan(ctx, "inbox-count", sqlCountStaged, nil, &n); err != nil {
		return engine.Receipt{}, err
	}
	if n+len(p.Envelopes) > StagingQuota {
		return engine.Receipt{}, fmt.Errorf("stage %d envelopes on %d staged, quota %d: %w", len(p.Envelopes), n, StagingQuota, engine.ErrStagingFull)
	}
	var last int64
	if _, err := t.scan(ctx, "inbox-last-row", sqlLastStagedRow, nil, &last); err != nil {
		return engine.Receipt{}, err
	}
	rows := make([]int64, len(p.Envelopes))
	for i, e := range p.Envelopes {
		row := last + 1 + int64(i)
		_, err := t.runOne(ctx, "inbox-insert", engine.ErrConflict, sqlInsertStaged,
			row, p.At.UnixNano(), int64(e.RelayRow), t.db.seal.seal(kindStaged, stagedKey(row), e.Envelope))
		if err != nil {
			return engine.Receipt{}, fmt.Errorf("stage envelope of relay row %d: %w", e.RelayRow, err)
		}
		rows[i] = row
	}
	return engine.Receipt{Rows: rows}, nil
}

// deleteStagedRow consumes a staged envelope; it must still be there (else it
// was processed already).
func (t *tx) deleteStagedRow(ctx context.Context, row int64) error {
	if _, err := t.runOne(ctx, "inbox-delete", engine.ErrConflict, sqlDeleteStaged, row); err != nil {
		return fmt.Errorf("consume staged row %d (processed already?): %w", row, err)
	}
	return nil
}

// collisionRetire consumes the staged row of an initiation that lost a
// collision, retires that initiation and deletes the one-time prekey it used:
// one-time prekeys never expire, so a losing initiation's key would
// otherwise stay on disk for good.
func (t *tx) collisionRetire(ctx context.Context, p engine.CollisionRetire) (engine.Receipt, error) {
	if err := t.deleteStagedRow(ctx, p.StagedRow); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.insertRetired(ctx, p.Peer, p.Retired); err != nil {
		return engine.Receipt{}, err
	}
	if p.ConsumeOneTime != nil {
		if err := t.consumeOneTime(ctx, *p.ConsumeOneTime); err != nil {
			return engine.Receipt{}, err
		}
	}
	if err := t.announce(ctx, p.Announce); err != nil {
		return engine.Receipt{}, err
	}
	return t.visible(ctx)
}

// announce stores the session step of an Announcement.
func (t *tx) announce(ctx context.Context, a *engine.Announcement) error {
	if a == nil {
		return nil
	}
	return t.writeSession(ctx, a.Session)
}

// Quarantined pages the quarantine in row order: each row with its reason
// and, when its record still unseals, its envelope.
func (db *DB) Quarantined(ctx context.Context, after int64, limit int) ([]engine.QuarantinedRow, error) {
	if err := db.checkOpen("read quarantine"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlQuarantined, after, pageLimit(limit))
	if err != nil {
		return nil, db.readErr("read quarantine", err)
	}
	defer rows.Close()
	var out []engine.QuarantinedRow
	for rows.Next() {
		var q engine.QuarantinedRow
		var received, quarantined int64
		var sealed []byte
		if err := rows.Scan(&q.Row, &received, &quarantined, &q.Reason, &sealed); err != nil {
			return nil, db.readErr("read quarantine", err)
		}
		q.ReceivedAt, q.QuarantinedAt, q.Size = nsTime(received), nsTime(quarantined), len(sealed)
		if env, err := db.seal.open(kindStaged, stagedKey(q.Row), sealed); err == nil {
			q.Envelope, q.Size = env, len(env)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read quarantine", err)
	}
	return out, nil
}

// clearQuarantine deletes the quarantined rows up to p.Through (all for 0).
func (t *tx) clearQuarantine(ctx context.Context, p engine.ClearQuarantine) (engine.Receipt, error) {
	n, err := t.run(ctx, "quarantine-clear", sqlClearQuarantine, p.Through)
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("clear the quarantine: %w", err)
	}
	return engine.Receipt{Evicted: int(n)}, nil
}

// dropStaged moves a staged envelope that can never be processed to
// quarantine, with its reason, and evicts the oldest quarantined rows
// beyond the bounds.
func (t *tx) dropStaged(ctx context.Context, p engine.DropStaged) (engine.Receipt, error) {
	if _, err := t.runOne(ctx, "quarantine-insert", engine.ErrConflict, sqlQuarantine, p.At.UnixNano(), p.Reason, p.StagedRow); err != nil {
		return engine.Receipt{}, fmt.Errorf("quarantine staged row %d (processed already?): %w", p.StagedRow, err)
	}
	if err := t.deleteStagedRow(ctx, p.StagedRow); err != nil {
		return engine.Receipt{}, err
	}
	if p.ConsumeOneTime != nil {
		if err := t.consumeOneTime(ctx, *p.ConsumeOneTime); err != nil {
			return engine.Receipt{}, err
		}
	}
	if p.Retire != nil {
		if err := t.insertRetired(ctx, p.Peer, *p.Retire); err != nil {
			return engine.Receipt{}, err
		}
	}
	evicted, err := t.run(ctx, "quarantine-evict", sqlQuarantineEvict, QuarantineRows, QuarantineBytes)
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("bound the quarantine: %w", err)
	}
	if err := t.announce(ctx, p.Announce); err != nil {
		return engine.Receipt{}, err
	}
	r, err := t.visible(ctx)
	r.Evicted = int(evicted)
	return r, err
}

// Staged pages the staging area in arrival order after row after, at most limit
// rows (at most 1000). A row whose record fails to open comes back with Err
// set (matching engine.ErrSealedRecord) and no envelope, for quarantine; it
// does not stop the page.
func (db *DB) Staged(ctx context.Context, after int64, limit int) ([]engine.StagedEnvelope, error) {
	if err := db.checkOpen("read staged envelopes"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlStaged, after, pageLimit(limit))
	if err != nil {
		return nil, db.readErr("read staged envelopes", err)
	}
	defer rows.Close()
	var out []engine.StagedEnvelope
	for rows.Next() {
		var s engine.StagedEnvelope
		var relayRow, received int64
		var sealed []byte
		if err := rows.Scan(&s.Row, &relayRow, &received, &sealed); err != nil {
			return nil, db.readErr("read staged envelopes", err)
		}
		s.RelayRow, s.ReceivedAt = uint64(relayRow), nsTime(received)
		if s.Envelope, err = db.seal.open(kindStaged, stagedKey(s.Row), sealed); err != nil {
			s.Err = fmt.Errorf("store: read staged row %d: %w", s.Row, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read staged envelopes", err)
	}
	return out, nil
}
