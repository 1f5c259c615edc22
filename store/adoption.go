package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Adoption (engine/adoption.go): the lookup of a received message by its
// logical ID across the devices of its sender's person, the sent copies a
// removed device sent here, and the lanes that resend them.

const (
	// sqlSeenFromPerson finds a received message, pending or finalized,
	// by its ID from any address of one user ("user/" up to "user0", '0'
	// following '/'), by the ID indexes of migration 0024.
	sqlSeenFromPerson = `SELECT sender, 0, 0, sealed_digest FROM inbound WHERE id = ?1 AND sender >= ?2 AND sender < ?3
		UNION ALL SELECT sender, 1, outcome, sealed_digest FROM finalized WHERE id = ?1 AND sender >= ?2 AND sender < ?3 LIMIT ?4`
	// sqlSentCopiesFrom reads the sent copies one device sent here that
	// are still copies (history_copied), newest first.
	sqlSentCopiesFrom = `SELECT h.peer, h.id, f.at, h.sealed_body FROM finalized f
		JOIN history h ON h.id = f.id AND h.direction = 2 AND h.state = 4
		WHERE f.sender = ? AND f.outcome = 1 AND f.at >= ? ORDER BY f.at DESC, f.id LIMIT ?`
	// sqlAdoptHistory turns a sent copy's entry into an own pending
	// message: this device now follows its lanes.
	sqlAdoptHistory = "UPDATE history SET state = ? WHERE peer = ? AND direction = 2 AND id = ? AND state = ?"
	// sqlCopyStanding says whether a message's entry is still a sent copy.
	sqlCopyStanding = "SELECT 1 FROM history WHERE peer = ? AND direction = 2 AND id = ? AND state IN (?, ?)"
)

// SeenFromPerson implements engine.Store.
func (db *DB) SeenFromPerson(ctx context.Context, user string, id wire.LogicalID, limit int) ([]engine.SeenFrom, error) {
	if err := db.checkOpen("read a received message"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlSeenFromPerson, id[:], user+"/", user+"0", limit)
	if err != nil {
		return nil, db.readErr("read a received message", err)
	}
	defer rows.Close()
	var out []engine.SeenFrom
	for rows.Next() {
		var sender string
		var final, outcome int64
		var sealed []byte
		if err := rows.Scan(&sender, &final, &outcome, &sealed); err != nil {
			return nil, db.readErr("read a received message", err)
		}
		a, err := engine.ParseAddress(sender)
		if err != nil || a.User != user {
			continue
		}
		s := engine.SeenMessage{Pending: final == 0, Finalized: final == 1, Outcome: engine.Outcome(outcome)}
		kind := kindInboundDigest
		if s.Finalized {
			kind = kindFinalizedDigest
		}
		d, err := db.seal.open(kind, messageKey(a, id), sealed)
		if err != nil {
			return nil, fmt.Errorf("store: read received message %x from %s: %w", id[:], a, err)
		}
		if len(d) != len(s.Digest) {
			return nil, fmt.Errorf("store: read received message %x from %s: digest of %d bytes: %w", id[:], a, len(d), engine.ErrMalformedState)
		}
		copy(s.Digest[:], d)
		out = append(out, engine.SeenFrom{Sender: a, Seen: s})
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read a received message", err)
	}
	return out, nil
}

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
		if err := rows.Scan(&peer, &id, &at, &sealed); err != nil {
			return nil, db.readErr("read sent copies", err)
		}
		conv, err := parseStoredAddress(peer)
		if err != nil {
			return nil, err
		}
		if len(id) != len(wire.LogicalID{}) {
			return nil, fmt.Errorf("store: sent copy with an ID of %d bytes: %w", len(id), engine.ErrMalformedState)
		}
		r := engine.SentCopyRecord{Conversation: conv, ID: wire.LogicalID(id), At: nsTime(at)}
		if r.Body, err = db.seal.open(kindHistoryBody, historyKey(conv, engine.DirectionOut, r.ID), sealed); err != nil {
			return nil, fmt.Errorf("store: read sent copy %x: %w", id, err)
		}
		out = append(out, r)
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
