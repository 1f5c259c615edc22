package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// People and their devices (engine/person.go): the device lists held for
// peer people, and the lanes of a message sent to a person.

const (
	sqlInsertPeerAccount = `INSERT INTO peer_account (user, account_key, generation, list, conversation, fetched_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlUpdatePeerAccount = `UPDATE peer_account SET generation = ?, list = ?, fetched_at = ?
		WHERE user = ? AND generation = ? AND account_key = ?`
	sqlPeerAccount      = "SELECT list, conversation, fetched_at FROM peer_account WHERE user = ?"
	sqlPeerAccountUsers = "SELECT user FROM peer_account ORDER BY user LIMIT ?"
	sqlPinnedDevices    = "SELECT address FROM peer WHERE address >= ? AND address < ? ORDER BY address LIMIT ?"
	sqlConversation     = "SELECT conversation FROM peer_account WHERE user = ?"
	sqlPeopleHeld       = "SELECT EXISTS (SELECT 1 FROM peer_account), EXISTS (SELECT 1 FROM person_lane), EXISTS (SELECT 1 FROM kept_decision), EXISTS (SELECT 1 FROM import_progress)"

	sqlInsertPersonLane = "INSERT INTO person_lane (recipient, id, conversation, own, state, decided) VALUES (?, ?, ?, ?, 1, ?)"
	sqlPersonLane       = "SELECT conversation, own FROM person_lane WHERE recipient = ? AND id = ?"
	sqlSetPersonLane    = "UPDATE person_lane SET state = ?, ended_at = ? WHERE recipient = ? AND id = ? AND state = 1"
	// sqlPersonLanes reads a message's lanes (at most
	// engine.MaxDevicesPerAccount each way), sorted by the caller.
	sqlPersonLanes = "SELECT recipient, own, state FROM person_lane WHERE conversation = ? AND id = ?"
	// sqlPersonLanesOpen counts the lanes of a message to the person (not
	// the sent copies) still pending or acknowledged.
	sqlPersonLanesOpen = "SELECT count(*) FROM person_lane WHERE conversation = ? AND id = ? AND own = 0 AND state IN (1, 3)"
	// sqlPendingPersonLanesTo reads the pending lanes to one device (a
	// device its person removed), at most one per message pending to it.
	sqlPendingPersonLanesTo = "SELECT id FROM person_lane WHERE recipient = ? AND state = 1"
	// sqlPendingToPerson reads the pending sent messages to the devices
	// of one user (the address range "user/" to "user0"), oldest first.
	sqlPendingToPerson = "SELECT seq, recipient, id, created_at, sealed_frame FROM outbound WHERE recipient >= ? AND recipient < ? ORDER BY seq LIMIT ?"
	// sqlSentPending says whether a sent message's entry is still pending.
	sqlSentPending = "SELECT 1 FROM history WHERE peer = ? AND direction = 2 AND id = ? AND state = 1"
	// sqlEnsurePersonLane records the lane an added lane was copied from,
	// for a message that was sent to that device alone (a Hold).
	sqlEnsurePersonLane = "INSERT INTO person_lane (recipient, id, conversation, own, state) VALUES (?, ?, ?, 0, 1) ON CONFLICT DO NOTHING"
	// sqlSetSentStateFrom moves a sent message's entry on from pending, if
	// it is still pending (an earlier lane may have moved it).
	sqlSetSentStateFrom = "UPDATE history SET state = ? WHERE peer = ? AND direction = 2 AND id = ? AND state = 1"
)

// holdPeerDeviceList stores a peer person's list by compare-and-set on the
// generation held.
func (t *tx) holdPeerDeviceList(ctx context.Context, p engine.HoldPeerDeviceList) error {
	t.db.peopleHeld.Store(true) // before the insert: a rollback leaves it set, which only costs a lookup
	if p.From == 0 {
		if _, err := t.runOne(ctx, "peer-account-insert", engine.ErrConflict, sqlInsertPeerAccount,
			p.User, p.AccountKey[:], int64(p.Generation), p.List, p.Conversation.String(), p.At.UnixNano()); err != nil {
			return fmt.Errorf("hold the device list of %s (one held already?): %w", p.User, err)
		}
		// A first list adds lanes to the devices it names active for the
		// messages sent before it (engine.HoldPeerDeviceList.Added and
		// GroupAdded), then ends the lanes to the devices it revokes: in
		// this order, a message sent to a revoked device is copied to the
		// active ones before its lane ends, and its entry stays pending
		// on them. Only the lanes copied from in this plan end: a message
		// the plan gives no copy (not text, or beyond the rows read) keeps
		// the lanes it had, so none is left with no lane open.
		if err := t.addPersonLanes(ctx, p.Added, p.At); err != nil {
			return err
		}
		if err := t.addGroupLanes(ctx, p.GroupAdded, p.At); err != nil {
			return err
		}
		if err := t.endPersonLanesToOf(ctx, p.Removed, copiedFrom(p.Added), p.At); err != nil {
			return err
		}
		return t.endGroupLanesTo(ctx, p.Removed)
	}
	if _, err := t.runOne(ctx, "peer-account-update", engine.ErrConflict, sqlUpdatePeerAccount,
		int64(p.Generation), p.List, p.At.UnixNano(), p.User, int64(p.From), p.AccountKey[:]); err != nil {
		return fmt.Errorf("replace the device list of %s (changed underneath?): %w", p.User, err)
	}
	if err := t.endPersonLanesTo(ctx, p.Removed, p.At); err != nil {
		return err
	}
	if err := t.endGroupLanesTo(ctx, p.Removed); err != nil {
		return err
	}
	if err := t.addPersonLanes(ctx, p.Added, p.At); err != nil {
		return err
	}
	return t.addGroupLanes(ctx, p.GroupAdded, p.At)
}

// Statements of addGroupLanes.
const (
	// sqlGroupLanePending says whether a group lane is still pending.
	sqlGroupLanePending = "SELECT 1 FROM group_lane WHERE recipient = ? AND id = ? AND grp = ? AND state = 1"
	// sqlGroupLaneKnown says whether a device has a lane of a message,
	// in any state.
	sqlGroupLaneKnown = "SELECT 1 FROM group_lane WHERE recipient = ? AND id = ?"
)

// addGroupLanes stores the lanes a newer list adds to group messages
// pending to its person (engine.AddedGroupLane): a pending outbound row and
// a pending group lane each, unless the lane it was copied from ended
// meanwhile or the device has a lane of the message already.
func (t *tx) addGroupLanes(ctx context.Context, added []engine.AddedGroupLane, at time.Time) error {
	for _, l := range added {
		var one int64
		found, err := t.scan(ctx, "group-lane-source-read", sqlGroupLanePending, []any{l.From.String(), l.ID[:], l.Group[:]}, &one)
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		to := l.Recipient.String()
		if found, err = t.scan(ctx, "group-lane-known-read", sqlGroupLaneKnown, []any{to, l.ID[:]}, &one); err != nil {
			return err
		}
		if found {
			continue
		}
		if _, err := t.runOne(ctx, "group-outbound-insert", engine.ErrConflict, sqlInsertOutbound,
			to, l.ID[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(l.Recipient, l.ID), l.Frame)); err != nil {
			return fmt.Errorf("add lane %x to %s: %w", l.ID[:], to, err)
		}
		if _, err := t.runOne(ctx, "group-lane-add", engine.ErrConflict, sqlInsertLane, to, l.ID[:], l.Group[:]); err != nil {
			return fmt.Errorf("add lane %x to %s: %w", l.ID[:], to, err)
		}
	}
	return nil
}

// checkGroupAdded checks the group lanes a list adds: each from a device
// of the list's user to another device of theirs that the list names
// active, carrying a group message or a signed roster change of the
// lane's group and ID (addedGroupFrame).
func checkGroupAdded(l wire.DeviceList, added []engine.AddedGroupLane) error {
	var err error
	for _, a := range added {
		err = errors.Join(err, checkAddress("added group lane", a.Recipient), checkAddress("added group lane source", a.From))
		active := false
		for _, e := range l.Entries {
			active = active || (e.Number == a.Recipient.Device && e.State == wire.DeviceActive)
		}
		switch {
		case a.Recipient.User != l.User || a.From.User != l.User || a.Recipient == a.From:
			err = errors.Join(err, invalid("added group lane of message %x from %s to %s: not two devices of %s", a.ID[:], a.From, a.Recipient, l.User))
		case !active:
			err = errors.Join(err, invalid("added group lane of message %x to %s, which the list does not name active", a.ID[:], a.Recipient))
		}
		if !addedGroupFrame(a) {
			err = errors.Join(err, invalid("added group lane of message %x: its frame is not a group message or signed roster change of that group and ID", a.ID[:]))
		}
	}
	return err
}

// namesActive reports whether l names d's device number active.
func namesActive(l wire.DeviceList, d engine.Address) bool {
	for _, e := range l.Entries {
		if e.Number == d.Device && e.State == wire.DeviceActive {
			return true
		}
	}
	return false
}

// addedGroupFrame reports whether an added group lane's frame is what such
// a lane may carry: a group message, or a signed roster change (one
// pending to the person goes ahead of the messages at its generation), of
// the lane's group and ID. Anything else (a chain announcement, a
// one-to-one frame, another group's) is refused.
func addedGroupFrame(a engine.AddedGroupLane) bool {
	k, err := wire.PeekFrameKind(a.Frame)
	switch {
	case err != nil:
		return false
	case k == wire.FrameSignedRoster:
		sr, err := wire.DecodeSignedRoster(a.Frame)
		return err == nil && sr.ID == a.ID && sr.Group == a.Group
	default:
		m, err := wire.DecodeGroupMessage(a.Frame)
		return err == nil && m.ID == a.ID && m.Group == a.Group
	}
}

// addPersonLanes stores the lanes a newer list adds to messages pending to
// a person: a message that ended meanwhile (its entry no longer pending)
// or that has the lane already (pending, or a person_lane row in any
// state: a lane that ended is not opened again) gets none.
func (t *tx) addPersonLanes(ctx context.Context, added []engine.AddedLane, at time.Time) error {
	if len(added) == 0 {
		return nil
	}
	t.db.personLanesHeld.Store(true)
	for _, l := range added {
		// The message's entry is kept in the conversation of its lane
		// From when that has a row (a PersonSend, or a lane copied by an
		// earlier list, maybe from another device's conversation); a
		// message sent to that device alone (a Hold) is kept where the
		// plan says.
		conv := l.Conversation.String()
		var srcConv string
		var own bool
		found, err := t.scan(ctx, "person-lane-source-read", sqlPersonLane, []any{l.From.String(), l.ID[:]}, &srcConv, &own)
		if err != nil {
			return err
		}
		if found {
			conv = srcConv
		}
		var one int64
		if found, err = t.scan(ctx, "sent-pending-read", sqlSentPending, []any{conv, l.ID[:]}, &one); err != nil {
			return err
		}
		if !found {
			continue
		}
		var known string
		if found, err = t.scan(ctx, "person-lane-known-read", sqlPersonLane, []any{l.Recipient.String(), l.ID[:]}, &known, &own); err != nil {
			return err
		}
		if found {
			continue // the device has a lane of it, maybe ended
		}
		if _, err := t.run(ctx, "person-lane-source", sqlEnsurePersonLane, l.From.String(), l.ID[:], conv); err != nil {
			return err
		}
		to := l.Recipient.String()
		n, err := t.run(ctx, "outbound-insert", sqlInsertOutbound,
			to, l.ID[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(l.Recipient, l.ID), l.Frame))
		if err != nil {
			return err
		}
		if n == 0 {
			continue // the lane is there already
		}
		if _, err := t.run(ctx, "person-lane-add", sqlEnsurePersonLane, to, l.ID[:], conv); err != nil {
			return err
		}
	}
	return nil
}

// endPersonLanesTo ends every pending lane to the devices of removed (a
// person removed them from their list): the outbound row goes, the lane
// ends LaneRemoved, and the history entry moves on as personLaneEnded
// says; at is the lanes' end.
func (t *tx) endPersonLanesTo(ctx context.Context, removed []engine.Address, at time.Time) error {
	return t.endPersonLanesToOf(ctx, removed, nil, at)
}

// copiedFrom returns, per device, the messages added copies lanes from.
func copiedFrom(added []engine.AddedLane) map[engine.Address]map[wire.LogicalID]bool {
	out := make(map[engine.Address]map[wire.LogicalID]bool)
	for _, a := range added {
		if out[a.From] == nil {
			out[a.From] = make(map[wire.LogicalID]bool)
		}
		out[a.From][a.ID] = true
	}
	return out
}

// endPersonLanesToOf is endPersonLanesTo; with only not nil, it ends just
// the lanes to a device d of the messages only[d] names (a first list's:
// those it copied to the active devices in the same transaction).
func (t *tx) endPersonLanesToOf(ctx context.Context, removed []engine.Address, only map[engine.Address]map[wire.LogicalID]bool, at time.Time) error {
	if len(removed) == 0 || !t.db.personLanesHeld.Load() {
		return nil
	}
	for _, d := range removed {
		rows, err := t.tx.QueryContext(ctx, sqlPendingPersonLanesTo, d.String())
		if err != nil {
			return fmt.Errorf("read lanes to %s: %w", d, mapErr(err))
		}
		var ids []wire.LogicalID
		for rows.Next() {
			var id []byte
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("read lanes to %s: %w", d, mapErr(err))
			}
			if len(id) == len(wire.LogicalID{}) && (only == nil || only[d][wire.LogicalID(id)]) {
				ids = append(ids, wire.LogicalID(id))
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("read lanes to %s: %w", d, mapErr(err))
		}
		for _, id := range ids {
			if _, err := t.run(ctx, "outbound-delete", sqlDeleteOutbound, d.String(), id[:]); err != nil {
				return err
			}
			if _, err := t.personLaneEnded(ctx, d, id, engine.LaneRemoved, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRemoved checks that every device of removed is one of user's that
// list revokes.
func checkRemoved(user string, list []byte, removed []engine.Address) error {
	if len(removed) == 0 {
		return nil
	}
	l, err := wire.DecodeDeviceList(list)
	if err != nil {
		return invalid("device list: %v", err)
	}
	for _, d := range removed {
		revoked := false
		for _, e := range l.Entries {
			revoked = revoked || (e.Number == d.Device && e.State == wire.DeviceRevoked)
		}
		if d.User != user || l.User != user || !revoked {
			return invalid("%s is not a device the list of %s revokes", d, user)
		}
	}
	return nil
}

func validateHoldPeerDeviceList(p engine.HoldPeerDeviceList) error {
	l, err := wire.DecodeDeviceList(p.List)
	switch {
	case err != nil:
		return invalid("device list of %s: %v", p.User, err)
	case l.User != p.User || l.Generation != p.Generation || l.AccountKey != p.AccountKey:
		return invalid("device list of %s does not match the plan", p.User)
	case p.Generation <= p.From:
		return invalid("device list generation %d after %d", p.Generation, p.From)
	case p.Conversation.User != p.User:
		return invalid("conversation %s of %s", p.Conversation, p.User)
	}
	err = errors.Join(checkAddress("conversation", p.Conversation), checkTime("at", p.At), checkRemoved(p.User, p.List, p.Removed), checkGroupAdded(l, p.GroupAdded))
	type lane struct {
		id wire.LogicalID
		to engine.Address
	}
	lanes := make(map[lane]bool, len(p.Added))
	for _, a := range p.Added {
		err = errors.Join(err, checkAddress("added lane", a.Recipient), checkAddress("added lane source", a.From))
		// A first list's lane may be in the conversation of the device
		// its message went to before any list was held (where its entry
		// is kept); a later list's is in the person's conversation.
		inConv := a.Conversation == p.Conversation || (p.From == 0 && a.Conversation == a.From)
		switch {
		case a.Recipient.User != p.User || a.From.User != p.User || a.Recipient == a.From:
			err = errors.Join(err, invalid("added lane of message %x from %s to %s: not two devices of %s", a.ID[:], a.From, a.Recipient, p.User))
		case !inConv:
			err = errors.Join(err, invalid("added lane of message %x in %s, not %s", a.ID[:], a.Conversation, p.Conversation))
		case !namesActive(l, a.Recipient):
			err = errors.Join(err, invalid("added lane of message %x to %s, which the list does not name active", a.ID[:], a.Recipient))
		case lanes[lane{a.ID, a.Recipient}]:
			// With recipients active (at most engine.MaxDevicesPerAccount,
			// DecidePeerDeviceList) and distinct, a message gets at most
			// that many lanes from one list.
			err = errors.Join(err, invalid("added lane of message %x to %s twice", a.ID[:], a.Recipient))
		}
		lanes[lane{a.ID, a.Recipient}] = true
		if f, ferr := engine.DecodeStoredFrame(a.Frame); ferr != nil || f.ID != a.ID {
			err = errors.Join(err, invalid("added lane of message %x: its frame is not the message's", a.ID[:]))
		}
	}
	return err
}

// PendingToPerson implements engine.Store.
func (db *DB) PendingToPerson(ctx context.Context, user string, limit int) ([]engine.OutboundMessage, error) {
	if err := db.checkOpen("read pending messages"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlPendingToPerson, user+"/", user+"0", limit)
	if err != nil {
		return nil, db.readErr("read pending messages", err)
	}
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
		a, err := engine.ParseAddress(to)
		if err != nil || a.User != user || len(id) != len(m.ID) {
			continue
		}
		m.Recipient, m.ID, m.CreatedAt = a, wire.LogicalID(id), nsTime(created)
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

// personSend stores a message to a person: one history entry in the
// conversation, one pending outbound row and person_lane row per lane.
func (t *tx) personSend(ctx context.Context, p engine.PersonSend) (engine.Receipt, error) {
	if err := t.checkOwnLanes(ctx, p); err != nil {
		return engine.Receipt{}, err
	}
	t.db.personLanesHeld.Store(true)
	var first int64
	for i, l := range p.Lanes {
		to := l.Recipient.String()
		r, err := t.runOne(ctx, "outbound-insert", engine.ErrConflict, sqlInsertOutbound,
			to, p.ID[:], p.At.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(l.Recipient, p.ID), l.Frame))
		if err != nil {
			return engine.Receipt{}, fmt.Errorf("hold message %x to %s (already there?): %w", p.ID[:], to, err)
		}
		if i == 0 {
			if first, err = r.LastInsertId(); err != nil {
				return engine.Receipt{}, fmt.Errorf("hold message %x to %s: %w", p.ID[:], to, mapErr(err))
			}
		}
		own := 0
		if l.Own {
			own = 1
		}
		if _, err := t.runOne(ctx, "person-lane-insert", engine.ErrConflict, sqlInsertPersonLane, to, p.ID[:], p.Conversation.String(), own, nil); err != nil {
			return engine.Receipt{}, fmt.Errorf("lane of message %x to %s: %w", p.ID[:], to, err)
		}
	}
	if err := t.insertHistory(ctx, p.Conversation, engine.DirectionOut, p.ID, p.At, engine.SentPending, p.Body); err != nil {
		return engine.Receipt{}, err
	}
	if p.Action != nil {
		if err := t.applyAction(ctx, *p.Action); err != nil {
			return engine.Receipt{}, err
		}
	}
	if p.ClearDraft != nil {
		if err := t.setDraft(ctx, engine.SetDraft{Peer: *p.ClearDraft}); err != nil {
			return engine.Receipt{}, err
		}
	}
	m, err := t.bumpMarker(ctx)
	return engine.Receipt{Seq: first, Marker: m}, err
}

// checkOwnLanes checks that every sent copy of p goes to another active
// device of this profile's account, as its list stands in this
// transaction: a copy (of a text or an action) carries what this person
// sent, so a lane to anyone else, or to this device itself, is refused as
// an invalid plan (engine.ErrConflict) and nothing is stored.
func (t *tx) checkOwnLanes(ctx context.Context, p engine.PersonSend) error {
	var list []byte
	read := false
	var l wire.DeviceList
	var self string
	for _, lane := range p.Lanes {
		if !lane.Own {
			continue
		}
		if !read {
			var sealed []byte
			found, err := t.scan(ctx, "account-read", sqlAccount, nil, &sealed, &list)
			if err != nil {
				return err
			}
			if !found {
				return invalid("sent copy of %x to %s on a profile without an account", p.ID[:], lane.Recipient)
			}
			if l, err = wire.DecodeDeviceList(list); err != nil {
				return fmt.Errorf("store: the account's device list: %w: %w", engine.ErrMalformedState, err)
			}
			addr, err := getMeta(ctx, t.tx, metaAddress)
			if err != nil {
				return err
			}
			self, read = string(addr), true
		}
		if lane.Recipient.String() == self {
			return invalid("sent copy of %x to %s, this device itself", p.ID[:], lane.Recipient)
		}
		active := false
		for _, d := range engine.ActiveAddresses(l) {
			active = active || d == lane.Recipient
		}
		if !active {
			return invalid("sent copy of %x to %s, not an active device of this account", p.ID[:], lane.Recipient)
		}
	}
	return nil
}

func validatePersonSend(p engine.PersonSend) error {
	body := p.Body
	if body == nil {
		body = []byte{}
	}
	err := errors.Join(checkAddress("conversation", p.Conversation), checkTime("at", p.At))
	if len(p.Lanes) == 0 {
		err = errors.Join(err, invalid("message %x to a person on no lane", p.ID[:]))
	}
	seen := make(map[engine.Address]bool, len(p.Lanes))
	for _, l := range p.Lanes {
		err = errors.Join(err, checkAddress("recipient", l.Recipient), checkFrame(l.Frame, p.ID, body))
		if seen[l.Recipient] {
			err = errors.Join(err, invalid("two lanes of message %x to %s", p.ID[:], l.Recipient))
		}
		seen[l.Recipient] = true
		f, ferr := engine.DecodeStoredFrame(l.Frame)
		if ferr == nil && l.Own != (f.CopyTo != "") {
			err = errors.Join(err, invalid("lane of message %x to %s: a sent copy on a lane to the person, or the reverse", p.ID[:], l.Recipient))
		}
		if ferr == nil && f.CopyTo != "" && f.CopyTo != p.Conversation.String() {
			err = errors.Join(err, invalid("sent copy of message %x names %s, not its conversation", p.ID[:], f.CopyTo))
		}
	}
	return err
}

// personLaneEnded records how a lane of a message to a person ended, when
// (recipient, id) is one, and reports whether it is. The history entry
// becomes acknowledged at the first ACK from a device of the person (the
// person decided); abandoned once no lane to the person is pending or
// acknowledged. Sent copies never move it. The lane records at as its
// end (the transaction's time when at is zero; 0029).
func (t *tx) personLaneEnded(ctx context.Context, recipient engine.Address, id wire.LogicalID, state engine.LaneState, at time.Time) (bool, error) {
	if !t.db.personLanesHeld.Load() {
		return false, nil
	}
	var conv string
	var own int64
	found, err := t.scan(ctx, "person-lane-read", sqlPersonLane, []any{recipient.String(), id[:]}, &conv, &own)
	if err != nil || !found {
		return false, err
	}
	if at.IsZero() {
		at = t.now
	}
	if _, err := t.run(ctx, "person-lane-state", sqlSetPersonLane, int64(state), at.UnixNano(), recipient.String(), id[:]); err != nil {
		return true, err
	}
	if own == 1 {
		return true, nil
	}
	switch state {
	case engine.LaneAcknowledged:
		_, err = t.run(ctx, "history-ack", sqlSetSentStateFrom, int64(engine.SentAcknowledged), conv, id[:])
	case engine.LaneAbandoned, engine.LaneRemoved:
		var open int64
		if _, err = t.scan(ctx, "person-lane-open", sqlPersonLanesOpen, []any{conv, id[:]}, &open); err == nil && open == 0 {
			_, err = t.run(ctx, "history-abandon", sqlSetSentStateFrom, int64(engine.SentAbandoned), conv, id[:])
		}
	}
	return true, err
}

// conversationFor returns the address under which the history with peer's
// person is kept: the conversation of the list held for them, or peer
// itself when none is.
func (t *tx) conversationFor(ctx context.Context, peer engine.Address) (engine.Address, error) {
	if !t.db.peopleHeld.Load() {
		return peer, nil
	}
	var conv string
	found, err := t.scan(ctx, "conversation-read", sqlConversation, []any{peer.User}, &conv)
	if err != nil || !found {
		return peer, err
	}
	return parseStoredAddress(conv)
}

// conversationFor returns what tx.conversationFor does, outside a plan.
func (db *DB) conversationFor(ctx context.Context, peer engine.Address) (engine.Address, error) {
	var conv string
	err := db.queryRow(ctx, sqlConversation, peer.User).Scan(&conv)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return peer, nil
	case err != nil:
		return peer, db.readErr("read conversation", err)
	}
	return parseStoredAddress(conv)
}

// personHeld reports whether a device list is held for user: whether the
// devices of user are one conversation.
func (db *DB) personHeld(ctx context.Context, user string) (bool, error) {
	if !db.peopleHeld.Load() {
		return false, nil
	}
	var conv string
	err := db.queryRow(ctx, sqlConversation, user).Scan(&conv)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.readErr("read conversation", err)
	}
	return true, nil
}

func parseStoredAddress(s string) (engine.Address, error) {
	a, err := engine.ParseAddress(s)
	if err != nil {
		return engine.Address{}, fmt.Errorf("store: %w: %w", engine.ErrMalformedState, err)
	}
	return a, nil
}

// PeerAccount returns the device list held for user.
func (db *DB) PeerAccount(ctx context.Context, user string) (engine.PeerAccount, bool, error) {
	if err := db.checkOpen("read device list"); err != nil {
		return engine.PeerAccount{}, false, err
	}
	var list []byte
	var conv string
	var at int64
	err := db.queryRow(ctx, sqlPeerAccount, user).Scan(&list, &conv, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.PeerAccount{}, false, nil
	case err != nil:
		return engine.PeerAccount{}, false, db.readErr("read device list", err)
	}
	var a engine.PeerAccount
	if a.List, err = wire.DecodeDeviceList(list); err != nil {
		return engine.PeerAccount{}, false, fmt.Errorf("store: read device list of %s: %w: %w", user, engine.ErrMalformedState, err)
	}
	if a.Conversation, err = parseStoredAddress(conv); err != nil {
		return engine.PeerAccount{}, false, err
	}
	a.FetchedAt = nsTime(at)
	return a, true, nil
}

// PinnedDevices implements engine.Store: the peer rows of user's devices,
// found by the address prefix "user/" (the range from "user/" up to
// "user0", '0' following '/').
func (db *DB) PinnedDevices(ctx context.Context, user string, limit int) ([]engine.Address, error) {
	if err := db.checkOpen("read pinned devices"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlPinnedDevices, user+"/", user+"0", limit)
	if err != nil {
		return nil, db.readErr("read pinned devices", err)
	}
	defer rows.Close()
	var out []engine.Address
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, db.readErr("read pinned devices", err)
		}
		a, err := engine.ParseAddress(s)
		if err != nil || a.User != user {
			continue
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read pinned devices", err)
	}
	return out, nil
}

// PeerAccountUsers returns up to limit people a list is held for.
func (db *DB) PeerAccountUsers(ctx context.Context, limit int) ([]string, error) {
	if err := db.checkOpen("read device lists"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlPeerAccountUsers, limit)
	if err != nil {
		return nil, db.readErr("read device lists", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, db.readErr("read device lists", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read device lists", err)
	}
	return out, nil
}

// PersonLanes returns the lanes of an own message to a person.
func (db *DB) PersonLanes(ctx context.Context, conversation engine.Address, id wire.LogicalID) ([]engine.LaneStatus, error) {
	if err := db.checkOpen("read lanes"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlPersonLanes, conversation.String(), id[:])
	if err != nil {
		return nil, db.readErr("read lanes", err)
	}
	defer rows.Close()
	var out []engine.LaneStatus
	for rows.Next() {
		var to string
		var own, state int64
		if err := rows.Scan(&to, &own, &state); err != nil {
			return nil, db.readErr("read lanes", err)
		}
		a, err := parseStoredAddress(to)
		if err != nil {
			return nil, err
		}
		out = append(out, engine.LaneStatus{Recipient: a, Own: own == 1, State: engine.LaneState(state)})
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read lanes", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Own != out[j].Own {
			return !out[i].Own
		}
		return out[i].Recipient.Device < out[j].Recipient.Device
	})
	return out, nil
}

// insertCopy stores a sent copy from another device of this person: its
// finalized record (so that a copy sent again is a repeat) and the history
// entry of an own message in the conversation it names, which records from
// (sent_by): that entry's author, the one device that edits or deletes
// it here and whose removal adopts it.
func (t *tx) insertCopy(ctx context.Context, from engine.Address, e engine.CommitEffect) error {
	_, err := t.runOne(ctx, "finalized-insert", engine.ErrConflict, sqlInsertFinalized,
		from.String(), e.ID[:], int64(engine.OutcomeCommitted), int64(engine.DiscardNone), e.At.UnixNano(),
		t.db.seal.seal(kindFinalizedDigest, messageKey(from, e.ID), e.Digest[:]), nil, nil, nil, nil)
	if err != nil {
		return fmt.Errorf("finalize sent copy %x from %s (finalized already?): %w", e.ID[:], from, err)
	}
	conv, err := t.conversationFor(ctx, *e.SentTo)
	if err != nil {
		return err
	}
	body := e.Body
	if body == nil {
		body = []byte{}
	}
	at := e.Arrived
	if at.IsZero() {
		at = e.At
	}
	n, err := t.run(ctx, "history-insert", sqlInsertCopyHistory, conv.String(), int64(engine.DirectionOut), e.ID[:], at.UnixNano(),
		int64(engine.SentCopied), t.db.seal.seal(kindHistoryBody, historyKey(conv, engine.DirectionOut, e.ID), body), from.String())
	if err != nil {
		return fmt.Errorf("append sent copy %x to the history with %s: %w", e.ID[:], conv, err)
	}
	if n == 0 {
		// Another own entry has the ID (the engine refuses such a copy
		// before it plans it; this is the last guard): the copy's
		// finalized record would make its sender that entry's author,
		// and its action would apply to it. The plan fails whole.
		return fmt.Errorf("append sent copy %x from %s to the history with %s: %w", e.ID[:], from, conv, engine.ErrCopyIDTaken)
	}
	return nil
}

const (
	// sqlKeepDecision keeps a decision, merging with one kept before:
	// commit (1) beats discard (2), and names the device that committed.
	// Room is made first (sqlExpireDecisions, sqlEvictDecision).
	//
	// A kind-18 commit kept with its action (0028: content, target,
	// sealed_action) keeps its action over one kept before without.
	// A group's action also names its group (0030: grp).
	sqlKeepDecision = `INSERT INTO kept_decision (sender, id, outcome, on_device, at, content, target, sealed_action, grp)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (sender, id) DO UPDATE SET
			on_device = CASE WHEN excluded.outcome < outcome THEN excluded.on_device ELSE on_device END,
			outcome = min(outcome, excluded.outcome),
			content = coalesce(excluded.content, content),
			target = coalesce(excluded.target, target),
			sealed_action = coalesce(excluded.sealed_action, sealed_action),
			grp = coalesce(excluded.grp, grp)`
	// sqlKeptActions reads the kept one-to-one action decisions waiting
	// for one target of one sender (kept_decision_target).
	sqlKeptActions = `SELECT sender, id, on_device, content, sealed_action FROM kept_decision
		WHERE sender = ? AND target = ? AND grp IS NULL AND outcome = 1 AND sealed_action IS NOT NULL ORDER BY at, id LIMIT ?`
	// sqlKeptGroupActions reads the kept action decisions of a group
	// waiting for one target ID, of any sender
	// (kept_decision_group_target, 0030).
	sqlKeptGroupActions = `SELECT sender, id, on_device, content, sealed_action FROM kept_decision
		WHERE grp = ? AND target = ? AND outcome = 1 AND sealed_action IS NOT NULL ORDER BY at, sender, id LIMIT ?`
	// sqlExpireDecisions forgets decisions kept longer than
	// engine.MaxDecisionAge.
	sqlExpireDecisions = "DELETE FROM kept_decision WHERE at < ?"
	// sqlEvictDecision forgets the oldest decision when
	// engine.MaxKeptDecisions are kept and the new one is not among them.
	sqlEvictDecision = `DELETE FROM kept_decision WHERE rowid IN (
		SELECT rowid FROM kept_decision ORDER BY at, sender, id LIMIT 1)
		AND (SELECT count(*) FROM kept_decision) >= ?1
		AND NOT EXISTS (SELECT 1 FROM kept_decision WHERE sender = ?2 AND id = ?3)`
	// sqlDueDecisions reads the kept decisions whose message is pending.
	sqlDueDecisions = `SELECT k.sender, k.id, k.outcome, k.on_device FROM kept_decision k
		JOIN inbound i ON i.sender = k.sender AND i.id = k.id ORDER BY k.at, k.sender, k.id LIMIT ?`
	sqlAnyDecision    = "SELECT EXISTS (SELECT 1 FROM kept_decision)"
	sqlForgetDecision = "DELETE FROM kept_decision WHERE sender = ? AND id = ?"
	// sqlKeepWithDiscard keeps a commit kept for a pending action with
	// that action when the action is discarded because its target is
	// (engine.Finalize.KeepAction); sqlForgetPlainDecision then forgets
	// any other decision kept for it (a discard).
	sqlKeepWithDiscard = `UPDATE kept_decision SET content = ?3, target = ?4, sealed_action = ?5, grp = ?6
		WHERE sender = ?1 AND id = ?2 AND outcome = 1 AND sealed_action IS NULL`
	sqlForgetPlainDecision = "DELETE FROM kept_decision WHERE sender = ? AND id = ? AND sealed_action IS NULL"
	sqlKeptDecisions       = "SELECT sender, id, outcome, on_device FROM kept_decision ORDER BY at, sender, id LIMIT ?"
	sqlDecidedOn           = "UPDATE history SET decided_on = ? WHERE peer = ? AND direction = 1 AND id = ?"
	// sqlDiscardedAt reads when a message was discarded here, and
	// sqlTakeBackCommitted turns that discard into a commit (a decision
	// of another device that carried the body overrules it).
	sqlDiscardedAt       = "SELECT at, reason, sealed_digest, grp, content, arrived FROM finalized WHERE sender = ? AND id = ? AND outcome = ?"
	sqlTakeBackCommitted = "UPDATE finalized SET outcome = ?, reason = ? WHERE sender = ? AND id = ? AND outcome = ?"
	// sqlGroupDecidedOn is sqlDecidedOn for a group's entry (0025).
	sqlGroupDecidedOn = "UPDATE group_history SET decided_on = ? WHERE grp = ? AND sender = ? AND id = ?"
	sqlGroupHeld      = "SELECT 1 FROM grp WHERE id = ?"
	// sqlKeepTakenBackAction records the action body of an action this
	// device's own kept commit took back (tx.takeBackKept), as a commit's
	// finalized record keeps it (0028).
	sqlKeepTakenBackAction = "UPDATE finalized SET sealed_action = ?, target = ? WHERE sender = ? AND id = ? AND outcome = 1"
)

// unknownGroup is finalized.grp of a discard finalized before 0025 (the
// migration sets it): whether the message was a group's is not known, so
// no sibling's commit takes it back (into which history?). Group IDs are
// random: none is all zeros.
var unknownGroup wire.GroupID

// decision records a decision heard from another device of this person
// (the receive's peer): the decision frame's finalized record, so that a
// repeat is acknowledged again, and, when kept, the decision.
func (t *tx) decision(ctx context.Context, from engine.Address, e engine.DecisionEffect) error {
	_, err := t.runOne(ctx, "finalized-insert", engine.ErrConflict, sqlInsertFinalized,
		from.String(), e.ID[:], int64(engine.OutcomeCommitted), int64(engine.DiscardNone), e.At.UnixNano(),
		t.db.seal.seal(kindFinalizedDigest, messageKey(from, e.ID), e.Digest[:]), nil, nil, nil, nil)
	if err != nil {
		return fmt.Errorf("finalize decision %x from %s (finalized already?): %w", e.ID[:], from, err)
	}
	if err := t.insertDecisionLanes(ctx, e.Answer, e.At); err != nil {
		return err
	}
	if e.Contradicts {
		// The validator (checkAnswer) sees the peer but not this device:
		// the discard must be a sibling's, a device of this person.
		if self, err := getMeta(ctx, t.tx, metaAddress); err != nil {
			return err
		} else if a, perr := engine.ParseAddress(string(self)); self == nil || perr != nil || a.User != from.User || a == from {
			return invalid("decision %x from %s marks a commit contradicted though %s is no other device of this person", e.ID[:], from, from)
		}
		if _, err := t.run(ctx, "decision-contradicted", sqlContradicted, e.Sender.String(), e.Message[:], e.At.UnixNano()); err != nil {
			return fmt.Errorf("mark the commit of %x contradicted: %w", e.Message[:], err)
		}
	}
	if e.TakeBack != nil {
		took, err := t.takeBackCommitted(ctx, from, e)
		if err != nil || !took {
			// Nothing taken back: the kept action decisions stay kept,
			// their target's entry not written (an edit or a delete
			// would find none).
			return err
		}
		// A decision kept for the message (an action kept until its
		// target's take-back) has nothing left to wait for.
		if _, err := t.run(ctx, "decision-forget", sqlForgetDecision, e.Sender.String(), e.Message[:]); err != nil {
			return fmt.Errorf("forget the decision on %x: %w", e.Message[:], err)
		}
		for _, k := range e.WithTarget {
			// A kept action decision whose target this take-back wrote:
			// a group's, only onto the entry written in its group.
			if a := k.Effect.Action; a != nil && a.Group != nil {
				if found, err := t.scan(ctx, "group-entry-read", sqlGroupEntryBody, []any{a.Group[:], e.Sender.String(), e.Message[:]}, new([]byte)); err != nil {
					return err
				} else if !found {
					return fmt.Errorf("take back kept action %x onto %x, not in its group: %w", k.Effect.Message[:], e.Message[:], engine.ErrConflict)
				}
			}
			if err := t.takeBackKept(ctx, k); err != nil {
				return err
			}
			if _, err := t.run(ctx, "decision-forget", sqlForgetDecision, k.Effect.Sender.String(), k.Effect.Message[:]); err != nil {
				return fmt.Errorf("forget the decision on %x: %w", k.Effect.Message[:], err)
			}
		}
		return nil
	}
	if !e.Keep {
		return nil
	}
	t.db.decisionsHeld.Store(true)
	if _, err := t.run(ctx, "decision-expire", sqlExpireDecisions, e.At.Add(-engine.MaxDecisionAge).UnixNano()); err != nil {
		return fmt.Errorf("forget old decisions: %w", err)
	}
	if _, err := t.run(ctx, "decision-evict", sqlEvictDecision, engine.MaxKeptDecisions, e.Sender.String(), e.Message[:]); err != nil {
		return fmt.Errorf("make room for the decision on %x: %w", e.Message[:], err)
	}
	var content, target, sealed, grp any
	if k := e.KeepAction; k != nil {
		content, target, sealed = int64(k.Content), k.Target[:], t.db.seal.seal(kindKeptAction, messageKey(e.Sender, e.Message), k.Body)
		if k.Group != nil {
			grp = k.Group[:]
		}
	}
	if _, err := t.run(ctx, "decision-keep", sqlKeepDecision, e.Sender.String(), e.Message[:], int64(e.Outcome),
		from.String(), e.At.UnixNano(), content, target, sealed, grp); err != nil {
		return fmt.Errorf("keep the decision on %x from %s: %w", e.Message[:], e.Sender, err)
	}
	return nil
}

// takeBackable is the rule a sibling's commit takes a discard back by,
// which Seen reports (engine.SeenMessage.TakeBack) and takeBackCommitted
// applies, so that the engine's report and the store's change agree: only
// what the person discarded (reason rejected or other: an action the
// engine discarded, or a message refused as unsupported, stays so), of a
// known kind (grp is not the all-zero group that migration 0025 gives a
// discard finalized before it, which may have been a group's), and for a
// group message, a group held here (held; grp rows are never deleted, so
// it always is today). For a commit that carries a one-to-one action
// (action, frame kind 18), a discard the engine made because the person
// discarded the action's target (target_discarded) is the person's too:
// it rested on that discard, which the commit overrules; for a group's
// action as well, in a known group held here (the engine applies it only
// onto a target committed in that group's history: taken back first, by
// its own decision; the engine's other discards of a group action stay
// discarded). content is the content
// type the record keeps (0028; zero when it keeps none): a commit that
// carries an action takes back only a record of an action (a record from
// before 0028 says nothing, and a plain message whose bytes also decode
// as an action must not pass for it), and one that carries a plain body
// takes back only a text (or a record of unknown kind): never an action,
// nor a discarded file whose manifest a sibling relabels as text.
func takeBackable(reason engine.DiscardReason, grp []byte, held bool, content wire.ContentType, action bool) bool {
	switch {
	case action && !wire.IsAction(content):
		return false // not recorded as an action (or nothing recorded: before 0028)
	case !action && content != 0 && content != wire.ContentText:
		// An action goes back only with its action (kind 18), and a file
		// never by a body (a manifest holds the file's key): only a text
		// is taken back as a text.
		return false
	case action && reason == engine.DiscardTargetDiscarded && grp == nil:
		return true
	}
	if reason != engine.DiscardRejected && reason != engine.DiscardOther && !(action && reason == engine.DiscardTargetDiscarded) {
		return false
	}
	if grp != nil && bytes.Equal(grp, unknownGroup[:]) {
		return false
	}
	return held || grp == nil
}

// takeBackCommitted takes back a message discarded here that the deciding
// device from committed (commit beats discard): its finalized record
// turns committed and its history entry (its group's, for a group message
// whose record names the group), with the body the decision carried, is
// written at the message's arrival (0028; the time of the discard for a
// record from before) and names from. An action's take-back needs the
// record to keep that kind of action (takeBackable; the content type the
// action names). A message whose
// record is gone (pruned) or not a discard is left alone, and so is any
// discard takeBackable refuses. It says whether it took the message back
// (the record turned committed), so that the kept actions that wait for
// it (DecisionEffect.WithTarget) apply only then.
func (t *tx) takeBackCommitted(ctx context.Context, from engine.Address, e engine.DecisionEffect) (bool, error) {
	var at, reason int64
	var sealed, grp []byte
	var content, arrived sql.NullInt64
	found, err := t.scan(ctx, "finalized-read", sqlDiscardedAt, []any{e.Sender.String(), e.Message[:], int64(engine.OutcomeDiscarded)}, &at, &reason, &sealed, &grp, &content, &arrived)
	if err != nil || !found {
		return false, err
	}
	if grp != nil && len(grp) != len(wire.GroupID{}) {
		return false, fmt.Errorf("take back message %x from %s: group of %d bytes: %w", e.Message[:], e.Sender, len(grp), engine.ErrMalformedState)
	}
	held := grp == nil
	if grp != nil {
		if held, err = t.scan(ctx, "group-read", sqlGroupHeld, []any{grp}, new(int64)); err != nil {
			return false, err
		}
	}
	recordedKind := recordedContent(content)
	if !takeBackable(engine.DiscardReason(reason), grp, held, recordedKind, e.Action != nil) {
		return false, nil
	}
	if e.Action != nil && recordedKind != e.Action.Content {
		// Another kind of action than the one discarded here (its bytes
		// may decode as both): not this message.
		return false, nil
	}
	if a := e.Action; a != nil && ((a.Group == nil) != (grp == nil) || a.Group != nil && !bytes.Equal(a.Group[:], grp)) {
		// The engine judged the action where the record says it was
		// received (SeenMessage.Group): another group, or a group's
		// action against a one-to-one record, is a plan this record
		// does not allow.
		return false, fmt.Errorf("take back action %x from %s in another group than its record's: %w", e.Message[:], e.Sender, engine.ErrConflict)
	}
	if arrived.Valid {
		// The entry goes where the message arrived (0028; the discard's
		// time, the latest it can have arrived, for a record before it).
		at = arrived.Int64
	}
	var group *wire.GroupID
	if grp != nil {
		group = (*wire.GroupID)(grp)
	}
	// Only the body whose digest was recorded (an action's: the action
	// body its content frame carried).
	d, err := t.db.seal.open(kindFinalizedDigest, messageKey(e.Sender, e.Message), sealed)
	if err != nil {
		return false, fmt.Errorf("take back message %x from %s: %w", e.Message[:], e.Sender, err)
	}
	recorded := e.TakeBack
	if e.Action != nil {
		recorded = e.ActionBody // the action body its content frame carried
	}
	if sum := sha256.Sum256(recorded); !bytes.Equal(d, sum[:]) {
		return false, nil
	}
	if _, err := t.runOne(ctx, "finalized-take-back", engine.ErrConflict, sqlTakeBackCommitted, int64(engine.OutcomeCommitted), int64(engine.DiscardNone),
		e.Sender.String(), e.Message[:], int64(engine.OutcomeDiscarded)); err != nil {
		return false, fmt.Errorf("take back message %x from %s: %w", e.Message[:], e.Sender, err)
	}
	if group != nil {
		if err := t.insertGroupEntry(ctx, *group, e.Sender.String(), e.Message, nsTime(at), e.TakeBack); err != nil {
			return false, err
		}
		if _, err := t.run(ctx, "group-history-decided", sqlGroupDecidedOn, from.String(), grp, e.Sender.String(), e.Message[:]); err != nil {
			return false, fmt.Errorf("name the device that decided %x: %w", e.Message[:], err)
		}
		if e.Action != nil {
			// A group's action applies as its Finalize would have
			// applied it (the engine judged it by the group's rules,
			// its target committed in this group's history).
			if err := t.applyAction(ctx, *e.Action); err != nil {
				return false, fmt.Errorf("take back group action %x from %s: %w", e.Message[:], e.Sender, err)
			}
		}
		return true, nil
	}
	if err := t.insertHistory(ctx, e.Sender, engine.DirectionIn, e.Message, nsTime(at), 0, e.TakeBack); err != nil {
		return false, err
	}
	conv, err := t.conversationFor(ctx, e.Sender)
	if err != nil {
		return false, err
	}
	if _, err := t.run(ctx, "history-decided", sqlDecidedOn, from.String(), conv.String(), e.Message[:]); err != nil {
		return false, fmt.Errorf("name the device that decided %x: %w", e.Message[:], err)
	}
	if e.Action != nil {
		if ok, err := t.takenBackActionsAuthor(ctx, e); err != nil || !ok {
			return err == nil, err // taken back; the action applies to no one's entry
		}
		// The action applies as its Finalize would have applied it.
		if err := t.applyAction(ctx, *e.Action); err != nil {
			return false, fmt.Errorf("take back action %x from %s: %w", e.Message[:], e.Sender, err)
		}
	}
	return true, nil
}

// takenBackActionsAuthor says whether a taken-back edit or delete may
// apply to its target: false when the target's entry names another device
// as the one that sent it (sent_by). The engine judged the action on what
// it read before the batch, or on the entry a take-back earlier in the
// batch writes; when that take-back wrote nothing because the entry of
// that ID was already another device's (a reused ID), only this check
// sees it. An entry naming nobody was judged by the engine's rule for
// such entries. A reaction or a reply names any message.
func (t *tx) takenBackActionsAuthor(ctx context.Context, e engine.DecisionEffect) (bool, error) {
	a := e.Action
	if a.Content != wire.ContentEdit && a.Content != wire.ContentDelete {
		return true, nil
	}
	var by string
	found, err := t.scan(ctx, "action-target-author", sqlEntrySentBy, []any{a.TargetAt().String(), int64(a.TargetDir), a.Target[:]}, &by)
	if err != nil || !found {
		return err == nil, err
	}
	return by == "" || by == e.Sender.String(), nil
}

// insertDecisionLanes stores lanes that tell this person's other devices
// of a decision (frame kind 15 or 16): an outbound row and an own
// person_lane row each, in the conversation of the message's sender.
func (t *tx) insertDecisionLanes(ctx context.Context, lanes []engine.PersonLane, at time.Time) error {
	for _, l := range lanes {
		t.db.personLanesHeld.Store(true)
		to := l.Recipient.String()
		f, err := engine.DecodeStoredFrame(l.Frame)
		if err != nil || f.Decision == nil {
			return fmt.Errorf("decision lane to %s: %w", to, engine.ErrConflict)
		}
		if _, err := t.runOne(ctx, "outbound-insert", engine.ErrConflict, sqlInsertOutbound,
			to, f.ID[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(l.Recipient, f.ID), l.Frame)); err != nil {
			return fmt.Errorf("decision lane to %s: %w", to, err)
		}
		if _, err := t.runOne(ctx, "person-lane-insert", engine.ErrConflict, sqlInsertPersonLane, to, f.ID[:], f.Decision.Sender, 1, f.Decision.Message[:]); err != nil {
			return fmt.Errorf("decision lane to %s: %w", to, err)
		}
	}
	return nil
}

// finalizePerson does what a finalization adds for a person with several
// devices: the lanes that tell the other devices, and, for a decision made
// on another device, its name on the history entry and the kept
// decision's end.
func (t *tx) finalizePerson(ctx context.Context, p engine.Finalize) error {
	if err := t.insertDecisionLanes(ctx, p.Tell, p.At); err != nil {
		return err
	}
	if k := p.KeepAction; k != nil && k.On != (engine.Address{}) && p.Outcome == engine.OutcomeDiscarded {
		// A sibling's own group action discarded for its discarded
		// target: the person's, with no decision to come. It is kept as
		// that sibling's commit (bounded as a heard decision is), which
		// sqlKeepWithDiscard below gives its action. Or the person's
		// commit made here that the rules turned into that discard: kept
		// as this device's commit, so that the target's take-back judges
		// it again (only this device may be named so).
		if k.On != p.Sender {
			if here, err := t.isSelf(ctx, k.On); err != nil {
				return err
			} else if !here {
				return fmt.Errorf("discard of %x keeps a commit of %s, neither its sender nor this device: %w", p.ID[:], k.On, engine.ErrConflict)
			}
		}
		if err := t.keepOwnCommit(ctx, p.Sender, p.ID, k.On, p.At); err != nil {
			return err
		}
	}
	if !t.db.decisionsHeld.Load() {
		return nil
	}
	if p.DecidedOn == nil && p.Outcome == engine.OutcomeCommitted && p.SentTo == nil {
		// The person's commit made here of a message a sibling discarded:
		// its discard, heard while the message was pending, is kept (it
		// settled nothing: DecisionKeep) and forgotten below. The commit
		// is contradicted as if the discard came after it
		// (DecisionEffect.Contradicts): the sibling may have told a
		// device this device's list does not name yet, whose catch-up
		// must tell it this commit whatever its times.
		if _, err := t.run(ctx, "decision-contradicted-kept", sqlContradictedByKept, p.Sender.String(), p.ID[:]); err != nil {
			return fmt.Errorf("mark the commit of %x contradicted: %w", p.ID[:], err)
		}
	}
	forget := sqlForgetDecision
	if k := p.KeepAction; k != nil && p.Outcome == engine.OutcomeDiscarded {
		// A sibling's commit kept for the message, heard before it came,
		// is kept with its action: its target's take-back takes it back.
		var grp any
		if k.Group != nil {
			grp = k.Group[:]
		}
		if _, err := t.run(ctx, "decision-keep-action", sqlKeepWithDiscard, p.Sender.String(), p.ID[:], int64(k.Content), k.Target[:],
			t.db.seal.seal(kindKeptAction, messageKey(p.Sender, p.ID), k.Body), grp); err != nil {
			return fmt.Errorf("keep the decision on %x from %s with its action: %w", p.ID[:], p.Sender, err)
		}
		forget = sqlForgetPlainDecision
	}
	if _, err := t.run(ctx, "decision-forget", forget, p.Sender.String(), p.ID[:]); err != nil {
		return fmt.Errorf("forget the decision on %x from %s: %w", p.ID[:], p.Sender, err)
	}
	if p.DecidedOn != nil && p.Outcome == engine.OutcomeCommitted && p.Group != nil {
		if _, err := t.run(ctx, "group-history-decided", sqlGroupDecidedOn, p.DecidedOn.String(), p.Group[:], p.Sender.String(), p.ID[:]); err != nil {
			return fmt.Errorf("name the device that decided %x: %w", p.ID[:], err)
		}
		return nil
	}
	if p.DecidedOn != nil && p.Outcome == engine.OutcomeCommitted {
		conv, err := t.conversationFor(ctx, p.Sender)
		if err != nil {
			return err
		}
		if _, err := t.run(ctx, "history-decided", sqlDecidedOn, p.DecidedOn.String(), conv.String(), p.ID[:]); err != nil {
			return fmt.Errorf("name the device that decided %x: %w", p.ID[:], err)
		}
	}
	return nil
}

// keepOwnCommit keeps a commit of message id from sender, decided on on,
// as decision does for a heard one: the old decisions forgotten, the
// oldest evicted at engine.MaxKeptDecisions, merged with any kept for it
// (commit beats discard).
func (t *tx) keepOwnCommit(ctx context.Context, sender engine.Address, id wire.LogicalID, on engine.Address, at time.Time) error {
	t.db.decisionsHeld.Store(true)
	if _, err := t.run(ctx, "decision-expire", sqlExpireDecisions, at.Add(-engine.MaxDecisionAge).UnixNano()); err != nil {
		return fmt.Errorf("forget old decisions: %w", err)
	}
	if _, err := t.run(ctx, "decision-evict", sqlEvictDecision, engine.MaxKeptDecisions, sender.String(), id[:]); err != nil {
		return fmt.Errorf("make room for the decision on %x: %w", id[:], err)
	}
	if _, err := t.run(ctx, "decision-keep", sqlKeepDecision, sender.String(), id[:], int64(engine.OutcomeCommitted),
		on.String(), at.UnixNano(), nil, nil, nil, nil); err != nil {
		return fmt.Errorf("keep the own commit of %x from %s: %w", id[:], sender, err)
	}
	return nil
}

// isSelf reports whether a names this device (its own address, meta).
func (t *tx) isSelf(ctx context.Context, a engine.Address) (bool, error) {
	self, err := getMeta(ctx, t.tx, metaAddress)
	if err != nil {
		return false, err
	}
	return self != nil && string(self) == a.String(), nil
}

// takeBackKept takes back a kept action decision whose target a
// take-back or a commit wrote (takeBackCommitted, naming the device that
// committed it). One this device committed itself (the person's commit
// here that the rules turned into a discard because its target was
// discarded, engine.Finalize.KeepAction) is then a decision made here,
// as the commit would have been: its entry names no other device and its
// finalized record keeps the action body (as a commit's does, 0028), so
// that the catch-up and an answer to a sibling's discard carry the
// action.
func (t *tx) takeBackKept(ctx context.Context, k engine.KeptTakeBack) error {
	took, err := t.takeBackCommitted(ctx, k.On, k.Effect)
	if err != nil || !took {
		return err
	}
	here, err := t.isSelf(ctx, k.On)
	if err != nil || !here {
		return err
	}
	e := k.Effect
	if a := e.Action; a != nil && e.ActionBody != nil && len(e.ActionBody) <= wire.MaxDecisionActionSize {
		if _, err := t.run(ctx, "finalized-keep-action", sqlKeepTakenBackAction,
			t.db.seal.seal(kindFinalizedAction, messageKey(e.Sender, e.Message), e.ActionBody), a.Target[:], e.Sender.String(), e.Message[:]); err != nil {
			return fmt.Errorf("keep the action of %x from %s: %w", e.Message[:], e.Sender, err)
		}
	}
	if a := e.Action; a != nil && a.Group != nil {
		if _, err := t.run(ctx, "group-history-decided", sqlGroupDecidedOn, nil, a.Group[:], e.Sender.String(), e.Message[:]); err != nil {
			return fmt.Errorf("name no other device on %x: %w", e.Message[:], err)
		}
		return nil
	}
	conv, err := t.conversationFor(ctx, e.Sender)
	if err != nil {
		return err
	}
	if _, err := t.run(ctx, "history-decided", sqlDecidedOn, nil, conv.String(), e.Message[:]); err != nil {
		return fmt.Errorf("name no other device on %x: %w", e.Message[:], err)
	}
	return nil
}

// applyWithKept applies the kept action decisions a commit of their
// target, sender's message id, takes back with it
// (engine.Finalize.WithKept, engine.CommitEffect.WithKept): each onto the
// entry the commit wrote (in its group, for a group's; one to one, in
// the conversation of sender's person), taken back as a take-back's kept
// actions are (takeBackCommitted, naming the device that committed it),
// and its kept decision forgotten.
func (t *tx) applyWithKept(ctx context.Context, sender engine.Address, id wire.LogicalID, kept []engine.KeptTakeBack) error {
	for _, k := range kept {
		a := k.Effect.Action
		if a.Group == nil {
			// One to one: onto the entry the commit wrote, where
			// insertHistory put it.
			conv, err := t.conversationFor(ctx, sender)
			if err != nil {
				return err
			}
			if a.TargetAt() != conv {
				return fmt.Errorf("apply kept action %x onto %x, not in %s's conversation: %w", k.Effect.Message[:], id[:], sender, engine.ErrConflict)
			}
		} else if found, err := t.scan(ctx, "group-entry-read", sqlGroupEntryBody, []any{a.Group[:], sender.String(), id[:]}, new([]byte)); err != nil {
			return err
		} else if !found {
			return fmt.Errorf("apply kept action %x onto %x, not in its group: %w", k.Effect.Message[:], id[:], engine.ErrConflict)
		}
		if err := t.takeBackKept(ctx, k); err != nil {
			return err
		}
		if _, err := t.run(ctx, "decision-forget", sqlForgetDecision, k.Effect.Sender.String(), k.Effect.Message[:]); err != nil {
			return fmt.Errorf("forget the decision on %x: %w", k.Effect.Message[:], err)
		}
	}
	return nil
}

// KeptDecisions returns up to limit kept decisions, oldest first.
func (db *DB) KeptDecisions(ctx context.Context, limit int) ([]engine.KeptDecision, error) {
	if err := db.checkOpen("read decisions"); err != nil {
		return nil, err
	}
	return db.readDecisions(ctx, sqlKeptDecisions, limit)
}

// KeptActions returns the kept decisions whose one-to-one action from
// sender waits for its target, message target from sender, to be taken
// back (engine.Store), oldest first, at most engine.MaxKeptDecisions.
func (db *DB) KeptActions(ctx context.Context, sender engine.Address, target wire.LogicalID) ([]engine.KeptAction, error) {
	return db.readKeptActions(ctx, nil, target, sqlKeptActions, sender.String(), target[:], engine.MaxKeptDecisions)
}

// KeptGroupActions returns the kept decisions whose action in group g, of
// any member, waits for its target, the group message target (of any
// author), to be taken back (engine.Store), oldest first, at most
// engine.MaxKeptDecisions.
func (db *DB) KeptGroupActions(ctx context.Context, g wire.GroupID, target wire.LogicalID) ([]engine.KeptAction, error) {
	return db.readKeptActions(ctx, &g, target, sqlKeptGroupActions, g[:], target[:], engine.MaxKeptDecisions)
}

// readKeptActions reads the kept action decisions a query of
// sqlKeptActions' columns returns, all waiting for target (in group g,
// when not nil).
func (db *DB) readKeptActions(ctx context.Context, g *wire.GroupID, target wire.LogicalID, query string, args ...any) ([]engine.KeptAction, error) {
	if err := db.checkOpen("read kept actions"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, query, args...)
	if err != nil {
		return nil, db.readErr("read kept actions", err)
	}
	defer rows.Close()
	var out []engine.KeptAction
	for rows.Next() {
		var id, sealed []byte
		var sender, on string
		var content int64
		if err := rows.Scan(&sender, &id, &on, &content, &sealed); err != nil {
			return nil, db.readErr("read kept actions", err)
		}
		if len(id) != len(wire.LogicalID{}) || content <= 0 || content > 255 {
			return nil, fmt.Errorf("store: read kept actions: a row of %d-byte ID, content %d: %w", len(id), content, engine.ErrMalformedState)
		}
		k := engine.KeptAction{ID: wire.LogicalID(id), Content: wire.ContentType(content), Target: target}
		if g != nil {
			gg := *g
			k.Group = &gg
		}
		if k.Sender, err = engine.ParseAddress(sender); err != nil {
			return nil, fmt.Errorf("store: read kept actions: %w: %w", engine.ErrMalformedState, err)
		}
		if k.On, err = engine.ParseAddress(on); err != nil {
			return nil, fmt.Errorf("store: read kept actions: %w: %w", engine.ErrMalformedState, err)
		}
		if k.Body, err = db.seal.open(kindKeptAction, messageKey(k.Sender, k.ID), sealed); err != nil {
			return nil, fmt.Errorf("store: read kept action %x from %s: %w", id, k.Sender, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read kept actions", err)
	}
	return out, nil
}

// DueDecisions returns up to limit kept decisions whose message is pending
// here, oldest first, and whether any decision is kept.
func (db *DB) DueDecisions(ctx context.Context, limit int) ([]engine.KeptDecision, bool, error) {
	if err := db.checkOpen("read decisions"); err != nil {
		return nil, false, err
	}
	var held bool
	if err := db.queryRow(ctx, sqlAnyDecision).Scan(&held); err != nil {
		return nil, false, db.readErr("read decisions", err)
	}
	if !held {
		return nil, false, nil
	}
	due, err := db.readDecisions(ctx, sqlDueDecisions, limit)
	return due, true, err
}

func (db *DB) readDecisions(ctx context.Context, query string, limit int) ([]engine.KeptDecision, error) {
	rows, err := db.query(ctx, query, limit)
	if err != nil {
		return nil, db.readErr("read decisions", err)
	}
	defer rows.Close()
	var out []engine.KeptDecision
	for rows.Next() {
		var sender, on string
		var id []byte
		var outcome int64
		if err := rows.Scan(&sender, &id, &outcome, &on); err != nil {
			return nil, db.readErr("read decisions", err)
		}
		k := engine.KeptDecision{Outcome: engine.Outcome(outcome)}
		copy(k.ID[:], id)
		if k.Sender, err = parseStoredAddress(sender); err != nil {
			return nil, err
		}
		if k.On, err = parseStoredAddress(on); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read decisions", err)
	}
	return out, nil
}

const (
	// sqlMadeDecisions reads the newest finalized records since a time,
	// but for the discards the engine made by its rules for actions
	// (reasons target_discarded to hold_full, engine.DiscardReason.ByEngine):
	// those rest on this device's state, not on the person's choice; and
	// for every record of what this person's own devices sent (?4, the
	// own user and a slash, a prefix of their addresses: sent copies,
	// decision frames, their group messages and files), which no device
	// tells (engine tellLanes) and a sibling refuses to keep
	// (ErrDecisionOwnMessage), so they would only take the limit's room.
	// finalized_at serves it.
	//
	// A record finalized before ?1 (from ?6 on) is read too when its
	// decision lanes (person_lane.decided, 0029) were not all ended by
	// then: one is pending (1) or was abandoned (4), or ended at or after
	// ?1. The last column (sqlMadeTold) is the latest end of its lanes,
	// ?7 (the largest integer) while one is open, NULL when it has none.
	// A commit a sibling's discard heard here contradicted (contradicted,
	// 0032) is read too whenever it was finalized (from ?6 on), and the
	// very last column says so.
	sqlMadeDecisions = `SELECT f.sender, f.id, f.outcome, f.at, f.grp, f.content, f.sealed_action, ` + sqlMadeTold + `, f.contradicted IS NOT NULL
		FROM finalized f WHERE f.at >= ?6 AND NOT (f.outcome = 2 AND f.reason BETWEEN ?2 AND ?3)
		AND substr(f.sender, 1, length(?4)) != ?4
		AND (f.at >= ?1 OR f.contradicted IS NOT NULL
			OR EXISTS (SELECT 1 FROM person_lane l WHERE l.conversation = f.sender AND l.decided = f.id AND (l.state IN (1, 4) OR l.ended_at >= ?1)))
		ORDER BY f.at DESC, f.sender, f.id LIMIT ?5`
	sqlMadeTold = `(SELECT max(CASE WHEN l.state IN (1, 4) THEN ?7 ELSE coalesce(l.ended_at, 0) END)
			FROM person_lane l WHERE l.conversation = f.sender AND l.decided = f.id)`
	// sqlToldOf says whether a decision lane to a device names a message
	// (person_lane_decided, 0029), pending (1) or acknowledged (3): not
	// one abandoned (4) or ended by a removal (5), which told nothing.
	sqlToldOf = `SELECT EXISTS (SELECT 1 FROM person_lane WHERE conversation = ? AND decided = ? AND recipient = ? AND state IN (1, 3))`
	// sqlMadeDecision reads one record as sqlMadeDecisions does (?3 the
	// largest integer).
	sqlMadeDecision = `SELECT f.sender, f.id, f.outcome, f.at, f.grp, f.content, f.sealed_action,
		(SELECT max(CASE WHEN l.state IN (1, 4) THEN ?3 ELSE coalesce(l.ended_at, 0) END)
			FROM person_lane l WHERE l.conversation = f.sender AND l.decided = f.id), f.contradicted IS NOT NULL
		FROM finalized f WHERE f.sender = ?1 AND f.id = ?2`
	// sqlContradicted marks a commit's record when a sibling's discard of
	// it is heard (engine.DecisionEffect.Contradicts, 0032): only a
	// commit's, and the first time heard stays.
	sqlContradicted = "UPDATE finalized SET contradicted = coalesce(contradicted, ?3) WHERE sender = ?1 AND id = ?2 AND outcome = 1"
	// sqlContradictedByKept marks the record of a commit made here when a
	// sibling's discard of it was heard while it was pending and is kept
	// (kept_decision, outcome 2): the commit made here beats it and
	// forgets it, and the mark notes when it was heard.
	sqlContradictedByKept = `UPDATE finalized SET contradicted = (SELECT k.at FROM kept_decision k WHERE k.sender = ?1 AND k.id = ?2 AND k.outcome = 2)
		WHERE sender = ?1 AND id = ?2 AND outcome = 1 AND contradicted IS NULL
		AND EXISTS (SELECT 1 FROM kept_decision k WHERE k.sender = ?1 AND k.id = ?2 AND k.outcome = 2)`
	// sqlDecidedEntry reads a received message's history body, the body
	// it came with when an edit replaced it since (message_version edit
	// 0), and the device it was decided on, if another.
	sqlDecidedEntry = `SELECT h.sealed_body, v.sealed_body, h.decided_on FROM history h
		LEFT JOIN message_version v ON v.peer = h.peer AND v.direction = 1 AND v.id = h.id AND v.edit = 0
		WHERE h.peer = ? AND h.direction = 1 AND h.id = ?`
	// sqlDecidedGroupEntry is sqlDecidedEntry for a group message, by its
	// group's UNIQUE key (group_version edit 0 for its first body).
	sqlDecidedGroupEntry = `SELECT h.sealed_body, v.sealed_body, h.decided_on FROM group_history h
		LEFT JOIN group_version v ON v.grp = h.grp AND v.sender = h.sender AND v.id = h.id AND v.edit = 0
		WHERE h.grp = ? AND h.sender = ? AND h.id = ?`
)

// Decisions returns up to limit received messages finalized here at or
// after since, and those before it whose decision lanes ended at or after
// since or are still open, or that a sibling's discard contradicted
// (0032), newest first (engine.Store).
func (db *DB) Decisions(ctx context.Context, since time.Time, limit int) ([]engine.MadeDecision, error) {
	if err := db.checkOpen("read decisions made"); err != nil {
		return nil, err
	}
	// The own devices' prefix; "/" (no address starts so) on a profile
	// that has no address yet.
	own := "/"
	if self, err := getMeta(ctx, db.sql, metaAddress); err != nil {
		return nil, db.readErr("read decisions made", err)
	} else if a, err := engine.ParseAddress(string(self)); err == nil {
		own = a.User + "/"
	}
	return db.readMade(ctx, sqlMadeDecisions, since.UnixNano(), int64(engine.DiscardTargetDiscarded), int64(engine.DiscardHoldFull), own, limit,
		since.Add(-engine.MaxDecisionAge).UnixNano(), int64(math.MaxInt64))
}

// MadeDecision returns the finalized record of message id from sender as
// Decisions reads one, and false when there is none (engine.Store).
func (db *DB) MadeDecision(ctx context.Context, sender engine.Address, id wire.LogicalID) (engine.MadeDecision, bool, error) {
	if err := db.checkOpen("read a decision made"); err != nil {
		return engine.MadeDecision{}, false, err
	}
	made, err := db.readMade(ctx, sqlMadeDecision, sender.String(), id[:], int64(math.MaxInt64))
	if err != nil || len(made) == 0 {
		return engine.MadeDecision{}, false, err
	}
	return made[0], true, nil
}

// ToldOf reports whether a decision lane to sibling names message id from
// sender (engine.Store).
func (db *DB) ToldOf(ctx context.Context, sibling, sender engine.Address, id wire.LogicalID) (bool, error) {
	if err := db.checkOpen("read a decision's lanes"); err != nil {
		return false, err
	}
	var told bool
	if err := db.queryRow(ctx, sqlToldOf, sender.String(), id[:], sibling.String()).Scan(&told); err != nil {
		return false, db.readErr("read a decision's lanes", err)
	}
	return told, nil
}

// readMade reads the finalized records a query of sqlMadeDecisions' columns
// returns, with a commit's body and the device it was decided on.
func (db *DB) readMade(ctx context.Context, query string, args ...any) ([]engine.MadeDecision, error) {
	rows, err := db.query(ctx, query, args...)
	if err != nil {
		return nil, db.readErr("read decisions made", err)
	}
	var out []engine.MadeDecision
	for rows.Next() {
		var sender string
		var id, grp, sealedAction []byte
		var outcome, at int64
		var content, told sql.NullInt64
		var contradicted bool
		if err := rows.Scan(&sender, &id, &outcome, &at, &grp, &content, &sealedAction, &told, &contradicted); err != nil {
			rows.Close()
			return nil, db.readErr("read decisions made", err)
		}
		d := engine.MadeDecision{Outcome: engine.Outcome(outcome), At: nsTime(at), Content: recordedContent(content), Contradicted: contradicted}
		if told.Valid {
			d.Told = nsTime(told.Int64)
		}
		copy(d.ID[:], id)
		if d.Sender, err = parseStoredAddress(sender); err != nil {
			rows.Close()
			return nil, err
		}
		if sealedAction != nil && len(id) == len(d.ID) {
			if d.ActionBody, err = db.seal.open(kindFinalizedAction, messageKey(d.Sender, d.ID), sealedAction); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: read decision %x from %s: %w", id, sender, err)
			}
		}
		if len(grp) == len(wire.GroupID{}) && !bytes.Equal(grp, unknownGroup[:]) {
			d.Group = (*wire.GroupID)(grp)
		}
		out = append(out, d)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, db.readErr("read decisions made", err)
	}
	for i := range out {
		if out[i].Outcome == engine.OutcomeCommitted {
			if err := db.decidedEntry(ctx, &out[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// decidedEntry fills a commit's body and the device it was decided on.
// The body is the one the message came with (the one a sibling that
// discarded it recorded the digest of): for an entry an edit changed
// since, its first version (edit 0), not the edited text. It is read:
// for a group message whose record names its group (0025), from the
// group's history; else from the person's conversation, or from
// the entries kept under the sender before a list was held. None for a
// group message finalized before 0025 (it has no one-to-one entry).
func (db *DB) decidedEntry(ctx context.Context, d *engine.MadeDecision) error {
	var sealed, first []byte
	var on sql.NullString
	if d.Group != nil {
		err := db.queryRow(ctx, sqlDecidedGroupEntry, d.Group[:], d.Sender.String(), d.ID[:]).Scan(&sealed, &first, &on)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return db.readErr("read decisions made", err)
		}
		if first != nil {
			return db.fillDecided(d, kindGroupVersion, groupVersionKey(*d.Group, d.Sender.String(), d.ID, 0), first, on)
		}
		return db.fillDecided(d, kindGroupBody, groupBodyKey(*d.Group, d.Sender.String(), d.ID), sealed, on)
	}
	conv, err := db.conversationFor(ctx, d.Sender)
	if err != nil {
		return err
	}
	for _, peer := range []engine.Address{conv, d.Sender} {
		err := db.queryRow(ctx, sqlDecidedEntry, peer.String(), d.ID[:]).Scan(&sealed, &first, &on)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return db.readErr("read decisions made", err)
		}
		if first != nil {
			return db.fillDecided(d, kindMessageVersion, versionKey(peer, engine.DirectionIn, d.ID, 0), first, on)
		}
		return db.fillDecided(d, kindHistoryBody, historyKey(peer, engine.DirectionIn, d.ID), sealed, on)
	}
	return nil
}

// fillDecided opens a decided entry's body and names the device it was
// decided on.
func (db *DB) fillDecided(d *engine.MadeDecision, kind string, key, sealed []byte, on sql.NullString) error {
	var err error
	if d.Body, err = db.seal.open(kind, key, sealed); err != nil {
		return fmt.Errorf("store: read the body of %x from %s: %w", d.ID[:], d.Sender, err)
	}
	if d.Body == nil {
		d.Body = []byte{}
	}
	d.InHistory = true
	if on.Valid {
		a, err := parseStoredAddress(on.String)
		if err != nil {
			return err
		}
		d.DecidedOn = &a
	}
	return nil
}
