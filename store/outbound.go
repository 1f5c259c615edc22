package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

const (
	sqlInsertOutbound = "INSERT INTO outbound (recipient, id, created_at, sealed_frame) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
	sqlOutboundExists = "SELECT seq FROM outbound WHERE recipient = ? AND id = ?"
	sqlDeleteOutbound = "DELETE FROM outbound WHERE recipient = ? AND id = ?"

	sqlOutbound            = "SELECT seq, created_at, sealed_frame FROM outbound WHERE recipient = ? AND id = ?"
	sqlPendingOutbound     = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound WHERE seq > ? ORDER BY seq LIMIT ?"
	sqlPendingOutboundPeer = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound WHERE recipient = ? AND seq > ? ORDER BY seq LIMIT ?"
	sqlUnsentOutbound      = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound o WHERE seq > ? AND NOT EXISTS (SELECT 1 FROM attempt a WHERE a.peer = o.recipient AND a.id = o.id) ORDER BY seq LIMIT ?"
	sqlUnsentOutboundPeer  = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound o WHERE recipient = ? AND seq > ? AND NOT EXISTS (SELECT 1 FROM attempt a WHERE a.peer = o.recipient AND a.id = o.id) ORDER BY seq LIMIT ?"
	// The person variants read the devices of one user: the address
	// range from "user/" up to "user0" ('0' follows '/'; a user holds no
	// '/'), one range of the recipient index.
	sqlPendingOutboundPerson = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound WHERE recipient >= ? AND recipient < ? AND seq > ? ORDER BY seq LIMIT ?"
	sqlUnsentOutboundPerson  = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound o WHERE recipient >= ? AND recipient < ? AND seq > ? AND NOT EXISTS (SELECT 1 FROM attempt a WHERE a.peer = o.recipient AND a.id = o.id) ORDER BY seq LIMIT ?"
	sqlCountOutbound         = "SELECT count(*) FROM outbound"
	sqlCountOutboundPeer     = "SELECT count(*) FROM outbound WHERE recipient = ?"
)

func messageKey(peer engine.Address, id wire.LogicalID) []byte {
	return rowKey([]byte(peer.String()), id[:])
}

// send stores a new message as pending outbound with its history entry, the
// advanced session and, for a first session, the pinned identity.
func (t *tx) send(ctx context.Context, p engine.Send) (engine.Receipt, error) {
	to := p.Recipient.String()
	r, err := t.runOne(ctx, "outbound-insert", engine.ErrConflict, sqlInsertOutbound,
		to, p.ID[:], p.At.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(p.Recipient, p.ID), p.Frame))
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("store message %x to %s (already there?): %w", p.ID[:], to, err)
	}
	seq, err := r.LastInsertId()
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("store message %x to %s: %w", p.ID[:], to, mapErr(err))
	}
	if err := t.insertHistory(ctx, p.Recipient, engine.DirectionOut, p.ID, p.At, engine.SentPending, p.Body); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.recordAttempt(ctx, p.Recipient, p.ID, 1, p.At, p.Out.Envelope, p.Session.ID); err != nil {
		return engine.Receipt{}, err
	}
	if p.Pin != nil {
		if err := t.insertPin(ctx, p.Recipient, *p.Pin, p.At); err != nil {
			return engine.Receipt{}, err
		}
	}
	if err := t.writeSession(ctx, p.Session); err != nil {
		return engine.Receipt{}, err
	}
	m, err := t.bumpMarker(ctx)
	return engine.Receipt{Seq: seq, Marker: m}, err
}

// hold stores a new message as pending outbound with its history entry, not
// yet encrypted: no attempt, no session (see engine.Hold). Its sequence
// number places it in the peer's send order like any other.
func (t *tx) hold(ctx context.Context, p engine.Hold) (engine.Receipt, error) {
	to := p.Recipient.String()
	r, err := t.runOne(ctx, "outbound-insert", engine.ErrConflict, sqlInsertOutbound,
		to, p.ID[:], p.At.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(p.Recipient, p.ID), p.Frame))
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("hold message %x to %s (already there?): %w", p.ID[:], to, err)
	}
	seq, err := r.LastInsertId()
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("hold message %x to %s: %w", p.ID[:], to, mapErr(err))
	}
	if err := t.insertHistory(ctx, p.Recipient, engine.DirectionOut, p.ID, p.At, engine.SentPending, p.Body); err != nil {
		return engine.Receipt{}, err
	}
	if p.Action != nil {
		if err := t.applyAction(ctx, *p.Action); err != nil {
			return engine.Receipt{}, err
		}
	}
	if p.ClearDraft {
		if err := t.setDraft(ctx, engine.SetDraft{Peer: p.Recipient}); err != nil {
			return engine.Receipt{}, err
		}
	}
	m, err := t.bumpMarker(ctx)
	return engine.Receipt{Seq: seq, Marker: m}, err
}

