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

// TestFinalizeWithKeptIsChecked: a commit of a group text may apply with
// it the kept group actions that wait for it (engine.Finalize.WithKept):
// only a commit of a group's message, each a take-back of a committed
// action (not a reply) on this message by its author, in the same group,
// at most engine.MaxKeptDecisions. Every other shape is refused, on a
// Finalize and on a commit on arrival (engine.CommitEffect.WithKept).
func TestFinalizeWithKeptIsChecked(t *testing.T) {
	g, other := wire.GroupID{0x61}, wire.GroupID{0x62}
	target, reaction := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	carol := engine.MustParseAddress("carol/1")
	on := engine.MustParseAddress("alice/2")
	kept := func(change func(*engine.ActionApply, *[]byte)) engine.KeptTakeBack {
		wa := wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "+1", Order: 1}
		a := &engine.ActionApply{Peer: carol, ID: reaction, Dir: engine.DirectionIn, Content: wire.ContentReaction, Target: target,
			TargetDir: engine.DirectionOut, Reactor: carol, Emoji: "+1", Order: 1, At: planAt, Group: &g, TargetAuthor: bob}
		body, err := wire.EncodeAction(wa)
		if err != nil {
			t.Fatal(err)
		}
		if change != nil {
			change(a, &body)
		}
		return engine.KeptTakeBack{On: on, Effect: engine.DecisionEffect{At: planAt, Sender: carol, Message: reaction,
			Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body}}
	}
	commit := func(with ...engine.KeptTakeBack) engine.Finalize {
		gg := g
		return engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeCommitted,
			At: planAt, Arrived: planAt, Content: wire.ContentText, Body: []byte("lunch at noon"), Group: &gg, WithKept: with}
	}
	if err := validateFinalize(commit(kept(nil))); err != nil {
		t.Fatalf("a group text's commit applying carol's kept reaction to it: %v; want valid", err)
	}
	oneToOne := commit(kept(nil))
	oneToOne.Group = nil
	discard := commit(kept(nil))
	discard.Outcome, discard.Reason, discard.Body = engine.OutcomeDiscarded, engine.DiscardRejected, nil
	over := commit()
	for range engine.MaxKeptDecisions + 1 {
		over.WithKept = append(over.WithKept, kept(nil))
	}
	file := commit(kept(nil))
	file.Content = wire.ContentFile
	cases := map[string]engine.Finalize{
		"a one-to-one commit": oneToOne,
		"a file's commit":     file,
		"a discard":           discard,
		"over the bound":      over,
		"another group":       commit(kept(func(a *engine.ActionApply, _ *[]byte) { a.Group = &other })),
		"another target": commit(kept(func(a *engine.ActionApply, b *[]byte) {
			a.Target = wire.LogicalID{0x7d}
			*b, _ = wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: a.Target, Emoji: "+1", Order: 1})
		})),
		"another target author": commit(kept(func(a *engine.ActionApply, _ *[]byte) { a.TargetAuthor = carol })),
		"an edit of another's message": commit(kept(func(a *engine.ActionApply, b *[]byte) {
			a.Content, a.Emoji, a.Order, a.Reactor, a.Edit, a.Text = wire.ContentEdit, "", 0, engine.Address{}, 1, []byte("two")
			*b, _ = wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("two")})
		})),
		"a body that says another action": commit(kept(func(_ *engine.ActionApply, b *[]byte) {
			*b, _ = wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "-1", Order: 1})
		})),
	}
	for name, p := range cases {
		if err := validateFinalize(p); err == nil || !strings.Contains(err.Error(), "invalid plan") {
			t.Errorf("%s: %v; want an invalid plan", name, err)
		}
	}
	// A commit on arrival (CommitEffect.WithKept) is checked the same way.
	f := newFixture(t, false)
	withSession(t, f)
	arrival := func(group *wire.GroupID, with ...engine.KeptTakeBack) engine.Receive {
		return receivePlan(f.stage(t), bob, 1, engine.CommitEffect{ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Arrived: planAt, At: planAt,
			Content: wire.ContentText, Body: []byte("lunch at noon"), Group: group, WithKept: with})
	}
	gg := g
	if err := validateReceive(arrival(&gg, kept(nil))); err != nil {
		t.Fatalf("a group text's arrival commit applying carol's kept reaction to it: %v; want valid", err)
	}
	if err := validateReceive(arrival(nil, kept(nil))); err == nil || !strings.Contains(err.Error(), "kept action") {
		t.Errorf("a one-to-one arrival commit applying a kept group action: %v; want an invalid plan", err)
	}
	if err := validateReceive(arrival(&gg, kept(func(a *engine.ActionApply, _ *[]byte) { a.TargetAuthor = carol }))); err == nil || !strings.Contains(err.Error(), "kept action") {
		t.Errorf("an arrival commit applying a kept action on another author's message: %v; want an invalid plan", err)
	}
	fileArrival := arrival(&gg, kept(nil))
	fileArrival.Effect = withContent(t, fileArrival.Effect, wire.ContentFile)
	if err := validateReceive(fileArrival); err == nil || !strings.Contains(err.Error(), "kept action") {
		t.Errorf("a group file's arrival commit applying a kept action: %v; want an invalid plan", err)
	}
}

