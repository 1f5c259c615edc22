package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// DeviceList implements Store.
func (s *SQLite) DeviceList(ctx context.Context, user string) (HeldDeviceList, error) {
	var l HeldDeviceList
	var parent, digest []byte
	err := s.db.QueryRowContext(ctx, "SELECT generation, parent, digest, list FROM device_lists WHERE user = ?", user).
		Scan(&l.Generation, &parent, &digest, &l.Encoded)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return HeldDeviceList{}, fmt.Errorf("%s: %w", user, ErrNoDeviceList)
	case err != nil:
		return HeldDeviceList{}, fmt.Errorf("device list of %s: %w", user, err)
	}
	copy(l.Parent[:], parent)
	copy(l.Digest[:], digest)
	return l, nil
}

// PutDeviceList implements Store: the check of the held list and the
// write are one transaction.
func (s *SQLite) PutDeviceList(ctx context.Context, user string, l HeldDeviceList, ip string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var held *HeldDeviceList
		var h HeldDeviceList
		var digest []byte
		err := tx.QueryRowContext(ctx, "SELECT generation, digest FROM device_lists WHERE user = ?", user).Scan(&h.Generation, &digest)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			copy(h.Digest[:], digest)
			held = &h
		}
		if err := l.follows(held); err != nil {
			return err
		}
		if held != nil {
			_, err := tx.ExecContext(ctx, "UPDATE device_lists SET generation = ?, parent = ?, digest = ?, list = ? WHERE user = ? AND generation = ?",
				l.Generation, l.Parent[:], l.Digest[:], l.Encoded, user, held.Generation)
			return err
		}
		if ip != "" {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM device_lists WHERE ip = ?", ip).Scan(&n); err != nil {
				return err
			}
			if n >= s.limits.DeviceListsPerIP {
				return ErrDeviceListQuota
			}
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO device_lists (user, generation, parent, digest, list, ip) VALUES (?, ?, ?, ?, ?, ?)",
			user, l.Generation, l.Parent[:], l.Digest[:], l.Encoded, ip)
		return err
	})
	if err != nil {
		return fmt.Errorf("device list of %s: %w", user, err)
	}
	return nil
}
