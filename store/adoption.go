package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Adoption (engine/adoption.go): the sent copies a removed device sent
// here, and the lanes that resend them. (The receiver's deduplication by
// person reads each device's record by its primary key, DB.Seen.)

const (
	// sqlSentCopiesFrom reads the sent copies one device sent here that
	// are still copies (history_copied) and name it (sent_by), newest
	// first, with the body the device sent: an entry an applied edit copy
	// changed gives its original (message_version edit 0). One whose
	// original is missing (its edit count came with an imported history,
	// which carries no versions) is left out here, so that it takes none
	// of the limit, and read by sqlFirstlessCopiesFrom. A deleted one is
	// left out, as are action copies.
	sqlSentCopiesFrom = `SELECT h.peer, h.id, f.at, coalesce(v.sealed_body, h.sealed_body), coalesce(x.edits, 0) > 0 FROM finalized f
		JOIN history h ON h.id = f.id AND h.direction = 2 AND h.state = 4 AND h.sent_by = f.sender
		LEFT JOIN message_extra x ON x.peer = h.peer AND x.direction = 2 AND x.id = h.id
		LEFT JOIN message_version v ON v.peer = h.peer AND v.direction = 2 AND v.id = h.id AND v.edit = 0 AND coalesce(x.edits, 0) > 0
		WHERE f.sender = ? AND f.outcome = 1 AND f.at >= ?
		AND coalesce(x.action, 0) = 0 AND coalesce(x.deleted, 0) = 0
		AND (coalesce(x.edits, 0) = 0 OR v.id IS NOT NULL)
		ORDER BY f.at DESC, f.id LIMIT ?`
	// sqlFirstlessCopiesFrom reads the edited sent copies of one device
	// whose original is missing, newest first: SentCopiesFrom reports
	// them (engine.ErrAdoptFirstBody), apart from its limit.
	sqlFirstlessCopiesFrom = `SELECT h.peer, h.id, f.at FROM finalized f
		JOIN history h ON h.id = f.id AND h.direction = 2 AND h.state = 4 AND h.sent_by = f.sender
		JOIN message_extra x ON x.peer = h.peer AND x.direction = 2 AND x.id = h.id
		WHERE f.sender = ? AND f.outcome = 1 AND f.at >= ?
		AND x.action = 0 AND x.deleted = 0 AND x.edits > 0
		AND NOT EXISTS (SELECT 1 FROM message_version v WHERE v.peer = h.peer AND v.direction = 2 AND v.id = h.id AND v.edit = 0)
		ORDER BY f.at DESC, f.id LIMIT ?`
	// sqlAdoptHistory turns a sent copy's entry into an own pending
	// message: this device now follows its lanes.
	sqlAdoptHistory = "UPDATE history SET state = ?, sent_by = NULL WHERE peer = ? AND direction = 2 AND id = ? AND state = ?"
	// sqlCopyStanding says whether a message's entry is still a sent copy.
	sqlCopyStanding = "SELECT 1 FROM history WHERE peer = ? AND direction = 2 AND id = ? AND state IN (?, ?)"
)

