package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var _ engine.GroupStore = (*DB)(nil)

const (
	kindGroupBody = "group-body" // row key: group, sender, id

	sqlInsertGroup      = "INSERT INTO grp (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name"
	sqlSetGroupStart    = "UPDATE grp SET start_change = ? WHERE id = ? AND start_change IS NULL AND snapshot IS NULL"
	sqlSetSnapshot      = "UPDATE grp SET snapshot = ?, vouchers = ? WHERE id = ?"
	sqlCompactChanges   = "DELETE FROM group_change WHERE grp = ? AND generation <= ?"
	sqlInsertChange     = "INSERT INTO group_change (grp, id, author, generation, frame, at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
	sqlInsertLane       = "INSERT INTO group_lane (recipient, id, grp, state) VALUES (?, ?, ?, 1)"
	sqlInsertGroupEntry = "INSERT INTO group_history (grp, sender, id, at, sealed_body) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
	sqlLaneGroup        = "SELECT grp FROM group_lane WHERE recipient = ? AND id = ?"
	sqlSetLaneState     = "UPDATE group_lane SET state = ? WHERE recipient = ? AND id = ? AND state = 1"
	// sqlDeleteRefusedLane ends what a member's not_a_member names: a
	// pending lane of that group (a message or a roster change) or that
	// group's chain announcement to it, and nothing else, so that the
	// answer cannot end a one-to-one message or another group's lane.
	sqlDeleteRefusedLane = `DELETE FROM outbound WHERE recipient = ?1 AND id = ?2 AND (
		EXISTS (SELECT 1 FROM group_lane WHERE recipient = ?1 AND id = ?2 AND grp = ?3)
		OR EXISTS (SELECT 1 FROM chain_member WHERE member = ?1 AND announce_id = ?2 AND grp = ?3))`
	sqlSetRefusedLaneState = "UPDATE group_lane SET state = ? WHERE recipient = ? AND id = ? AND grp = ? AND state = 1"
	// sqlPendingLanesOf lists a member's pending message lanes of a group;
	// roster-change lanes stay: a removed member must get the change, and
	// a removal can lose the merge to a concurrent change.
	sqlPendingLanesOf = `SELECT id FROM group_lane WHERE grp = ?1 AND recipient = ?2 AND state = 1
		AND id NOT IN (SELECT id FROM group_change WHERE grp = ?1)`
	sqlGroups       = "SELECT id, name FROM grp ORDER BY name, id"
	sqlGroup        = "SELECT name, start_change, snapshot, vouchers FROM grp WHERE id = ?"
	sqlGroupChanges = "SELECT frame, author FROM group_change WHERE grp = ?"
	// sqlGroupHistory leaves out the entries of reactions, edits and
	// deletes: what they did shows (group_extra, group_reaction).
	sqlGroupHistory = `SELECT h.seq, h.sender, h.id, h.at, h.sealed_body, x.reply_to, coalesce(x.edits, 0), coalesce(x.deleted, 0), h.decided_on,
		` + sqlImportedColumns + `
		FROM group_history h LEFT JOIN group_extra x ON x.grp = h.grp AND x.sender = h.sender AND x.id = h.id
		LEFT JOIN import_progress i ON i.archive = h.imported
		WHERE h.grp = ? AND h.seq > ? AND coalesce(x.action, 0) NOT IN (4, 5, 6) ORDER BY h.seq LIMIT ?`
	sqlLanesOfMessage    = "SELECT recipient, state FROM group_lane WHERE grp = ? AND id = ? ORDER BY recipient"
	maxGroupHistoryLimit = 1000
)

func groupBodyKey(g wire.GroupID, sender string, id wire.LogicalID) []byte {
	return rowKey(g[:], []byte(sender), id[:])
}

