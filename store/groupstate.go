package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Group states (engine/groupstate.go): the device holding the account key
// sends a device it links its groups, one lane each; the linked device
// stores a group it does not hold as an archive import would.

// GroupStateRecords calls emit with the pins, then the groups, an archive
// holds, read in one transaction.
func (db *DB) GroupStateRecords(ctx context.Context, emit func(wire.ArchiveRecord) error) error {
	if err := db.checkOpen("read the groups"); err != nil {
		return err
	}
	t, err := db.sql.BeginTx(quiet(ctx), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return db.readErr("read the groups", err)
	}
	defer t.Rollback()
	r := archiveRead{db: db, t: t, ctx: ctx, emit: emit}
	for _, step := range []func() error{r.pins, r.groups} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// groupStateSend stores the lanes of a GroupStateSend: a pending outbound
// row and a pending lane of its group each. The account's list must name
// p.To active, and p.To must not be this device; an ID taken on the lanes
// to p.To refuses the plan (the IDs are random: a collision is a bug).
func (t *tx) groupStateSend(ctx context.Context, p engine.GroupStateSend) error {
	var raw []byte
	found, err := t.scan(ctx, "account-list-read", sqlAccountList, nil, &raw)
	if err != nil {
		return err
	}
	if !found {
		return invalid("group state to %s with no account held", p.To)
	}
	l, err := wire.DecodeDeviceList(raw)
	if err != nil {
		return fmt.Errorf("read the device list: %w: %w", engine.ErrMalformedState, err)
	}
	active := false
	for _, d := range l.Entries {
		active = active || (d.Number == p.To.Device && d.State == wire.DeviceActive)
	}
	if p.To.User != l.User || !active {
		return invalid("group state to %s, which the account's list does not name active", p.To)
	}
	self, err := getMeta(ctx, t.tx, metaAddress)
	if err != nil {
		return err
	}
	if p.To.String() == string(self) {
		return invalid("group state to %s, this device itself", p.To)
	}
	at := p.At
	if at.IsZero() {
		at = t.now
	}
	for _, lane := range p.Lanes {
		if _, err := t.runOne(ctx, "group-outbound-insert", engine.ErrConflict, sqlInsertOutbound,
			p.To.String(), lane.ID[:], at.UnixNano(), t.db.seal.seal(kindOutboundFrame, messageKey(p.To, lane.ID), lane.Frame)); err != nil {
			return fmt.Errorf("group state %x to %s: %w", lane.ID[:], p.To, err)
		}
		if _, err := t.runOne(ctx, "group-lane-add", engine.ErrConflict, sqlInsertLane, p.To.String(), lane.ID[:], lane.Group[:]); err != nil {
			return fmt.Errorf("group state %x to %s: %w", lane.ID[:], p.To, err)
		}
	}
	return nil
}

// validateGroupStateSend checks each lane's frame: a group state of the
// lane's ID and group, and the lanes' IDs and groups distinct.
func validateGroupStateSend(p engine.GroupStateSend) error {
	err := errors.Join(checkAddress("to", p.To), checkTime("at", p.At))
	if len(p.Lanes) == 0 {
		err = errors.Join(err, invalid("group state to %s with no lane", p.To))
	}
	ids := make(map[wire.LogicalID]bool, len(p.Lanes))
	groups := make(map[wire.GroupID]bool, len(p.Lanes))
	for _, lane := range p.Lanes {
		s, derr := wire.DecodeGroupState(lane.Frame)
		switch {
		case derr != nil:
			err = errors.Join(err, invalid("group state %x: %v", lane.ID[:], derr))
		case s.ID != lane.ID || s.Group.ID != lane.Group:
			err = errors.Join(err, invalid("group state %x carries %x of group %x", lane.ID[:], s.ID[:], s.Group.ID[:]))
		case ids[lane.ID] || groups[lane.Group]:
			err = errors.Join(err, invalid("group state %x of group %x twice", lane.ID[:], lane.Group[:]))
		}
		ids[lane.ID], groups[lane.Group] = true, true
	}
	return err
}

// groupState stores a received group state (engine.GroupStateEffect): a
// group held already keeps its row (start, snapshot, name) and gains the
// changes it lacks; otherwise the group and its changes; and each pin not
// held; all as an archive's import stores them (an insert that finds the
// row does nothing).
func (t *tx) groupState(ctx context.Context, e engine.GroupStateEffect) error {
	var one int
	found, err := t.scan(ctx, "group-held-read", sqlGroupHeld, []any{e.Group.ID[:]}, &one)
	if err != nil {
		return err
	}
	if found {
		for _, c := range e.Group.Changes {
			if _, err := t.run(ctx, "group-change-insert", sqlInsertChange, e.Group.ID[:], c.ID[:], c.Author, int64(c.Generation), c.Frame, c.At); err != nil {
				return fmt.Errorf("roster change %x: %w", c.ID[:], err)
			}
		}
	} else if _, err := t.importRecord(ctx, [16]byte{}, e.Group); err != nil {
		return err
	}
	for _, p := range e.Pins {
		if _, err := t.importRecord(ctx, [16]byte{}, p); err != nil {
			return err
		}
	}
	return nil
}

// validateGroupStateEffect checks the group and pins as an import's batch
// is checked.
func validateGroupStateEffect(e engine.GroupStateEffect) error {
	recs := []wire.ArchiveRecord{e.Group}
	for _, p := range e.Pins {
		recs = append(recs, p)
	}
	n := uint64(len(recs))
	return validateImportRecords(engine.ImportRecords{From: 0, To: n, Total: n, Records: recs})
}
