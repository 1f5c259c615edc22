package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var linkArchive = [16]byte{0x24}

func stagedRecord(id byte, body string) wire.ArchiveStaged {
	mid := wire.LogicalID{id}
	return wire.ArchiveStaged{Sender: "carol/1", ID: mid, ReceivedAt: 20, Digest: [32]byte{id}, Frame: frameOf(nil, mid, body)}
}

func linkPlanCases() []planCase {
	ctx := context.Background()
	start := engine.ImportStart{Archive: linkArchive, Next: 0, Total: 3, At: time.Unix(100, 0), Source: []byte("where and how")}
	return []planCase{
		{
			name: "link-cut",
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.LinkCut{Device: 2, At: time.Unix(50, 0), History: engine.HistorySince, Since: time.Unix(40, 0)}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				c, ok, err := f.db.LinkCut(ctx, 2)
				if err != nil || !ok || c.History != engine.HistorySince || !c.Since.Equal(time.Unix(40, 0)) || !c.At.Equal(time.Unix(50, 0)) {
					t.Errorf("LinkCut = %+v, %v, %v", c, ok, err)
				}
			},
		},
		{
			name: "import-start-linked",
			plan: func(t testing.TB, f *fixture) engine.Plan { return start },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				a, src, ok, err := f.db.PendingLinkImport(ctx)
				if err != nil || !ok || a != linkArchive || string(src) != "where and how" {
					t.Errorf("PendingLinkImport = %x, %q, %v, %v", a, src, ok, err)
				}
			},
		},
		{
			name:  "import-records-staged",
			setup: func(t testing.TB, f *fixture) { f.apply(t, start) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				// Three records of which the import keeps two.
				return engine.ImportRecords{Archive: linkArchive, From: 0, To: 3, Total: 3, Records: []wire.ArchiveRecord{
					wire.ArchiveMessage{Peer: "carol/1", Direction: 2, ID: wire.LogicalID{1}, At: 10, State: uint8(engine.SentCopied), Body: []byte("out")},
					stagedRecord(2, "undecided"),
				}}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				m, err := f.db.Inbound(ctx, engine.MustParseAddress("carol/1"), wire.LogicalID{2})
				if err != nil || string(m.Body) != "undecided" || m.Digest != ([32]byte{2}) {
					t.Errorf("the staged message: %+v, %v", m, err)
				}
				if _, _, ok, err := f.db.PendingLinkImport(ctx); ok || err != nil {
					t.Errorf("a done import still pending: %v, %v", ok, err)
				}
			},
		},
	}
}