// retry stores the session advanced by encrypting a pending message again;
// the message must still be pending.
func (t *tx) retry(ctx context.Context, p engine.Retry) (engine.Receipt, error) {
	var seq int64
	found, err := t.scan(ctx, "outbound-check", sqlOutboundExists, []any{p.Recipient.String(), p.ID[:]}, &seq)
	if err != nil {
		return engine.Receipt{}, err
	}
	if !found {
		return engine.Receipt{}, fmt.Errorf("retry message %x to %s: %w", p.ID[:], p.Recipient, engine.ErrNotPending)
	}
	if p.Pin != nil {
		if err := t.insertPin(ctx, p.Recipient, *p.Pin, t.now); err != nil {
			return engine.Receipt{}, err
		}
	}
	n, err := t.nextAttempt(ctx, p.Recipient, p.ID)
	if err != nil {
		return engine.Receipt{}, err
	}
	at := p.At
	if at.IsZero() {
		at = t.now
	}
	if err := t.recordAttempt(ctx, p.Recipient, p.ID, n, at, p.Out.Envelope, p.Session.ID); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.writeSession(ctx, p.Session); err != nil {
		return engine.Receipt{}, err
	}
	return t.visible(ctx)
}

// abandon removes a pending message; its history entry becomes abandoned.
func (t *tx) abandon(ctx context.Context, p engine.Abandon) (engine.Receipt, error) {
	if _, err := t.runOne(ctx, "outbound-delete", engine.ErrNotPending, sqlDeleteOutbound, p.Recipient.String(), p.ID[:]); err != nil {
		return engine.Receipt{}, fmt.Errorf("abandon message %x to %s: %w", p.ID[:], p.Recipient, err)
	}
	if lane, err := t.laneEnded(ctx, p.Recipient, p.ID, engine.LaneAbandoned); err != nil {
		return engine.Receipt{}, err
	} else if lane {
		return t.visible(ctx)
	}
	if lane, err := t.personLaneEnded(ctx, p.Recipient, p.ID, engine.LaneAbandoned, p.At); err != nil {
		return engine.Receipt{}, err
	} else if lane {
		return t.visible(ctx)
	}
	if err := t.setSentState(ctx, "history-abandon", p.Recipient, p.ID, engine.SentAbandoned); err != nil {
		return engine.Receipt{}, err
	}
	return t.visible(ctx)
}

// clearOutbound removes the pending message an ACK names, if it is still
// pending, and reports whether it was; at is when the ACK came (a
// person lane records it as its end).
func (t *tx) clearOutbound(ctx context.Context, peer engine.Address, id wire.LogicalID, at time.Time) (bool, error) {
	n, err := t.run(ctx, "outbound-delete", sqlDeleteOutbound, peer.String(), id[:])
	if err != nil {
		return false, fmt.Errorf("clear message %x to %s: %w", id[:], peer, err)
	}
	if n == 0 {
		return false, nil // unknown or repeated ACK
	}
	if lane, err := t.laneEnded(ctx, peer, id, engine.LaneAcknowledged); err != nil || lane {
		return true, err
	}
	if lane, err := t.personLaneEnded(ctx, peer, id, engine.LaneAcknowledged, at); err != nil || lane {
		return true, err
	}
	return true, t.setSentState(ctx, "history-ack", peer, id, engine.SentAcknowledged)
}

// Outbound returns a pending sent message, or engine.ErrNotPending.
func (db *DB) Outbound(ctx context.Context, recipient engine.Address, id wire.LogicalID) (engine.OutboundMessage, error) {
	if err := db.checkOpen("read pending message"); err != nil {
		return engine.OutboundMessage{}, err
	}
	m := engine.OutboundMessage{Recipient: recipient, ID: id}
	var created int64
	var sealed []byte
	err := db.queryRow(ctx, sqlOutbound, recipient.String(), id[:]).Scan(&m.Seq, &created, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.OutboundMessage{}, fmt.Errorf("store: read message %x to %s: %w", id[:], recipient, engine.ErrNotPending)
	case err != nil:
		return engine.OutboundMessage{}, db.readErr("read pending message", err)
	}
	m.CreatedAt = nsTime(created)
	if err := db.openOutbound(&m, sealed); err != nil {
		return engine.OutboundMessage{}, err
	}
	return m, nil
}