// SentCopiesFrom implements engine.Store.
func (db *DB) SentCopiesFrom(ctx context.Context, device engine.Address, since time.Time, limit int) ([]engine.SentCopyRecord, error) {
	if err := db.checkOpen("read sent copies"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlSentCopiesFrom, device.String(), since.UnixNano(), limit)
	if err != nil {
		return nil, db.readErr("read sent copies", err)
	}
	defer rows.Close()
	var out []engine.SentCopyRecord
	for rows.Next() {
		var peer string
		var id, sealed []byte
		var at int64
		var edited bool
		if err := rows.Scan(&peer, &id, &at, &sealed, &edited); err != nil {
			return nil, db.readErr("read sent copies", err)
		}
		// A row that cannot be read is reported in its record, not as
		// the read's error: the adoption skips it and the revocation
		// that asked for it is stored all the same.
		conv, err := parseStoredAddress(peer)
		if err != nil {
			out = append(out, engine.SentCopyRecord{Err: err})
			continue
		}
		if len(id) != len(wire.LogicalID{}) {
			out = append(out, engine.SentCopyRecord{Err: fmt.Errorf("store: sent copy with an ID of %d bytes: %w", len(id), engine.ErrMalformedState)})
			continue
		}
		r := engine.SentCopyRecord{Conversation: conv, ID: wire.LogicalID(id), At: nsTime(at)}
		kind, key := kindHistoryBody, historyKey(conv, engine.DirectionOut, r.ID)
		if edited {
			kind, key = kindMessageVersion, versionKey(conv, engine.DirectionOut, r.ID, 0)
		}
		if r.Body, err = db.seal.open(kind, key, sealed); err != nil {
			r.Body, r.Err = nil, fmt.Errorf("store: read sent copy %x: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read sent copies", err)
	}
	firstless, err := db.firstlessCopiesFrom(ctx, device, since, limit)
	if err != nil {
		return nil, err
	}
	return append(out, firstless...), nil
}

// firstlessCopiesFrom reads up to limit edited sent copies of device whose
// first body is not held, as records of engine.ErrAdoptFirstBody.
func (db *DB) firstlessCopiesFrom(ctx context.Context, device engine.Address, since time.Time, limit int) ([]engine.SentCopyRecord, error) {
	rows, err := db.query(ctx, sqlFirstlessCopiesFrom, device.String(), since.UnixNano(), limit)
	if err != nil {
		return nil, db.readErr("read sent copies", err)
	}
	defer rows.Close()
	var out []engine.SentCopyRecord
	for rows.Next() {
		var peer string
		var id []byte
		var at int64
		if err := rows.Scan(&peer, &id, &at); err != nil {
			return nil, db.readErr("read sent copies", err)
		}
		conv, err := parseStoredAddress(peer)
		if err != nil || len(id) != len(wire.LogicalID{}) {
			out = append(out, engine.SentCopyRecord{Err: fmt.Errorf("store: edited sent copy %x to %q: %w", id, peer, engine.ErrAdoptFirstBody)})
			continue
		}
		out = append(out, engine.SentCopyRecord{Conversation: conv, ID: wire.LogicalID(id), At: nsTime(at),
			Err: fmt.Errorf("store: sent copy %x to %s: %w", id, conv, engine.ErrAdoptFirstBody)})
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read sent copies", err)
	}
	return out, nil
}

// adoptLanes stores the lanes by which this device resends a removed
// device's messages: for each, unless the message's entry is no longer a
// sent copy (or one adopted by an earlier lane of this plan) or the lane
// is there already, an outbound row and its person_lane; the entry turns
// pending, so the first ACK from the person acknowledges it.
func (t *tx) adoptLanes(ctx context.Context, lanes []engine.AdoptedLane, at time.Time) error {
	if len(lanes) == 0 {
		return nil
	}
	t.db.personLanesHeld.Store(true)
	for _, l := range lanes {
		conv := l.Conversation.String()
		var one int64
		found, err := t.scan(ctx, "adopt-read", sqlCopyStanding, []any{conv, l.ID[:], int64(engine.SentCopied), int64(engine.SentPending)}, &one)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		n, err := t.run(ctx, "outbound-insert", sqlInsertOutbound,
			l.Recipient.String(), l.ID[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(l.Recipient, l.ID), l.Frame))
		if err != nil {
			return err
		}
		if n == 0 {
			continue // the lane is there already
		}
		if _, err := t.run(ctx, "person-lane-add", sqlEnsurePersonLane, l.Recipient.String(), l.ID[:], conv); err != nil {
			return err
		}
		if _, err := t.run(ctx, "adopt-history", sqlAdoptHistory, int64(engine.SentPending), conv, l.ID[:], int64(engine.SentCopied)); err != nil {
			return err
		}
	}
	return nil
}

// checkAdopted checks the lanes of an adoption: each to a device of its
// conversation's person, of another person than the list's, carrying the
// text frame of its message.
func checkAdopted(user string, lanes []engine.AdoptedLane) error {
	var err error
	for _, l := range lanes {
		err = errors.Join(err, checkAddress("adopted lane", l.Recipient), checkAddress("adopted conversation", l.Conversation))
		if l.Recipient.User != l.Conversation.User || l.Recipient.User == user {
			err = errors.Join(err, invalid("adopted lane of message %x to %s in %s", l.ID[:], l.Recipient, l.Conversation))
		}
		if f, ferr := engine.DecodeStoredFrame(l.Frame); ferr != nil || f.ID != l.ID || f.Group != nil || f.CopyTo != "" || f.Decision != nil {
			err = errors.Join(err, invalid("adopted lane of message %x: its frame is not the message's", l.ID[:]))
		}
	}
	return err
}
