package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

var _ engine.RequestStore = (*DB)(nil)

// A peer is accepted when it is a contact, this device has written to it (a
// message pending to it, or one sent in its history), or the owner accepted
// it (a request accepted, or a conversation older than requests).
const (
	sqlAccepted = `SELECT EXISTS (SELECT 1 FROM contact WHERE address = ?1)
		OR EXISTS (SELECT 1 FROM accepted_peer WHERE address = ?1)
		OR EXISTS (SELECT 1 FROM outbound WHERE recipient = ?1)
		OR EXISTS (SELECT 1 FROM history WHERE peer = ?1 AND direction = 2)`
	sqlCountInboundStrangers = `SELECT count(*) FROM inbound i
		WHERE NOT EXISTS (SELECT 1 FROM contact WHERE address = i.sender)
		AND NOT EXISTS (SELECT 1 FROM accepted_peer WHERE address = i.sender)
		AND NOT EXISTS (SELECT 1 FROM outbound WHERE recipient = i.sender)
		AND NOT EXISTS (SELECT 1 FROM history WHERE peer = i.sender AND direction = 2)`

	// sqlStageRequest opens a request, or makes a message join the open one
	// (the first message's preview stays).
	sqlStageRequest = `INSERT INTO request (peer, first_seen, last_seen, count, bytes, sealed_preview) VALUES (?1, ?2, ?2, 1, ?3, ?4)
		ON CONFLICT (peer) DO UPDATE SET last_seen = excluded.last_seen, count = count + 1, bytes = bytes + excluded.bytes`
	sqlJoinRequest = `UPDATE request SET last_seen = ?2, count = count + 1, bytes = bytes + ?3 WHERE peer = ?1`
	// sqlDropRequested deletes one pending message of a request (a roster
	// change the accept applies).
	sqlDropRequested = "DELETE FROM inbound WHERE sender = ? AND id = ?"
	// sqlAcceptRequest deletes exactly the request that was shown.
	sqlAcceptRequest   = "DELETE FROM request WHERE peer = ? AND count = ?"
	sqlRequestExists   = "SELECT 1 FROM request WHERE peer = ?"
	sqlInsertAccepted  = "INSERT INTO accepted_peer (address, at) VALUES (?, ?) ON CONFLICT (address) DO NOTHING"
	sqlDeleteRequest   = "DELETE FROM request WHERE peer = ?"
	sqlDeleteRequested = "DELETE FROM inbound WHERE sender = ?"
	sqlDropSession     = "DELETE FROM session WHERE peer = ?"
	sqlDropPastChains  = "DELETE FROM past_chain WHERE peer = ?"
	sqlInsertBlocked   = `INSERT INTO blocked (address, at, blocked, relay_told) VALUES (?, ?, 1, 0)
		ON CONFLICT (address) DO UPDATE SET at = excluded.at, blocked = 1, relay_told = 0`
	sqlBlockTold = "UPDATE blocked SET relay_told = 1 WHERE address = ? AND blocked = 1 AND relay_told = 0"
	// The relay heard of an unblock: the row ends.
	sqlUnblockTold = "DELETE FROM blocked WHERE address = ? AND blocked = 0"
	// An unblock: a block the relay never heard of just ends; one it heard
	// of waits for the relay to hear of the unblock.
	sqlUnblockUntold = "DELETE FROM blocked WHERE address = ? AND blocked = 1 AND relay_told = 0"
	sqlUnblockHeard  = "UPDATE blocked SET blocked = 0, relay_told = 0, at = ? WHERE address = ? AND blocked = 1 AND relay_told = 1"
	// The sweep deletes what a reject deletes, for every old request.
	sqlSweepInbound  = "DELETE FROM inbound WHERE sender IN (SELECT peer FROM request WHERE first_seen < ?)"
	sqlSweepSessions = "DELETE FROM session WHERE peer IN (SELECT peer FROM request WHERE first_seen < ?)"
	sqlSweepPast     = "DELETE FROM past_chain WHERE peer IN (SELECT peer FROM request WHERE first_seen < ?)"
	sqlSweepRequests = "DELETE FROM request WHERE first_seen < ?"

	sqlRequests      = "SELECT peer, first_seen, last_seen, count, bytes, sealed_preview FROM request ORDER BY first_seen, peer"
	sqlRequest       = "SELECT peer, first_seen, last_seen, count, bytes, sealed_preview FROM request WHERE peer = ?"
	sqlRequestTotals = "SELECT count(*), coalesce(sum(bytes), 0) FROM request"
	sqlBlocked       = "SELECT EXISTS (SELECT 1 FROM blocked WHERE address = ? AND blocked = 1)"
	sqlBlocksUntold  = "SELECT address, blocked FROM blocked WHERE relay_told = 0 ORDER BY at, address LIMIT 100"
	sqlBlocks        = "SELECT address FROM blocked WHERE blocked = 1 ORDER BY address"
)

