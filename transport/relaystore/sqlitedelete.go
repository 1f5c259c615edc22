package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// How rows leave the SQLite mailboxes: acknowledged by their recipient, or
// expired by the relay's sweep. Both go through deleteRows, which keeps the
// running totals.

// Expire implements Store: the oldest rows by acceptance time (an index),
// skipping those this process leased until after now.
func (s *SQLite) Expire(ctx context.Context, now, before time.Time, max int) ([]Removed, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []Removed
	var freed Usage
	var unstored int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out, freed, unstored = out[:0], Usage{}, 0
		// The cursor is read only as far as it takes to find max rows
		// not under a live lease.
		rows, err := tx.QueryContext(ctx, "SELECT row, recipient FROM envelopes WHERE accepted < ? ORDER BY accepted, row", before.UnixNano())
		if err != nil {
			return err
		}
		byRecipient := map[string][]uint64{}
		var order []string
		for n := 0; n < max && rows.Next(); {
			var row int64
			var recipient string
			if err := rows.Scan(&row, &recipient); err != nil {
				rows.Close()
				return err
			}
			if l, ok := s.leases.Leased(recipient, []uint64{uint64(row)})[uint64(row)]; ok && now.Before(l.Until) {
				continue
			}
			if byRecipient[recipient] == nil {
				order = append(order, recipient)
			}
			byRecipient[recipient] = append(byRecipient[recipient], uint64(row))
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, recipient := range order {
			gone, u, n, err := s.deleteRows(ctx, tx, recipient, byRecipient[recipient])
			if err != nil {
				return err
			}
			unstored += n
			out = append(out, gone...)
			freed.Envelopes += u.Envelopes
			freed.Bytes += u.Bytes
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire envelopes: %w", err)
	}
	s.counts.add(0, Usage{-freed.Envelopes, -freed.Bytes})
	s.counts.addStored(-unstored)
	for _, r := range out {
		s.leases.Forget(r.Recipient, []uint64{r.Row})
	}
	return out, nil
}

// deleteRows deletes those of rows that are recipient's and lowers the
// totals they were charged to; a shared payload goes with the last row
// that points at it. It returns the rows, what they were charged (each
// whole envelope) and the bytes the file no longer keeps.
func (s *SQLite) deleteRows(ctx context.Context, tx *sql.Tx, recipient string, rows []uint64) ([]Removed, Usage, int64, error) {
	var all Usage
	var unstored int64
	del, err := tx.PrepareContext(ctx, "DELETE FROM envelopes WHERE row = ? AND recipient = ? RETURNING length(envelope), payload, sender, ip, envelope_id, stranger")
	if err != nil {
		return nil, all, 0, err
	}
	defer del.Close()
	var out []Removed
	freed := map[Origin]Usage{}
	for _, row := range rows {
		if row > 1<<63-1 {
			continue
		}
		var size, payload int64
		var from Origin
		var id []byte
		err := del.QueryRowContext(ctx, int64(row), recipient).Scan(&size, &payload, &from.Address, &from.IP, &id, &from.Stranger)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return nil, all, 0, err
		}
		unstored += size
		if payload != 0 {
			n, gone, err := s.unrefPayload(ctx, tx, payload)
			if err != nil {
				return nil, all, 0, err
			}
			size += n
			if gone {
				unstored += n
			}
		}
		all.Envelopes++
		all.Bytes += size
		r := Removed{Recipient: recipient, Row: row, Sender: from.Address}
		copy(r.Envelope[:], id)
		out = append(out, r)
		u := freed[from]
		u.Envelopes++
		u.Bytes += size
		freed[from] = u
	}
	for from, u := range freed {
		if err := s.addUsage(ctx, tx, usageScopes(recipient, from), -u.Envelopes, -u.Bytes); err != nil {
			return nil, all, 0, err
		}
	}
	return out, all, unstored, nil
}

// unrefPayload drops one row's reference to a shared payload, deleting the
// payload with its last: it returns the payload's size and whether it
// went.
func (s *SQLite) unrefPayload(ctx context.Context, tx *sql.Tx, id int64) (int64, bool, error) {
	var refs, size int64
	err := tx.QueryRowContext(ctx, "UPDATE payloads SET refs = refs - 1 WHERE id = ? RETURNING refs, length(payload)", id).Scan(&refs, &size)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("envelope row names payload %d, which is not kept", id)
	} else if err != nil {
		return 0, false, err
	}
	if refs > 0 {
		return size, false, nil
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM payloads WHERE id = ?", id)
	return size, true, err
}
