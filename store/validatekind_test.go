package store

import (
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestValidateRefusesActionRecords: the store refuses, before any
// transaction, a finalized record that keeps an action body it may not
// (on a discard, a sent copy, a group's message, one that does not
// decode to the action applied), a content type other than the action's
// (0028), a kept action whose body names another target, and a kept
// action applied with a take-back of another message.
func TestValidateRefusesActionRecords(t *testing.T) {
	target, edit := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")})
	if err != nil {
		t.Fatal(err)
	}
	a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
		TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("lunch at one"), At: planAt}
	sw := sessionWrite(bob, 2, "ack")
	base := func() engine.Finalize {
		return engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeCommitted, Body: []byte("edit"),
			At: planAt, Content: wire.ContentEdit, Action: a, ActionBody: body, Session: &sw, Ack: ackOut(bob)}
	}
	if err := validate(base()); err != nil {
		t.Fatalf("a valid commit of an action: %v", err)
	}
	grp := wire.GroupID{1}
	to := engine.MustParseAddress("carol/1")
	for name, change := range map[string]func(*engine.Finalize){
		"another content type": func(p *engine.Finalize) { p.Content = wire.ContentReply },
		"no content type":      func(p *engine.Finalize) { p.Content = 0 },
		"an action body on a discard": func(p *engine.Finalize) {
			p.Outcome, p.Reason, p.Action, p.Body = engine.OutcomeDiscarded, engine.DiscardRejected, nil, nil
		},
		"an action body on a sent copy": func(p *engine.Finalize) { p.SentTo = &to },
		"an action body on a group's":   func(p *engine.Finalize) { p.Group = &grp },
		"an action body not decoding":   func(p *engine.Finalize) { p.ActionBody = []byte("not an action") },
		"another action's body": func(p *engine.Finalize) {
			other, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at two")})
			if err != nil {
				t.Fatal(err)
			}
			p.ActionBody = other
		},
	} {
		p := base()
		change(&p)
		if err := validate(p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("finalize with %s: %v, want an invalid plan", name, err)
		}
	}

	commit := engine.CommitEffect{ID: edit, Digest: sha256.Sum256(body), Arrived: planAt, At: planAt, Content: wire.ContentReaction, Body: []byte("edit"), Action: a, ActionBody: body}
	if err := validate(receivePlan(1, bob, 3, commit)); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a commit recording a reaction for an edit: %v, want an invalid plan", err)
	}
	commit.Content = wire.ContentEdit
	if err := validate(receivePlan(1, bob, 3, commit)); err != nil {
		t.Errorf("a valid commit of an action: %v", err)
	}

	keep := engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: planAt, Sender: bob, Message: edit, Outcome: engine.OutcomeCommitted, Keep: true,
		KeepAction: &engine.KeptAction{Sender: bob, ID: edit, On: engine.MustParseAddress("alice/2"), Content: wire.ContentEdit, Target: target, Body: body}}
	if err := validate(receivePlan(1, engine.MustParseAddress("alice/2"), 3, keep)); err != nil {
		t.Errorf("a valid kept action: %v", err)
	}
	keep.KeepAction.Target = wire.LogicalID{0x7d}
	if err := validate(receivePlan(1, engine.MustParseAddress("alice/2"), 3, keep)); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a kept action naming a target its body does not: %v, want an invalid plan", err)
	}

	kept := engine.KeptTakeBack{On: engine.MustParseAddress("alice/2"), Effect: engine.DecisionEffect{At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body}}
	take := engine.DecisionEffect{ID: wire.LogicalID{0xd0, 2}, At: planAt, Sender: bob, Message: target, Outcome: engine.OutcomeCommitted,
		TakeBack: []byte("lunch at noon"), WithTarget: []engine.KeptTakeBack{kept}}
	if err := validate(receivePlan(1, engine.MustParseAddress("alice/2"), 3, take)); err != nil {
		t.Errorf("a valid take-back with a kept action: %v", err)
	}
	take.Message = wire.LogicalID{0x7d}
	if err := validate(receivePlan(1, engine.MustParseAddress("alice/2"), 3, take)); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a take-back of another message with a kept action: %v, want an invalid plan", err)
	}
}

