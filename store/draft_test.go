package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestDrafts: one draft per conversation, sealed, replaced, forgotten; a
// draft over the limit is refused and changes nothing.
func TestDrafts(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	bob, carol := engine.MustParseAddress("bob/1"), engine.MustParseAddress("carol/2")
	f.apply(t, engine.SetDraft{Peer: bob, Text: "first"})
	f.apply(t, engine.SetDraft{Peer: bob, Text: "half a thought\nand a second line 👍🏽"})
	f.apply(t, engine.SetDraft{Peer: carol, Text: "for carol"})
	got, err := f.db.Drafts(ctx)
	if err != nil || len(got) != 2 || got[bob] != "half a thought\nand a second line 👍🏽" || got[carol] != "for carol" {
		t.Fatalf("drafts %q, %v; want bob's second and carol's", got, err)
	}
	long := strings.Repeat("x", engine.MaxDraft+1)
	if _, err := f.db.Apply(ctx, engine.SetDraft{Peer: bob, Text: long}); !errors.Is(err, engine.ErrInvalidDraft) {
		t.Fatalf("a draft over %d bytes: %v, want ErrInvalidDraft", engine.MaxDraft, err)
	}
	f.apply(t, engine.SetDraft{Peer: bob})
	if got, _ := f.db.Drafts(ctx); len(got) != 1 || got[carol] != "for carol" {
		t.Fatalf("after forgetting bob's draft: %q, want carol's alone", got)
	}
	// A sealed draft moved to another conversation does not open.
	if _, err := f.db.sql.ExecContext(ctx, "INSERT INTO draft (address, sealed_text) SELECT 'dave/3', sealed_text FROM draft"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Drafts(ctx); !errors.Is(err, engine.ErrSealedRecord) {
		t.Fatalf("a draft moved to another row: %v, want ErrSealedRecord", err)
	}
}

// insertFixtureV7 is fixture 6 with a draft to the peer.
func insertFixtureV7(t *testing.T, db *sql.DB, s *sealer) {
	t.Helper()
	insertFixtureV6(t, db, s)
	if _, err := db.Exec("INSERT INTO draft (address, sealed_text) VALUES (?, ?)", fixturePeer,
		s.seal(kindDraft, []byte(fixturePeer), []byte("see you at"))); err != nil {
		t.Fatal(err)
	}
}

func checkFixtureV7(t *testing.T, db *DB) {
	t.Helper()
	checkFixtureV6(t, db)
	got, err := db.Drafts(context.Background())
	if err != nil || got[engine.MustParseAddress(fixturePeer)] != "see you at" || len(got) != 1 {
		t.Fatalf("drafts %q, %v; want bob/7's draft", got, err)
	}
}
