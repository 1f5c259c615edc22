package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestKeepOwnCommitMadeHere: the person's commit of bob's edit, made on
// this device and turned by the rules into a discard because its target
// is discarded here, is kept with its action as this device's commit
// (Finalize.KeepAction.On naming this device; another device is refused
// at apply). The target's take-back applies it (WithTarget) as a decision
// made here: its entry names no other device and its finalized record
// keeps the action body, so that the catch-up and an answer carry it
// (MadeDecision).
func TestKeepOwnCommitMadeHere(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withSession(t, f)
	target, edit := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, target, "lunch at noon")))
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardRejected, At: planAt, Content: wire.ContentText, Session: &sw, Ack: ackOut(bob)})
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, receivePlan(f.stage(t), bob, 3, deliver(t, edit, string(body))))
	sw = sessionWrite(bob, 4, "ack")
	discard := func(on engine.Address) engine.Finalize {
		return engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
			Reason: engine.DiscardTargetDiscarded, At: planAt, Content: wire.ContentEdit, Session: &sw, Ack: ackOut(bob),
			KeepAction: &engine.KeptAction{Sender: bob, ID: edit, On: on, Content: wire.ContentEdit, Target: target, Body: body}}
	}
	if _, err := f.db.Apply(ctx, discard(engine.MustParseAddress("alice/3"))); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a discard keeping a commit of a device neither the sender nor this one: %v, want ErrConflict", err)
	}
	f.apply(t, discard(self))
	kept, err := f.db.KeptActions(ctx, bob, target)
	if err != nil || len(kept) != 1 || kept[0].ID != edit || kept[0].On != self || string(kept[0].Body) != string(body) {
		t.Fatalf("kept actions: %+v, %v; want this device's commit of the edit", kept, err)
	}
	if d, ok, err := f.db.MadeDecision(ctx, bob, edit); err != nil || !ok || d.Outcome != engine.OutcomeDiscarded || d.ActionBody != nil {
		t.Fatalf("the edit's record before the take-back: %+v (%v), %v; want a discard keeping no action body", d, ok, err)
	}
	a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
		TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("lunch at one"), At: planAt}
	k := engine.KeptTakeBack{On: kept[0].On, Effect: engine.DecisionEffect{At: planAt, Sender: bob, Message: edit, Outcome: engine.OutcomeCommitted,
		TakeBack: []byte{}, Action: a, ActionBody: kept[0].Body}}
	f.apply(t, receivePlan(f.stage(t), bob, 5, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: planAt, Sender: bob,
		Message: target, Outcome: engine.OutcomeCommitted, TakeBack: []byte("lunch at noon"), WithTarget: []engine.KeptTakeBack{k}}))
	d, ok, err := f.db.MadeDecision(ctx, bob, edit)
	if err != nil || !ok || d.Outcome != engine.OutcomeCommitted || d.DecidedOn != nil || string(d.ActionBody) != string(body) || d.Content != wire.ContentEdit {
		t.Fatalf("the edit's record after the take-back: %+v (%v), %v; want this device's commit keeping its action body", d, ok, err)
	}
	if d, ok, err := f.db.MadeDecision(ctx, bob, target); err != nil || !ok || d.DecidedOn == nil || *d.DecidedOn != bob {
		t.Fatalf("the target's record after the take-back: %+v (%v), %v; want it decided on the deciding device", d, ok, err)
	}
	if all, err := f.db.KeptDecisions(ctx, 100); err != nil || len(all) != 0 {
		t.Fatalf("kept decisions after the take-back: %+v, %v; want none", all, err)
	}
}
