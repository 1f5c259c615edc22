package store

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// insertFixtureV27 is fixture 26 with its sent copy (fixture 24's) naming
// the sibling it came from, as a build with 0027 stores it, and another
// copy's entry naming its own, and a received entry naming the peer's
// device that sent it (written on receipt).
func insertFixtureV27(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV26(t, db, s)
	if _, err := db.Exec("UPDATE history SET sent_by = 'alice/2' WHERE direction = 2 AND state = 4 AND id = ?", fixtureV24ID[:]); err != nil {
		t.Fatal(err)
	}
	id := wire.LogicalID{0x28, 0x28}
	conv := engine.MustParseAddress("dave/1")
	if _, err := db.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES (?, 2, ?, 28, 4, ?, 'alice/2')",
		conv.String(), id[:], s.seal(kindHistoryBody, historyKey(conv, engine.DirectionOut, id), []byte("copy 28"))); err != nil {
		t.Fatal(err)
	}
	in := wire.LogicalID{0x28, 0x29}
	if _, err := db.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES (?, 1, ?, 28, 0, ?, 'dave/2')",
		conv.String(), in[:], s.seal(kindHistoryBody, historyKey(conv, engine.DirectionIn, in), []byte("received 28"))); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV27(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV26(t, db)
	got, err := db.ActionTarget(context.Background(), engine.MustParseAddress("dave/1"), wire.LogicalID{0x28, 0x28}, engine.DirectionOut)
	if err != nil || !got.Found || got.SentBy.String() != "alice/2" {
		t.Fatalf("fixture 27's copy: %+v, %v; want it copied from alice/2", got, err)
	}
	got, err = db.ActionTarget(context.Background(), engine.MustParseAddress("dave/1"), wire.LogicalID{0x28, 0x29}, engine.DirectionIn)
	if err != nil || !got.Found || got.SentBy.String() != "dave/2" {
		t.Fatalf("fixture 27's received entry: %+v, %v; want it sent by dave/2", got, err)
	}
}

// TestMigration27NamesCopiesAuthors builds a profile of alice/1 at version
// 26 holding three sent copies' entries: one of an ID only alice/2 has a
// committed record of (a peer, bob/1, has one too: a peer is no own
// device), one of an ID both alice/2 and alice/3 have (a sibling reusing
// another's ID), and one nobody has a record of. Opening it (migration
// 0027) names alice/2 on the first and nobody on the other two.
func TestMigration27NamesCopiesAuthors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, raw := profileAt(t, dir, 26)
	if _, err := raw.Exec(sqlPutMeta, metaAddress, []byte("alice/1")); err != nil {
		t.Fatal(err)
	}
	conv := engine.MustParseAddress("bob/1")
	one, two, none := wire.LogicalID{0x28, 1}, wire.LogicalID{0x28, 2}, wire.LogicalID{0x28, 3}
	for _, id := range []wire.LogicalID{one, two, none} {
		if _, err := raw.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES (?, 2, ?, 28, 4, ?)",
			conv.String(), id[:], s.seal(kindHistoryBody, historyKey(conv, engine.DirectionOut, id), []byte("copy"))); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		sender string
		id     wire.LogicalID
	}{{"alice/2", one}, {"bob/1", one}, {"alice/2", two}, {"alice/3", two}} {
		from := engine.MustParseAddress(r.sender)
		if _, err := raw.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, 1, 0, 28, ?)",
			r.sender, r.id[:], s.seal(kindFinalizedDigest, messageKey(from, r.id), bytes.Repeat([]byte{0x28}, 32))); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db := mustOpen(t, dir)
	defer mustClose(t, db)
	for _, c := range []struct {
		id   wire.LogicalID
		want string
	}{{one, "alice/2"}, {two, ""}, {none, ""}} {
		got, err := db.ActionTarget(ctx, conv, c.id, engine.DirectionOut)
		if err != nil || !got.Found {
			t.Fatalf("entry %x: %+v, %v", c.id[:2], got, err)
		}
		if from := got.SentBy; (from == engine.Address{}) != (c.want == "") || (c.want != "" && from.String() != c.want) {
			t.Errorf("entry %x copied from %v after 0027, want %q", c.id[:2], from, c.want)
		}
	}
}
