package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

const (
	// sqlUnmarkedHeldActions reads the waiting actions whose mark is a
	// bare content type (inbound_action serves it).
	sqlUnmarkedHeldActions = "SELECT sender, id, sealed_frame FROM inbound WHERE action > 0 AND action < ? ORDER BY seq"
	// sqlMarkHeldCopy adds the mark to one of them.
	sqlMarkHeldCopy = "UPDATE inbound SET action = action + ?1 WHERE sender = ?2 AND id = ?3 AND action > 0 AND action < ?1"
)

// errMigrationNeedsKey means a Go migration step found sealed rows to read
// while migrating without the storage key (only Create's empty database is
// migrated so).
var errMigrationNeedsKey = errors.New("store: a migration step must read sealed rows and has no storage key")

// markHeldCopies is migration 0026's step: a waiting action whose frame is
// a sibling's sent action copy (kind 17) gets heldCopyMark, as
// markInboundAction gives one stored since. The kind alone recognises it:
// the engine stores a kind-17 frame only from an active device of the own
// account (checkOwnDevice). A frame that does not open or parse is left as
// it is (the hold's pass decides it as before).
func markHeldCopies(ctx context.Context, tx *sql.Tx, s *sealer) error {
	rows, err := tx.QueryContext(ctx, sqlUnmarkedHeldActions, heldCopyMark)
	if err != nil {
		return fmt.Errorf("read waiting actions: %w", mapErr(err))
	}
	type key struct {
		sender string
		id     []byte
	}
	var copies []key
	for rows.Next() {
		var sender string
		var id, sealed []byte
		if err := rows.Scan(&sender, &id, &sealed); err != nil {
			rows.Close()
			return fmt.Errorf("read waiting actions: %w", mapErr(err))
		}
		if s == nil {
			rows.Close()
			return errMigrationNeedsKey
		}
		from, err := engine.ParseAddress(sender)
		if err != nil || len(id) != len(wire.LogicalID{}) {
			continue
		}
		frame, err := s.open(kindInboundFrame, messageKey(from, wire.LogicalID(id)), sealed)
		if err != nil {
			continue
		}
		if k, err := wire.PeekFrameKind(frame); err == nil && k == wire.FrameSentActionCopy {
			copies = append(copies, key{sender, id})
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("read waiting actions: %w", mapErr(err))
	}
	for _, c := range copies {
		if _, err := tx.ExecContext(ctx, sqlMarkHeldCopy, heldCopyMark, c.sender, c.id); err != nil {
			return fmt.Errorf("mark a waiting sent copy: %w", mapErr(err))
		}
	}
	return nil
}