// Accepted reports whether peer is accepted.
func (db *DB) Accepted(ctx context.Context, peer engine.Address) (bool, error) {
	if err := db.checkOpen("read whether a peer is accepted"); err != nil {
		return false, err
	}
	var ok bool
	if err := db.queryRow(ctx, sqlAccepted, peer.String()).Scan(&ok); err != nil {
		return false, db.readErr("read whether "+peer.String()+" is accepted", err)
	}
	return ok, nil
}

// CountInboundStrangers counts the pending received messages from peers
// that are not accepted.
func (db *DB) CountInboundStrangers(ctx context.Context) (int, error) {
	if err := db.checkOpen("count pending messages from strangers"); err != nil {
		return 0, err
	}
	var n int
	if err := db.queryRow(ctx, sqlCountInboundStrangers).Scan(&n); err != nil {
		return 0, db.readErr("count pending messages from strangers", err)
	}
	return n, nil
}

// stageRequest opens or joins the sender's request (part of a receive).
func (t *tx) stageRequest(ctx context.Context, peer engine.Address, r *engine.RequestStage) error {
	addr := peer.String()
	if r.Join {
		if _, err := t.runOne(ctx, "request-join", engine.ErrConflict, sqlJoinRequest, addr, r.At.UnixNano(), r.Bytes); err != nil {
			return fmt.Errorf("join the request of %s: %w", addr, err)
		}
		return nil
	}
	sealed := t.db.seal.seal(kindRequestPreview, []byte(addr), []byte(r.Preview))
	if _, err := t.run(ctx, "request-stage", sqlStageRequest, addr, r.At.UnixNano(), r.Bytes, sealed); err != nil {
		return fmt.Errorf("open the request of %s: %w", addr, err)
	}
	return nil
}