// TestValidateAnswer: a sibling's discard answered with this device's
// commit stores a decision lane to that sibling committing the message it
// discarded; an answer to another device, of another message, or with a
// discard, or on a decision that is no discard, is refused.
func TestValidateAnswer(t *testing.T) {
	sib := engine.MustParseAddress("alice/3")
	msg := wire.LogicalID{0xa0}
	lane := func(to engine.Address, id wire.LogicalID, o wire.DecisionOutcome, body []byte) engine.PersonLane {
		f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xa1}, Sender: bob.String(), Message: id, Outcome: o, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return engine.PersonLane{Recipient: to, Frame: f, Own: true}
	}
	base := func() engine.DecisionEffect {
		return engine.DecisionEffect{ID: wire.LogicalID{0xd0, 3}, At: planAt, Sender: bob, Message: msg, Outcome: engine.OutcomeDiscarded,
			Answer: []engine.PersonLane{lane(sib, msg, wire.DecisionCommitted, []byte("hello"))}}
	}
	if err := validate(receivePlan(1, sib, 3, base())); err != nil {
		t.Fatalf("a valid answer: %v", err)
	}
	for name, change := range map[string]func(*engine.DecisionEffect){
		"to another device": func(e *engine.DecisionEffect) {
			e.Answer[0] = lane(engine.MustParseAddress("alice/4"), msg, wire.DecisionCommitted, []byte("hello"))
		},
		"of another message": func(e *engine.DecisionEffect) {
			e.Answer[0] = lane(sib, wire.LogicalID{0xa2}, wire.DecisionCommitted, []byte("hello"))
		},
		"with a discard":      func(e *engine.DecisionEffect) { e.Answer[0] = lane(sib, msg, wire.DecisionDiscarded, nil) },
		"on a commit":         func(e *engine.DecisionEffect) { e.Outcome = engine.OutcomeCommitted },
		"on a kept decision":  func(e *engine.DecisionEffect) { e.Keep = true },
		"not an own lane":     func(e *engine.DecisionEffect) { e.Answer[0].Own = false },
		"without a decision":  func(e *engine.DecisionEffect) { e.Answer[0].Frame = []byte("no frame") },
		"twice":               func(e *engine.DecisionEffect) { e.Answer = append(e.Answer, e.Answer[0]) },
		"of another sender's": func(e *engine.DecisionEffect) { e.Sender = engine.MustParseAddress("carol/1") },
	} {
		e := base()
		change(&e)
		if err := validate(receivePlan(1, sib, 3, e)); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("an answer %s: %v, want an invalid plan", name, err)
		}
	}
}

// TestValidateGroupTakeBack: a kind-18 take-back of a group's action
// applies an action that is its sender's (reactor and author) and names
// its target's author; one acting as another member, without its
// target's author, or with kept actions (those are one-to-one) is an
// invalid plan, as is a one-to-one action naming a target's author.
func TestValidateGroupTakeBack(t *testing.T) {
	target, id := wire.LogicalID{0x7b}, wire.LogicalID{0x7e}
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "\U0001F44D"})
	if err != nil {
		t.Fatal(err)
	}
	grp := wire.GroupID{1}
	sibling := engine.MustParseAddress("alice/2")
	take := func() engine.DecisionEffect {
		a := &engine.ActionApply{Peer: bob, ID: id, Dir: engine.DirectionIn, Content: wire.ContentReaction, Target: target,
			TargetDir: engine.DirectionIn, Reactor: bob, Emoji: "\U0001F44D", At: planAt, Group: &grp, TargetAuthor: bob}
		return engine.DecisionEffect{ID: wire.LogicalID{0xd0, 3}, At: planAt, Sender: bob, Message: id, Outcome: engine.OutcomeCommitted,
			TakeBack: []byte{}, Action: a, ActionBody: body}
	}
	if err := validate(receivePlan(1, sibling, 3, take())); err != nil {
		t.Fatalf("a valid take-back of a group's reaction: %v", err)
	}
	for name, change := range map[string]func(*engine.DecisionEffect){
		"another reactor":                            func(e *engine.DecisionEffect) { e.Action.Reactor = engine.MustParseAddress("carol/1") },
		"no target's author":                         func(e *engine.DecisionEffect) { e.Action.TargetAuthor = engine.Address{} },
		"a target kept elsewhere":                    func(e *engine.DecisionEffect) { e.Action.TargetPeer = engine.MustParseAddress("carol/1") },
		"another sender":                             func(e *engine.DecisionEffect) { e.Action.Peer = engine.MustParseAddress("carol/1") },
		"another emoji":                              func(e *engine.DecisionEffect) { e.Action.Emoji = "x" },
		"a one-to-one action with a target's author": func(e *engine.DecisionEffect) { e.Action.Group = nil },
		"kept actions with it": func(e *engine.DecisionEffect) {
			e.WithTarget = []engine.KeptTakeBack{{On: sibling, Effect: take()}}
		},
	} {
		e := take()
		change(&e)
		if err := validate(receivePlan(1, sibling, 3, e)); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a group take-back with %s: %v, want an invalid plan", name, err)
		}
	}
}
