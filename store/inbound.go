package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

const (
	sqlInsertInbound = `INSERT INTO inbound (sender, id, received_at, sealed_digest, sealed_frame) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	sqlInboundDigest = "SELECT sealed_digest FROM inbound WHERE sender = ? AND id = ?"
	// sqlDeleteInbound deletes the pending message whose digest the plan
	// checked, and no other.
	sqlDeleteInbound = "DELETE FROM inbound WHERE sender = ? AND id = ? AND sealed_digest = ?"
	// sqlInsertFinalized stores a finalized record; content and arrived
	// (0028) are NULL where not known (a sent copy's, a decision frame's).
	sqlInsertFinalized = `INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, content, arrived, sealed_action, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (sender, id) DO NOTHING`
	// sqlInsertFinalizedGroup is sqlInsertFinalized for a group message:
	// the record names its group (0025), for a sibling's commit that
	// takes back a discard and for a catch-up that reads the commit's
	// body.
	sqlInsertFinalizedGroup = `INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, content, arrived, sealed_action, target, grp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (sender, id) DO NOTHING`
	sqlPruneFinalized = "DELETE FROM finalized WHERE at < ?"
	// sqlSeenInHistory finds a received message in the history of its
	// sender's conversation (the device's, or the person's), where an
	// imported history leaves it without a finalized record.
	sqlSeenInHistory = `SELECT EXISTS (SELECT 1 FROM history WHERE direction = 1 AND id = ?
		AND peer IN (?, (SELECT conversation FROM peer_account WHERE user = ?)))`

	sqlInbound = "SELECT seq, received_at, sealed_digest, sealed_frame FROM inbound WHERE sender = ? AND id = ?"
	// The messages of an open request are not pending deliveries until it
	// is accepted.
	sqlPendingInbound = `SELECT seq, sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE seq > ? AND sender NOT IN (SELECT peer FROM request) AND action < 16 ORDER BY seq LIMIT ?`
	sqlPendingInboundPeer = `SELECT seq, sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE sender = ? AND seq > ? AND sender NOT IN (SELECT peer FROM request) AND action < 16 ORDER BY seq LIMIT ?`
	// sqlPendingInboundPerson pages what is pending from the devices of
	// one user (the address range "user/" to "user0", as
	// sqlPendingOutboundPerson), open requests left out.
	sqlPendingInboundPerson = `SELECT seq, sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE sender >= ? AND sender < ? AND seq > ? AND sender NOT IN (SELECT peer FROM request) AND action < 16 ORDER BY seq LIMIT ?`
	// sqlPendingInboundPersonAll is sqlPendingInboundPerson with the
	// messages of open requests.
	sqlPendingInboundPersonAll = `SELECT seq, sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE sender >= ? AND sender < ? AND seq > ? AND action < 16 ORDER BY seq LIMIT ?`
	// sqlPendingInboundAll pages everything pending from one peer, the
	// messages of its open request included.
	sqlPendingInboundAll = `SELECT seq, sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE sender = ? AND seq > ? AND action < 16 ORDER BY seq LIMIT ?`
	// The count of every pending delivery leaves the open requests out, as
	// sqlPendingInbound does; a peer's count holds them (the caps count them).
	// The lists and the count of every pending delivery leave out a
	// sibling's sent action copy waiting for its target (action >=
	// heldCopyMark): the hold's pass decides it, not the person. A peer's
	// count holds it (the caps count it).
	sqlCountInbound     = "SELECT count(*) FROM inbound WHERE sender NOT IN (SELECT peer FROM request) AND action < 16"
	sqlCountInboundPeer = "SELECT count(*) FROM inbound WHERE sender = ?"
	sqlFinalized        = "SELECT outcome, reason, at, sealed_digest FROM finalized WHERE sender = ? AND id = ?"
	sqlFinalizedAs      = "SELECT 1 FROM finalized WHERE sender = ? AND id = ? AND outcome = ?"
	// sqlSeen finds a received message pending or finalized in one lookup
	// (a message is never both: finalizing deletes the pending row).
	// For a discard it also reads its reason and group, and whether that
	// group is held, for takeBackable.
	// It reads a record's content type and arrival (0028; NULL before).
	sqlSeen = `SELECT 0, 0, sealed_digest, 0, NULL, 0, 0, NULL, NULL FROM inbound WHERE sender = ?1 AND id = ?2
		UNION ALL SELECT 1, outcome, sealed_digest, reason, grp, EXISTS (SELECT 1 FROM grp g WHERE g.id = finalized.grp), at, content, arrived
		FROM finalized WHERE sender = ?1 AND id = ?2 LIMIT 1`
)

// contentColumn is finalized.content (0028) for content: NULL when not
// known (zero).
func contentColumn(content wire.ContentType) any {
	if content == 0 {
		return nil
	}
	return int64(content)
}

// arrivedColumn is finalized.arrived (0028) for arrived: NULL when not
// known (zero).
func arrivedColumn(arrived time.Time) any {
	if arrived.IsZero() {
		return nil
	}
	return arrived.UnixNano()
}

// recordedContent is the content type a finalized record keeps: zero for
// a record that keeps none (stored before 0028, a sent copy's, a
// decision frame's) or one out of range.
func recordedContent(c sql.NullInt64) wire.ContentType {
	if !c.Valid || c.Int64 <= 0 || c.Int64 > 255 {
		return 0
	}
	return wire.ContentType(c.Int64)
}

// receive applies the processing of one staged envelope: its inbox row is
// consumed, the session advanced, a handshake's pin, one-time prekey and
// retirement recorded, and the frame's effect stored.
func (t *tx) receive(ctx context.Context, p engine.Receive) (engine.Receipt, error) {
	if err := t.deleteStagedRow(ctx, p.StagedRow); err != nil {
		return engine.Receipt{}, err
	}
	if h := p.Handshake; h != nil && h.Pin != nil {
		if err := t.insertPin(ctx, p.Peer, *h.Pin, t.now); err != nil {
			return engine.Receipt{}, err
		}
	}
	if err := t.writeSession(ctx, p.Session); err != nil {
		return engine.Receipt{}, err
	}
	if p.PastChains != nil {
		if err := t.writePastChains(ctx, p.Peer, p.PastChains); err != nil {
			return engine.Receipt{}, err
		}
	}
	if err := t.writeReceivedChain(ctx, p.Chain); err != nil {
		return engine.Receipt{}, err
	}
	if h := p.Handshake; h != nil {
		if h.ConsumeOneTime != nil {
			if err := t.consumeOneTime(ctx, *h.ConsumeOneTime); err != nil {
				return engine.Receipt{}, err
			}
		}
		if h.Retire != nil {
			if err := t.insertRetired(ctx, p.Peer, *h.Retire); err != nil {
				return engine.Receipt{}, err
			}
		}
	}
	var rc engine.Receipt
	switch e := p.Effect.(type) {
	case engine.DeliverEffect:
		key := messageKey(p.Peer, e.ID)
		r, err := t.runOne(ctx, "inbound-insert", engine.ErrConflict, sqlInsertInbound,
			p.Peer.String(), e.ID[:], e.At.UnixNano(),
			t.db.seal.seal(kindInboundDigest, key, e.Digest[:]), t.db.seal.seal(kindInboundFrame, key, e.Frame))
		if err != nil {
			return engine.Receipt{}, fmt.Errorf("store message %x from %s (already there?): %w", e.ID[:], p.Peer, err)
		}
		if rc.Seq, err = r.LastInsertId(); err != nil {
			return engine.Receipt{}, fmt.Errorf("store message %x from %s: %w", e.ID[:], p.Peer, mapErr(err))
		}
		if err := t.markInboundAction(ctx, p.Peer, e.ID, e.Frame); err != nil {
			return engine.Receipt{}, err
		}
		if p.Request != nil {
			if err := t.stageRequest(ctx, p.Peer, p.Request); err != nil {
				return engine.Receipt{}, err
			}
		}
	case engine.CommitEffect:
		// The delivery and its commit are two visible transitions in one:
		// the marker is raised for each, and the receipt carries the
		// second.
		if _, err := t.bumpMarker(ctx); err != nil {
			return engine.Receipt{}, err
		}
		if e.SentTo != nil {
			if err := t.insertCopy(ctx, p.Peer, e); err != nil {
				return engine.Receipt{}, err
			}
		} else if err := t.insertFinalized(ctx, p.Peer, e.ID, engine.OutcomeCommitted, engine.DiscardNone, e.At, e.Digest, e.Arrived, e.Content, e.ActionBody, e.Action, e.Body, e.Group); err != nil {
			return engine.Receipt{}, err
		}
		if err := t.insertDecisionLanes(ctx, e.Tell, e.At); err != nil {
			return engine.Receipt{}, err
		}
		if e.Action != nil {
			if err := t.applyAction(ctx, *e.Action); err != nil {
				return engine.Receipt{}, err
			}
		}
		if err := t.applyWithKept(ctx, p.Peer, e.ID, e.WithKept); err != nil {
			return engine.Receipt{}, err
		}
	case engine.DecisionEffect:
		if err := t.decision(ctx, p.Peer, e); err != nil {
			return engine.Receipt{}, err
		}
	case engine.AckEffect:
		var err error
		if rc.Cleared, err = t.clearOutbound(ctx, p.Peer, e.ID, e.At); err != nil {
			return engine.Receipt{}, err
		}
	case engine.ChainAcksEffect:
		var err error
		if rc.Acked, err = t.clearChainLanes(ctx, p.Peer, e); err != nil {
			return engine.Receipt{}, err
		}
		rc.Cleared = len(rc.Acked) > 0
	case engine.RepeatEffect:
	case engine.RosterEffect:
		if err := t.receiveRoster(ctx, e); err != nil {
			return engine.Receipt{}, err
		}
	case engine.GroupStateEffect:
		if err := t.groupState(ctx, e); err != nil {
			return engine.Receipt{}, err
		}
	case engine.NotAMemberEffect:
		if err := t.notAMember(ctx, p.Peer, e); err != nil {
			return engine.Receipt{}, err
		}
	case engine.NeedChainEffect:
		if err := t.reannounceChain(ctx, e); err != nil {
			return engine.Receipt{}, err
		}
	}
	var err error
	rc.Marker, err = t.bumpMarker(ctx)
	return rc, err
}

// finalize turns a pending received message into a finalized record and,
// for a commit, a history entry; the ACK's session step commits with it.
func (t *tx) finalize(ctx context.Context, p engine.Finalize) (engine.Receipt, error) {
	from := p.Sender.String()
	key := messageKey(p.Sender, p.ID)
	var sealed []byte
	found, err := t.scan(ctx, "inbound-read", sqlInboundDigest, []any{from, p.ID[:]}, &sealed)
	if err != nil {
		return engine.Receipt{}, err
	}
	if !found {
		return engine.Receipt{}, fmt.Errorf("finalize message %x from %s: %w", p.ID[:], from, engine.ErrNotPending)
	}
	d, err := t.db.seal.open(kindInboundDigest, key, sealed)
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("finalize message %x from %s: %w", p.ID[:], from, err)
	}
	if !bytes.Equal(d, p.Digest[:]) {
		return engine.Receipt{}, fmt.Errorf("finalize message %x from %s: the pending message has another digest: %w", p.ID[:], from, engine.ErrConflict)
	}
	if _, err := t.runOne(ctx, "inbound-delete", engine.ErrConflict, sqlDeleteInbound, from, p.ID[:], sealed); err != nil {
		return engine.Receipt{}, fmt.Errorf("finalize message %x from %s: %w", p.ID[:], from, err)
	}
	if p.SentTo != nil {
		// A sibling's sent copy of an action that waited for its target.
		e := engine.CommitEffect{ID: p.ID, Digest: p.Digest, Arrived: p.Arrived, At: p.At, Body: p.Body, SentTo: p.SentTo}
		if err := t.insertCopy(ctx, p.Sender, e); err != nil {
			return engine.Receipt{}, err
		}
	} else if err := t.insertFinalized(ctx, p.Sender, p.ID, p.Outcome, p.Reason, p.At, p.Digest, p.Arrived, p.Content, p.ActionBody, p.Action, p.Body, p.Group); err != nil {
		return engine.Receipt{}, err
	}
	if p.Action != nil && p.Outcome == engine.OutcomeCommitted {
		if err := t.applyAction(ctx, *p.Action); err != nil {
			return engine.Receipt{}, err
		}
	}
	if err := t.applyWithKept(ctx, p.Sender, p.ID, p.WithKept); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.finalizePerson(ctx, p); err != nil {
		return engine.Receipt{}, err
	}
	if p.Session != nil {
		if err := t.writeSession(ctx, *p.Session); err != nil {
			return engine.Receipt{}, err
		}
	}
	return t.visible(ctx)
}

// ackAgain writes the session step of an ACK sent again for a message
// finalized before, on condition that it is still finalized with the
// plan's outcome (pruned, or finalized otherwise: ErrNotPending).
func (t *tx) ackAgain(ctx context.Context, p engine.AckAgain) (engine.Receipt, error) {
	var one int
	found, err := t.scan(ctx, "finalized-read", sqlFinalizedAs, []any{p.Sender.String(), p.ID[:], int64(p.Outcome)}, &one)
	if err != nil {
		return engine.Receipt{}, err
	}
	if !found {
		return engine.Receipt{}, fmt.Errorf("acknowledge message %x from %s again: not finalized as %d: %w", p.ID[:], p.Sender, p.Outcome, engine.ErrNotPending)
	}
	return engine.Receipt{}, t.writeSession(ctx, p.Session)
}

// insertFinalized stores a received message's finalized record and, for a
// commit, its history entry (at arrived, or at when arrived is zero), in the
// group's history for a group message.
func (t *tx) insertFinalized(ctx context.Context, sender engine.Address, id wire.LogicalID, outcome engine.Outcome, reason engine.DiscardReason,
	at time.Time, digest [32]byte, arrived time.Time, content wire.ContentType, actionBody []byte, action *engine.ActionApply, body []byte, group *wire.GroupID) error {
	from := sender.String()
	var sealedAction, target any
	if actionBody != nil {
		sealedAction = t.db.seal.seal(kindFinalizedAction, messageKey(sender, id), actionBody)
		if action != nil {
			target = action.Target[:]
		}
	}
	q, args := sqlInsertFinalized, []any{from, id[:], int64(outcome), int64(reason), at.UnixNano(), t.db.seal.seal(kindFinalizedDigest, messageKey(sender, id), digest[:]),
		contentColumn(content), arrivedColumn(arrived), sealedAction, target}
	if group != nil {
		q, args = sqlInsertFinalizedGroup, append(args, group[:])
	}
	_, err := t.runOne(ctx, "finalized-insert", engine.ErrConflict, q, args...)
	if err != nil {
		return fmt.Errorf("finalize message %x from %s (finalized already?): %w", id[:], from, err)
	}
	if outcome != engine.OutcomeCommitted {
		return nil
	}
	if arrived.IsZero() {
		arrived = at
	}
	if group != nil {
		return t.insertGroupEntry(ctx, *group, from, id, arrived, body)
	}
	return t.insertHistory(ctx, sender, engine.DirectionIn, id, arrived, 0, body)
}

// prune deletes the finalized records older than p.Before.
func (t *tx) prune(ctx context.Context, p engine.Prune) (engine.Receipt, error) {
	n, err := t.run(ctx, "finalized-prune", sqlPruneFinalized, p.Before.UnixNano())
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("prune finalized records: %w", err)
	}
	if _, err := t.run(ctx, "attempt-prune", sqlPruneAttempts, p.Before.UnixNano()); err != nil {
		return engine.Receipt{}, fmt.Errorf("prune attempts: %w", err)
	}
	return engine.Receipt{Pruned: n}, nil
}

// Inbound returns a pending received message, or engine.ErrNotPending.
func (db *DB) Inbound(ctx context.Context, sender engine.Address, id wire.LogicalID) (engine.InboundMessage, error) {
	if err := db.checkOpen("read pending message"); err != nil {
		return engine.InboundMessage{}, err
	}
	m := engine.InboundMessage{Sender: sender, ID: id}
	var received int64
	var digest, frame []byte
	err := db.queryRow(ctx, sqlInbound, sender.String(), id[:]).Scan(&m.Seq, &received, &digest, &frame)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.InboundMessage{}, fmt.Errorf("store: read message %x from %s: %w", id[:], sender, engine.ErrNotPending)
	case err != nil:
		return engine.InboundMessage{}, db.readErr("read pending message", err)
	}
	m.ReceivedAt = nsTime(received)
	if err := db.openInbound(&m, digest, frame); err != nil {
		return engine.InboundMessage{}, err
	}
	return m, nil
}

// openInbound fills a message's digest and body from its sealed columns.
func (db *DB) openInbound(m *engine.InboundMessage, sealedDigest, sealedFrame []byte) error {
	key := messageKey(m.Sender, m.ID)
	d, err := db.seal.open(kindInboundDigest, key, sealedDigest)
	if err != nil {
		return fmt.Errorf("store: read message %x from %s: %w", m.ID[:], m.Sender, err)
	}
	if len(d) != len(m.Digest) {
		return fmt.Errorf("store: read message %x from %s: digest of %d bytes: %w", m.ID[:], m.Sender, len(d), engine.ErrMalformedState)
	}
	copy(m.Digest[:], d)
	frame, err := db.seal.open(kindInboundFrame, key, sealedFrame)
	if err != nil {
		return fmt.Errorf("store: read message %x from %s: %w", m.ID[:], m.Sender, err)
	}
	f, err := engine.DecodeStoredFrame(frame)
	if err != nil {
		return fmt.Errorf("store: read message %x from %s: %w: %w", m.ID[:], m.Sender, engine.ErrMalformedState, err)
	}
	m.Body, m.Group, m.Content, m.CopyTo = f.Body, f.Group, f.Content, f.CopyTo
	if f.Roster {
		m.Roster = frame
	}
	return nil
}

// PendingInbound pages pending received messages in arrival order:
// sequence numbers above q.After, only from q.Peer when set (from its
// person's devices with q.Person), at most q.Limit (at most 1000).
func (db *DB) PendingInbound(ctx context.Context, q engine.PageQuery) ([]engine.InboundMessage, error) {
	stmts := pendingSQL{all: sqlPendingInbound, peer: sqlPendingInboundPeer, person: sqlPendingInboundPerson}
	if q.Requests {
		stmts.peer, stmts.person = sqlPendingInboundAll, sqlPendingInboundPersonAll
	}
	rows, err := db.pendingPage(ctx, q, stmts)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.InboundMessage
	for rows.Next() {
		var m engine.InboundMessage
		var from string
		var id, digest, frame []byte
		var received int64
		if err := rows.Scan(&m.Seq, &from, &id, &received, &digest, &frame); err != nil {
			return nil, db.readErr("read pending messages", err)
		}
		if m.Sender, err = engine.ParseAddress(from); err != nil {
			return nil, fmt.Errorf("store: read pending message %d: %w: %w", m.Seq, engine.ErrMalformedState, err)
		}
		copy(m.ID[:], id)
		m.ReceivedAt = nsTime(received)
		if err := db.openInbound(&m, digest, frame); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read pending messages", err)
	}
	return out, nil
}

// CountInbound counts pending received messages: every pending delivery
// (open requests left out), or every message from peer when it is set.
func (db *DB) CountInbound(ctx context.Context, peer *engine.Address) (int, error) {
	if err := db.checkOpen("count pending messages"); err != nil {
		return 0, err
	}
	var n int
	var err error
	if peer != nil {
		err = db.queryRow(ctx, sqlCountInboundPeer, peer.String()).Scan(&n)
	} else {
		err = db.queryRow(ctx, sqlCountInbound).Scan(&n)
	}
	if err != nil {
		return 0, db.readErr("count pending messages", err)
	}
	return n, nil
}

// Finalized returns the finalized record of a received message, or
// engine.ErrNotPending when there is none.
func (db *DB) Finalized(ctx context.Context, sender engine.Address, id wire.LogicalID) (engine.FinalizedRecord, error) {
	if err := db.checkOpen("read finalized record"); err != nil {
		return engine.FinalizedRecord{}, err
	}
	f := engine.FinalizedRecord{Sender: sender, ID: id}
	var outcome, reason, at int64
	var sealed []byte
	err := db.queryRow(ctx, sqlFinalized, sender.String(), id[:]).Scan(&outcome, &reason, &at, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.FinalizedRecord{}, fmt.Errorf("store: read finalized record %x from %s: %w", id[:], sender, engine.ErrNotPending)
	case err != nil:
		return engine.FinalizedRecord{}, db.readErr("read finalized record", err)
	}
	f.Outcome, f.Reason, f.At = engine.Outcome(outcome), engine.DiscardReason(reason), nsTime(at)
	d, err := db.seal.open(kindFinalizedDigest, messageKey(sender, id), sealed)
	if err != nil {
		return engine.FinalizedRecord{}, fmt.Errorf("store: read finalized record %x from %s: %w", id[:], sender, err)
	}
	if len(d) != len(f.Digest) {
		return engine.FinalizedRecord{}, fmt.Errorf("store: read finalized record %x from %s: digest of %d bytes: %w", id[:], sender, len(d), engine.ErrMalformedState)
	}
	copy(f.Digest[:], d)
	return f, nil
}

// Seen reports whether a received message is pending or finalized, in one
// lookup (engine.SeenReader).
func (db *DB) Seen(ctx context.Context, sender engine.Address, id wire.LogicalID) (engine.SeenMessage, error) {
	if err := db.checkOpen("read a received message"); err != nil {
		return engine.SeenMessage{}, err
	}
	var final, outcome, reason, at int64
	var sealed, grp []byte
	var held bool
	var content, arrived sql.NullInt64
	err := db.queryRow(ctx, sqlSeen, sender.String(), id[:]).Scan(&final, &outcome, &sealed, &reason, &grp, &held, &at, &content, &arrived)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return db.seenImported(ctx, sender, id)
	case err != nil:
		return engine.SeenMessage{}, db.readErr("read a received message", err)
	}
	s := engine.SeenMessage{Pending: final == 0, Finalized: final == 1, Outcome: engine.Outcome(outcome)}
	s.TakeBack = s.Finalized && s.Outcome == engine.OutcomeDiscarded && takeBackable(engine.DiscardReason(reason), grp, held, recordedContent(content), false)
	s.TakeBackAction = s.Finalized && s.Outcome == engine.OutcomeDiscarded && takeBackable(engine.DiscardReason(reason), grp, held, recordedContent(content), true)
	if s.Finalized {
		s.Reason, s.At, s.InGroup = engine.DiscardReason(reason), time.Unix(0, at), grp != nil
		if len(grp) == len(wire.GroupID{}) && !bytes.Equal(grp, unknownGroup[:]) {
			s.Group = (*wire.GroupID)(grp)
		}
		s.Content = recordedContent(content)
		if arrived.Valid {
			s.Arrived = time.Unix(0, arrived.Int64)
		}
	}
	kind := kindInboundDigest
	if s.Finalized {
		kind = kindFinalizedDigest
	}
	d, err := db.seal.open(kind, messageKey(sender, id), sealed)
	if err != nil {
		return engine.SeenMessage{}, fmt.Errorf("store: read received message %x from %s: %w", id[:], sender, err)
	}
	if len(d) != len(s.Digest) {
		return engine.SeenMessage{}, fmt.Errorf("store: read received message %x from %s: digest of %d bytes: %w", id[:], sender, len(d), engine.ErrMalformedState)
	}
	copy(s.Digest[:], d)
	return s, nil
}

// seenImported reports a received message that is neither pending nor
// finalized here but in the history, as an import (a restore, a link's
// history) left it: committed, its digest unknown (engine.SeenMessage,
// Imported). A profile that never imported a history pays nothing.
func (db *DB) seenImported(ctx context.Context, sender engine.Address, id wire.LogicalID) (engine.SeenMessage, error) {
	if !db.historyImported.Load() {
		return engine.SeenMessage{}, nil
	}
	var found bool
	if err := db.queryRow(ctx, sqlSeenInHistory, id[:], sender.String(), sender.User).Scan(&found); err != nil {
		return engine.SeenMessage{}, db.readErr("read a received message", err)
	}
	if !found {
		return engine.SeenMessage{}, nil
	}
	return engine.SeenMessage{Finalized: true, Outcome: engine.OutcomeCommitted, Imported: true}, nil
}
