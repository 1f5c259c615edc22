package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var testArchive = [16]byte{0x34}

// importBatch is a batch of every record kind the store imports.
func importBatch() []wire.ArchiveRecord {
	reply := wire.LogicalID{1}
	var pin [identityKeySize]byte
	pin[0] = 7
	return []wire.ArchiveRecord{
		wire.ArchiveContact{Address: "carol/1", Name: "Carol"},
		wire.ArchivePin{Address: "carol/1", Identity: pin[:], PinnedAt: 3},
		wire.ArchiveBlocked{Address: "mallory/1", At: 4},
		wire.ArchiveAccepted{Address: "carol/1", At: 5},
		wire.ArchiveGroup{ID: wire.GroupID{9}, Name: "crew", CreatedAt: 6, Vouchers: "carol/1",
			Changes: []wire.ArchiveChange{{ID: wire.LogicalID{8}, Author: "carol/1", Generation: 1, At: 6, Frame: []byte{1, 2, 3}}}},
		wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{1}, At: 10, Body: []byte("hi"), SentBy: "carol/2"},
		wire.ArchiveMessage{Peer: "carol/1", Direction: 2, ID: wire.LogicalID{2}, At: 11, State: 2, Body: []byte("hello"),
			Extras: wire.ArchiveExtras{ReplyTo: &reply, Edits: 1}},
		wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{3}, At: 12, Extras: wire.ArchiveExtras{Deleted: true}},
		wire.ArchiveGroupMessage{Group: wire.GroupID{9}, Sender: "carol/1", ID: wire.LogicalID{4}, At: 13, Body: []byte("yo"),
			Extras: wire.ArchiveExtras{Action: 3}},
	}
}

func archivePlanCases() []planCase {
	ctx := context.Background()
	start := engine.ImportStart{Archive: testArchive, Next: 1, Total: 10, At: time.Unix(100, 0)}
	return []planCase{
		{
			name: "import-start",
			plan: func(t testing.TB, f *fixture) engine.Plan { return start },
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				s, ok, err := f.db.ImportState(ctx, testArchive)
				if err != nil || !ok || s != (engine.ImportState{Next: 1, Total: 10}) {
					t.Errorf("ImportState = %+v, %v, %v; want at record 1 of 10", s, ok, err)
				}
			},
		},
		{
			name:  "import-records",
			setup: func(t testing.TB, f *fixture) { f.apply(t, start) },
			plan: func(t testing.TB, f *fixture) engine.Plan {
				return engine.ImportRecords{Archive: testArchive, From: 1, To: 10, Total: 10, Records: importBatch()}
			},
			check: func(t *testing.T, f *fixture, r engine.Receipt) {
				s, ok, err := f.db.ImportState(ctx, testArchive)
				if err != nil || !ok || s != (engine.ImportState{Next: 10, Total: 10, Done: true, Messages: 4}) {
					t.Errorf("ImportState = %+v, %v, %v; want done with 4 messages", s, ok, err)
				}
			},
		},
	}
}

