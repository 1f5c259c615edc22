package store

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// insertFixtureV26 is fixture 25: migration 0026 adds no column.
func insertFixtureV26(t *testing.T, db *sql.DB, s *sealer) { insertFixtureV25(t, db, s) }

func checkFixtureV26(t *testing.T, db *DB) { checkFixtureV25(t, db) }

// TestMigration26MarksHeldCopies builds a profile at version 25 holding,
// waiting for their targets, a sibling's sent action copy (frame kind 17)
// with the bare content type as its mark, as builds before the mark stored
// it, a peer's waiting reaction, and a waiting row whose frame does not
// parse. Opening it (migration 0026) marks the copy (heldCopyMark added),
// so the pending list leaves it out, and leaves the other two as they
// were. Without the migration the copy shows as a message to decide until
// the hold decides it.
func TestMigration26MarksHeldCopies(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 25)
	sibling, peer := engine.MustParseAddress("alice/2"), engine.MustParseAddress("bob/1")
	target := wire.LogicalID{0x26, 0xff}
	copyFrame, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: wire.LogicalID{0x26, 1}, To: peer.String(),
		Action: wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "x", Order: 1}})
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		sender engine.Address
		id     wire.LogicalID
		frame  []byte
	}{
		{sibling, wire.LogicalID{0x26, 1}, copyFrame},
		{peer, wire.LogicalID{0x26, 2}, frameOf(t, wire.LogicalID{0x26, 2}, "a peer's action")},
		{peer, wire.LogicalID{0x26, 3}, []byte("no frame")},
	}
	for _, r := range rows {
		key := messageKey(r.sender, r.id)
		if _, err := raw.Exec("INSERT INTO inbound (sender, id, received_at, sealed_digest, sealed_frame, action) VALUES (?, ?, 26, ?, ?, ?)",
			r.sender.String(), r.id[:], s.seal(kindInboundDigest, key, bytes.Repeat([]byte{0x26}, 32)), s.seal(kindInboundFrame, key, r.frame),
			int64(wire.ContentReaction)); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db := mustOpen(t, dir)
	defer mustClose(t, db)
	for i, want := range []int64{int64(wire.ContentReaction) + heldCopyMark, int64(wire.ContentReaction), int64(wire.ContentReaction)} {
		var got int64
		if err := db.sql.QueryRowContext(ctx, "SELECT action FROM inbound WHERE sender = ? AND id = ?", rows[i].sender.String(), rows[i].id[:]).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("row %d (from %s) marked %d after 0026, want %d", i, rows[i].sender, got, want)
		}
	}
	n, err := db.CountInbound(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("CountInbound = %d after 0026, want 2 (the waiting copy left out)", n)
	}
}
