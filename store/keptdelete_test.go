package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestDeleteForgetsTheKeptActionsOnItsTarget: a one-to-one delete applied
// to bob's message forgets the kept decision of bob's edit of it (which
// keeps the edited text sealed) in its transaction, and leaves alone a
// kept group action whose target has the same ID and the action body a
// group record of that target keeps (grp IS NULL, in both statements).
func TestDeleteForgetsTheKeptActionsOnItsTarget(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withSession(t, f)
	target, edit, del, other := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}, wire.LogicalID{0x7d}, wire.LogicalID{0x7e}
	f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, target, "lunch at noon")))
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeCommitted,
		Body: []byte("lunch at noon"), At: planAt, Content: wire.ContentText, Session: &sw, Ack: ackOut(bob)})
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")})
	if err != nil {
		t.Fatal(err)
	}
	on := engine.MustParseAddress("alice/2")
	f.apply(t, receivePlan(f.stage(t), bob, 3, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeCommitted, Keep: true,
		KeepAction: &engine.KeptAction{Sender: bob, ID: edit, On: on, Content: wire.ContentEdit, Target: target, Body: body}}))
	g := wire.GroupID{0x61}
	f.apply(t, receivePlan(f.stage(t), bob, 4, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 2}, At: planAt, Sender: bob, Message: other,
		Outcome: engine.OutcomeCommitted, Keep: true,
		KeepAction: &engine.KeptAction{Sender: bob, ID: other, On: on, Content: wire.ContentEdit, Target: target, Body: body, Group: &g}}))
	if kept, err := f.db.KeptActions(ctx, bob, target); err != nil || len(kept) != 1 {
		t.Fatalf("kept actions before the delete: %+v, %v; want the edit", kept, err)
	}
	// bob's committed reaction in group g to a group message of the same
	// ID, whose record keeps its action body.
	groupReaction := wire.LogicalID{0x7f}
	if _, err := f.db.sql.ExecContext(ctx, `INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest, grp, content, arrived, target, sealed_action)
		VALUES (?, ?, 1, 0, 1, x'00', ?, ?, 1, ?, x'00')`, bob.String(), groupReaction[:], g[:], int64(wire.ContentReaction), target[:]); err != nil {
		t.Fatal(err)
	}
	delBody, err := wire.EncodeAction(wire.Action{Content: wire.ContentDelete, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, receivePlan(f.stage(t), bob, 5, deliver(t, del, string(delBody))))
	sw = sessionWrite(bob, 6, "ack")
	a := &engine.ActionApply{Peer: bob, ID: del, Dir: engine.DirectionIn, Content: wire.ContentDelete, Target: target,
		TargetDir: engine.DirectionIn, At: planAt}
	f.apply(t, engine.Finalize{Sender: bob, ID: del, Digest: sha256.Sum256(delBody), Outcome: engine.OutcomeCommitted, Body: []byte{},
		At: planAt, Content: wire.ContentDelete, Action: a, Session: &sw, Ack: ackOut(bob)})
	if kept, err := f.db.KeptActions(ctx, bob, target); err != nil || len(kept) != 0 {
		t.Fatalf("kept actions after the delete: %+v, %v; want none", kept, err)
	}
	if kept, err := f.db.KeptGroupActions(ctx, g, target); err != nil || len(kept) != 1 || kept[0].ID != other {
		t.Fatalf("kept group actions after a one-to-one delete of the same ID: %+v, %v; want the group's left alone", kept, err)
	}
	var kept int
	if err := f.db.sql.QueryRowContext(ctx, "SELECT count(*) FROM finalized WHERE sender = ? AND id = ? AND sealed_action IS NOT NULL",
		bob.String(), groupReaction[:]).Scan(&kept); err != nil || kept != 1 {
		t.Fatalf("the group reaction's record after a one-to-one delete of the same ID keeps %d action bodies, %v; want its own left alone", kept, err)
	}
}

