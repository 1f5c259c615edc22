package store

import (
	"bytes"
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// fixtureV28ID is the discarded reaction fixture 28 holds from the
// fixture peer, its record keeping its content type and arrival.
var fixtureV28ID = wire.LogicalID{0x28, 0x30}

// insertFixtureV28 is fixture 27 with a discarded reaction whose
// finalized record keeps its content type and arrival, as a build with
// 0028 stores it.
func insertFixtureV28(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV27(t, db, s)
	from := engine.MustParseAddress(fixturePeer)
	if _, err := db.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, content, arrived) VALUES (?, ?, 2, ?, 20, ?, ?, 19)",
		fixturePeer, fixtureV28ID[:], int64(engine.DiscardOther), s.seal(kindFinalizedDigest, messageKey(from, fixtureV28ID), bytes.Repeat([]byte{0x28}, 32)),
		int64(wire.ContentReaction)); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV28(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV27(t, db)
	s, err := db.Seen(context.Background(), engine.MustParseAddress(fixturePeer), fixtureV28ID)
	if err != nil || !s.Finalized || s.Content != wire.ContentReaction || !s.Arrived.Equal(time.Unix(0, 19)) || !s.TakeBackAction || s.TakeBack {
		t.Fatalf("fixture 28's discard: %+v, %v; want a reaction arrived at 19, taken back only by an action's commit", s, err)
	}
}

// TestMigration28RecordsKeepNoKind builds a profile at version 27 holding
// a discarded reply (rejected by the person) and opens it (migration
// 0028): its record keeps no content type and no arrival, so Seen reports
// it as a discard a plain message's commit (kind 16) takes back, as
// before, and an action's commit (kind 18) does not: nothing says it was
// that action. A decision kept before keeps no action: KeptActions
// finds none, KeptDecisions still has it. A record stored after the
// migration keeps both.
func TestMigration28RecordsKeepNoKind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 27)
	from := engine.MustParseAddress("bob/1")
	old := wire.LogicalID{0x28, 0x31}
	if _, err := raw.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, 2, ?, 28, ?)",
		from.String(), old[:], int64(engine.DiscardRejected), s.seal(kindFinalizedDigest, messageKey(from, old), bytes.Repeat([]byte{0x28}, 32))); err != nil {
		t.Fatal(err)
	}
	kept := wire.LogicalID{0x28, 0x32}
	if _, err := raw.Exec("INSERT INTO kept_decision (sender, id, outcome, on_device, at) VALUES (?, ?, 1, 'alice/2', 28)", from.String(), kept[:]); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db := mustOpen(t, dir)
	defer mustClose(t, db)
	got, err := db.Seen(ctx, from, old)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Finalized || got.Content != 0 || !got.Arrived.IsZero() || !got.At.Equal(time.Unix(0, 28)) {
		t.Fatalf("a record from before 0028: %+v; want no content type, no arrival, its discard's time", got)
	}
	if !got.TakeBack || got.TakeBackAction {
		t.Fatalf("a record from before 0028: TakeBack %v, TakeBackAction %v; want a take-back by a plain commit only", got.TakeBack, got.TakeBackAction)
	}
	if kept, err := db.KeptActions(ctx, from, old); err != nil || len(kept) != 0 {
		t.Fatalf("KeptActions after 0028 = %+v, %v; want none: a decision kept before keeps no action", kept, err)
	}
	if kept, err := db.KeptDecisions(ctx, 10); err != nil || len(kept) != 1 {
		t.Fatalf("KeptDecisions after 0028 = %+v, %v; want the one kept before", kept, err)
	}
	var content, arrived sql.NullInt64
	if err := db.sql.QueryRowContext(ctx, "SELECT content, arrived FROM finalized WHERE sender = ? AND id = ?", from.String(), old[:]).Scan(&content, &arrived); err != nil {
		t.Fatal(err)
	}
	if content.Valid || arrived.Valid {
		t.Fatalf("a record from before 0028 holds content %v, arrived %v; want NULL", content, arrived)
	}
}