// TestArchiveRecordsRoundTrip: what one profile imports, another profile's
// backup read model gives back, in the archive's order.
func TestArchiveRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	f.apply(t, engine.ImportStart{Archive: testArchive, Next: 1, Total: 10, At: time.Unix(100, 0)})
	f.apply(t, engine.ImportRecords{Archive: testArchive, From: 1, To: 10, Total: 10, Records: importBatch()})
	var got []wire.ArchiveRecord
	if err := f.db.ArchiveRecords(ctx, func(r wire.ArchiveRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := importBatch(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ArchiveRecords:\n got %+v\nwant %+v", got, want)
	}
	h, err := f.db.History(ctx, engine.MustParseAddress("carol/1"), 0, 10)
	if err != nil || len(h) != 3 || string(h[1].Body) != "hello" || h[1].Edits != 1 || h[1].ReplyTo == nil || !h[0].Deleted {
		t.Fatalf("History = %+v, %v; want the three messages with their extras", h, err)
	}
	g, err := f.db.Group(ctx, wire.GroupID{9})
	if err != nil || g.Name != "crew" {
		t.Fatalf("Group = %+v, %v", g, err)
	}
	// The device that sent a received entry (record kind 11) is the
	// entry's, the one that edits or deletes it; one the archive did not
	// name names nobody.
	for id, want := range map[wire.LogicalID]string{{1}: "carol/2", {3}: ""} {
		at, err := f.db.ActionTarget(ctx, engine.MustParseAddress("carol/1"), id, engine.DirectionIn)
		if err != nil || !at.Found || (want == "") != (at.SentBy == engine.Address{}) || want != "" && at.SentBy.String() != want {
			t.Fatalf("ActionTarget of imported entry %x = %+v, %v; want it sent by %q", id[:1], at, err, want)
		}
	}
}

// TestImportIdempotent: records stored again (a restore over a partial
// import, its progress lost) leave one row each; a batch prepared from
// another progress is refused whole.
func TestImportIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	f.apply(t, engine.ImportStart{Archive: testArchive, Next: 1, Total: 19, At: time.Unix(100, 0)})
	recs := importBatch()
	f.apply(t, engine.ImportRecords{Archive: testArchive, From: 1, To: 10, Total: 19, Records: recs})
	before := f.state(t)
	if _, err := f.db.Apply(ctx, engine.ImportRecords{Archive: testArchive, From: 1, To: 10, Total: 19, Records: recs}); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a batch from a stale progress: %v, want ErrConflict", err)
	}
	if f.state(t) != before {
		t.Fatal("a refused batch changed the profile")
	}
	f.apply(t, engine.ImportRecords{Archive: testArchive, From: 10, To: 19, Total: 19, Records: recs})
	s, _, err := f.db.ImportState(ctx, testArchive)
	if err != nil || s != (engine.ImportState{Next: 19, Total: 19, Done: true, Messages: 4}) {
		t.Fatalf("ImportState = %+v, %v; want done, 4 messages stored once", s, err)
	}
	var n int
	if err := f.db.sql.QueryRow("SELECT count(*) FROM history").Scan(&n); err != nil || n != 3 {
		t.Fatalf("history rows = %d, %v; want 3", n, err)
	}
	if _, err := f.db.Apply(ctx, engine.ImportRecords{Archive: testArchive, From: 19, To: 19, Total: 19}); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a batch after done: %v, want ErrConflict", err)
	}
}

func TestImportValidation(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	for name, p := range map[string]engine.Plan{
		"start past total": engine.ImportStart{Archive: testArchive, Next: 3, Total: 2, At: time.Unix(1, 0)},
		"start no time":    engine.ImportStart{Archive: testArchive, Next: 1, Total: 2},
		"count":            engine.ImportRecords{Archive: testArchive, From: 1, To: 3, Total: 5, Records: importBatch()[:1]},
		"past total":       engine.ImportRecords{Archive: testArchive, From: 1, To: 2, Total: 1, Records: importBatch()[:1]},
		"account":          engine.ImportRecords{Archive: testArchive, From: 1, To: 2, Total: 5, Records: []wire.ArchiveRecord{wire.ArchiveAccount{}}},
		"bad pin":          engine.ImportRecords{Archive: testArchive, From: 1, To: 2, Total: 5, Records: []wire.ArchiveRecord{wire.ArchivePin{Address: "bob/1", Identity: []byte{1}}}},
		"bad address":      engine.ImportRecords{Archive: testArchive, From: 1, To: 2, Total: 5, Records: []wire.ArchiveRecord{wire.ArchiveBlocked{Address: "bob/01"}}},
	} {
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrConflict) && !errors.Is(err, engine.ErrInvalidAddress) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
}

// TestImportRefusesAnotherPersonsDevice: a received message of an archive
// names a device of its peer's person, canonical; one naming another
// person's device or a non-canonical address refuses its batch, and the
// profile is unchanged. The same message naming its person's device is
// stored with it.
func TestImportRefusesAnotherPersonsDevice(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	f.apply(t, engine.ImportStart{Archive: testArchive, Next: 1, Total: 2, At: time.Unix(100, 0)})
	before := f.state(t)
	for name, by := range map[string]string{"another person": "dave/1", "not canonical": "carol/02"} {
		p := engine.ImportRecords{Archive: testArchive, From: 1, To: 2, Total: 2, Records: []wire.ArchiveRecord{
			wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{1}, At: 10, SentBy: by}}}
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
		if f.state(t) != before {
			t.Fatalf("%s: a refused batch changed the profile", name)
		}
	}
	f.apply(t, engine.ImportRecords{Archive: testArchive, From: 1, To: 2, Total: 2, Records: []wire.ArchiveRecord{
		wire.ArchiveMessage{Peer: "carol/1", Direction: 1, ID: wire.LogicalID{1}, At: 10, SentBy: "carol/2"}}})
	at, err := f.db.ActionTarget(ctx, engine.MustParseAddress("carol/1"), wire.LogicalID{1}, engine.DirectionIn)
	if err != nil || !at.Found || at.SentBy.String() != "carol/2" {
		t.Fatalf("ActionTarget = %+v, %v; want the entry sent by carol/2", at, err)
	}
}
