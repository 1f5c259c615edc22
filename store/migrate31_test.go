package store

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// fixtureV31ID is the group message of a former member (dave/1, in no
// roster) that fixture 31 holds discarded.
var fixtureV31ID = wire.LogicalID{0x31}

// insertFixtureV31 is fixture 30 with a group text of dave/1, who is in
// no roster, discarded here by the person.
func insertFixtureV31(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV30(t, db, s)
	dave := engine.MustParseAddress("dave/1")
	if _, err := db.Exec(`INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, grp, content, arrived)
		VALUES ('dave/1', ?, 2, 4, 1, ?, ?, 1, 1)`, fixtureV31ID[:],
		s.seal(kindFinalizedDigest, messageKey(dave, fixtureV31ID), bytes.Repeat([]byte{0x31}, 32)), fixtureGroup[:]); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV31(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV30(t, db)
	ctx := context.Background()
	if got, err := db.GroupRecordSenders(ctx, fixtureGroup, fixtureV31ID, 10); err != nil || len(got) != 1 || got[0].String() != "dave/1" {
		t.Fatalf("senders of fixture 31's group record: %v, %v; want dave/1", got, err)
	}
	if got, err := db.GroupRecordSenders(ctx, fixtureGroup, fixtureV25ID, 10); err != nil || len(got) != 1 || got[0].String() != fixturePeer {
		t.Fatalf("senders of fixture 25's group record: %v, %v; want %s", got, err, fixturePeer)
	}
	if got, err := db.GroupRecordSenders(ctx, fixtureV30Group, fixtureV31ID, 10); err != nil || len(got) != 0 {
		t.Fatalf("senders of fixture 31's ID in another group: %v, %v; want none", got, err)
	}
}
