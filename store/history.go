package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

const (
	// sqlInsertHistory appends an entry; a received one names the device
	// that sent it (sent_by, 0027), a sent one nobody.
	sqlInsertHistory = `INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (peer, direction, id) DO NOTHING`
	// sqlInsertCopyHistory is sqlInsertHistory for a sent copy's entry,
	// naming the sibling it came from (sent_by, its author here).
	sqlInsertCopyHistory = `INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (peer, direction, id) DO NOTHING`
	// sqlSetSentState moves a sent message's entry on from pending.
	sqlSetSentState = "UPDATE history SET state = ? WHERE peer = ? AND direction = 2 AND id = ? AND state = 1"

	// sqlHistory pages a conversation by time, newest first, before the
	// entry (at, seq); seq orders entries of one instant.
	// The entries of reactions, edits and deletes are not shown: what
	// they did is (message_extra, reaction; store/action.go).
	sqlHistory = `SELECT h.seq, h.direction, h.id, h.at, h.state, h.sealed_body, x.reply_to, coalesce(x.edits, 0), coalesce(x.deleted, 0), h.decided_on,
		` + sqlImportedColumns + `
		FROM history h LEFT JOIN message_extra x ON x.peer = h.peer AND x.direction = h.direction AND x.id = h.id
		LEFT JOIN import_progress i ON i.archive = h.imported
		WHERE h.peer = ?1 AND (h.at < ?2 OR (h.at = ?2 AND h.seq < ?3)) AND coalesce(x.action, 0) NOT IN (4, 5, 6)
		ORDER BY h.at DESC, h.seq DESC LIMIT ?4`
	sqlHistoryAt = "SELECT at FROM history WHERE seq = ? AND peer = ?"
	// sqlConversations lists every peer with a history or pending messages.
	// Such a peer is pinned (a message is stored with a session, a session
	// only with a pin, and pins are never deleted), except one whose first
	// messages are held (engine.Hold) until its bundle can be fetched: those
	// peers come from the outbound table. Each subquery is an index lookup;
	// only the peer table and the pending outbound messages are scanned.
	// A peer with an open message request is not a conversation until the
	// request is accepted (engine/request.go).
	sqlConversations = `SELECT address, pending_in, pending_out, last_at FROM (
		SELECT p.address AS address,
			(SELECT count(*) FROM inbound WHERE sender = p.address AND action < 16) AS pending_in,
			(SELECT count(*) FROM outbound WHERE recipient = p.address) AS pending_out,
			max(coalesce((SELECT max(at) FROM history WHERE peer = p.address), 0),
				coalesce((SELECT max(received_at) FROM inbound WHERE sender = p.address), 0),
				coalesce((SELECT max(created_at) FROM outbound WHERE recipient = p.address), 0)) AS last_at,
			EXISTS (SELECT 1 FROM history WHERE peer = p.address) AS has_history
		FROM (SELECT address FROM peer UNION SELECT recipient FROM outbound) p
		WHERE p.address NOT IN (SELECT peer FROM request))
		WHERE has_history OR pending_in > 0 OR pending_out > 0
		ORDER BY last_at DESC, address`
	// sqlConversationsByPerson is sqlConversations with, for each device,
	// the conversation of its user's held device list (NULL when none is
	// held): one primary-key lookup a row.
	sqlConversationsByPerson = `SELECT c.address, c.pending_in, c.pending_out, c.last_at,
		(SELECT a.conversation FROM peer_account a WHERE a.user = substr(c.address, 1, instr(c.address, '/') - 1))
		FROM (` + sqlConversations + `) c`
)

func historyKey(peer engine.Address, dir engine.Direction, id wire.LogicalID) []byte {
	return rowKey([]byte(peer.String()), []byte{byte(dir)}, id[:])
}