// TestKeptGroupActionNotInItsGroupIsRefused: a take-back of bob's
// one-to-one message that would apply with it a kept group action
// (WithTarget, naming a group) is refused whole (ErrConflict): the
// take-back wrote no entry in that group, so the action has nothing of
// its group to apply to, and the message stays discarded.
func TestKeptGroupActionNotInItsGroupIsRefused(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withSession(t, f)
	target, reaction := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, target, "lunch at noon")))
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardRejected, At: planAt, Content: wire.ContentText, Session: &sw, Ack: ackOut(bob)})
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "+1", Order: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := wire.GroupID{0x61}
	a := &engine.ActionApply{Peer: bob, ID: reaction, Dir: engine.DirectionIn, Content: wire.ContentReaction, Target: target,
		TargetDir: engine.DirectionIn, Reactor: bob, Emoji: "+1", Order: 1, At: planAt, Group: &g, TargetAuthor: bob}
	kept := engine.KeptTakeBack{On: engine.MustParseAddress("alice/2"), Effect: engine.DecisionEffect{At: planAt, Sender: bob, Message: reaction,
		Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body}}
	_, err = f.db.Apply(ctx, receivePlan(f.stage(t), bob, 3, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 7}, At: planAt, Sender: bob,
		Message: target, Outcome: engine.OutcomeCommitted, TakeBack: []byte("lunch at noon"), WithTarget: []engine.KeptTakeBack{kept}}))
	if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "not in its group") {
		t.Fatalf("a one-to-one take-back applying a kept group action: %v; want refused, not in its group (ErrConflict)", err)
	}
	if s, err := f.db.Seen(ctx, bob, target); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("the target's record: %+v, %v; want it still discarded", s, err)
	}
}

// TestGroupDeleteLeavesAnotherGroupAlone: bob's delete applied in group
// g1 forgets the kept decisions waiting for his message there, and leaves
// another group's message of the same ID and author, and the decisions
// kept for it, alone.
func TestGroupDeleteLeavesAnotherGroupAlone(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	target, del := wire.LogicalID{0x7b}, wire.LogicalID{0x7d}
	g1, g2 := wire.GroupID{0x61}, wire.GroupID{0x62}
	tx, err := f.db.beginImmediate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.rollback()
	for i, g := range []wire.GroupID{g1, g2} {
		if _, err := tx.tx.ExecContext(ctx, "INSERT INTO group_history (grp, sender, id, at, sealed_body) VALUES (?, ?, ?, 1, ?)",
			g[:], bob.String(), target[:], f.db.seal.seal(kindGroupBody, groupBodyKey(g, bob.String(), target), []byte("lunch at noon"))); err != nil {
			t.Fatal(err)
		}
		kept := wire.LogicalID{0x7c, byte(i)}
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO kept_decision (sender, id, outcome, on_device, at, content, target, sealed_action, grp)
			VALUES ('carol/1', ?, 1, 'alice/2', 1, ?, ?, x'00', ?)`, kept[:], int64(wire.ContentReaction), target[:], g[:]); err != nil {
			t.Fatal(err)
		}
	}
	a := engine.ActionApply{Peer: bob, ID: del, Dir: engine.DirectionIn, Content: wire.ContentDelete, Target: target,
		TargetDir: engine.DirectionIn, At: planAt, Group: &g1, TargetAuthor: bob}
	if err := tx.applyAction(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g       wire.GroupID
		kept    int
		deleted int
	}{{g1, 0, 1}, {g2, 1, 0}} {
		var kept, deleted int
		if err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM kept_decision WHERE grp = ?", c.g[:]).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM group_extra WHERE grp = ? AND deleted = 1", c.g[:]).Scan(&deleted); err != nil {
			t.Fatal(err)
		}
		if kept != c.kept || deleted != c.deleted {
			t.Errorf("group %x after the delete in %x: %d kept, %d deleted; want %d and %d", c.g[:1], g1[:1], kept, deleted, c.kept, c.deleted)
		}
	}
}
