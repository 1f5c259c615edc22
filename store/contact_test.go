package store

import (
	"context"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestContacts: a name is sealed in the profile, replaced, forgotten; a
// name that would drive the terminal is refused and changes nothing.
func TestContacts(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	bob := engine.MustParseAddress("bob/1")
	for _, name := range []string{"Bob", "Bobby Tables"} {
		if _, err := f.db.Apply(ctx, engine.SetContact{Peer: bob, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.db.Contacts(ctx); err != nil || got[bob] != "Bobby Tables" || len(got) != 1 {
		t.Fatalf("contacts %v, %v", got, err)
	}
	for _, bad := range []string{"evil\x1b[2J", "over\u202ereversed", " padded"} {
		if _, err := f.db.Apply(ctx, engine.SetContact{Peer: bob, Name: bad}); !errors.Is(err, engine.ErrInvalidContactName) {
			t.Fatalf("name %q: %v, want ErrInvalidContactName", bad, err)
		}
	}
	if got, _ := f.db.Contacts(ctx); got[bob] != "Bobby Tables" {
		t.Fatalf("a refused name changed the contact: %v", got)
	}
	if _, err := f.db.Apply(ctx, engine.SetContact{Peer: bob}); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.db.Contacts(ctx); len(got) != 0 {
		t.Fatalf("a forgotten name stayed: %v", got)
	}
}
