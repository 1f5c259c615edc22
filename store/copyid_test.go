package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestCopyUnderAnOwnEntrysIDRefused: a sibling's sent copy planned under
// the ID of an own message this device sent (the engine's checks missed
// it) fails its plan with ErrCopyIDTaken, and nothing of it is stored:
// no finalized record that would make the sibling the message's author,
// the own entry unchanged, the staged row still there. Before the fix the
// history insert did nothing and the plan committed the copy's record.
func TestCopyUnderAnOwnEntrysIDRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	sibling := engine.MustParseAddress("alice/2")
	f.apply(t, sendPlan(t, sibling, logicalID(9), "to the sibling", 0))
	row := f.stage(t)
	p := receivePlan(row, sibling, 1, engine.CommitEffect{ID: idSent, Digest: sha256.Sum256([]byte("forged")),
		Arrived: planAt, At: planAt, Body: []byte("forged"), SentTo: &bob})
	if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrCopyIDTaken) {
		t.Fatalf("Apply of a copy under an own message's ID = %v, want %v", err, engine.ErrCopyIDTaken)
	}
	if s, err := f.db.Seen(ctx, sibling, idSent); err != nil || s.Pending || s.Finalized {
		t.Fatalf("Seen(%s, %x) = %+v, %v; want nothing", sibling, idSent[:4], s, err)
	}
	wantHistory(t, f, bob, engine.DirectionOut, "hello PLAINTEXT-MARKER-sent", engine.SentPending)
	wantStaged(t, f, 1)
}

// TestDecisionsLeaveOwnDevicesOut: the records of what this person's own
// devices sent (sent copies, decision frames) are newer and more than the
// catch-up's limit, yet Decisions returns every decision of a message
// from another person within it, and none of the own records. Before the
// fix the own records took the limit's room (the engine then skipped
// them), so the decisions past it were never caught up.
func TestDecisionsLeaveOwnDevicesOut(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	insert := func(sender engine.Address, id byte, outcome, reason, at int64) {
		t.Helper()
		lid := logicalID(id)
		if _, err := f.db.sql.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, ?, ?, ?, ?)",
			sender.String(), lid[:], outcome, reason, at, f.db.seal.seal(kindFinalizedDigest, messageKey(sender, lid), make([]byte, 32))); err != nil {
			t.Fatal(err)
		}
	}
	sibling := engine.MustParseAddress("alice/2")
	for i := range 10 {
		insert(sibling, byte(100+i), int64(engine.OutcomeCommitted), 0, int64(100+i))
	}
	insert(engine.MustParseAddress("alicex/1"), 99, int64(engine.OutcomeDiscarded), int64(engine.DiscardRejected), 99)
	for i := range 3 {
		insert(bob, byte(50+i), int64(engine.OutcomeDiscarded), int64(engine.DiscardRejected), int64(50+i))
	}
	made, err := f.db.Decisions(ctx, time.Unix(0, 0), 5)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range made {
		got = append(got, d.Sender.String())
	}
	if want := []string{"alicex/1", "bob/1", "bob/1", "bob/1"}; !slices.Equal(got, want) {
		t.Fatalf("Decisions = %v, want %v (every other person's decision, no own device's record)", got, want)
	}
}

// TestDecisionsLeaveOwnGroupMessagesOut: the catch-up's decisions leave
// out every record of an own device, its group message's (a file a
// person discarded here) as its one-to-one one's (a sent copy): no device
// tells a decision on its own account's message (the engine's tellLanes
// returns no lane for one, and a sibling refuses to keep one,
// ErrDecisionOwnMessage), so such a record would only take the limit's
// room from another person's decision. Before the fix an own device's
// group records were read and took that room; this test asserted the
// older meaning, that they were kept.
func TestDecisionsLeaveOwnGroupMessagesOut(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	sibling := engine.MustParseAddress("alice/2")
	group := wire.GroupID{0x77}
	insert := func(sender engine.Address, id byte, grp []byte, outcome engine.Outcome, reason engine.DiscardReason, at int64) {
		t.Helper()
		lid := logicalID(id)
		if _, err := f.db.sql.Exec("INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, grp) VALUES (?, ?, ?, ?, ?, ?, ?)",
			sender.String(), lid[:], int64(outcome), int64(reason), at, f.db.seal.seal(kindFinalizedDigest, messageKey(sender, lid), make([]byte, 32)), grp); err != nil {
			t.Fatal(err)
		}
	}
	// Another person's group message, older than the own records.
	insert(bob, 199, group[:], engine.OutcomeCommitted, engine.DiscardNone, 199)
	insert(sibling, 200, nil, engine.OutcomeCommitted, engine.DiscardNone, 200)
	insert(sibling, 201, group[:], engine.OutcomeDiscarded, engine.DiscardRejected, 201)
	insert(sibling, 202, group[:], engine.OutcomeCommitted, engine.DiscardNone, 202)
	made, err := f.db.Decisions(ctx, time.Unix(0, 199), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 || made[0].Sender != bob || made[0].ID != logicalID(199) || made[0].Group == nil || *made[0].Group != group {
		t.Fatalf("Decisions = %+v, want bob/1's group message alone (no own device's record, within the limit of one)", made)
	}
}

// TestFirstlessCopiesTakeNoLimit: alice/2's newest sent copy was edited
// and its first body is not held; an older one is adoptable. Read with a
// limit of one, SentCopiesFrom returns the adoptable copy and, apart from
// the limit, the edited one as a record of engine.ErrAdoptFirstBody.
// Before the fix the edited copy took the limit's one row, and the older
// copy was never read (nor adopted).
func TestFirstlessCopiesTakeNoLimit(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	from, conv := engine.MustParseAddress("alice/2"), engine.MustParseAddress("carol/3")
	edited, plain := wire.LogicalID{0x4a, 1}, wire.LogicalID{0x4a, 2}
	for _, c := range []struct {
		id wire.LogicalID
		at int64
	}{{edited, 30}, {plain, 20}} {
		if _, err := db.sql.ExecContext(ctx, "INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, 1, 0, ?, ?)",
			from.String(), c.id[:], c.at, db.seal.seal(kindFinalizedDigest, messageKey(from, c.id), bytes.Repeat([]byte{1}, 32))); err != nil {
			t.Fatal(err)
		}
		if _, err := db.sql.ExecContext(ctx, "INSERT INTO history (peer, direction, id, at, state, sealed_body, sent_by) VALUES (?, 2, ?, ?, 4, ?, ?)",
			conv.String(), c.id[:], c.at, db.seal.seal(kindHistoryBody, historyKey(conv, engine.DirectionOut, c.id), []byte("body")), from.String()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.sql.ExecContext(ctx, "INSERT INTO message_extra (peer, direction, id, edits) VALUES (?, 2, ?, 1)", conv.String(), edited[:]); err != nil {
		t.Fatal(err)
	}
	copies, err := db.SentCopiesFrom(ctx, from, time.Unix(0, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != 2 || copies[0].ID != plain || copies[0].Err != nil || string(copies[0].Body) != "body" ||
		copies[1].ID != edited || !errors.Is(copies[1].Err, engine.ErrAdoptFirstBody) {
		t.Fatalf("sent copies with a limit of one: %+v; want the plain copy, then the edited one reported", copies)
	}
}