// openOutbound fills a message's frame and body from its sealed frame.
func (db *DB) openOutbound(m *engine.OutboundMessage, sealed []byte) error {
	frame, err := db.seal.open(kindOutboundFrame, messageKey(m.Recipient, m.ID), sealed)
	if err != nil {
		return fmt.Errorf("store: read message %x to %s: %w", m.ID[:], m.Recipient, err)
	}
	f, err := engine.DecodeStoredFrame(frame)
	if err != nil {
		return fmt.Errorf("store: read message %x to %s: %w: %w", m.ID[:], m.Recipient, engine.ErrMalformedState, err)
	}
	m.Frame, m.Body, m.Group, m.Content = frame, f.Body, f.Group, f.Content
	return nil
}

// PendingOutbound pages pending sent messages in send order: sequence
// numbers above q.After, only to q.Peer when set (to its person's devices
// with q.Person), at most q.Limit (at most 1000).
func (db *DB) PendingOutbound(ctx context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error) {
	rows, err := db.pendingPage(ctx, q, pendingSQL{all: sqlPendingOutbound, peer: sqlPendingOutboundPeer, person: sqlPendingOutboundPerson})
	if err != nil {
		return nil, err
	}
	return db.scanOutbound(rows)
}

// Unsent pages the pending messages that were never encrypted (stored by a
// Hold, with no attempt yet) in send order: sequence numbers above q.After,
// only to q.Peer when set (to its person's devices with q.Person), at most
// q.Limit (at most 1000).
func (db *DB) Unsent(ctx context.Context, q engine.PageQuery) ([]engine.OutboundMessage, error) {
	rows, err := db.pendingPage(ctx, q, pendingSQL{all: sqlUnsentOutbound, peer: sqlUnsentOutboundPeer, person: sqlUnsentOutboundPerson})
	if err != nil {
		return nil, err
	}
	return db.scanOutbound(rows)
}

// scanOutbound reads pending messages from rows of (seq, recipient, id,
// created_at, sealed_frame), and closes rows.
func (db *DB) scanOutbound(rows *sql.Rows) ([]engine.OutboundMessage, error) {
	defer rows.Close()
	var out []engine.OutboundMessage
	for rows.Next() {
		var m engine.OutboundMessage
		var to string
		var id, sealed []byte
		var created int64
		if err := rows.Scan(&m.Seq, &to, &id, &created, &sealed); err != nil {
			return nil, db.readErr("read pending messages", err)
		}
		var err error
		if m.Recipient, err = engine.ParseAddress(to); err != nil {
			return nil, fmt.Errorf("store: read pending message %d: %w: %w", m.Seq, engine.ErrMalformedState, err)
		}
		copy(m.ID[:], id)
		m.CreatedAt = nsTime(created)
		if err := db.openOutbound(&m, sealed); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read pending messages", err)
	}
	return out, nil
}

// CountOutbound counts pending sent messages, to peer when it is set.
func (db *DB) CountOutbound(ctx context.Context, peer *engine.Address) (int, error) {
	if err := db.checkOpen("count pending messages"); err != nil {
		return 0, err
	}
	var n int
	var err error
	if peer != nil {
		err = db.queryRow(ctx, sqlCountOutboundPeer, peer.String()).Scan(&n)
	} else {
		err = db.queryRow(ctx, sqlCountOutbound).Scan(&n)
	}
	if err != nil {
		return 0, db.readErr("count pending messages", err)
	}
	return n, nil
}

// pendingSQL are the statements of one pending list: all (parameters:
// after, limit), peer (peer, after, limit) and person (the low and high
// ends of a user's address range, after, limit).
type pendingSQL struct{ all, peer, person string }

// pendingPage queries one page of a pending list: of q.Peer when q names a
// peer, of the devices of its user when q.Person is set and a device list is
// held for them, of every peer otherwise.
func (db *DB) pendingPage(ctx context.Context, q engine.PageQuery, stmts pendingSQL) (*sql.Rows, error) {
	if err := db.checkOpen("read pending messages"); err != nil {
		return nil, err
	}
	person := false
	if q.Peer != nil && q.Person {
		var err error
		if person, err = db.personHeld(ctx, q.Peer.User); err != nil {
			return nil, err
		}
	}
	var (
		rows *sql.Rows
		err  error
	)
	switch {
	case person:
		rows, err = db.query(ctx, stmts.person, q.Peer.User+"/", q.Peer.User+"0", q.After, pageLimit(q.Limit))
	case q.Peer != nil:
		rows, err = db.query(ctx, stmts.peer, q.Peer.String(), q.After, pageLimit(q.Limit))
	default:
		rows, err = db.query(ctx, stmts.all, q.After, pageLimit(q.Limit))
	}
	if err != nil {
		return nil, db.readErr("read pending messages", err)
	}
	return rows, nil
}