// insertHistory appends a message to a conversation. A sent message must not
// be there yet. A received one may: when its finalized record was pruned and
// its sender retried it, it is delivered and committed again, and the
// history keeps the one entry it has. A received entry names peer, the
// device that sent it (sent_by): only it edits or deletes the message.
func (t *tx) insertHistory(ctx context.Context, peer engine.Address, dir engine.Direction, id wire.LogicalID, at time.Time, state engine.SentState, body []byte) error {
	if body == nil {
		body = []byte{}
	}
	var sentBy any
	if dir == engine.DirectionIn {
		sentBy = peer.String()
		// A message from any device of a person goes to their one
		// conversation.
		conv, err := t.conversationFor(ctx, peer)
		if err != nil {
			return err
		}
		peer = conv
	}
	args := []any{peer.String(), int64(dir), id[:], at.UnixNano(), int64(state), t.db.seal.seal(kindHistoryBody, historyKey(peer, dir, id), body), sentBy}
	var err error
	if dir == engine.DirectionIn {
		_, err = t.run(ctx, "history-insert", sqlInsertHistory, args...)
	} else {
		_, err = t.runOne(ctx, "history-insert", engine.ErrConflict, sqlInsertHistory, args...)
	}
	if err != nil {
		return fmt.Errorf("append message %x (%s) to the history with %s (already there?): %w", id[:], dir, peer, err)
	}
	return nil
}

// setSentState moves a sent message's history entry from pending to state.
func (t *tx) setSentState(ctx context.Context, name string, peer engine.Address, id wire.LogicalID, state engine.SentState) error {
	if _, err := t.runOne(ctx, name, engine.ErrConflict, sqlSetSentState, int64(state), peer.String(), id[:]); err != nil {
		return fmt.Errorf("mark message %x to %s as %d: no pending history entry: %w", id[:], peer, state, err)
	}
	return nil
}

// History pages the conversation with peer, newest first by the time each
// message was sent or arrived: the entries before the one whose sequence
// number is before (0: from the newest), at most limit (at most 1000). For
// a person whose device list is held, that is their one conversation
// (store/person.go), merged with what was kept under peer's own address
// before the list was held.
func (db *DB) History(ctx context.Context, peer engine.Address, before int64, limit int) ([]engine.HistoryEntry, error) {
	if err := db.checkOpen("read history"); err != nil {
		return nil, err
	}
	conv, err := db.conversationFor(ctx, peer)
	if err != nil {
		return nil, err
	}
	at, err := db.historyAt(ctx, before, conv, peer)
	if err != nil {
		return nil, err
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	out, err := db.historyOf(ctx, conv, at, before, limit)
	if err != nil || conv == peer {
		return out, err
	}
	kept, err := db.historyOf(ctx, peer, at, before, limit)
	if err != nil || len(kept) == 0 {
		return out, err
	}
	// Each part is newest first and at most limit long: merge them.
	out = append(out, kept...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.After(out[j].At)
		}
		return out[i].Seq > out[j].Seq
	})
	return out[:min(len(out), pageLimit(limit))], nil
}

// historyAt returns the time of entry before (math.MaxInt64 when it is 0
// or no entry of these conversations).
func (db *DB) historyAt(ctx context.Context, before int64, peers ...engine.Address) (int64, error) {
	if before <= 0 {
		return math.MaxInt64, nil
	}
	for _, p := range peers {
		var at int64
		err := db.queryRow(ctx, sqlHistoryAt, before, p.String()).Scan(&at)
		switch {
		case err == nil:
			return at, nil
		case !errors.Is(err, sql.ErrNoRows):
			return 0, db.readErr("read history", err)
		}
	}
	return math.MaxInt64, nil // not an entry of this conversation: from the newest
}

