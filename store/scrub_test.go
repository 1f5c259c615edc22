package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

// TestScrubRunsWithinItsDelay: a commit schedules the scrub, which empties
// the write-ahead log once its delay has passed, with no further commit
// and without Close; a profile whose delay has not passed still holds the
// commit in its log (what the scrub is for, and what would make this test
// pass without it).
func TestScrubRunsWithinItsDelay(t *testing.T) {
	ctx := context.Background()
	walSize := func(dir string) int64 {
		fi, err := os.Stat(filepath.Join(dir, "parley.db-wal"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	open := func(name string, delay time.Duration) (*DB, string) {
		dir := filepath.Join(t.TempDir(), name)
		mustCreate(t, dir).Close()
		db, err := Open(ctx, dir, testPassphrase, Options{ScrubDelay: delay})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Apply(ctx, engine.SetContact{Peer: engine.MustParseAddress("bob/1"), Name: "Bob"}); err != nil {
			t.Fatal(err)
		}
		return db, dir
	}
	_, held := open("held", time.Hour)
	if n := walSize(held); n == 0 {
		t.Fatal("a commit left an empty write-ahead log with the scrub an hour away; the test would not see a failure")
	}
	_, quick := open("quick", 20*time.Millisecond)
	deadline := time.Now().Add(20 * time.Second)
	for walSize(quick) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the write-ahead log still holds %d bytes 20 s after a commit with a 20 ms scrub delay", walSize(quick))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