// groupSend stores a group message: its history entry and, per lane, the
// pending outbound row, the lane, the attempt and the session step.
func (t *tx) groupSend(ctx context.Context, p engine.GroupSend) (engine.Receipt, error) {
	if err := t.insertGroupEntry(ctx, p.Group, p.Sender.String(), p.ID, p.At, p.Body); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.insertLanes(ctx, p.Group, p.ID, p.Frame, p.At, p.Lanes); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.writeOwnChain(ctx, p.Chain, p.Announce, p.At.UnixNano()); err != nil {
		return engine.Receipt{}, err
	}
	for _, a := range p.Announce {
		if err := t.insertLanes(ctx, p.Group, a.ID, a.Frame, p.At, []engine.GroupLane{{Recipient: a.Recipient}}); err != nil {
			return engine.Receipt{}, err
		}
	}
	if p.Action != nil {
		if err := t.applyAction(ctx, *p.Action); err != nil {
			return engine.Receipt{}, err
		}
	}
	return t.visible(ctx)
}

// rosterUpdate records a roster change made here and makes it pending on
// its lanes; the pending lanes of removed members end first.
func (t *tx) rosterUpdate(ctx context.Context, p engine.RosterUpdate) (engine.Receipt, error) {
	if _, err := t.run(ctx, "group-insert", sqlInsertGroup, p.Group[:], p.Change.Name, p.At.UnixNano()); err != nil {
		return engine.Receipt{}, fmt.Errorf("store group %x: %w", p.Group[:], err)
	}
	if err := t.insertChange(ctx, p.Group, p.Change, p.Frame, p.At); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.groupStart(ctx, p.Group, p.Start, p.Compact); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.endLanes(ctx, p.Group, p.Removed, engine.LaneRemoved); err != nil {
		return engine.Receipt{}, err
	}
	if err := t.insertLanes(ctx, p.Group, p.Change.ID, p.Frame, p.At, p.Lanes); err != nil {
		return engine.Receipt{}, err
	}
	if p.Left {
		if err := t.forgetGroupChains(ctx, p.Group); err != nil {
			return engine.Receipt{}, err
		}
	}
	return t.visible(ctx)
}

// receiveRoster records a roster change received from a peer.
func (t *tx) receiveRoster(ctx context.Context, e engine.RosterEffect) error {
	if _, err := t.run(ctx, "group-insert", sqlInsertGroup, e.Group[:], e.Change.Name, t.now.UnixNano()); err != nil {
		return fmt.Errorf("store group %x: %w", e.Group[:], err)
	}
	if err := t.insertChange(ctx, e.Group, e.Change, e.Frame, t.now); err != nil {
		return err
	}
	if err := t.groupStart(ctx, e.Group, e.Start, e.Compact); err != nil {
		return err
	}
	if e.Left {
		if err := t.forgetGroupChains(ctx, e.Group); err != nil {
			return err
		}
	}
	if err := t.endLanes(ctx, e.Group, e.Removed, engine.LaneRemoved); err != nil {
		return err
	}
	return t.forwardRoster(ctx, e)
}

// sqlAccountList reads the device list the account holds.
const sqlAccountList = "SELECT device_list FROM account WHERE singleton = 1"

