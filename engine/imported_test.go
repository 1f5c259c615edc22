package engine_test

import (
	"bytes"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestRestoredHistoryImported: what a restore's import stores reads as
// imported, from a restore, in the history and in the trace; a message the
// device receives itself afterwards does not.
func TestRestoredHistoryImported(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	before := bob.send(alice, "from before")
	alice.sync()
	alice.commitAll()

	var backup bytes.Buffer
	if _, err := alice.c.Backup(w.ctx, &backup, archivePass, testArchiveKDF, nil); err != nil {
		t.Fatal(err)
	}
	chk, err := engine.CheckArchive(bytes.NewReader(backup.Bytes()), archivePass, testArchiveKDF)
	if err != nil {
		t.Fatal(err)
	}
	started := w.clock.Now()
	if _, err := carol.st.Apply(w.ctx, engine.ImportStart{Archive: chk.ID, Next: 1, Total: chk.End.Records, At: started}); err != nil {
		t.Fatal(err)
	}
	ar, err := engine.OpenArchive(bytes.NewReader(backup.Bytes()), archivePass, testArchiveKDF)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ImportArchive(w.ctx, carol.st, ar, 0, nil); err != nil {
		t.Fatal(err)
	}
	after := bob.send(carol, "since")
	carol.sync()
	carol.commitAll()

	h, err := carol.c.History(w.ctx, bob.addr, 0, 10)
	if err != nil || len(h) != 2 {
		t.Fatalf("carol's history with bob: %+v, %v; want two entries", h, err)
	}
	for _, e := range h {
		switch e.ID {
		case before:
			if e.Imported == nil || e.Imported.Link || !e.Imported.At.Equal(started) {
				t.Errorf("the restored message reads %+v, want imported by a restore at %v", e.Imported, started)
			}
		case after:
			if e.Imported != nil {
				t.Errorf("a message received here reads as imported: %+v", e.Imported)
			}
		}
	}
	tr, err := carol.c.Trace(w.ctx, bob.addr, before, engine.DirectionIn)
	if err != nil || tr.Imported == nil || tr.Imported.Link {
		t.Fatalf("trace of the restored message: %+v, %v; want it imported from a restore", tr, err)
	}
	if p, ok, err := carol.c.UnfinishedImportProgress(w.ctx); ok || err != nil {
		t.Errorf("a finished import reads as unfinished: %+v, %v", p, err)
	}
}
