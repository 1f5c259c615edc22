package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestReaderBesideTheHolder: while a store holds the profile, OpenReader
// reads what the holder committed (also after the reader opened), refuses
// every write with ErrProfileOpen, and takes no lock. The holder's scrub
// does not wait for the reader's open read transaction: it reports the
// checkpoint blocked and succeeds once that transaction ended.
func TestReaderBesideTheHolder(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "profile")
	holder := mustCreate(t, dir)
	bob := engine.MustParseAddress("bob/1")
	if _, err := holder.Apply(ctx, engine.SetContact{Peer: bob, Name: "Bob"}); err != nil {
		t.Fatal(err)
	}

	if _, err := OpenReader(ctx, dir, []byte("wrong")); !errors.Is(err, engine.ErrWrongPassphrase) {
		t.Fatalf("reader with a wrong passphrase: %v, want ErrWrongPassphrase", err)
	}
	r, err := OpenReader(ctx, dir, testPassphrase)
	if err != nil {
		t.Fatalf("OpenReader beside the holder: %v", err)
	}
	defer r.Close()
	if got, err := r.Contacts(ctx); err != nil || got[bob] != "Bob" {
		t.Fatalf("reader's contacts %v, %v; want bob named Bob", got, err)
	}
	if _, err := r.Apply(ctx, engine.SetContact{Peer: bob, Name: "Robert"}); !errors.Is(err, engine.ErrProfileOpen) {
		t.Fatalf("a reader's write: %v, want ErrProfileOpen", err)
	}
	if _, err := r.Apply(ctx, engine.MarkPresented{Seq: 1}); !errors.Is(err, engine.ErrProfileOpen) {
		t.Fatalf("a reader's presentation mark: %v, want ErrProfileOpen", err)
	}

	// A read transaction held open (a page being read) while the holder
	// commits: the holder's scrub does not wait for it.
	rows, err := r.sql.QueryContext(ctx, "SELECT address FROM contact")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no contact row")
	}
	if _, err := holder.Apply(ctx, engine.SetContact{Peer: bob, Name: "Robert"}); err != nil {
		t.Fatalf("the holder's write beside a reader: %v", err)
	}
	if err := holder.Scrub(ctx); err == nil {
		t.Fatal("the scrub truncated the log under a reader's snapshot; want it reported blocked")
	}
	rows.Close()
	if err := holder.Scrub(ctx); err != nil {
		t.Fatalf("the scrub after the reader's transaction ended: %v", err)
	}
	if got, err := r.Contacts(ctx); err != nil || got[bob] != "Robert" {
		t.Fatalf("reader's contacts after the holder's change %v, %v; want Robert", got, err)
	}
	mustClose(t, r)
	// The reader held no lock, and closing it released nothing of the
	// holder's: a second writer is still refused.
	if _, err := Open(ctx, dir, testPassphrase, Options{}); !errors.Is(err, engine.ErrProfileOpen) {
		t.Fatalf("a second writer while the holder is open: %v, want ErrProfileOpen", err)
	}
}
