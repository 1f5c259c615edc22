package store

import (
	"context"

	"github.com/parley-chat/parley/engine"
)

// A peer is accepted when it is a contact or this device has written to it
// (a message pending to it, or one sent in its history).
const (
	sqlAccepted = `SELECT EXISTS (SELECT 1 FROM contact WHERE address = ?1)
		OR EXISTS (SELECT 1 FROM outbound WHERE recipient = ?1)
		OR EXISTS (SELECT 1 FROM history WHERE peer = ?1 AND direction = 2)`
	sqlCountInboundStrangers = `SELECT count(*) FROM inbound i
		WHERE NOT EXISTS (SELECT 1 FROM contact WHERE address = i.sender)
		AND NOT EXISTS (SELECT 1 FROM outbound WHERE recipient = i.sender)
		AND NOT EXISTS (SELECT 1 FROM history WHERE peer = i.sender AND direction = 2)`
)

// Accepted reports whether peer is a contact or one this device wrote to.
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
