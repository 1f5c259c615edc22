package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// insertFixtureV10 is fixture 9 with the second attempt of fixture 5's
// message reported taken.
func insertFixtureV10(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV9(t, db, s)
	id := wire.LogicalID{0x5a}
	if _, err := db.Exec("UPDATE attempt SET taken_at = ? WHERE peer = ? AND id = ? AND n = 2", 5000, fixturePeer, id[:]); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV10(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV9(t, db)
	got, err := db.Attempts(context.Background(), engine.MustParseAddress(fixturePeer), wire.LogicalID{0x5a})
	if err != nil || len(got) != 2 || !got[0].TakenAt.IsZero() || !got[1].TakenAt.Equal(nsTime(5000)) {
		t.Fatalf("attempts %+v, %v; want the first never taken, the second taken at 5000 ns", got, err)
	}
}

// TestMarkTakenTwice: an attempt is marked taken once; a second report (or
// one for an attempt never logged) is refused with ErrNotPending and
// changes nothing.
func TestMarkTakenTwice(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	at := time.Unix(0, planAt.UnixNano())
	f.apply(t, engine.MarkTaken{Peer: bob, ID: idSent, N: 1, At: at})
	before := f.state(t)
	for _, p := range []engine.MarkTaken{
		{Peer: bob, ID: idSent, N: 1, At: at.Add(time.Second)},
		{Peer: bob, ID: idSent, N: 2, At: at},
	} {
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrNotPending) {
			t.Errorf("Apply(%+v) = %v, want ErrNotPending", p, err)
		}
	}
	if f.state(t) != before {
		t.Error("a refused MarkTaken changed the database")
	}
	got, err := f.db.Attempts(ctx, bob, idSent)
	if err != nil || len(got) != 1 || !got[0].TakenAt.Equal(at) {
		t.Fatalf("attempts %+v, %v; want one, taken at %v", got, err, at)
	}
}
