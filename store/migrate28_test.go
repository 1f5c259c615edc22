package store

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// insertFixtureV28 is fixture 27 with a received entry naming the device
// that sent it, as a build with 0028 stores it.
func insertFixtureV28(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV27(t, db, s)
	id := wire.LogicalID{0x28, 0x29}
	conv := engine.MustParseAddress("dave/1")
	if _, err := db.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES (?, 1, ?, 28, 0, ?, 'dave/2')",
		conv.String(), id[:], s.seal(kindHistoryBody, historyKey(conv, engine.DirectionIn, id), []byte("received 28"))); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV28(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV27(t, db)
	got, err := db.ActionTarget(context.Background(), engine.MustParseAddress("dave/1"), wire.LogicalID{0x28, 0x29}, engine.DirectionIn)
	if err != nil || !got.Found || got.SentBy.String() != "dave/2" {
		t.Fatalf("fixture 28's received entry: %+v, %v; want it sent by dave/2", got, err)
	}
}

// TestMigration28NamesReceivedSenders builds a profile at version 27
// holding received entries of bob's conversation (kept under bob/1): one
// of an ID only bob/2 has a committed one-to-one record of (carol/1 has
// one too: another person's device is not bob's), one of an ID both
// bob/1 and bob/2 have (a device reusing another's ID, as a hostile one
// would), one nobody has a record of, one of an ID bob/3 has only a
// group message's record of, and one of an ID bob/2's message of was
// discarded. Opening it (migration 0028) names bob/2 on the first and
// nobody on the others; a sent entry is left alone.
func TestMigration28NamesReceivedSenders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 27)
	conv := engine.MustParseAddress("bob/1")
	one, two, none, group, discarded, sent := wire.LogicalID{0x28, 1}, wire.LogicalID{0x28, 2}, wire.LogicalID{0x28, 3},
		wire.LogicalID{0x28, 4}, wire.LogicalID{0x28, 5}, wire.LogicalID{0x28, 6}
	for _, id := range []wire.LogicalID{one, two, none, group, discarded} {
		if _, err := raw.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES (?, 1, ?, 28, 0, ?)",
			conv.String(), id[:], s.seal(kindHistoryBody, historyKey(conv, engine.DirectionIn, id), []byte("received"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES (?, 2, ?, 28, 2, ?)",
		conv.String(), sent[:], s.seal(kindHistoryBody, historyKey(conv, engine.DirectionOut, sent), []byte("sent"))); err != nil {
		t.Fatal(err)
	}
	g := bytes.Repeat([]byte{0x28}, 16)
	for _, r := range []struct {
		sender  string
		id      wire.LogicalID
		outcome int
		grp     any
	}{
		{"bob/2", one, 1, nil}, {"carol/1", one, 1, nil},
		{"bob/1", two, 1, nil}, {"bob/2", two, 1, nil},
		{"bob/3", group, 1, g},
		{"bob/2", discarded, 2, nil},
		{"bob/2", sent, 1, nil},
	} {
		from := engine.MustParseAddress(r.sender)
		if _, err := raw.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, grp) VALUES (?, ?, ?, 0, 28, ?, ?)",
			r.sender, r.id[:], r.outcome, s.seal(kindFinalizedDigest, messageKey(from, r.id), bytes.Repeat([]byte{0x28}, 32)), r.grp); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db := mustOpen(t, dir)
	defer mustClose(t, db)
	for _, c := range []struct {
		id   wire.LogicalID
		dir  engine.Direction
		want string
	}{
		{one, engine.DirectionIn, "bob/2"}, {two, engine.DirectionIn, ""}, {none, engine.DirectionIn, ""},
		{group, engine.DirectionIn, ""}, {discarded, engine.DirectionIn, ""}, {sent, engine.DirectionOut, ""},
	} {
		got, err := db.ActionTarget(ctx, conv, c.id, c.dir)
		if err != nil || !got.Found {
			t.Fatalf("entry %x: %+v, %v", c.id[:2], got, err)
		}
		if by := got.SentBy; (by == engine.Address{}) != (c.want == "") || (c.want != "" && by.String() != c.want) {
			t.Errorf("entry %x sent by %v after 0028, want %q", c.id[:2], by, c.want)
		}
	}
	var n int
	if err := db.sql.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'history_received_id_0028'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the migration's index is left (%d, %v), want it dropped", n, err)
	}
}
