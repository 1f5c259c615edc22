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

// fixtureV32ID is the commit fixture 32 holds contradicted: finalized at
// 5, a sibling's discard of it heard at 7, with no decision lane.
var fixtureV32ID = wire.LogicalID{0x32}

// insertFixtureV32 is fixture 31 with a commit of the fixture peer's
// message that a sibling's discard contradicted, as a build with 0032
// stores it.
func insertFixtureV32(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV31(t, db, s)
	from := engine.MustParseAddress(fixturePeer)
	if _, err := db.Exec(`INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, content, arrived, contradicted)
		VALUES (?, ?, 1, 0, 5, ?, 1, 4, 7)`, fixturePeer, fixtureV32ID[:],
		s.seal(kindFinalizedDigest, messageKey(from, fixtureV32ID), bytes.Repeat([]byte{0x32}, 32))); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV32(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV31(t, db)
	made, err := db.Decisions(context.Background(), time.Unix(0, 21), 100)
	if err != nil {
		t.Fatal(err)
	}
	var got, before *engine.MadeDecision
	for i := range made {
		switch made[i].ID {
		case fixtureV32ID:
			got = &made[i]
		case fixtureV25ID:
			// A commit stored before 0032: no discard heard marks it.
			before = &made[i]
		case fixtureV29Decided:
			if made[i].Contradicted {
				t.Fatalf("fixture 29's discard reads as contradicted: %+v", made[i])
			}
		}
	}
	if got == nil || !got.Contradicted || got.Outcome != engine.OutcomeCommitted {
		t.Fatalf("fixture 32's commit in the decisions since 21: %+v; want it, contradicted", got)
	}
	if before == nil || before.Contradicted || before.Outcome != engine.OutcomeCommitted {
		t.Fatalf("fixture 25's commit in the decisions since 21: %+v; want it, not contradicted", before)
	}
}
