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

// fixtureV29Decided is the message fixture 29's decision lane tells of: a
// discard of the fixture peer's at 20, the lane to alice/2 acknowledged
// at 22.
var fixtureV29Decided = wire.LogicalID{0x29, 0x30}

// insertFixtureV29 is fixture 28 with a discard whose decision lane names
// the message it decided and when it was acknowledged, as a build with
// 0029 stores it.
func insertFixtureV29(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV28(t, db, s)
	from := engine.MustParseAddress(fixturePeer)
	if _, err := db.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, content, arrived) VALUES (?, ?, 2, ?, 20, ?, 1, 19)",
		fixturePeer, fixtureV29Decided[:], int64(engine.DiscardOther), s.seal(kindFinalizedDigest, messageKey(from, fixtureV29Decided), bytes.Repeat([]byte{0x29}, 32))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO person_lane (recipient, id, conversation, own, state, decided, ended_at) VALUES ('alice/2', ?, ?, 1, 3, ?, 22)",
		bytes.Repeat([]byte{0x29}, 16), fixturePeer, fixtureV29Decided[:]); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV29(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV28(t, db)
	ctx := context.Background()
	made, err := db.Decisions(ctx, time.Unix(0, 21), 100)
	if err != nil {
		t.Fatal(err)
	}
	var got *engine.MadeDecision
	for i := range made {
		if made[i].ID == fixtureV29Decided {
			got = &made[i]
		}
	}
	if got == nil || !got.Told.Equal(time.Unix(0, 22)) {
		t.Fatalf("fixture 29's discard in the decisions since 21: %+v; want it, told until 22", got)
	}
}

// TestMigration29LanesTellNothing builds a profile at version 28 holding
// a discard made at 10 and a decision lane to alice/2, still pending,
// then opens it (migration 0029): the lane names no message, so the
// decisions since 20 leave the discard out, as before. A lane stored
// after the migration names its message: pending, it brings the discard
// into the decisions since 20 (told in the far future); acknowledged at
// 15, before 20, it does not; at 25, it does (told until 25). A discard
// older than since by more than MaxDecisionAge is left out whatever its
// lanes.
func TestMigration29LanesTellNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 28)
	from := engine.MustParseAddress("bob/1")
	old := wire.LogicalID{0x29, 0x31}
	discard := func(db interface {
		Exec(string, ...any) (sql.Result, error)
	}, id wire.LogicalID, at int64) {
		t.Helper()
		if _, err := db.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, 2, ?, ?, ?)",
			from.String(), id[:], int64(engine.DiscardRejected), at, s.seal(kindFinalizedDigest, messageKey(from, id), bytes.Repeat([]byte{0x29}, 32))); err != nil {
			t.Fatal(err)
		}
	}
	discard(raw, old, 10)
	if _, err := raw.Exec("INSERT INTO person_lane (recipient, id, conversation, own, state) VALUES ('alice/2', ?, ?, 1, 1)",
		bytes.Repeat([]byte{0x31}, 16), from.String()); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db := mustOpen(t, dir)
	defer mustClose(t, db)
	since := time.Unix(0, 20)
	read := func() map[wire.LogicalID]engine.MadeDecision {
		t.Helper()
		made, err := db.Decisions(ctx, since, 100)
		if err != nil {
			t.Fatal(err)
		}
		out := map[wire.LogicalID]engine.MadeDecision{}
		for _, d := range made {
			out[d.ID] = d
		}
		return out
	}
	if got := read(); len(got) != 0 {
		t.Fatalf("decisions since 20 after 0029: %+v; want none (the lane from before names no message)", got)
	}
	lane := func(id wire.LogicalID, frame byte, state int, ended any) {
		t.Helper()
		if _, err := db.sql.ExecContext(ctx, "INSERT INTO person_lane (recipient, id, conversation, own, state, decided, ended_at) VALUES ('alice/2', ?, ?, 1, ?, ?, ?)",
			bytes.Repeat([]byte{frame}, 16), from.String(), state, id[:], ended); err != nil {
			t.Fatal(err)
		}
	}
	pending, early, late, ancient := wire.LogicalID{0x29, 0x32}, wire.LogicalID{0x29, 0x33}, wire.LogicalID{0x29, 0x34}, wire.LogicalID{0x29, 0x35}
	for _, id := range []wire.LogicalID{pending, early, late} {
		discard(db.sql, id, 12)
	}
	discard(db.sql, ancient, since.Add(-engine.MaxDecisionAge).UnixNano()-1)
	lane(pending, 0x32, int(engine.LaneAcknowledged), 13)
	lane(pending, 0x33, int(engine.LanePending), nil)
	lane(early, 0x34, int(engine.LaneAcknowledged), 15)
	lane(late, 0x35, int(engine.LaneAcknowledged), 25)
	lane(ancient, 0x36, int(engine.LanePending), nil)
	got := read()
	if d, ok := got[pending]; !ok || d.Told.Before(time.Unix(1<<32, 0)) {
		t.Errorf("a discard with a lane pending: %+v, %v; want read, told in the far future", d, ok)
	}
	if d, ok := got[late]; !ok || !d.Told.Equal(time.Unix(0, 25)) {
		t.Errorf("a discard acknowledged at 25: %+v, %v; want read, told until 25", d, ok)
	}
	if d, ok := got[early]; ok {
		t.Errorf("a discard acknowledged at 15 is read since 20: %+v", d)
	}
	if d, ok := got[ancient]; ok {
		t.Errorf("a discard older than MaxDecisionAge is read: %+v", d)
	}
	if len(got) != 2 {
		t.Errorf("decisions since 20: %d, want 2", len(got))
	}
}
