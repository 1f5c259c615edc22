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

// contradictedAt reads finalized.contradicted of sender's message id
// (0032): its time, whether it is set, and whether the record exists.
func contradictedAt(t *testing.T, f *fixture, sender engine.Address, id wire.LogicalID) (int64, bool, bool) {
	t.Helper()
	var at sql.NullInt64
	err := f.db.sql.QueryRow("SELECT contradicted FROM finalized WHERE sender = ? AND id = ?", sender.String(), id[:]).Scan(&at)
	if err == sql.ErrNoRows {
		return 0, false, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return at.Int64, at.Valid, true
}

// TestContradictsMarksOnlyACommit applies a sibling's discard planned
// with DecisionEffect.Contradicts (0032) against three messages of bob's:
// one committed here, whose record it marks with the time heard (a second
// such discard, later, keeps the first time); one discarded here, whose
// record it leaves unmarked; one with no record, for which it writes
// none. The same plan from another person's device is refused.
func TestContradictsMarksOnlyACommit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withSession(t, f)
	sibling := engine.MustParseAddress("alice/2")
	f.apply(t, sendPlan(t, sibling, logicalID(9), "to the sibling", 0))
	committed, discarded, missing := logicalID(0x51), logicalID(0x52), logicalID(0x53)
	for _, r := range []struct {
		id      wire.LogicalID
		outcome engine.Outcome
		reason  engine.DiscardReason
	}{{committed, engine.OutcomeCommitted, engine.DiscardNone}, {discarded, engine.OutcomeDiscarded, engine.DiscardRejected}} {
		if _, err := f.db.sql.ExecContext(ctx, "INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) VALUES (?, ?, ?, ?, ?, ?)",
			bob.String(), r.id[:], int64(r.outcome), int64(r.reason), planAt.Add(-time.Minute).UnixNano(), f.db.seal.seal(kindFinalizedDigest, messageKey(bob, r.id), make([]byte, 32))); err != nil {
			t.Fatal(err)
		}
	}
	version := uint64(1)
	contradict := func(n byte, id wire.LogicalID, at time.Time) {
		t.Helper()
		f.apply(t, receivePlan(f.stage(t), sibling, version, engine.DecisionEffect{ID: wire.LogicalID{0xd0, n}, At: at, Sender: bob, Message: id,
			Outcome: engine.OutcomeDiscarded, Contradicts: true}))
		version++
	}
	contradict(1, committed, planAt)
	contradict(2, discarded, planAt)
	contradict(3, missing, planAt)
	contradict(4, committed, planAt.Add(time.Hour))
	// From another person's device, the plan is refused: only a sibling's
	// discard contradicts (the validator does not know this device).
	carol := engine.MustParseAddress("carol/2")
	f.apply(t, sendPlan(t, carol, logicalID(10), "to carol", 0))
	if _, err := f.db.Apply(ctx, receivePlan(f.stage(t), carol, 1, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 5}, At: planAt, Sender: bob,
		Message: discarded, Outcome: engine.OutcomeDiscarded, Contradicts: true})); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a contradicting discard from carol/2: %v; want refused (%v)", err, engine.ErrConflict)
	}
	if at, set, ok := contradictedAt(t, f, bob, committed); !ok || !set || at != planAt.UnixNano() {
		t.Errorf("the commit's record: contradicted %d (set %v, record %v); want the first discard's time, %d", at, set, ok, planAt.UnixNano())
	}
	if _, set, ok := contradictedAt(t, f, bob, discarded); !ok || set {
		t.Errorf("the discard's record: contradicted set %v (record %v); want a record, not contradicted", set, ok)
	}
	if _, _, ok := contradictedAt(t, f, bob, missing); ok {
		t.Errorf("a record of the message never here was written")
	}
	// Made before the since, with no lane: only the mark brings one in.
	made, err := f.db.Decisions(ctx, planAt, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []wire.LogicalID
	for _, d := range made {
		if d.Sender == bob {
			got = append(got, d.ID)
		}
	}
	if len(got) != 1 || got[0] != committed {
		t.Errorf("bob's decisions since they were made: %x; want the contradicted commit alone", got)
	}
}

// TestCommitHereOfAKeptDiscardIsContradicted: a sibling's discard heard
// while bob's message is pending here is kept (DecisionKeep, so not
// planned with Contradicts); the person's commit made here then beats and
// forgets it, and marks the commit's record contradicted with the time
// the discard was heard, in the same transaction. A sibling's commit kept
// instead marks nothing, nor does applying the kept discard itself.
func TestCommitHereOfAKeptDiscardIsContradicted(t *testing.T) {
	sibling := engine.MustParseAddress("alice/2")
	heard := planAt.Add(-time.Minute)
	for _, c := range []struct {
		name    string
		kept    engine.Outcome
		decided *engine.Address // the finalization applies the kept decision of this device
		want    bool
	}{
		{"a kept discard, then the commit made here", engine.OutcomeDiscarded, nil, true},
		{"a kept commit, then the commit made here", engine.OutcomeCommitted, nil, false},
		{"a kept discard, applied", engine.OutcomeDiscarded, &sibling, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, false)
			withInbound(t, f) // bob's idRecv pending; session with bob at version 2
			f.apply(t, sendPlan(t, sibling, logicalID(9), "to the sibling", 0))
			f.apply(t, receivePlan(f.stage(t), sibling, 1, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: heard, Sender: bob, Message: idRecv,
				Outcome: c.kept, Keep: true}))
			p := commitPlan(t, 2)
			if c.decided != nil {
				p.Outcome, p.Reason, p.Body, p.DecidedOn = engine.OutcomeDiscarded, engine.DiscardOther, nil, c.decided
			}
			f.apply(t, p)
			if kept, err := f.db.KeptDecisions(ctx, 10); err != nil || len(kept) != 0 {
				t.Fatalf("kept decisions after the finalization: %+v, %v; want none", kept, err)
			}
			at, set, ok := contradictedAt(t, f, bob, idRecv)
			if !ok || set != c.want || c.want && at != heard.UnixNano() {
				t.Fatalf("the record: contradicted %d (set %v, record %v); want set %v at %d", at, set, ok, c.want, heard.UnixNano())
			}
		})
	}
}