// forwardRoster stores the lanes that forward a received roster change to
// this person's other devices (engine.RosterEffect.Forward): a pending
// outbound row carrying the change's frame and a pending lane of its
// group each, stored at e.ForwardAt. A recipient the account's list does
// not name active (or of another person, or with no account held), or this
// device itself, refuses the plan; a device that has a lane or a pending
// outbound row of the change's ID already (in any group) gets nothing more.
func (t *tx) forwardRoster(ctx context.Context, e engine.RosterEffect) error {
	if len(e.Forward) == 0 {
		return nil
	}
	var raw []byte
	found, err := t.scan(ctx, "account-list-read", sqlAccountList, nil, &raw)
	if err != nil {
		return err
	}
	if !found {
		return invalid("roster change %x forwarded with no account held", e.Change.ID[:])
	}
	l, err := wire.DecodeDeviceList(raw)
	if err != nil {
		return fmt.Errorf("read the device list: %w: %w", engine.ErrMalformedState, err)
	}
	self, err := getMeta(ctx, t.tx, metaAddress)
	if err != nil {
		return err
	}
	at := e.ForwardAt
	if at.IsZero() {
		at = t.now
	}
	for _, to := range e.Forward {
		active := false
		for _, d := range l.Entries {
			active = active || (d.Number == to.Device && d.State == wire.DeviceActive)
		}
		if to.User != l.User || !active {
			return invalid("roster change %x forwarded to %s, which the account's list does not name active", e.Change.ID[:], to)
		}
		if to.String() == string(self) {
			return invalid("roster change %x forwarded to %s, this device itself", e.Change.ID[:], to)
		}
		// A lane of the change's ID to that device already: in the
		// change's group, the change is forwarded (or sent) there
		// already, in whatever state; in another group, the ID is taken
		// on that device's lanes (a colliding or hostile change recorded
		// first), and the device, which keeps processed IDs per sender,
		// would take a second frame of that ID from here as a repeat
		// anyway. Either way no second lane is stored, and the receive
		// goes on.
		var grp []byte
		if found, err = t.scan(ctx, "group-lane-known-read", sqlLaneGroup, []any{to.String(), e.Change.ID[:]}, &grp); err != nil {
			return err
		}
		if found {
			if wire.GroupID(grp) != e.Group {
				t.unforwarded = append(t.unforwarded, engine.Unforwarded{To: to, Group: e.Group, Change: e.Change.ID})
			}
			continue
		}
		// So does a pending outbound row of that ID to that device (the
		// insert does nothing): the ID is taken there, and failing the
		// receive for it would only redo the page row by row.
		n, err := t.run(ctx, "group-outbound-insert", sqlInsertOutbound,
			to.String(), e.Change.ID[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(to, e.Change.ID), e.Frame))
		if err != nil {
			return fmt.Errorf("forward roster change %x to %s: %w", e.Change.ID[:], to, err)
		}
		if n == 0 {
			t.unforwarded = append(t.unforwarded, engine.Unforwarded{To: to, Group: e.Group, Change: e.Change.ID})
			continue
		}
		if _, err := t.runOne(ctx, "group-lane-add", engine.ErrConflict, sqlInsertLane, to.String(), e.Change.ID[:], e.Group[:]); err != nil {
			return fmt.Errorf("forward roster change %x to %s: %w", e.Change.ID[:], to, err)
		}
	}
	return nil
}

// groupStart records where this device's view of group g begins: the change
// that started it here (start, once), and a compaction's snapshot, which
// replaces every change at or below its generation.
func (t *tx) groupStart(ctx context.Context, g wire.GroupID, start, compact *engine.GroupStart) error {
	if start != nil {
		if _, err := t.run(ctx, "group-start", sqlSetGroupStart, start.Change[:], g[:]); err != nil {
			return fmt.Errorf("start group %x: %w", g[:], err)
		}
	}
	if compact == nil || compact.Snapshot == nil {
		return nil
	}
	snap, err := wire.EncodeRoster(wire.Roster{Group: g, Generation: compact.Snapshot.Generation, Name: compact.Snapshot.Name, Members: compact.Snapshot.Members})
	if err != nil {
		return fmt.Errorf("compact group %x: %w: %w", g[:], engine.ErrMalformedState, err)
	}
	if _, err := t.run(ctx, "group-snapshot", sqlSetSnapshot, snap, strings.Join(compact.Vouchers, " "), g[:]); err != nil {
		return fmt.Errorf("compact group %x: %w", g[:], err)
	}
	if _, err := t.run(ctx, "group-compact", sqlCompactChanges, g[:], int64(compact.Snapshot.Generation)); err != nil {
		return fmt.Errorf("compact group %x: %w", g[:], err)
	}
	return nil
}

