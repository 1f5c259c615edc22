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
		{"INSERT INTO grp (id, name, created_at) VALUES (?, 'pair', 1)", []any{fixtureGroup[:]}},
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
	// The first entry: fixture 23 adds an imported one after it.
	h, err := db.GroupHistory(context.Background(), fixtureGroup, 0, 10)
	if err != nil || len(h) < 1 || string(h[0].Body) != "to the pair" {
		t.Fatalf("group history %+v, %v", h, err)
	}
	if _, ok, err := db.LaneGroup(context.Background(), engine.MustParseAddress(fixturePeer), wire.LogicalID{0x92}); err != nil || !ok {
		t.Fatalf("lane: %v, %v; want the fixture's lane", ok, err)
	}
}

var (
	fixtureStartedGroup   = wire.GroupID{0xa0}
	fixtureCompactedGroup = wire.GroupID{0xb0}
)

// insertFixtureV13 is fixture 12 with a group started from the change that
// added this device (a signed change) and a compacted group: a snapshot at
// generation 5, its vouchers, and one signed change past it.
func insertFixtureV13(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV12(t, db, s)
	signed := func(id byte, g wire.GroupID, gen uint64, ops []wire.RosterChange, ms []wire.RosterMember) []byte {
		b, err := wire.EncodeSignedRoster(wire.SignedRoster{Roster: wire.Roster{ID: wire.LogicalID{id}, Group: g, Generation: gen,
			Name: "crew", Changes: ops, Members: ms}, Author: "bob/1"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	start := signed(0xa1, fixtureStartedGroup, 3, []wire.RosterChange{{Op: wire.RosterAdd, Address: "alice/1"}},
		[]wire.RosterMember{{Address: "alice/1"}, {Address: "bob/1", Admin: true}})
	snap, err := wire.EncodeRoster(wire.Roster{Group: fixtureCompactedGroup, Generation: 5, Name: "crew",
		Members: []wire.RosterMember{{Address: "alice/1"}, {Address: "bob/1", Admin: true}}})
	if err != nil {
		t.Fatal(err)
	}
	later := signed(0xb6, fixtureCompactedGroup, 6, []wire.RosterChange{{Op: wire.RosterAdd, Address: "carol/1"}},
		[]wire.RosterMember{{Address: "alice/1"}, {Address: "bob/1", Admin: true}, {Address: "carol/1"}})
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO grp (id, name, created_at, start_change) VALUES (?, 'crew', 1, ?)", []any{fixtureStartedGroup[:], start[2:18]}},
		{"INSERT INTO group_change VALUES (?, ?, 'bob/1', 3, ?, 1)", []any{fixtureStartedGroup[:], start[2:18], start}},
		{"INSERT INTO grp (id, name, created_at, snapshot, vouchers) VALUES (?, 'crew', 1, ?, 'bob/1')", []any{fixtureCompactedGroup[:], snap}},
		{"INSERT INTO group_change VALUES (?, ?, 'bob/1', 6, ?, 1)", []any{fixtureCompactedGroup[:], later[2:18], later}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV13(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV12(t, db)
	ctx := context.Background()
	g, err := db.Group(ctx, fixtureStartedGroup)
	if err != nil || g.Start.Change != (wire.LogicalID{0xa1}) || g.Roster.Generation != 3 || !g.Roster.IsAdmin("bob/1") || !g.Roster.Has("alice/1") {
		t.Fatalf("started group %+v, %v; want generation 3 from change a1", g, err)
	}
	g, err = db.Group(ctx, fixtureCompactedGroup)
	if err != nil || g.Start.Snapshot == nil || g.Start.Snapshot.Generation != 5 || g.Roster.Generation != 6 || !g.Roster.Has("carol/1") {
		t.Fatalf("compacted group %+v, %v; want the snapshot at 5 and carol added at 6", g, err)
	}
	if len(g.Start.Vouchers) != 1 || g.Start.Vouchers[0] != "bob/1" {
		t.Fatalf("vouchers %v, want bob/1", g.Start.Vouchers)
	}
}

// insertFixtureV16 is fixture 15 with the group message of fixture 8
// edited once (its original kept as version 0) and a reaction of bob's.
func insertFixtureV16(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV15(t, db, s)
	id := wire.LogicalID{0x92}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO group_extra (grp, sender, id, action, reply_to, edits, deleted) VALUES (?, 'alice/1', ?, 0, NULL, 1, 0)", []any{fixtureGroup[:], id[:]}},
		{"INSERT INTO group_version VALUES (?, 'alice/1', ?, 0, 20, ?)", []any{fixtureGroup[:], id[:],
			s.seal(kindGroupVersion, groupVersionKey(fixtureGroup, "alice/1", id, 0), []byte("first"))}},
		{"INSERT INTO group_reaction (grp, sender, id, reactor, at, sealed_emoji) VALUES (?, 'alice/1', ?, ?, 21, ?)", []any{fixtureGroup[:], id[:], fixturePeer,
			s.seal(kindGroupReaction, groupReactionKey(fixtureGroup, "alice/1", id, fixturePeer), []byte("\U0001F44D"))}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

func checkFixtureV16(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV15(t, db)
	ctx := context.Background()
	// The first entry: fixture 23 adds an imported one after it.
	h, err := db.GroupHistory(ctx, fixtureGroup, 0, 10)
	if err != nil || len(h) < 1 || h[0].Edits != 1 || len(h[0].Reactions) != 1 || h[0].Reactions[0].Emoji != "\U0001F44D" {
		t.Fatalf("group history %+v, %v; want the message edited once with bob's reaction", h, err)
	}
	vs, err := db.GroupMessageVersions(ctx, fixtureGroup, engine.MustParseAddress("alice/1"), wire.LogicalID{0x92})
	if err != nil || len(vs) != 1 || string(vs[0].Body) != "first" {
		t.Fatalf("versions %+v, %v; want the original", vs, err)
	}
}

// insertFixtureV18 is fixture 17 with alice's removal (number 3) of her
// reaction to the group message of fixture 8, kept as a removed row.
func insertFixtureV18(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV17(t, db, s)
	id := wire.LogicalID{0x92}
	if _, err := db.Exec("INSERT INTO group_reaction VALUES (?, 'alice/1', ?, 'alice/1', 22, ?, 3, 1)", fixtureGroup[:], id[:],
		s.seal(kindGroupReaction, groupReactionKey(fixtureGroup, "alice/1", id, "alice/1"), nil)); err != nil {
		t.Fatalf("insert a removed reaction: %v", err)
	}
}

// checkFixtureV18: the reactions of before 0018 are number 0, a removal
// is not shown and keeps its number.
func checkFixtureV18(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV17(t, db)
	ctx := context.Background()
	alice, bob := engine.MustParseAddress("alice/1"), engine.MustParseAddress(fixturePeer)
	id := wire.LogicalID{0x92}
	if n, ok, err := db.GroupReactionNumber(ctx, fixtureGroup, alice, id, alice); err != nil || !ok || n != 3 {
		t.Fatalf("alice's removal: number %d, %v, %v; want 3", n, ok, err)
	}
	if n, ok, err := db.GroupReactionNumber(ctx, fixtureGroup, alice, id, bob); err != nil || !ok || n != 0 {
		t.Fatalf("bob's reaction from before 0018: number %d, %v, %v; want 0", n, ok, err)
	}
	var target wire.LogicalID
	copy(target[:], fixtureID)
	if n, ok, err := db.ReactionNumber(ctx, bob, engine.DirectionOut, target, bob); err != nil || !ok || n != 0 {
		t.Fatalf("bob's reaction from before 0018: number %d, %v, %v; want 0", n, ok, err)
	}
}
