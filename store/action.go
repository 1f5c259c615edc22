package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Actions (engine/action.go): what a reply, a reaction, an edit and a
// delete for everyone do to a conversation's entries, applied inside the
// plan that commits the action (hold, a receive's commit, finalize), and
// the reads the engine's rules and the history need.

const (
	kindMessageVersion = "message-version" // row key: peer, direction, id, edit
	kindReactionEmoji  = "reaction-emoji"  // row key: peer, direction, id, reactor
)

func init() {
	sealedColumns["message_version.sealed_body"] = kindMessageVersion
	sealedColumns["reaction.sealed_emoji"] = kindReactionEmoji
}

const (
	sqlMarkAction = `INSERT INTO message_extra (peer, direction, id, action, reply_to) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (peer, direction, id) DO UPDATE SET action = excluded.action, reply_to = excluded.reply_to`
	sqlExtraState   = "SELECT edits, deleted FROM message_extra WHERE peer = ? AND direction = ? AND id = ?"
	sqlEntryBody    = "SELECT sealed_body FROM history WHERE peer = ? AND direction = ? AND id = ?"
	sqlEntrySentBy  = "SELECT coalesce(sent_by, '') FROM history WHERE peer = ? AND direction = ? AND id = ?"
	sqlSetEntryBody = "UPDATE history SET sealed_body = ? WHERE peer = ? AND direction = ? AND id = ?"
	sqlSetEdits     = `INSERT INTO message_extra (peer, direction, id, edits) VALUES (?, ?, ?, ?)
		ON CONFLICT (peer, direction, id) DO UPDATE SET edits = excluded.edits WHERE edits < excluded.edits AND deleted = 0`
	sqlInsertVersion = `INSERT INTO message_version (peer, direction, id, edit, at, sealed_body) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	sqlSetDeleted = `INSERT INTO message_extra (peer, direction, id, deleted) VALUES (?, ?, ?, 1)
		ON CONFLICT (peer, direction, id) DO UPDATE SET deleted = 1, edits = 0`
	sqlDeleteVersions  = "DELETE FROM message_version WHERE peer = ? AND direction = ? AND id = ?"
	sqlDeleteReactions = "DELETE FROM reaction WHERE peer = ? AND direction = ? AND id = ?"
	// sqlForgetKeptOfDeleted forgets the kept decisions whose one-to-one
	// action of a sender (?1) waits for its message ?2, which a delete of
	// that sender took out (kept_decision_target).
	sqlForgetKeptOfDeleted = "DELETE FROM kept_decision WHERE sender = ?1 AND target = ?2 AND grp IS NULL"
	// sqlForgetDeletedActions clears the action bodies (0028) a delete
	// took out of history: the deleted message's own (a reply's text) and
	// those of the edits and reactions of it, all of its author (?4, the
	// person's prefix), one to one (a group's records are
	// sqlGroupForgetDeletedActions'). The catch-up no longer sends them.
	sqlForgetDeletedActions = `UPDATE finalized SET sealed_action = NULL, target = NULL WHERE sealed_action IS NOT NULL
		AND (id = ?1 OR (target = ?1 AND content IN (?2, ?3))) AND substr(sender, 1, length(?4)) = ?4 AND grp IS NULL`
	// sqlSetReaction sets (or, removed, takes back) a reactor's reaction,
	// once engine.ReactionApplies said so.
	sqlSetReaction = `INSERT INTO reaction (peer, direction, id, reactor, at, sealed_emoji, num, removed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (peer, direction, id, reactor) DO UPDATE SET at = excluded.at, sealed_emoji = excluded.sealed_emoji,
		num = excluded.num, removed = excluded.removed`
	sqlReactionNumber    = "SELECT num FROM reaction WHERE peer = ? AND direction = ? AND id = ? AND reactor = ?"
	sqlMarkInboundAction = "UPDATE inbound SET action = ? WHERE sender = ? AND id = ?"

	// sqlActionTarget finds a conversation's entry by ID in one direction
	// (?3) or either (0), the earliest first: a peer that reuses an ID of
	// this device's cannot take a reaction meant for the original.
	sqlActionTarget = `SELECT h.direction, h.state, h.at, coalesce(x.action, 0), coalesce(x.edits, 0), coalesce(x.deleted, 0),
		coalesce(i.sealed_source IS NOT NULL, 0), coalesce(h.sent_by, '')
		FROM history h LEFT JOIN message_extra x ON x.peer = h.peer AND x.direction = h.direction AND x.id = h.id
		LEFT JOIN import_progress i ON i.archive = h.imported
		WHERE h.peer = ?1 AND h.id = ?2 AND (?3 = 0 OR h.direction = ?3) ORDER BY h.seq LIMIT 1`
	sqlHeldActions = `SELECT seq, sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE action > 0 AND seq > ? AND sender NOT IN (SELECT peer FROM request) ORDER BY seq LIMIT ?`
	sqlVersions = "SELECT edit, at, sealed_body FROM message_version WHERE peer = ? AND direction = ? AND id = ? ORDER BY edit"
)

func versionKey(peer engine.Address, dir engine.Direction, id wire.LogicalID, edit uint32) []byte {
	return rowKey([]byte(peer.String()), []byte{byte(dir)}, id[:], rowKeyInt(int64(edit)))
}

func reactionKey(peer engine.Address, dir engine.Direction, id wire.LogicalID, reactor engine.Address) []byte {
	return rowKey([]byte(peer.String()), []byte{byte(dir)}, id[:], []byte(reactor.String()))
}

// heldCopyMark is added to inbound.action for a sibling's sent copy of an
// action (frame kind 17) and for a sibling's own group action, each
// waiting for its target: the hold's pass decides it, so the lists and
// counts of what the person decides leave it out (sqlPendingInbound and
// the others test action < heldCopyMark), as a person's decision on it is
// refused (engine.ErrHeldCopy).
const heldCopyMark = 16

// markInboundAction records a pending received action's content type, so
// that HeldActions finds it without opening every pending message; a
// sent copy's, and a group action's from another device of this account,
// is marked heldCopyMark higher.
func (t *tx) markInboundAction(ctx context.Context, sender engine.Address, id wire.LogicalID, frame []byte) error {
	k, err := wire.PeekFrameKind(frame)
	if err != nil || k != wire.FrameContent && k != wire.FrameGroupMessage && k != wire.FrameSentActionCopy {
		return nil
	}
	f, err := engine.DecodeStoredFrame(frame)
	if err != nil || !wire.IsAction(f.Content) || f.Content == wire.ContentReply {
		return nil
	}
	mark := int64(f.Content)
	if f.CopyTo != "" {
		mark += heldCopyMark
	} else if k == wire.FrameGroupMessage {
		sib, err := t.fromSibling(ctx, sender)
		if err != nil {
			return err
		}
		if sib {
			mark += heldCopyMark
		}
	}
	_, err = t.runOne(ctx, "inbound-action", engine.ErrConflict, sqlMarkInboundAction, mark, sender.String(), id[:])
	return err
}

// fromSibling reports whether sender is another device of this profile's
// account (the engine took its message only from a device of the list).
func (t *tx) fromSibling(ctx context.Context, sender engine.Address) (bool, error) {
	self, err := getMeta(ctx, t.tx, metaAddress)
	if err != nil {
		return false, err
	}
	a, err := engine.ParseAddress(string(self))
	if err != nil {
		return false, nil
	}
	return a.User == sender.User && a != sender, nil
}

// applyAction applies an action whose own history entry was just written:
// it marks that entry (a reply's quote; the others are not shown), then
// changes the target's entry. On a tombstone nothing changes; an edit
// replaces the body only over an older edit, and keeps what it replaces.
func (t *tx) applyAction(ctx context.Context, a engine.ActionApply) error {
	if a.Group != nil {
		return t.applyGroupAction(ctx, a)
	}
	own := a.Peer
	if a.Dir == engine.DirectionIn {
		// Its entry is where insertHistory put it: in the conversation of
		// the sender's person when one is held.
		var err error
		if own, err = t.conversationFor(ctx, a.Peer); err != nil {
			return err
		}
	}
	var replyTo any
	if a.Content == wire.ContentReply {
		replyTo = a.Target[:]
	}
	if _, err := t.run(ctx, "action-mark", sqlMarkAction, own.String(), int64(a.Dir), a.ID[:], int64(a.Content), replyTo); err != nil {
		return fmt.Errorf("mark action %x: %w", a.ID[:], err)
	}
	if a.Content == wire.ContentReply {
		return nil
	}
	if a.Content == wire.ContentDelete && a.Dir == engine.DirectionIn {
		// The kept decisions whose one-to-one action of the delete's
		// sender waits for the message it takes out (0028) would apply
		// over its tombstone: nothing takes them back any more.
		if _, err := t.run(ctx, "kept-forget-deleted", sqlForgetKeptOfDeleted, a.Peer.String(), a.Target[:]); err != nil {
			return fmt.Errorf("forget the kept actions on deleted %x: %w", a.Target[:], err)
		}
	}
	// From here on Peer is where the target's entry is kept.
	a.Peer = a.TargetAt()
	peer := a.Peer.String()
	target := []any{peer, int64(a.TargetDir), a.Target[:]}
	var edits, deleted int64
	if _, err := t.scan(ctx, "action-target", sqlExtraState, target, &edits, &deleted); err != nil {
		return err
	}
	if deleted == 1 {
		return nil
	}
	switch a.Content {
	case wire.ContentReaction:
		var stored int64
		found, err := t.scan(ctx, "reaction-number", sqlReactionNumber, []any{peer, int64(a.TargetDir), a.Target[:], a.Reactor.String()}, &stored)
		if err != nil || !engine.ReactionApplies(a.Order, uint32(stored), found) {
			return err // a reaction the reactor already replaced changes nothing
		}
		_, err = t.run(ctx, "reaction-set", sqlSetReaction, peer, int64(a.TargetDir), a.Target[:], a.Reactor.String(), a.At.UnixNano(),
			t.db.seal.seal(kindReactionEmoji, reactionKey(a.Peer, a.TargetDir, a.Target, a.Reactor), []byte(a.Emoji)),
			int64(a.Order), boolInt(a.Remove))
		return err
	case wire.ContentEdit:
		return t.applyEdit(ctx, a, uint32(edits))
	case wire.ContentDelete:
		return t.applyDelete(ctx, a)
	}
	return fmt.Errorf("apply action %x: content type %d: %w", a.ID[:], a.Content, engine.ErrConflict)
}

// applyEdit applies edit a over the target's latest edit number edits: a
// later edit moves the shown body into the versions and replaces it; an
// earlier one only joins the versions.
func (t *tx) applyEdit(ctx context.Context, a engine.ActionApply, edits uint32) error {
	peer := a.Peer.String()
	if a.Edit <= edits {
		_, err := t.run(ctx, "version-insert", sqlInsertVersion, peer, int64(a.TargetDir), a.Target[:], int64(a.Edit), a.At.UnixNano(),
			t.db.seal.seal(kindMessageVersion, versionKey(a.Peer, a.TargetDir, a.Target, a.Edit), a.Text))
		return err
	}
	var sealed []byte
	found, err := t.scan(ctx, "entry-read", sqlEntryBody, []any{peer, int64(a.TargetDir), a.Target[:]}, &sealed)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("edit %x of %x: no entry: %w", a.ID[:], a.Target[:], engine.ErrConflict)
	}
	body, err := t.db.seal.open(kindHistoryBody, historyKey(a.Peer, a.TargetDir, a.Target), sealed)
	if err != nil {
		return fmt.Errorf("edit %x of %x: %w", a.ID[:], a.Target[:], err)
	}
	if _, err := t.run(ctx, "version-insert", sqlInsertVersion, peer, int64(a.TargetDir), a.Target[:], int64(edits), a.At.UnixNano(),
		t.db.seal.seal(kindMessageVersion, versionKey(a.Peer, a.TargetDir, a.Target, edits), body)); err != nil {
		return err
	}
	text := a.Text
	if text == nil {
		text = []byte{}
	}
	if _, err := t.runOne(ctx, "entry-edit", engine.ErrConflict, sqlSetEntryBody,
		t.db.seal.seal(kindHistoryBody, historyKey(a.Peer, a.TargetDir, a.Target), text), peer, int64(a.TargetDir), a.Target[:]); err != nil {
		return fmt.Errorf("edit %x of %x: %w", a.ID[:], a.Target[:], err)
	}
	_, err = t.runOne(ctx, "edits-set", engine.ErrConflict, sqlSetEdits, peer, int64(a.TargetDir), a.Target[:], int64(a.Edit))
	return err
}

// applyDelete replaces the target's body by a tombstone and removes its
// reactions and its previous versions, and the action bodies the
// finalized records of the target and of its edits and reactions kept
// for a catch-up (sqlForgetDeletedActions).
func (t *tx) applyDelete(ctx context.Context, a engine.ActionApply) error {
	peer := a.Peer.String()
	target := []any{peer, int64(a.TargetDir), a.Target[:]}
	if _, err := t.runOne(ctx, "entry-delete", engine.ErrConflict, sqlSetEntryBody,
		append([]any{t.db.seal.seal(kindHistoryBody, historyKey(a.Peer, a.TargetDir, a.Target), []byte{})}, target...)...); err != nil {
		return fmt.Errorf("delete %x of %x: %w", a.ID[:], a.Target[:], err)
	}
	if _, err := t.run(ctx, "deleted-set", sqlSetDeleted, target...); err != nil {
		return err
	}
	if _, err := t.run(ctx, "reactions-delete", sqlDeleteReactions, target...); err != nil {
		return err
	}
	if _, err := t.run(ctx, "versions-delete", sqlDeleteVersions, target...); err != nil {
		return err
	}
	if a.TargetDir != engine.DirectionIn {
		return nil // an own message: its record keeps no action body
	}
	_, err := t.run(ctx, "finalized-forget-deleted", sqlForgetDeletedActions, a.Target[:], int64(wire.ContentEdit), int64(wire.ContentReaction), a.TargetAt().User+"/")
	return err
}

// ActionTarget implements engine.ActionStore.
func (db *DB) ActionTarget(ctx context.Context, peer engine.Address, id wire.LogicalID, dir engine.Direction) (engine.ActionTarget, error) {
	if err := db.checkOpen("read an action's target"); err != nil {
		return engine.ActionTarget{}, err
	}
	var t engine.ActionTarget
	var d, state, at, action, edits, deleted, linked int64
	var from string
	err := db.queryRow(ctx, sqlActionTarget, peer.String(), id[:], int64(dir)).Scan(&d, &state, &at, &action, &edits, &deleted, &linked, &from)
	switch {
	case err == nil:
		t.Found, t.Direction, t.At = true, engine.Direction(d), nsTime(at)
		// A sent copy, or a message sent before this device was linked
		// (another device's history, imported at the link): another
		// device of this person sent it.
		t.Copied = t.Direction == engine.DirectionOut && (engine.SentState(state) == engine.SentCopied || linked == 1)
		t.Action, t.Edits, t.Deleted = wire.ContentType(action), uint32(edits), deleted == 1
		if (t.Direction == engine.DirectionIn || engine.SentState(state) == engine.SentCopied) && from != "" {
			// The device that sent the entry: the sibling whose sent
			// copy made it (0027), the peer's device that sent a
			// received one (written on receipt or by an import); an
			// unreadable one names nobody.
			if a, err := engine.ParseAddress(from); err == nil {
				t.SentBy = a
			}
		}
		return t, nil
	case !errors.Is(err, sql.ErrNoRows):
		return t, db.readErr("read an action's target", err)
	}
	if dir == engine.DirectionOut {
		return t, nil
	}
	seen, err := db.Seen(ctx, peer, id)
	if err != nil {
		return t, err
	}
	t.Pending = seen.Pending
	t.Discarded = seen.Finalized && seen.Outcome == engine.OutcomeDiscarded
	return t, nil
}

// HeldActions implements engine.ActionStore.
func (db *DB) HeldActions(ctx context.Context, after int64, limit int) ([]engine.InboundMessage, error) {
	if err := db.checkOpen("read waiting actions"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlHeldActions, after, pageLimit(limit))
	if err != nil {
		return nil, db.readErr("read waiting actions", err)
	}
	defer rows.Close()
	var out []engine.InboundMessage
	for rows.Next() {
		var m engine.InboundMessage
		var from string
		var id, digest, frame []byte
		var received int64
		if err := rows.Scan(&m.Seq, &from, &id, &received, &digest, &frame); err != nil {
			return nil, db.readErr("read waiting actions", err)
		}
		if m.Sender, err = engine.ParseAddress(from); err != nil {
			return nil, fmt.Errorf("store: read waiting action %d: %w: %w", m.Seq, engine.ErrMalformedState, err)
		}
		copy(m.ID[:], id)
		m.ReceivedAt = nsTime(received)
		if err := db.openInbound(&m, digest, frame); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read waiting actions", err)
	}
	return out, nil
}

// MessageVersions implements engine.ActionStore.
func (db *DB) MessageVersions(ctx context.Context, peer engine.Address, dir engine.Direction, id wire.LogicalID) ([]engine.MessageVersion, error) {
	if err := db.checkOpen("read versions"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlVersions, peer.String(), int64(dir), id[:])
	if err != nil {
		return nil, db.readErr("read versions", err)
	}
	defer rows.Close()
	var out []engine.MessageVersion
	for rows.Next() {
		var v engine.MessageVersion
		var edit, at int64
		var sealed []byte
		if err := rows.Scan(&edit, &at, &sealed); err != nil {
			return nil, db.readErr("read versions", err)
		}
		v.Edit, v.At = uint32(edit), nsTime(at)
		if v.Body, err = db.seal.open(kindMessageVersion, versionKey(peer, dir, id, v.Edit), sealed); err != nil {
			return nil, fmt.Errorf("store: read version %d of %x: %w", edit, id[:], err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read versions", err)
	}
	return out, nil
}

// addReactions fills the reactions of a page of one conversation's
// entries, in one query.
func (db *DB) addReactions(ctx context.Context, peer engine.Address, page []engine.HistoryEntry) error {
	if len(page) == 0 {
		return nil
	}
	type key struct {
		dir engine.Direction
		id  wire.LogicalID
	}
	at := make(map[key]int, len(page))
	args := []any{peer.String()}
	for i, e := range page {
		at[key{e.Direction, e.ID}] = i
		args = append(args, e.ID[:])
	}
	q := "SELECT direction, id, reactor, sealed_emoji FROM reaction WHERE removed = 0 AND peer = ? AND id IN (?" +
		strings.Repeat(", ?", len(page)-1) + ") ORDER BY at, reactor"
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return db.readErr("read reactions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d int64
		var id, sealed []byte
		var reactor string
		if err := rows.Scan(&d, &id, &reactor, &sealed); err != nil {
			return db.readErr("read reactions", err)
		}
		var k key
		k.dir = engine.Direction(d)
		copy(k.id[:], id)
		i, ok := at[k]
		if !ok {
			continue
		}
		from, err := engine.ParseAddress(reactor)
		if err != nil {
			return fmt.Errorf("store: read reactions: %w: %w", engine.ErrMalformedState, err)
		}
		emoji, err := db.seal.open(kindReactionEmoji, reactionKey(peer, k.dir, k.id, from), sealed)
		if err != nil {
			return fmt.Errorf("store: read reactions: %w", err)
		}
		page[i].Reactions = append(page[i].Reactions, engine.Reaction{From: from, Emoji: string(emoji)})
	}
	if err := rows.Err(); err != nil {
		return db.readErr("read reactions", err)
	}
	return nil
}

// ReactionNumber implements engine.ActionStore.
func (db *DB) ReactionNumber(ctx context.Context, peer engine.Address, dir engine.Direction, id wire.LogicalID, reactor engine.Address) (uint32, bool, error) {
	if err := db.checkOpen("read a reaction's number"); err != nil {
		return 0, false, err
	}
	var n int64
	err := db.queryRow(ctx, sqlReactionNumber, peer.String(), int64(dir), id[:], reactor.String()).Scan(&n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, db.readErr("read a reaction's number", err)
	}
	return uint32(n), true, nil
}

// checkActionApply checks that an action belongs to the plan that applies
// it: its conversation, its own entry, a content type of an action and a
// target's direction.
func checkActionApply(a engine.ActionApply, peer engine.Address, dir engine.Direction, id wire.LogicalID) error {
	switch {
	case a.Peer != peer || a.Dir != dir || a.ID != id:
		return invalid("action %x of %s (%s) with a plan of %x of %s (%s)", a.ID[:], a.Peer, a.Dir, id[:], peer, dir)
	case !wire.IsAction(a.Content):
		return invalid("action of content type %d", a.Content)
	case a.Content != wire.ContentReply && a.TargetDir != engine.DirectionIn && a.TargetDir != engine.DirectionOut:
		return invalid("action's target in direction %d", a.TargetDir)
	case a.Content == wire.ContentReaction && !a.Remove && wire.CheckEmoji(a.Emoji) != nil:
		return invalid("reaction %q", a.Emoji)
	case a.Group != nil && a.Content != wire.ContentReply && a.TargetAuthor == (engine.Address{}):
		return invalid("group action %x without its target's author", a.ID[:])
	case a.Group == nil && a.TargetAuthor != (engine.Address{}):
		return invalid("action %x outside a group with a target's author", a.ID[:])
	case a.TargetPeer != (engine.Address{}) && (a.Group != nil || a.TargetPeer.User != a.Peer.User):
		return invalid("action %x of %s with its target kept under %s", a.ID[:], a.Peer, a.TargetPeer)
	}
	return checkTime("action at", a.At)
}

// checkCopyAction checks the action of a sibling's sent copy (message id
// from sender, naming the conversation with to's person): an own entry
// (DirectionOut) of that person's conversation, outside any group, whose
// reactor or author is the sibling, and whose target is kept in the
// same person's conversation.
func checkCopyAction(a *engine.ActionApply, sender, to engine.Address, id wire.LogicalID) error {
	switch {
	case a == nil:
		return invalid("sent copy %x finalized without its action", id[:])
	case a.Group != nil || a.Peer.User != to.User || a.Peer.User == sender.User:
		return invalid("sent copy %x applies in %s, not the conversation with %s", id[:], a.Peer, to)
	case a.Reactor != sender:
		return invalid("sent copy %x from %s acts as %s", id[:], sender, a.Reactor)
	}
	return checkActionApply(*a, a.Peer, engine.DirectionOut, id)
}

// checkActionGroup checks that an action is in the group of the plan that
// applies it (nil: a conversation's).
func checkActionGroup(a *engine.ActionApply, g *wire.GroupID) error {
	if a == nil || (a.Group == nil) == (g == nil) && (g == nil || *a.Group == *g) {
		return nil
	}
	return invalid("action %x in another group than its plan's", a.ID[:])
}