// TestLinkArchiveRecords: a link's archive holds what a backup holds and
// every staged message, in the order they arrived; imported elsewhere the
// staged messages are pending there, once however often they are
// imported, and not at all where they were decided already.
func TestLinkArchiveRecords(t *testing.T) {
	ctx := context.Background()
	src := newFixture(t, false)
	src.apply(t, engine.ImportStart{Archive: testArchive, Next: 0, Total: 3, At: time.Unix(100, 0), Source: []byte("s")})
	staged := []wire.ArchiveRecord{stagedRecord(5, "first"), stagedRecord(6, "second")}
	src.apply(t, engine.ImportRecords{Archive: testArchive, From: 0, To: 3, Total: 3, Records: append([]wire.ArchiveRecord{
		wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{1}, At: 10, Body: []byte("hi")}}, staged...)})
	var got []wire.ArchiveRecord
	if err := src.db.LinkArchiveRecords(ctx, func(r wire.ArchiveRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ArchiveKind() != wire.ArchiveKindMessage || got[1].(wire.ArchiveStaged).ID != (wire.LogicalID{5}) ||
		got[2].(wire.ArchiveStaged).ID != (wire.LogicalID{6}) {
		t.Fatalf("LinkArchiveRecords: %+v", got)
	}
	var backup []wire.ArchiveRecord
	if err := src.db.ArchiveRecords(ctx, func(r wire.ArchiveRecord) error { backup = append(backup, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(backup) != 1 {
		t.Fatalf("a backup holds staged messages: %+v", backup)
	}

	dst := newFixture(t, false)
	// Message 6 was decided here already (a decision heard first).
	dst.apply(t, engine.ImportStart{Archive: linkArchive, Next: 0, Total: 3, At: time.Unix(100, 0), Source: []byte("s")})
	if _, err := dst.db.sql.ExecContext(ctx, sqlInsertFinalized, "carol/1", []byte{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		int64(engine.OutcomeCommitted), 0, int64(1), dst.db.seal.seal(kindFinalizedDigest, messageKey(engine.MustParseAddress("carol/1"), wire.LogicalID{6}), make([]byte, 32)), nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	dst.apply(t, engine.ImportRecords{Archive: linkArchive, From: 0, To: 3, Total: 3, Records: got})
	// The same archive again, as a retried link would: nothing doubles.
	again := [16]byte{0x25}
	dst.apply(t, engine.ImportStart{Archive: again, Next: 0, Total: 3, At: time.Unix(100, 0), Source: []byte("s")})
	dst.apply(t, engine.ImportRecords{Archive: again, From: 0, To: 3, Total: 3, Records: got})
	if s, _, _ := dst.db.ImportState(ctx, again); s.Messages != 0 {
		t.Errorf("the second import stored %d messages, want 0", s.Messages)
	}
	pending, err := dst.db.PendingInbound(ctx, engine.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != (wire.LogicalID{5}) {
		t.Fatalf("pending after the imports: %+v, want message 5 alone", pending)
	}
	// A batch holding more records than its range is refused.
	_, err = dst.db.Apply(ctx, engine.ImportRecords{Archive: again, From: 0, To: 1, Total: 3, Records: got})
	if !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a batch of 3 records over a range of 1: %v", err)
	}
}

// TestImportStagedAction: a received reaction still undecided when the
// link's archive was written waits for its target on the linked device as
// it waited on the first: it is marked as an action (HeldActions finds
// it), which a plain staged message is not.
func TestImportStagedAction(t *testing.T) {
	ctx := context.Background()
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: wire.LogicalID{9}, Emoji: "👍"})
	if err != nil {
		t.Fatal(err)
	}
	mid := wire.LogicalID{7}
	frame, err := wire.EncodeContentMessage(wire.ContentMessage{ID: mid, Content: wire.ContentReaction, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	reaction := wire.ArchiveStaged{Sender: "carol/1", ID: mid, ReceivedAt: 20, Digest: [32]byte{7}, Frame: frame}
	f := newFixture(t, false)
	f.apply(t, engine.ImportStart{Archive: linkArchive, Next: 0, Total: 2, At: time.Unix(100, 0), Source: []byte("s")})
	f.apply(t, engine.ImportRecords{Archive: linkArchive, From: 0, To: 2, Total: 2, Records: []wire.ArchiveRecord{stagedRecord(6, "plain"), reaction}})
	held, err := f.db.HeldActions(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[0].ID != mid {
		t.Fatalf("held actions after the import: %+v, want the reaction alone", held)
	}
}

// TestImportedMarked: an entry an import writes reads as imported, with
// when the import started and whether it was a link's history or a
// restore; an entry that was there before the import keeps its row and
// reads as written here. Part way, the import's progress reads as
// unfinished, with its counts.
func TestImportedMarked(t *testing.T) {
	ctx := context.Background()
	carol := engine.MustParseAddress("carol/1")
	group := wire.GroupID{0x23}
	for _, link := range []bool{true, false} {
		f := newFixture(t, false)
		start := engine.ImportStart{Archive: linkArchive, Next: 0, Total: 4, At: time.Unix(100, 0)}
		if link {
			start.Source = []byte("where and how")
		}
		f.apply(t, start)
		// Message 2 came over a session before the batch that holds it.
		f.apply(t, engine.ImportRecords{Archive: linkArchive, From: 0, To: 1, Total: 4, Records: []wire.ArchiveRecord{
			wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{2}, At: 20, Body: []byte("live")}}})
		prog, ok, err := f.db.UnfinishedImportProgress(ctx)
		if want := (engine.ImportProgress{Next: 1, Total: 4, Messages: 1, Link: link, Started: time.Unix(100, 0)}); err != nil || !ok ||
			prog.Next != want.Next || prog.Total != want.Total || prog.Messages != want.Messages || prog.Link != want.Link || !prog.Started.Equal(want.Started) {
			t.Errorf("link %v: progress part way %+v, %v, %v; want %+v", link, prog, ok, err, want)
		}
		if _, err := f.db.sql.ExecContext(ctx, "UPDATE history SET imported = NULL"); err != nil {
			t.Fatal(err)
		}
		f.apply(t, engine.ImportRecords{Archive: linkArchive, From: 1, To: 4, Total: 4, Records: []wire.ArchiveRecord{
			wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{1}, At: 10, Body: []byte("before")},
			wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{2}, At: 20, Body: []byte("again")},
			wire.ArchiveGroup{ID: group, Name: "g", CreatedAt: 5},
		}})
		if prog, ok, err := f.db.UnfinishedImportProgress(ctx); ok || err != nil {
			t.Errorf("link %v: a done import reads as unfinished: %+v, %v", link, prog, err)
		}
		page, err := f.db.History(ctx, carol, 0, 10)
		if err != nil || len(page) != 2 {
			t.Fatalf("history %+v, %v; want two entries", page, err)
		}
		for _, e := range page {
			switch want := e.ID == (wire.LogicalID{1}); {
			case want && (e.Imported == nil || e.Imported.Link != link || !e.Imported.At.Equal(time.Unix(100, 0))):
				t.Errorf("link %v: imported entry reads %+v, want imported at 100 s, link %v", link, e.Imported, link)
			case !want && e.Imported != nil:
				t.Errorf("link %v: the entry there before the import reads as imported: %+v", link, e.Imported)
			}
		}
		one, ok, err := f.db.HistoryEntry(ctx, carol, engine.DirectionIn, wire.LogicalID{1})
		if err != nil || !ok || one.Imported == nil || one.Imported.Link != link {
			t.Errorf("link %v: HistoryEntry %+v, %v, %v; want it imported", link, one.Imported, ok, err)
		}
	}
}