// notAMember ends this device's lane of a message to peer.
func (t *tx) notAMember(ctx context.Context, peer engine.Address, e engine.NotAMemberEffect) error {
	if _, err := t.run(ctx, "outbound-delete", sqlDeleteRefusedLane, peer.String(), e.ID[:], e.Group[:]); err != nil {
		return fmt.Errorf("end lane %x to %s: %w", e.ID[:], peer, err)
	}
	_, err := t.run(ctx, "lane-state", sqlSetRefusedLaneState, int64(engine.LaneNotAMember), peer.String(), e.ID[:], e.Group[:])
	return err
}

func (t *tx) insertChange(ctx context.Context, g wire.GroupID, c engine.RosterChange, frame []byte, at time.Time) error {
	if _, err := t.run(ctx, "group-change-insert", sqlInsertChange, g[:], c.ID[:], c.Author, int64(c.Generation), frame, at.UnixNano()); err != nil {
		return fmt.Errorf("store roster change %x: %w", c.ID[:], err)
	}
	return nil
}

func (t *tx) insertGroupEntry(ctx context.Context, g wire.GroupID, sender string, id wire.LogicalID, at time.Time, body []byte) error {
	if body == nil {
		body = []byte{}
	}
	if _, err := t.run(ctx, "group-history-insert", sqlInsertGroupEntry, g[:], sender, id[:], at.UnixNano(),
		t.db.seal.seal(kindGroupBody, groupBodyKey(g, sender, id), body)); err != nil {
		return fmt.Errorf("store group message %x: %w", id[:], err)
	}
	return nil
}

// insertLanes stores each lane as a pending outbound row with its lane row
// and, when it carries an envelope, the attempt, pin and session step.
func (t *tx) insertLanes(ctx context.Context, g wire.GroupID, id wire.LogicalID, frame []byte, at time.Time, lanes []engine.GroupLane) error {
	for _, l := range lanes {
		to := l.Recipient.String()
		if _, err := t.runOne(ctx, "outbound-insert", engine.ErrConflict, sqlInsertOutbound,
			to, id[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(l.Recipient, id), frame)); err != nil {
			return fmt.Errorf("store lane %x to %s (already there?): %w", id[:], to, err)
		}
		if _, err := t.runOne(ctx, "lane-insert", engine.ErrConflict, sqlInsertLane, to, id[:], g[:]); err != nil {
			return fmt.Errorf("store lane %x to %s: %w", id[:], to, err)
		}
		if l.Out == nil {
			continue
		}
		if l.Session == nil {
			// A chain lane: its envelope is the chain message, no
			// session step of this member's.
			if err := t.recordAttempt(ctx, l.Recipient, id, 1, at, l.Out.Envelope, engine.InitiationID{}); err != nil {
				return err
			}
			continue
		}
		if err := t.recordAttempt(ctx, l.Recipient, id, 1, at, l.Out.Envelope, l.Session.ID); err != nil {
			return err
		}
		if l.Pin != nil {
			if err := t.insertPin(ctx, l.Recipient, *l.Pin, at); err != nil {
				return err
			}
		}
		if err := t.writeSession(ctx, *l.Session); err != nil {
			return err
		}
	}
	return nil
}