// withContent is e, a commit on arrival, with content type content.
func withContent(t *testing.T, e engine.FrameEffect, content wire.ContentType) engine.FrameEffect {
	t.Helper()
	c, ok := e.(engine.CommitEffect)
	if !ok {
		t.Fatalf("effect %T, want a commit on arrival", e)
	}
	c.Content = content
	return c
}

// TestFinalizeWithKeptOneToOneIsChecked: a commit of a one-to-one text
// may apply with it the kept actions of its sender that wait for it
// (engine.Finalize.WithKept, engine.CommitEffect.WithKept): each a
// take-back of a committed action (not a reply) of the same sender on
// this message's received entry, with no group and no target author.
// Every other shape is refused, on a Finalize and on a commit on arrival.
func TestFinalizeWithKeptOneToOneIsChecked(t *testing.T) {
	g := wire.GroupID{0x61}
	target, edit := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	on := engine.MustParseAddress("alice/2")
	carol := engine.MustParseAddress("carol/1")
	kept := func(change func(*engine.DecisionEffect, *engine.ActionApply, *[]byte)) engine.KeptTakeBack {
		wa := wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("two")}
		a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
			TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("two"), At: planAt}
		body, err := wire.EncodeAction(wa)
		if err != nil {
			t.Fatal(err)
		}
		e := engine.DecisionEffect{At: planAt, Sender: bob, Message: edit, Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body}
		if change != nil {
			change(&e, a, &body)
			e.ActionBody = body
		}
		return engine.KeptTakeBack{On: on, Effect: e}
	}
	commit := func(with ...engine.KeptTakeBack) engine.Finalize {
		return engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeCommitted,
			At: planAt, Arrived: planAt, Content: wire.ContentText, Body: []byte("lunch at noon"), WithKept: with}
	}
	if err := validateFinalize(commit(kept(nil))); err != nil {
		t.Fatalf("a one-to-one text's commit applying its sender's kept edit of it: %v; want valid", err)
	}
	discard := commit(kept(nil))
	discard.Outcome, discard.Reason, discard.Body = engine.OutcomeDiscarded, engine.DiscardRejected, nil
	file := commit(kept(nil))
	file.Content = wire.ContentFile
	cases := map[string]engine.Finalize{
		"a discard":       discard,
		"a file's commit": file,
		"another sender's action": commit(kept(func(e *engine.DecisionEffect, a *engine.ActionApply, _ *[]byte) {
			e.Sender, a.Peer = carol, carol
		})),
		"a group's action": commit(kept(func(_ *engine.DecisionEffect, a *engine.ActionApply, _ *[]byte) {
			gg := g
			a.Group, a.TargetAuthor = &gg, bob
		})),
		"an own message's edit": commit(kept(func(_ *engine.DecisionEffect, a *engine.ActionApply, _ *[]byte) {
			a.TargetDir = engine.DirectionOut
		})),
		"a target's author": commit(kept(func(_ *engine.DecisionEffect, a *engine.ActionApply, _ *[]byte) { a.TargetAuthor = bob })),
		"another target": commit(kept(func(_ *engine.DecisionEffect, a *engine.ActionApply, b *[]byte) {
			a.Target = wire.LogicalID{0x7d}
			*b, _ = wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: a.Target, Edit: 1, Text: []byte("two")})
		})),
		"a kept reply": commit(kept(func(_ *engine.DecisionEffect, a *engine.ActionApply, b *[]byte) {
			a.Content, a.Edit, a.Text = wire.ContentReply, 0, []byte("two")
			*b, _ = wire.EncodeAction(wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("two")})
		})),
		"a body that says another action": commit(kept(func(_ *engine.DecisionEffect, _ *engine.ActionApply, b *[]byte) {
			*b, _ = wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("three")})
		})),
	}
	for name, p := range cases {
		if err := validateFinalize(p); err == nil || !strings.Contains(err.Error(), "invalid plan") {
			t.Errorf("%s: %v; want an invalid plan", name, err)
		}
	}
	f := newFixture(t, false)
	withSession(t, f)
	arrival := func(with ...engine.KeptTakeBack) engine.Receive {
		return receivePlan(f.stage(t), bob, 1, engine.CommitEffect{ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Arrived: planAt, At: planAt,
			Content: wire.ContentText, Body: []byte("lunch at noon"), WithKept: with})
	}
	if err := validateReceive(arrival(kept(nil))); err != nil {
		t.Fatalf("a one-to-one text's arrival commit applying its sender's kept edit of it: %v; want valid", err)
	}
	if err := validateReceive(arrival(kept(func(e *engine.DecisionEffect, a *engine.ActionApply, _ *[]byte) { e.Sender, a.Peer = carol, carol }))); err == nil || !strings.Contains(err.Error(), "kept action") {
		t.Errorf("an arrival commit applying another sender's kept action: %v; want an invalid plan", err)
	}
	fileArrival := arrival(kept(nil))
	fileArrival.Effect = withContent(t, fileArrival.Effect, wire.ContentFile)
	if err := validateReceive(fileArrival); err == nil || !strings.Contains(err.Error(), "kept action") {
		t.Errorf("a one-to-one file's arrival commit applying a kept action: %v; want an invalid plan", err)
	}
}

