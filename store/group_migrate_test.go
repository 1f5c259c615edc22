package store

import (
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Fixtures for the reserved placeholders 0006 to 0008 (they change nothing)
// and for 0009, groups.
func init() {
	for v := 6; v <= 8; v++ {
		if _, ok := fixtures[v]; !ok {
			fixtures[v] = fixtures[5]
		}
	}
	fixtures[9] = struct {
		insert func(t *testing.T, db *sql.DB, s *sealer)
		check  func(t *testing.T, db *DB)
	}{insertFixtureV9, checkFixtureV9}
}

var fixtureGroup = wire.GroupID{0x99}

// insertFixtureV9 is fixture 5 with a group of two, one roster change, a
// pending lane and a group message.
func insertFixtureV9(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV5(t, db, s)
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

func checkFixtureV9(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV5(t, db)
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
