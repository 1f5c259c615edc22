package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
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
