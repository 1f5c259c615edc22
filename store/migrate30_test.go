package store

import (
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// fixtureV30Group, fixtureV30Target and fixtureV30Action are the group, the
// target and the ID of the group action fixture 30 keeps a decision for.
var (
	fixtureV30Group  = wire.GroupID{0x30, 0x30}
	fixtureV30Target = wire.LogicalID{0x30, 0x31}
	fixtureV30Action = wire.LogicalID{0x30, 0x32}
)

// insertFixtureV30 is fixture 29 with a kept decision of a group's
// reaction waiting for its target, as a build with 0030 stores it.
func insertFixtureV30(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV29(t, db, s)
	from := engine.MustParseAddress(fixturePeer)
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: fixtureV30Target, Emoji: "+1", Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO kept_decision (sender, id, outcome, on_device, at, content, target, sealed_action, grp)
		VALUES (?, ?, 1, 'alice/2', 30, ?, ?, ?, ?)`, fixturePeer, fixtureV30Action[:], int64(wire.ContentReaction), fixtureV30Target[:],
		s.seal(kindKeptAction, messageKey(from, fixtureV30Action), body), fixtureV30Group[:]); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV30(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV29(t, db)
	ctx := context.Background()
	kept, err := db.KeptGroupActions(ctx, fixtureV30Group, fixtureV30Target)
	if err != nil || len(kept) != 1 || kept[0].ID != fixtureV30Action || kept[0].Group == nil || *kept[0].Group != fixtureV30Group ||
		kept[0].Content != wire.ContentReaction {
		t.Fatalf("fixture 30's kept group action: %+v, %v; want the reaction", kept, err)
	}
	// The one-to-one lookup by sender and target leaves a group's out.
	if one, err := db.KeptActions(ctx, engine.MustParseAddress(fixturePeer), fixtureV30Target); err != nil || len(one) != 0 {
		t.Fatalf("one-to-one kept actions of fixture 30's target: %+v, %v; want none", one, err)
	}
}
