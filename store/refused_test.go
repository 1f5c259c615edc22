package store

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// insertFixtureV9 is fixture 8 with a one-time prekey bob/7 refused.
func insertFixtureV9(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV8(t, db, s)
	if _, err := db.Exec("INSERT INTO refused_one_time_prekey (peer, key_id, refused_at) VALUES (?, ?, ?)", fixturePeer, 42, 1000); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV9(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV8(t, db)
	got, err := db.refusedOneTime(context.Background(), engine.MustParseAddress(fixturePeer))
	if err != nil || !slices.Equal(got, []uint32{42}) {
		t.Fatalf("refused one-time prekeys %v, %v; want [42]", got, err)
	}
}
