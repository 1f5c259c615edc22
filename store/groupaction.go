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

// Actions in groups (engine/groupaction.go): what they do to a group's
// history entries, keyed (grp, sender, id) like group_history, applied in
// the plan that commits them (a group send here, a receive's commit or a
// finalize there).

const (
	kindGroupVersion  = "group-version"  // row key: group, sender, id, edit
	kindGroupReaction = "group-reaction" // row key: group, sender, id, reactor
)

func init() {
	sealedColumns["group_version.sealed_body"] = kindGroupVersion
	sealedColumns["group_reaction.sealed_emoji"] = kindGroupReaction
}

const (
	sqlGroupMarkAction = `INSERT INTO group_extra (grp, sender, id, action, reply_to) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (grp, sender, id) DO UPDATE SET action = excluded.action, reply_to = excluded.reply_to`
	sqlGroupExtraState   = "SELECT edits, deleted FROM group_extra WHERE grp = ? AND sender = ? AND id = ?"
	sqlGroupEntryBody    = "SELECT sealed_body FROM group_history WHERE grp = ? AND sender = ? AND id = ?"
	sqlGroupSetEntryBody = "UPDATE group_history SET sealed_body = ? WHERE grp = ? AND sender = ? AND id = ?"
	sqlGroupSetEdits     = `INSERT INTO group_extra (grp, sender, id, edits) VALUES (?, ?, ?, ?)
		ON CONFLICT (grp, sender, id) DO UPDATE SET edits = excluded.edits WHERE edits < excluded.edits AND deleted = 0`
	sqlGroupInsertVersion = `INSERT INTO group_version (grp, sender, id, edit, at, sealed_body) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	sqlGroupSetDeleted = `INSERT INTO group_extra (grp, sender, id, deleted) VALUES (?, ?, ?, 1)
		ON CONFLICT (grp, sender, id) DO UPDATE SET deleted = 1, edits = 0`
	sqlGroupDeleteVersions  = "DELETE FROM group_version WHERE grp = ? AND sender = ? AND id = ?"
	sqlGroupDeleteReactions = "DELETE FROM group_reaction WHERE grp = ? AND sender = ? AND id = ?"
	// sqlGroupRecordSenders reads the senders of the finalized records of
	// a group's messages of one ID (finalized_group_id, 0031).
	sqlGroupRecordSenders = "SELECT sender FROM finalized WHERE grp = ? AND id = ? ORDER BY sender LIMIT ?"
	// sqlGroupForgetKeptOfDeleted forgets the kept decisions (0030) whose
	// group action (?1) waits for a message a delete took out: the edits
	// and deletes of its author (?3), the reactions of any member (?4),
	// on the kept_decision_group_target index.
	sqlGroupForgetKeptOfDeleted = `DELETE FROM kept_decision WHERE grp = ?1 AND target = ?2 AND (sender = ?3 OR content = ?4)`
	// sqlGroupForgetDeletedAction and sqlGroupForgetDeletedActions are
	// sqlForgetDeletedActions in a group (?1): the deleted message's own
	// action body (a reply's text; its author ?2, its ID ?3), and those of
	// the edits and reactions of it (?2) by any member, which the delete
	// took out of the group's history. The catch-up and an answer no
	// longer send them. Two statements, each on one index: the record's
	// key, and finalized_action_target.
	sqlGroupForgetDeletedAction = `UPDATE finalized SET sealed_action = NULL, target = NULL
		WHERE sender = ?2 AND id = ?3 AND grp = ?1 AND sealed_action IS NOT NULL`
	sqlGroupForgetDeletedActions = `UPDATE finalized SET sealed_action = NULL, target = NULL
		WHERE target = ?2 AND sealed_action IS NOT NULL AND grp = ?1 AND content IN (?3, ?4)`
	// sqlGroupSetReaction is sqlSetReaction in a group.
	sqlGroupSetReaction = `INSERT INTO group_reaction (grp, sender, id, reactor, at, sealed_emoji, num, removed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (grp, sender, id, reactor) DO UPDATE SET at = excluded.at, sealed_emoji = excluded.sealed_emoji,
		num = excluded.num, removed = excluded.removed`
	sqlGroupReactionNumber = "SELECT num FROM group_reaction WHERE grp = ? AND sender = ? AND id = ? AND reactor = ?"

	// sqlGroupActionTarget finds a group's entry by ID, of one author
	// (?3) or any (''), the earliest first.
	sqlGroupActionTarget = `SELECT h.sender, h.at, coalesce(x.action, 0), coalesce(x.edits, 0), coalesce(x.deleted, 0)
		FROM group_history h LEFT JOIN group_extra x ON x.grp = h.grp AND x.sender = h.sender AND x.id = h.id
		WHERE h.grp = ?1 AND h.id = ?2 AND (?3 = '' OR h.sender = ?3) ORDER BY h.seq LIMIT 1`
	sqlGroupVersions = "SELECT edit, at, sealed_body FROM group_version WHERE grp = ? AND sender = ? AND id = ? ORDER BY edit"
)

func groupVersionKey(g wire.GroupID, sender string, id wire.LogicalID, edit uint32) []byte {
	return rowKey(g[:], []byte(sender), id[:], rowKeyInt(int64(edit)))
}

func groupReactionKey(g wire.GroupID, sender string, id wire.LogicalID, reactor string) []byte {
	return rowKey(g[:], []byte(sender), id[:], []byte(reactor))
}

// applyGroupAction is applyAction for an action in a group: it marks the
// action's own entry (group, author, ID), then changes the target's
// (group, target author, target). A delete also clears the action bodies
// the finalized records of the target and of its edits and reactions kept
// for a catch-up (sqlGroupForgetDeletedAction, sqlGroupForgetDeletedActions).
func (t *tx) applyGroupAction(ctx context.Context, a engine.ActionApply) error {
	g := *a.Group
	var replyTo any
	if a.Content == wire.ContentReply {
		replyTo = a.Target[:]
	}
	if _, err := t.run(ctx, "group-action-mark", sqlGroupMarkAction, g[:], a.Peer.String(), a.ID[:], int64(a.Content), replyTo); err != nil {
		return fmt.Errorf("mark group action %x: %w", a.ID[:], err)
	}
	if a.Content == wire.ContentReply {
		return nil
	}
	author := a.TargetAuthor.String()
	target := []any{g[:], author, a.Target[:]}
	var edits, deleted int64
	if _, err := t.scan(ctx, "group-action-target", sqlGroupExtraState, target, &edits, &deleted); err != nil {
		return err
	}
	if deleted == 1 {
		return nil
	}
	switch a.Content {
	case wire.ContentReaction:
		reactor := a.Reactor.String()
		var stored int64
		found, err := t.scan(ctx, "group-reaction-number", sqlGroupReactionNumber, append(target, reactor), &stored)
		if err != nil || !engine.ReactionApplies(a.Order, uint32(stored), found) {
			return err // a reaction the reactor already replaced changes nothing
		}
		_, err = t.run(ctx, "group-reaction-set", sqlGroupSetReaction, g[:], author, a.Target[:], reactor, a.At.UnixNano(),
			t.db.seal.seal(kindGroupReaction, groupReactionKey(g, author, a.Target, reactor), []byte(a.Emoji)),
			int64(a.Order), boolInt(a.Remove))
		return err
	case wire.ContentEdit:
		return t.applyGroupEdit(ctx, a, uint32(edits))
	case wire.ContentDelete:
		if _, err := t.runOne(ctx, "group-entry-delete", engine.ErrConflict, sqlGroupSetEntryBody,
			append([]any{t.db.seal.seal(kindGroupBody, groupBodyKey(g, author, a.Target), []byte{})}, target...)...); err != nil {
			return fmt.Errorf("delete %x of %x: %w", a.ID[:], a.Target[:], err)
		}
		for _, q := range []struct{ name, sql string }{
			{"group-deleted-set", sqlGroupSetDeleted}, {"group-reactions-delete", sqlGroupDeleteReactions}, {"group-versions-delete", sqlGroupDeleteVersions},
		} {
			if _, err := t.run(ctx, q.name, q.sql, target...); err != nil {
				return err
			}
		}
		if _, err := t.run(ctx, "group-finalized-forget-deleted", sqlGroupForgetDeletedAction, g[:], author, a.Target[:]); err != nil {
			return err
		}
		if _, err := t.run(ctx, "group-finalized-forget-actions", sqlGroupForgetDeletedActions, g[:], a.Target[:],
			int64(wire.ContentEdit), int64(wire.ContentReaction)); err != nil {
			return err
		}
		// The kept decisions whose action waits for the deleted message
		// (its author's edits and deletes, any member's reactions) would
		// apply over its tombstone: nothing takes them back any more.
		if _, err := t.run(ctx, "group-kept-forget-deleted", sqlGroupForgetKeptOfDeleted, g[:], a.Target[:], author, int64(wire.ContentReaction)); err != nil {
			return fmt.Errorf("forget the kept actions on deleted %x: %w", a.Target[:], err)
		}
		return nil
	}
	return fmt.Errorf("apply group action %x: content type %d: %w", a.ID[:], a.Content, engine.ErrConflict)
}

// applyGroupEdit is applyEdit in a group.
func (t *tx) applyGroupEdit(ctx context.Context, a engine.ActionApply, edits uint32) error {
	g := *a.Group
	author := a.TargetAuthor.String()
	if a.Edit <= edits {
		_, err := t.run(ctx, "group-version-insert", sqlGroupInsertVersion, g[:], author, a.Target[:], int64(a.Edit), a.At.UnixNano(),
			t.db.seal.seal(kindGroupVersion, groupVersionKey(g, author, a.Target, a.Edit), a.Text))
		return err
	}
	var sealed []byte
	found, err := t.scan(ctx, "group-entry-read", sqlGroupEntryBody, []any{g[:], author, a.Target[:]}, &sealed)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("edit %x of %x: no entry: %w", a.ID[:], a.Target[:], engine.ErrConflict)
	}
	body, err := t.db.seal.open(kindGroupBody, groupBodyKey(g, author, a.Target), sealed)
	if err != nil {
		return fmt.Errorf("edit %x of %x: %w", a.ID[:], a.Target[:], err)
	}
	if _, err := t.run(ctx, "group-version-insert", sqlGroupInsertVersion, g[:], author, a.Target[:], int64(edits), a.At.UnixNano(),
		t.db.seal.seal(kindGroupVersion, groupVersionKey(g, author, a.Target, edits), body)); err != nil {
		return err
	}
	text := a.Text
	if text == nil {
		text = []byte{}
	}
	if _, err := t.runOne(ctx, "group-entry-edit", engine.ErrConflict, sqlGroupSetEntryBody,
		t.db.seal.seal(kindGroupBody, groupBodyKey(g, author, a.Target), text), g[:], author, a.Target[:]); err != nil {
		return fmt.Errorf("edit %x of %x: %w", a.ID[:], a.Target[:], err)
	}
	_, err = t.runOne(ctx, "group-edits-set", engine.ErrConflict, sqlGroupSetEdits, g[:], author, a.Target[:], int64(a.Edit))
	return err
}

// GroupActionTarget implements engine.ActionStore.
func (db *DB) GroupActionTarget(ctx context.Context, g wire.GroupID, author engine.Address, id wire.LogicalID) (engine.ActionTarget, engine.Address, error) {
	if err := db.checkOpen("read an action's target"); err != nil {
		return engine.ActionTarget{}, engine.Address{}, err
	}
	by := ""
	if author != (engine.Address{}) {
		by = author.String()
	}
	var t engine.ActionTarget
	var sender string
	var at, action, edits, deleted int64
	err := db.queryRow(ctx, sqlGroupActionTarget, g[:], id[:], by).Scan(&sender, &at, &action, &edits, &deleted)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return t, engine.Address{}, nil
	case err != nil:
		return t, engine.Address{}, db.readErr("read an action's target", err)
	}
	a, err := engine.ParseAddress(sender)
	if err != nil {
		return t, engine.Address{}, fmt.Errorf("store: read an action's target: %w: %w", engine.ErrMalformedState, err)
	}
	t.Found, t.At = true, nsTime(at)
	t.Action, t.Edits, t.Deleted = wire.ContentType(action), uint32(edits), deleted == 1
	return t, a, nil
}

// GroupRecordSenders implements engine.ActionStore.
func (db *DB) GroupRecordSenders(ctx context.Context, g wire.GroupID, id wire.LogicalID, limit int) ([]engine.Address, error) {
	if err := db.checkOpen("read a group message's records"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlGroupRecordSenders, g[:], id[:], limit)
	if err != nil {
		return nil, db.readErr("read a group message's records", err)
	}
	defer rows.Close()
	var out []engine.Address
	for rows.Next() {
		var sender string
		if err := rows.Scan(&sender); err != nil {
			return nil, db.readErr("read a group message's records", err)
		}
		a, err := engine.ParseAddress(sender)
		if err != nil {
			return nil, fmt.Errorf("store: read a group message's records: %w: %w", engine.ErrMalformedState, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read a group message's records", err)
	}
	return out, nil
}

// GroupMessageVersions implements engine.ActionStore.
func (db *DB) GroupMessageVersions(ctx context.Context, g wire.GroupID, author engine.Address, id wire.LogicalID) ([]engine.MessageVersion, error) {
	if err := db.checkOpen("read versions"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlGroupVersions, g[:], author.String(), id[:])
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
		if v.Body, err = db.seal.open(kindGroupVersion, groupVersionKey(g, author.String(), id, v.Edit), sealed); err != nil {
			return nil, fmt.Errorf("store: read version %d of %x: %w", edit, id[:], err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read versions", err)
	}
	return out, nil
}

// GroupReactionNumber implements engine.ActionStore.
func (db *DB) GroupReactionNumber(ctx context.Context, g wire.GroupID, author engine.Address, id wire.LogicalID, reactor engine.Address) (uint32, bool, error) {
	if err := db.checkOpen("read a reaction's number"); err != nil {
		return 0, false, err
	}
	var n int64
	err := db.queryRow(ctx, sqlGroupReactionNumber, g[:], author.String(), id[:], reactor.String()).Scan(&n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, db.readErr("read a reaction's number", err)
	}
	return uint32(n), true, nil
}

// addGroupReactions fills the reactions of a page of group g's entries, in
// one query.
func (db *DB) addGroupReactions(ctx context.Context, g wire.GroupID, page []engine.GroupEntry) error {
	if len(page) == 0 {
		return nil
	}
	type key struct {
		sender string
		id     wire.LogicalID
	}
	at := make(map[key]int, len(page))
	args := []any{g[:]}
	for i, e := range page {
		at[key{e.Sender.String(), e.ID}] = i
		args = append(args, e.ID[:])
	}
	q := "SELECT sender, id, reactor, sealed_emoji FROM group_reaction WHERE removed = 0 AND grp = ? AND id IN (?" +
		strings.Repeat(", ?", len(page)-1) + ") ORDER BY at, reactor"
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return db.readErr("read reactions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		var id, sealed []byte
		var reactor string
		if err := rows.Scan(&k.sender, &id, &reactor, &sealed); err != nil {
			return db.readErr("read reactions", err)
		}
		copy(k.id[:], id)
		i, ok := at[k]
		if !ok {
			continue
		}
		from, err := engine.ParseAddress(reactor)
		if err != nil {
			return fmt.Errorf("store: read reactions: %w: %w", engine.ErrMalformedState, err)
		}
		emoji, err := db.seal.open(kindGroupReaction, groupReactionKey(g, k.sender, k.id, reactor), sealed)
		if err != nil {
			return fmt.Errorf("store: read reactions: %w", err)
		}
		page[i].Reactions = append(page[i].Reactions, engine.Reaction{From: from, Emoji: string(emoji)})
	}
	return rows.Err()
}