// acceptRequest promotes the request that was shown and accepts the peer.
func (t *tx) acceptRequest(ctx context.Context, p engine.AcceptRequest) error {
	addr := p.Peer.String()
	if p.Count > 0 {
		if _, err := t.runOne(ctx, "request-delete", engine.ErrConflict, sqlAcceptRequest, addr, p.Count); err != nil {
			return fmt.Errorf("accept the request of %s (changed since read?): %w", addr, err)
		}
	} else {
		found, err := t.scan(ctx, "request-read", sqlRequestExists, []any{addr}, new(int))
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("accept %s: a request arrived since read: %w", addr, engine.ErrConflict)
		}
	}
	if _, err := t.run(ctx, "accepted-insert", sqlInsertAccepted, addr, p.At.UnixNano()); err != nil {
		return fmt.Errorf("accept %s: %w", addr, err)
	}
	// The roster changes that waited in the request leave the pending
	// messages: applied, or only dropped.
	for _, a := range p.Rosters {
		if _, err := t.runOne(ctx, "inbound-delete", engine.ErrConflict, sqlDropRequested, addr, a.ID[:]); err != nil {
			return fmt.Errorf("accept %s: roster change %x (gone since read?): %w", addr, a.ID[:], err)
		}
		if a.Effect != nil {
			if err := t.receiveRoster(ctx, *a.Effect); err != nil {
				return err
			}
		}
	}
	for _, w := range p.Sessions {
		if err := t.writeSession(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// rejectRequest deletes a request with its messages and session, and
// records a block.
func (t *tx) rejectRequest(ctx context.Context, p engine.RejectRequest) error {
	addr := p.Peer.String()
	if _, err := t.runOne(ctx, "request-delete", engine.ErrNotPending, sqlDeleteRequest, addr); err != nil {
		return fmt.Errorf("reject %s: %w", addr, err)
	}
	for _, s := range []struct{ name, query string }{
		{"inbound-delete", sqlDeleteRequested}, {"session-delete", sqlDropSession}, {"past-chain-delete", sqlDropPastChains},
	} {
		if _, err := t.run(ctx, s.name, s.query, addr); err != nil {
			return fmt.Errorf("reject %s: %w", addr, err)
		}
	}
	if p.Block {
		if _, err := t.run(ctx, "blocked-insert", sqlInsertBlocked, addr, p.At.UnixNano()); err != nil {
			return fmt.Errorf("block %s: %w", addr, err)
		}
	}
	return nil
}

// importBlock records a block a linking package carried.
func (t *tx) importBlock(ctx context.Context, p engine.ImportBlock) error {
	if _, err := t.run(ctx, "blocked-insert", sqlInsertBlocked, p.Peer.String(), p.At.UnixNano()); err != nil {
		return fmt.Errorf("block %s: %w", p.Peer, err)
	}
	return nil
}

// sweepRequests deletes the requests first seen before p.Before.
func (t *tx) sweepRequests(ctx context.Context, p engine.SweepRequests) (engine.Receipt, error) {
	before := p.Before.UnixNano()
	for _, s := range []struct{ name, query string }{
		{"inbound-delete", sqlSweepInbound}, {"session-delete", sqlSweepSessions}, {"past-chain-delete", sqlSweepPast},
	} {
		if _, err := t.run(ctx, s.name, s.query, before); err != nil {
			return engine.Receipt{}, fmt.Errorf("sweep requests: %w", err)
		}
	}
	n, err := t.run(ctx, "request-delete", sqlSweepRequests, before)
	if err != nil {
		return engine.Receipt{}, fmt.Errorf("sweep requests: %w", err)
	}
	return engine.Receipt{Pruned: n}, nil
}

// markBlockTold records that the relay heard of a block or an unblock.
func (t *tx) markBlockTold(ctx context.Context, p engine.MarkBlockTold) error {
	name, query := "blocked-update", sqlBlockTold
	if !p.Blocked {
		name, query = "blocked-delete", sqlUnblockTold
	}
	if _, err := t.runOne(ctx, name, engine.ErrNotPending, query, p.Peer.String()); err != nil {
		return fmt.Errorf("record the change of %s's block told: %w", p.Peer, err)
	}
	return nil
}

// unblock ends a block: at once when the relay never heard of it, else
// once the relay hears of the unblock (markBlockTold).
func (t *tx) unblock(ctx context.Context, p engine.Unblock) error {
	addr := p.Peer.String()
	n, err := t.run(ctx, "blocked-delete", sqlUnblockUntold, addr)
	if err != nil {
		return fmt.Errorf("unblock %s: %w", addr, err)
	}
	m, err := t.run(ctx, "blocked-update", sqlUnblockHeard, p.At.UnixNano(), addr)
	if err != nil {
		return fmt.Errorf("unblock %s: %w", addr, err)
	}
	if n+m != 1 {
		return fmt.Errorf("unblock %s: not blocked: %w", addr, engine.ErrNotPending)
	}
	return nil
}

// Requests lists the open requests, oldest first.
func (db *DB) Requests(ctx context.Context) ([]engine.Request, error) {
	if err := db.checkOpen("read requests"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlRequests)
	if err != nil {
		return nil, db.readErr("read requests", err)
	}
	defer rows.Close()
	var out []engine.Request
	for rows.Next() {
		r, err := db.scanRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read requests", err)
	}
	return out, nil
}

// Request returns the open request from peer, or engine.ErrNotPending.
func (db *DB) Request(ctx context.Context, peer engine.Address) (engine.Request, error) {
	if err := db.checkOpen("read a request"); err != nil {
		return engine.Request{}, err
	}
	r, err := db.scanRequest(db.queryRow(ctx, sqlRequest, peer.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Request{}, fmt.Errorf("store: no request from %s: %w", peer, engine.ErrNotPending)
	}
	return r, err
}

func (db *DB) scanRequest(row interface{ Scan(...any) error }) (engine.Request, error) {
	var r engine.Request
	var addr string
	var first, last int64
	var sealed []byte
	if err := row.Scan(&addr, &first, &last, &r.Count, &r.Bytes, &sealed); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, err
		}
		return r, db.readErr("read a request", err)
	}
	var err error
	if r.Peer, err = engine.ParseAddress(addr); err != nil {
		return r, fmt.Errorf("store: request from %q: %w: %w", addr, engine.ErrMalformedState, err)
	}
	preview, err := db.seal.open(kindRequestPreview, []byte(addr), sealed)
	if err != nil {
		return r, fmt.Errorf("store: request from %s: %w", addr, err)
	}
	r.FirstSeen, r.LastSeen, r.Preview = nsTime(first), nsTime(last), string(preview)
	return r, nil
}

// RequestTotals counts the open requests and their bytes.
func (db *DB) RequestTotals(ctx context.Context) (int, int64, error) {
	if err := db.checkOpen("count requests"); err != nil {
		return 0, 0, err
	}
	var n int
	var b int64
	if err := db.queryRow(ctx, sqlRequestTotals).Scan(&n, &b); err != nil {
		return 0, 0, db.readErr("count requests", err)
	}
	return n, b, nil
}

// Blocked reports whether peer is blocked.
func (db *DB) Blocked(ctx context.Context, peer engine.Address) (bool, error) {
	if err := db.checkOpen("read a block"); err != nil {
		return false, err
	}
	var ok bool
	if err := db.queryRow(ctx, sqlBlocked, peer.String()).Scan(&ok); err != nil {
		return false, db.readErr("read a block", err)
	}
	return ok, nil
}

// Blocks lists the blocked senders.
func (db *DB) Blocks(ctx context.Context) ([]engine.Address, error) {
	var out []engine.Address
	err := db.scanBlocks(ctx, sqlBlocks, func(a engine.Address, _ bool) { out = append(out, a) })
	return out, err
}

// BlocksUntold lists (at most 100 of) the blocks and unblocks the relay has
// not heard of, oldest first.
func (db *DB) BlocksUntold(ctx context.Context) ([]engine.BlockChange, error) {
	var out []engine.BlockChange
	err := db.scanBlocks(ctx, sqlBlocksUntold, func(a engine.Address, b bool) {
		out = append(out, engine.BlockChange{Peer: a, Blocked: b})
	})
	return out, err
}

// scanBlocks runs a query of blocked rows (address, and blocked when it
// has two columns).
func (db *DB) scanBlocks(ctx context.Context, query string, each func(engine.Address, bool)) error {
	if err := db.checkOpen("read blocks"); err != nil {
		return err
	}
	rows, err := db.query(ctx, query)
	if err != nil {
		return db.readErr("read blocks", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return db.readErr("read blocks", err)
	}
	for rows.Next() {
		var addr string
		blocked := true
		dest := []any{&addr}
		if len(cols) == 2 {
			dest = append(dest, &blocked)
		}
		if err := rows.Scan(dest...); err != nil {
			return db.readErr("read blocks", err)
		}
		a, err := engine.ParseAddress(addr)
		if err != nil {
			return fmt.Errorf("store: blocked %q: %w: %w", addr, engine.ErrMalformedState, err)
		}
		each(a, blocked)
	}
	if err := rows.Err(); err != nil {
		return db.readErr("read blocks", err)
	}
	return nil
}
