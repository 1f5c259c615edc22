package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The account this device belongs to (issue 33): one row, its key sealed.

const kindAccountKey = "account-key" // row key: empty

func init() {
	sealedColumns["account.sealed_key"] = kindAccountKey
}

const (
	sqlInsertAccount = "INSERT INTO account (singleton, sealed_key, device_list) SELECT 1, ?, ? WHERE NOT EXISTS (SELECT 1 FROM account)"
	sqlAccount       = "SELECT sealed_key, device_list FROM account WHERE singleton = 1"
	sqlUpdateList    = "UPDATE account SET device_list = ? WHERE singleton = 1 AND device_list = ?"
)

// updateDeviceList replaces the list held, only when it is still p.From:
// a profile whose list changed underneath (or that has no account) is
// refused with ErrConflict, and nothing changes.
func (t *tx) updateDeviceList(ctx context.Context, p engine.UpdateDeviceList) error {
	if _, err := t.runOne(ctx, "account-list-update", engine.ErrConflict, sqlUpdateList, p.List, p.From); err != nil {
		return fmt.Errorf("replace the device list (changed underneath?): %w", err)
	}
	if err := t.insertDecisionLanes(ctx, p.CatchUp, p.At); err != nil {
		return err
	}
	if err := t.endPersonLanesTo(ctx, p.Removed, p.At); err != nil {
		return err
	}
	if err := t.endGroupLanesTo(ctx, p.Removed); err != nil {
		return err
	}
	if err := t.adoptLanes(ctx, p.Adopted, p.At); err != nil {
		return err
	}
	return t.addGroupLanes(ctx, p.GroupAdded, p.At)
}

func validateUpdateDeviceList(p engine.UpdateDeviceList) error {
	if _, err := wire.DecodeDeviceList(p.From); err != nil {
		return invalid("device list held: %v", err)
	}
	l, err := wire.DecodeDeviceList(p.List)
	if err != nil {
		return invalid("device list: %v", err)
	}
	held, _ := wire.DecodeDeviceList(p.From)
	err = errors.Join(checkRemoved(l.User, p.List, p.Removed), checkAdopted(l.User, p.Adopted), checkCatchUp(held, l, p))
	err = errors.Join(err, checkGroupAdded(l, p.GroupAdded))
	if len(p.Adopted) > 0 || len(p.GroupAdded) > 0 {
		err = errors.Join(err, checkTime("at", p.At))
	}
	return err
}

// checkCatchUp checks the decision lanes of a list's catch-up: each an
// own lane carrying a decision frame about another person's message, to a
// device the new list names active and the held one did not.
func checkCatchUp(held, l wire.DeviceList, p engine.UpdateDeviceList) error {
	if len(p.CatchUp) == 0 {
		return nil
	}
	err := checkTime("at", p.At)
	known := make(map[uint32]bool, len(held.Entries))
	for _, e := range held.Entries {
		known[e.Number] = true
	}
	added := make(map[uint32]bool)
	for _, e := range l.Entries {
		if !known[e.Number] && e.State == wire.DeviceActive {
			added[e.Number] = true
		}
	}
	for _, c := range p.CatchUp {
		f, ferr := engine.DecodeStoredFrame(c.Frame)
		switch {
		case ferr != nil || f.Decision == nil || !c.Own:
			err = errors.Join(err, invalid("catch-up lane to %s without a decision frame", c.Recipient))
		case c.Recipient.User != l.User || !added[c.Recipient.Device]:
			err = errors.Join(err, invalid("catch-up lane to %s, not a device the new list adds", c.Recipient))
		default:
			if s, serr := engine.ParseAddress(f.Decision.Sender); serr != nil || s.User == l.User {
				err = errors.Join(err, invalid("catch-up lane to %s about a message of its own person", c.Recipient))
			}
		}
	}
	return err
}

// createAccount stores the account; a profile that has one is refused
// with ErrConflict, and nothing changes.
func (t *tx) createAccount(ctx context.Context, p engine.CreateAccount) error {
	var sealed []byte
	if p.Key != nil {
		sealed = t.db.seal.seal(kindAccountKey, nil, p.Key)
	}
	if _, err := t.runOne(ctx, "account-insert", engine.ErrConflict, sqlInsertAccount, sealed, p.List); err != nil {
		return fmt.Errorf("store account (one already there?): %w", err)
	}
	if p.LinkedBy != 0 {
		return t.putMeta(ctx, metaLinkedBy, binary.BigEndian.AppendUint32(nil, p.LinkedBy))
	}
	return nil
}

func validateCreateAccount(p engine.CreateAccount) error {
	if p.Key != nil && len(p.Key) != 32 {
		return invalid("account key record of %d bytes", len(p.Key))
	}
	if _, err := wire.DecodeDeviceList(p.List); err != nil {
		return invalid("device list: %v", err)
	}
	if p.LinkedBy > 1<<31-1 {
		return invalid("linked by device %d", p.LinkedBy)
	}
	return nil
}

// readAccount fills the account fields of prof; a profile without an
// account leaves them nil.
func (db *DB) readAccount(ctx context.Context, q *sql.Tx, prof *engine.Profile) error {
	var sealed, list []byte
	err := q.QueryRowContext(ctx, sqlAccount).Scan(&sealed, &list)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return db.readErr("read account", err)
	}
	if sealed != nil {
		if prof.AccountKey, err = db.seal.open(kindAccountKey, nil, sealed); err != nil {
			return fmt.Errorf("store: read account key: %w", err)
		}
	}
	prof.DeviceList = list
	by, err := getMeta(ctx, q, metaLinkedBy)
	switch {
	case err != nil:
		return err
	case by == nil:
	case len(by) != 4 || binary.BigEndian.Uint32(by) == 0:
		return fmt.Errorf("store: read %s of %d bytes: %w", metaLinkedBy, len(by), engine.ErrMalformedState)
	default:
		prof.LinkedBy = binary.BigEndian.Uint32(by)
	}
	return nil
}