// historyOf pages the entries kept under peer before (at, before).
func (db *DB) historyOf(ctx context.Context, peer engine.Address, at, before int64, limit int) ([]engine.HistoryEntry, error) {
	rows, err := db.query(ctx, sqlHistory, peer.String(), at, before, pageLimit(limit))
	if err != nil {
		return nil, db.readErr("read history", err)
	}
	defer rows.Close()
	var out []engine.HistoryEntry
	for rows.Next() {
		e := engine.HistoryEntry{Peer: peer}
		var dir, state, at int64
		var id, sealed, replyTo []byte
		var edits, deleted int64
		var decidedOn sql.NullString
		var imp importedCols
		if err := rows.Scan(&e.Seq, &dir, &id, &at, &state, &sealed, &replyTo, &edits, &deleted, &decidedOn, &imp.archive, &imp.at, &imp.link); err != nil {
			return nil, db.readErr("read history", err)
		}
		if decidedOn.Valid {
			a, err := parseStoredAddress(decidedOn.String)
			if err != nil {
				return nil, err
			}
			e.DecidedOn = &a
		}
		e.Direction, e.State, e.At = engine.Direction(dir), engine.SentState(state), nsTime(at)
		e.Imported = imp.imported()
		copy(e.ID[:], id)
		setExtra(&e, replyTo, edits, deleted)
		if e.Body, err = db.seal.open(kindHistoryBody, historyKey(peer, e.Direction, e.ID), sealed); err != nil {
			return nil, fmt.Errorf("store: read history entry %d with %s: %w", e.Seq, peer, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read history", err)
	}
	rows.Close()
	if err := db.addReactions(ctx, peer, out); err != nil {
		return nil, err
	}
	return out, nil
}

// setExtra fills an entry's reply, edit and tombstone columns.
func setExtra(e *engine.HistoryEntry, replyTo []byte, edits, deleted int64) {
	if len(replyTo) == len(wire.LogicalID{}) {
		var r wire.LogicalID
		copy(r[:], replyTo)
		e.ReplyTo = &r
	}
	e.Edits, e.Deleted = uint32(edits), deleted == 1
}

// Conversations lists every peer with a history or pending messages, with
// the counts of pending messages each way and the time of the latest
// message, the most recent conversation first.
func (db *DB) Conversations(ctx context.Context) ([]engine.Conversation, error) {
	if err := db.checkOpen("read conversations"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlConversations)
	if err != nil {
		return nil, db.readErr("read conversations", err)
	}
	defer rows.Close()
	var out []engine.Conversation
	for rows.Next() {
		var c engine.Conversation
		var addr string
		var last int64
		if err := rows.Scan(&addr, &c.PendingIn, &c.PendingOut, &last); err != nil {
			return nil, db.readErr("read conversations", err)
		}
		if c.Peer, err = engine.ParseAddress(addr); err != nil {
			return nil, fmt.Errorf("store: read conversations: %w: %w", engine.ErrMalformedState, err)
		}
		c.LastAt = nsTime(last)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read conversations", err)
	}
	return out, nil
}

// ConversationsByPerson implements engine.Store: the rows of Conversations,
// those of the devices of a person whose device list is held folded into
// one under the list's conversation (its counts summed, its latest time
// the latest of its devices', each device's row in Devices by device
// number), the most recent conversation first.
func (db *DB) ConversationsByPerson(ctx context.Context) ([]engine.Conversation, error) {
	if err := db.checkOpen("read conversations"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlConversationsByPerson)
	if err != nil {
		return nil, db.readErr("read conversations", err)
	}
	defer rows.Close()
	var out []engine.Conversation
	person := map[engine.Address]int{} // a person's conversation: its index in out
	for rows.Next() {
		var c engine.Conversation
		var addr string
		var conv sql.NullString
		var last int64
		if err := rows.Scan(&addr, &c.PendingIn, &c.PendingOut, &last, &conv); err != nil {
			return nil, db.readErr("read conversations", err)
		}
		if c.Peer, err = engine.ParseAddress(addr); err != nil {
			return nil, fmt.Errorf("store: read conversations: %w: %w", engine.ErrMalformedState, err)
		}
		c.LastAt = nsTime(last)
		if !conv.Valid {
			out = append(out, c)
			continue
		}
		to, err := parseStoredAddress(conv.String)
		if err != nil {
			return nil, err
		}
		i, ok := person[to]
		if !ok {
			i = len(out)
			person[to] = i
			out = append(out, engine.Conversation{Peer: to, Devices: []engine.Conversation{}})
		}
		p := &out[i]
		p.PendingIn += c.PendingIn
		p.PendingOut += c.PendingOut
		if c.LastAt.After(p.LastAt) {
			p.LastAt = c.LastAt
		}
		p.Devices = append(p.Devices, c)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read conversations", err)
	}
	// The rows come most recent first, so a person's conversation took
	// the place and the time of its latest device: the order holds.
	for _, i := range person {
		ds := out[i].Devices
		sort.Slice(ds, func(a, b int) bool { return ds[a].Peer.Device < ds[b].Peer.Device })
	}
	return out, nil
}

const sqlHistoryEntry = `SELECT h.seq, h.at, h.state, h.sealed_body, x.reply_to, coalesce(x.edits, 0), coalesce(x.deleted, 0),
	` + sqlImportedColumns + `
	FROM history h LEFT JOIN message_extra x ON x.peer = h.peer AND x.direction = h.direction AND x.id = h.id
	LEFT JOIN import_progress i ON i.archive = h.imported
	WHERE h.peer = ? AND h.direction = ? AND h.id = ?`

// HistoryEntry returns the history entry of message id exchanged with peer
// in direction dir, and whether there is one.
func (db *DB) HistoryEntry(ctx context.Context, peer engine.Address, dir engine.Direction, id wire.LogicalID) (engine.HistoryEntry, bool, error) {
	if err := db.checkOpen("read history"); err != nil {
		return engine.HistoryEntry{}, false, err
	}
	conv, err := db.conversationFor(ctx, peer)
	if err != nil {
		return engine.HistoryEntry{}, false, err
	}
	if conv != peer {
		// A person's conversation first, then what was kept under peer
		// before their list was held.
		if e, ok, err := db.historyEntry(ctx, conv, dir, id); ok || err != nil {
			return e, ok, err
		}
	}
	return db.historyEntry(ctx, peer, dir, id)
}

// historyEntry reads one entry kept under peer.
func (db *DB) historyEntry(ctx context.Context, peer engine.Address, dir engine.Direction, id wire.LogicalID) (engine.HistoryEntry, bool, error) {
	e := engine.HistoryEntry{Peer: peer, Direction: dir, ID: id}
	var at, state int64
	var sealed, replyTo []byte
	var edits, deleted int64
	var imp importedCols
	err := db.queryRow(ctx, sqlHistoryEntry, peer.String(), int64(dir), id[:]).Scan(&e.Seq, &at, &state, &sealed, &replyTo, &edits, &deleted,
		&imp.archive, &imp.at, &imp.link)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.HistoryEntry{}, false, nil
	case err != nil:
		return engine.HistoryEntry{}, false, db.readErr("read history", err)
	}
	e.At, e.State, e.Imported = nsTime(at), engine.SentState(state), imp.imported()
	setExtra(&e, replyTo, edits, deleted)
	if e.Body, err = db.seal.open(kindHistoryBody, historyKey(peer, dir, id), sealed); err != nil {
		return engine.HistoryEntry{}, false, fmt.Errorf("store: read history entry %d with %s: %w", e.Seq, peer, err)
	}
	page := []engine.HistoryEntry{e}
	if err := db.addReactions(ctx, peer, page); err != nil {
		return engine.HistoryEntry{}, false, err
	}
	return page[0], true, nil
}

// sqlImportedColumns reads, for an entry h joined with the import that
// brought it (import_progress i), the archive, when its import started
// and whether it was a linked device's history; all NULL or false for an
// entry written here.
const sqlImportedColumns = "h.imported, i.started_at, coalesce(i.sealed_source IS NOT NULL, 0)"

// importedCols scans sqlImportedColumns.
type importedCols struct {
	archive []byte
	at      sql.NullInt64
	link    int64
}

// imported is the entry's engine.Imported, nil when it was written here.
func (c importedCols) imported() *engine.Imported {
	if c.archive == nil {
		return nil
	}
	imp := &engine.Imported{Link: c.link == 1}
	if c.at.Valid {
		imp.At = nsTime(c.at.Int64)
	}
	return imp
}
