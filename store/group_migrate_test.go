package store

import (
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var fixtureGroup = wire.GroupID{0x99}

// insertFixtureV8 is fixture 7 with a group of two, one roster change, a
// pending lane and a group message.
func insertFixtureV8(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV7(t, db, s)
	frame, err := wire.EncodeRoster(wire.Roster{ID: wire.LogicalID{0x91}, Group: fixtureGroup, Generation: 1, Name: "pair",
		Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: fixturePeer}},
		Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: fixturePeer}}})
	if err != nil {
		t.Fatal(err)
	}
	id := wire.LogicalID{0x92}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO grp VALUES (?, 'pair', 1)", []any{fixtureGroup[:]}},
		{"INSERT INTO group_change VALUES (?, ?, 'alice/1', 1, ?, 1)", []any{fixtureGroup[:], frame[2:18], frame}},
		{"INSERT INTO group_lane VALUES (?, ?, ?, 1)", []any{fixturePeer, id[:], fixtureGroup[:]}},
		{"INSERT INTO group_history (grp, sender, id, at, sealed_body) VALUES (?, 'alice/1', ?, 5, ?)",
			[]any{fixtureGroup[:], id[:], s.seal(kindGroupBody, groupBodyKey(fixtureGroup, "alice/1", id), []byte("to the pair"))}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV8(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV7(t, db)
	g, err := db.Group(context.Background(), fixtureGroup)
	if err != nil || g.Roster.Generation != 1 || len(g.Roster.Members) != 2 || g.Name != "pair" {
		t.Fatalf("group %+v, %v; want pair at generation 1 with two members", g, err)
	}
	h, err := db.GroupHistory(context.Background(), fixtureGroup, 0, 10)
	if err != nil || len(h) != 1 || string(h[0].Body) != "to the pair" {
		t.Fatalf("group history %+v, %v", h, err)
	}
	if _, ok, err := db.LaneGroup(context.Background(), engine.MustParseAddress(fixturePeer), wire.LogicalID{0x92}); err != nil || !ok {
		t.Fatalf("lane: %v, %v; want the fixture's lane", ok, err)
	}
}