// TestFinalizeWithKeptOutsideTheConversation: a one-to-one commit may
// apply a kept action only onto the entry it writes, in its sender's
// conversation: a kept edit whose target is kept under another device of
// the sender's person (TargetPeer), while this device keeps that
// person's conversation under the sender, is refused (ErrConflict) and
// nothing of the commit is applied.
func TestFinalizeWithKeptOutsideTheConversation(t *testing.T) {
	f := newFixture(t, false)
	withInbound(t, f)
	before := f.state(t)
	wa := wire.Action{Content: wire.ContentEdit, Target: idRecv, Edit: 1, Text: []byte("two")}
	body, err := wire.EncodeAction(wa)
	if err != nil {
		t.Fatal(err)
	}
	edit := wire.LogicalID{0x7c}
	a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: idRecv,
		TargetDir: engine.DirectionIn, TargetPeer: engine.MustParseAddress(bob.User + "/2"), Edit: 1, Text: []byte("two"), At: planAt}
	p := commitPlan(t, 2)
	p.Content, p.Arrived = wire.ContentText, planAt
	p.WithKept = []engine.KeptTakeBack{{On: engine.MustParseAddress("alice/2"), Effect: engine.DecisionEffect{At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body}}}
	if err := validateFinalize(p); err != nil {
		t.Fatalf("the commit's plan: %v; want valid (the store's apply refuses it)", err)
	}
	_, err = f.db.Apply(context.Background(), p)
	if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "conversation") {
		t.Fatalf("a commit applying a kept edit onto another conversation's entry: %v; want ErrConflict", err)
	}
	if after := f.state(t); after != before {
		t.Errorf("the refused commit changed the store")
	}
}