// endLanes ends every pending message lane of group g to each member with
// state.
func (t *tx) endLanes(ctx context.Context, g wire.GroupID, members []engine.Address, state engine.LaneState) error {
	for _, m := range members {
		rows, err := t.tx.QueryContext(ctx, sqlPendingLanesOf, g[:], m.String())
		if err != nil {
			return fmt.Errorf("read lanes to %s: %w", m, mapErr(err))
		}
		var ids [][]byte
		for rows.Next() {
			var id []byte
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("read lanes to %s: %w", m, mapErr(err))
			}
			ids = append(ids, id)
		}
		rows.Close()
		for _, id := range ids {
			if _, err := t.run(ctx, "outbound-delete", sqlDeleteOutbound, m.String(), id); err != nil {
				return err
			}
			if _, err := t.run(ctx, "lane-state", sqlSetLaneState, int64(state), m.String(), id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Statements of endGroupLanesTo.
const (
	// sqlPendingGroupLanesTo lists every pending group lane to a device:
	// messages, chain announcements and roster changes alike.
	sqlPendingGroupLanesTo = "SELECT id FROM group_lane WHERE recipient = ? AND state = 1"
	// sqlForgetChainsOf and sqlForgetChainMembersOf forget this device's
	// sender chains announced to a device (with every member record of
	// those chains): the next group message starts a new chain, which is
	// announced to the lanes it has, never to that device.
	sqlForgetChainsOf       = "DELETE FROM own_chain WHERE chain IN (SELECT chain FROM chain_member WHERE member = ?)"
	sqlForgetChainMembersOf = "DELETE FROM chain_member WHERE chain IN (SELECT chain FROM chain_member WHERE member = ?)"
)

// endGroupLanesTo ends every pending group lane to the devices of removed
// (their person's list revokes them), in the transaction that stores the
// list: the outbound row goes and the lane ends LaneRemoved. The sender
// chains announced to such a device are forgotten, so that it cannot read
// the group messages sent after its removal by a chain it holds.
func (t *tx) endGroupLanesTo(ctx context.Context, removed []engine.Address) error {
	for _, d := range removed {
		to := d.String()
		rows, err := t.tx.QueryContext(ctx, sqlPendingGroupLanesTo, to)
		if err != nil {
			return fmt.Errorf("read group lanes to %s: %w", d, mapErr(err))
		}
		var ids [][]byte
		for rows.Next() {
			var id []byte
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("read group lanes to %s: %w", d, mapErr(err))
			}
			ids = append(ids, id)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("read group lanes to %s: %w", d, mapErr(err))
		}
		for _, id := range ids {
			if _, err := t.run(ctx, "outbound-delete", sqlDeleteOutbound, to, id); err != nil {
				return err
			}
			if _, err := t.run(ctx, "lane-state", sqlSetLaneState, int64(engine.LaneRemoved), to, id); err != nil {
				return err
			}
		}
		if _, err := t.run(ctx, "own-chain-forget-device", sqlForgetChainsOf, to); err != nil {
			return fmt.Errorf("forget the chains announced to %s: %w", d, err)
		}
		if _, err := t.run(ctx, "chain-member-forget-device", sqlForgetChainMembersOf, to); err != nil {
			return fmt.Errorf("forget the chains announced to %s: %w", d, err)
		}
	}
	return nil
}

// laneEnded moves a lane on from pending, if (peer, id) is a group's lane,
// and reports whether it is one.
func (t *tx) laneEnded(ctx context.Context, peer engine.Address, id wire.LogicalID, state engine.LaneState) (bool, error) {
	var g []byte
	found, err := t.scan(ctx, "lane-read", sqlLaneGroup, []any{peer.String(), id[:]}, &g)
	if err != nil || !found {
		return false, err
	}
	if _, err = t.run(ctx, "lane-state", sqlSetLaneState, int64(state), peer.String(), id[:]); err != nil {
		return true, err
	}
	if state == engine.LaneAcknowledged {
		// The lane may be a chain announcement's: the member holds the
		// chain now.
		return true, t.chainAcked(ctx, peer, id)
	}
	return true, nil
}

// Groups lists the groups this profile keeps, by name.
func (db *DB) Groups(ctx context.Context) ([]engine.GroupInfo, error) {
	if err := db.checkOpen("read groups"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlGroups)
	if err != nil {
		return nil, db.readErr("read groups", err)
	}
	var ids []wire.GroupID
	for rows.Next() {
		var id []byte
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, db.readErr("read groups", err)
		}
		ids = append(ids, wire.GroupID(id))
	}
	rows.Close()
	out := make([]engine.GroupInfo, 0, len(ids))
	for _, id := range ids {
		g, err := db.Group(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// Group returns one group with its merged roster, or engine.ErrUnknownGroup.
func (db *DB) Group(ctx context.Context, id wire.GroupID) (engine.GroupInfo, error) {
	if err := db.checkOpen("read group"); err != nil {
		return engine.GroupInfo{}, err
	}
	g := engine.GroupInfo{ID: id}
	var start, snapshot []byte
	var vouchers sql.NullString
	if err := db.queryRow(ctx, sqlGroup, id[:]).Scan(&g.Name, &start, &snapshot, &vouchers); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return engine.GroupInfo{}, fmt.Errorf("store: group %x: %w", id[:], engine.ErrUnknownGroup)
		}
		return engine.GroupInfo{}, db.readErr("read group", err)
	}
	rows, err := db.query(ctx, sqlGroupChanges, id[:])
	if err != nil {
		return engine.GroupInfo{}, db.readErr("read roster", err)
	}
	defer rows.Close()
	for rows.Next() {
		var frame []byte
		var author string
		if err := rows.Scan(&frame, &author); err != nil {
			return engine.GroupInfo{}, db.readErr("read roster", err)
		}
		if c, ok := decodeChange(frame, author); ok {
			g.Changes = append(g.Changes, c)
		}
	}
	if err := rows.Err(); err != nil {
		return engine.GroupInfo{}, db.readErr("read roster", err)
	}
	switch {
	case snapshot != nil:
		r, err := wire.DecodeRoster(snapshot)
		if err != nil {
			return engine.GroupInfo{}, fmt.Errorf("store: snapshot of group %x: %w: %w", id[:], engine.ErrMalformedState, err)
		}
		g.Start = engine.GroupStart{Snapshot: &engine.Roster{Generation: r.Generation, Name: r.Name, Members: r.Members},
			Vouchers: strings.Fields(vouchers.String)}
	case start != nil:
		g.Start = engine.GroupStart{Change: wire.LogicalID(start)}
	default:
		g.Start = engine.LegacyStart(g.Changes)
	}
	g.Roster, _ = engine.MergeRoster(g.Start, g.Changes, 0)
	if g.Roster.Name != "" {
		g.Name = g.Roster.Name
	}
	return g, nil
}

// decodeChange decodes a change of the log: a signed roster frame, or one of
// the unsigned layout kept from before signatures (its author as recorded
// when it arrived). A row that no longer decodes (written before roster
// addresses had to be canonical) is skipped: it could never count.
func decodeChange(frame []byte, author string) (engine.RosterChange, bool) {
	if kind, err := wire.PeekFrameKind(frame); err == nil && kind == wire.FrameSignedRoster {
		sr, err := wire.DecodeSignedRoster(frame)
		if err != nil || sr.Author != author {
			return engine.RosterChange{}, false
		}
		return engine.RosterChange{ID: sr.ID, Author: sr.Author, Generation: sr.Generation, Name: sr.Name, Ops: sr.Changes,
			Members: sr.Members, Parent: sr.Parent, AuthorKey: sr.AuthorKey, Signature: sr.Signature}, true
	}
	r, err := wire.DecodeRoster(frame)
	if err != nil {
		return engine.RosterChange{}, false
	}
	return engine.RosterChange{ID: r.ID, Author: author, Generation: r.Generation, Name: r.Name, Ops: r.Changes, Members: r.Members}, true
}

// GroupHistory pages a group's history, oldest first; own messages carry
// their lanes (none for one another device of this person sent: its lanes
// are that device's).
func (db *DB) GroupHistory(ctx context.Context, id wire.GroupID, after int64, limit int) ([]engine.GroupEntry, error) {
	if err := db.checkOpen("read group history"); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > maxGroupHistoryLimit {
		limit = maxGroupHistoryLimit
	}
	p, err := db.Profile(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlGroupHistory, id[:], after, limit)
	if err != nil {
		return nil, db.readErr("read group history", err)
	}
	var out []engine.GroupEntry
	for rows.Next() {
		var e engine.GroupEntry
		var sender string
		var mid, sealed, replyTo []byte
		var at, edits, deleted int64
		var imp importedCols
		var on sql.NullString
		if err := rows.Scan(&e.Seq, &sender, &mid, &at, &sealed, &replyTo, &edits, &deleted, &on, &imp.archive, &imp.at, &imp.link); err != nil {
			rows.Close()
			return nil, db.readErr("read group history", err)
		}
		copy(e.ID[:], mid)
		if len(replyTo) == len(wire.LogicalID{}) {
			e.ReplyTo = new(wire.LogicalID)
			copy(e.ReplyTo[:], replyTo)
		}
		e.Edits, e.Deleted, e.Imported = uint32(edits), deleted == 1, imp.imported()
		e.At = nsTime(at)
		if e.Sender, err = engine.ParseAddress(sender); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: group history: %w: %w", engine.ErrMalformedState, err)
		}
		if e.Body, err = db.seal.open(kindGroupBody, groupBodyKey(id, sender, e.ID), sealed); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: group history %x: %w", e.ID[:], err)
		}
		if on.Valid {
			a, err := parseStoredAddress(on.String)
			if err != nil {
				rows.Close()
				return nil, err
			}
			e.DecidedOn = &a
		}
		// Another device of this person's sent it (a group message is
		// taken from one only when the account's list vouches for it).
		e.Own = e.Sender.User == p.Self.User
		e.Sibling = e.Own && e.Sender != p.Self
		out = append(out, e)
	}
	rows.Close()
	if err := db.addGroupReactions(ctx, id, out); err != nil {
		return nil, err
	}
	for i := range out {
		if !out[i].Own || out[i].Sibling {
			continue
		}
		if out[i].Lanes, err = db.lanes(ctx, id, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lanes returns the lanes of one sent group message. A pending lane whose
// message the relay accepted (an attempt was logged) shows as relay_accepted
// when the attempt log has its envelope; otherwise pending.
func (db *DB) lanes(ctx context.Context, g wire.GroupID, id wire.LogicalID) ([]engine.Lane, error) {
	rows, err := db.query(ctx, sqlLanesOfMessage, g[:], id[:])
	if err != nil {
		return nil, db.readErr("read lanes", err)
	}
	defer rows.Close()
	var out []engine.Lane
	for rows.Next() {
		var to string
		var state int64
		if err := rows.Scan(&to, &state); err != nil {
			return nil, db.readErr("read lanes", err)
		}
		a, err := engine.ParseAddress(to)
		if err != nil {
			return nil, fmt.Errorf("store: lanes: %w: %w", engine.ErrMalformedState, err)
		}
		out = append(out, engine.Lane{Recipient: a, State: engine.LaneState(state)})
	}
	return out, rows.Err()
}

// Lanes returns the lanes of a message or roster change sent here.
func (db *DB) Lanes(ctx context.Context, g wire.GroupID, id wire.LogicalID) ([]engine.Lane, error) {
	if err := db.checkOpen("read lanes"); err != nil {
		return nil, err
	}
	return db.lanes(ctx, g, id)
}

// LaneGroup returns the group of the lane (recipient, id), if it is one.
func (db *DB) LaneGroup(ctx context.Context, recipient engine.Address, id wire.LogicalID) (wire.GroupID, bool, error) {
	if err := db.checkOpen("read lane"); err != nil {
		return wire.GroupID{}, false, err
	}
	var g []byte
	err := db.queryRow(ctx, sqlLaneGroup, recipient.String(), id[:]).Scan(&g)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return wire.GroupID{}, false, nil
	case err != nil:
		return wire.GroupID{}, false, db.readErr("read lane", err)
	}
	return wire.GroupID(g), true, nil
}

func validateGroupSend(p engine.GroupSend) error {
	body := p.Body
	if body == nil {
		body = []byte{}
	}
	f, err := engine.DecodeStoredFrame(p.Frame)
	switch {
	case err != nil:
		return invalid("group frame: %v", err)
	case f.Group == nil || f.Roster || *f.Group != p.Group || f.ID != p.ID:
		return invalid("group frame of message %x is not that group's message", p.ID[:])
	}
	errs := []error{checkAddress("sender", p.Sender), checkTime("at", p.At), checkFrame(p.Frame, p.ID, body), checkLanes(p.Lanes, p.ID)}
	for _, l := range p.Lanes {
		if l.Out != nil && l.Session == nil && p.Chain == nil {
			errs = append(errs, invalid("chain lane to %s without its chain", l.Recipient))
		}
	}
	if len(p.Announce) > 0 && p.Chain == nil {
		errs = append(errs, invalid("chain announcements without their chain"))
	}
	if p.Chain != nil && (len(p.Chain.Record) == 0 || p.Chain.Group != p.Group) {
		errs = append(errs, invalid("sender chain of another group, or empty"))
	}
	for _, a := range p.Announce {
		an, err := wire.DecodeChainAnnounce(a.Frame)
		switch {
		case err != nil:
			errs = append(errs, invalid("chain announcement: %v", err))
		case p.Chain != nil && (an.ID != a.ID || an.Group != p.Group || an.Chain != p.Chain.Chain || an.Generation != p.Chain.Generation):
			errs = append(errs, invalid("chain announcement %x is not of the plan's chain", a.ID[:]))
		}
		errs = append(errs, checkAddress("announced to", a.Recipient))
	}
	return errors.Join(errs...)
}

func validateRosterUpdate(p engine.RosterUpdate) error {
	r, err := wire.DecodeSignedRoster(p.Frame)
	switch {
	case err != nil:
		return invalid("roster frame: %v", err)
	case r.Group != p.Group || r.ID != p.Change.ID || r.Generation != p.Change.Generation || r.Author != p.Change.Author:
		return invalid("roster frame of change %x is not that change's", p.Change.ID[:])
	}
	errs := []error{checkTime("at", p.At), checkLanes(p.Lanes, p.Change.ID)}
	for _, a := range p.Removed {
		errs = append(errs, checkAddress("removed", a))
	}
	return errors.Join(errs...)
}

// checkLanes checks each lane like a send's: a well-formed recipient, and an
// envelope with its session step or neither.
func checkLanes(lanes []engine.GroupLane, id wire.LogicalID) error {
	if len(lanes) > engine.MaxLanesPerTransaction {
		return invalid("%d lanes over %d", len(lanes), engine.MaxLanesPerTransaction)
	}
	var err error
	seen := make(map[engine.Address]bool, len(lanes))
	for _, l := range lanes {
		if seen[l.Recipient] {
			err = errors.Join(err, invalid("two lanes to %s", l.Recipient))
		}
		seen[l.Recipient] = true
		err = errors.Join(err, checkAddress("recipient", l.Recipient))
		switch {
		case l.Out != nil && l.Session == nil && l.Pin == nil && l.Out.Envelope.Type == wire.EnvelopeChain:
			// A chain lane: the chain message, no session step.
			err = errors.Join(err, checkOutgoing(*l.Out, id, l.Recipient))
		case (l.Out == nil) != (l.Session == nil):
			err = errors.Join(err, invalid("lane to %s: an envelope without a session step or the reverse", l.Recipient))
		case l.Out != nil:
			err = errors.Join(err, checkSession(*l.Session, l.Recipient), checkOutgoing(*l.Out, id, l.Recipient))
		}
	}
	return err
}

func init() { sealedColumns["group_history.sealed_body"] = kindGroupBody }
