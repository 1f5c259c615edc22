package store

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestValidateRefusesActionRecords: the store refuses, before any
// transaction, a finalized record that keeps an action body it may not
// (on a discard, a sent copy, a group's message whose action is not in
// that group, one that does not decode to the action applied), a content type other than the action's
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
	// A group's action keeps its body too (a catch-up and an answer carry
	// it), in its own group only.
	inGroup := func(p *engine.Finalize) {
		ga := *p.Action
		ga.Group, ga.TargetAuthor, ga.Reactor = &grp, bob, bob
		p.Action, p.Group = &ga, &grp
	}
	if p := base(); true {
		inGroup(&p)
		if err := validate(p); err != nil {
			t.Fatalf("a valid commit of a group's action keeping its body: %v", err)
		}
	}
	for name, change := range map[string]func(*engine.Finalize){
		"another content type": func(p *engine.Finalize) { p.Content = wire.ContentReply },
		"no content type":      func(p *engine.Finalize) { p.Content = 0 },
		"an action body on a discard": func(p *engine.Finalize) {
			p.Outcome, p.Reason, p.Action, p.Body = engine.OutcomeDiscarded, engine.DiscardRejected, nil, nil
		},
		"an action body on a sent copy": func(p *engine.Finalize) { p.SentTo = &to },
		"an action body on a group's":   func(p *engine.Finalize) { p.Group = &grp },
		"a group's action body in another group": func(p *engine.Finalize) {
			inGroup(p)
			p.Group = &wire.GroupID{2}
		},
		"a one-to-one action body on a group's record": func(p *engine.Finalize) {
			inGroup(p)
			p.Action.Group = nil
		},
		"an action body not decoding": func(p *engine.Finalize) { p.ActionBody = []byte("not an action") },
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
// commit stores a decision lane to that sibling (and to another device of
// the person) committing the message it discarded; an answer to another
// person's device, twice to one device, of another message, or with a
// discard, or on a decision that is no discard, is refused. A discard that
// contradicts this device's commit marks it (DecisionEffect.Contradicts)
// only when it is a sibling's discard of another person's message,
// settled here.
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
	// The discarding sibling and another device of the person it may
	// have told (answerLanes).
	both := base()
	both.Answer = append(both.Answer, lane(engine.MustParseAddress("alice/4"), msg, wire.DecisionCommitted, []byte("hello")))
	if err := validate(receivePlan(1, sib, 3, both)); err != nil {
		t.Fatalf("a valid answer to two devices: %v", err)
	}
	for name, change := range map[string]func(*engine.DecisionEffect){
		"to another person's device": func(e *engine.DecisionEffect) {
			e.Answer[0] = lane(engine.MustParseAddress("carol/4"), msg, wire.DecisionCommitted, []byte("hello"))
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
	// A discard settled here against this device's own commit marks the
	// commit contradicted (0032), answered or not.
	for _, answered := range []bool{true, false} {
		e := base()
		e.Contradicts = true
		if !answered {
			e.Answer = nil
		}
		if err := validate(receivePlan(1, sib, 3, e)); err != nil {
			t.Fatalf("a valid contradicting discard (answered %v): %v", answered, err)
		}
	}
	for name, change := range map[string]func(*engine.DecisionEffect){
		"on a commit":          func(e *engine.DecisionEffect) { e.Outcome = engine.OutcomeCommitted },
		"on a kept decision":   func(e *engine.DecisionEffect) { e.Keep = true },
		"with a take-back":     func(e *engine.DecisionEffect) { e.TakeBack = []byte("hello") },
		"of an own message":    func(e *engine.DecisionEffect) { e.Sender = engine.MustParseAddress("alice/2") },
		"with a kept action":   func(e *engine.DecisionEffect) { e.KeepAction = &engine.KeptAction{Sender: bob} },
		"with an action apply": func(e *engine.DecisionEffect) { e.Action = &engine.ActionApply{} },
	} {
		e := base()
		e.Contradicts, e.Answer = true, nil
		change(&e)
		if err := validate(receivePlan(1, sib, 3, e)); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a contradicting discard %s: %v, want an invalid plan", name, err)
		}
	}
}

// TestValidateGroupTakeBack: a kind-18 take-back of a group's action
// applies an action that is its sender's (reactor and author) and names
// its target's author, the sender itself for an edit or a delete; one
// acting as another member, without its target's author, editing or
// deleting another member's message, or with kept actions when it is no
// reply, is an invalid plan, as is a one-to-one action naming a target's
// author. A group reply's or text's take-back applies the kept group
// actions that wait for it (any member's, naming the take-back's sender as
// their target's author, in its group); a one-to-one one, or one of
// another author's target or another group, is refused. Each invalid plan
// is refused for that one reason.
func TestValidateGroupTakeBack(t *testing.T) {
	target, id := wire.LogicalID{0x7b}, wire.LogicalID{0x7e}
	grp := wire.GroupID{1}
	sibling, carol := engine.MustParseAddress("alice/2"), engine.MustParseAddress("carol/1")
	// takeOf is a valid take-back of bob's group action w on target, a
	// message of bob's.
	takeOf := func(w wire.Action) engine.DecisionEffect {
		body, err := wire.EncodeAction(w)
		if err != nil {
			t.Fatal(err)
		}
		a := &engine.ActionApply{Peer: bob, ID: id, Dir: engine.DirectionIn, Content: w.Content, Target: w.Target,
			TargetDir: engine.DirectionIn, Reactor: bob, Emoji: w.Emoji, Edit: w.Edit, Text: w.Text, At: planAt, Group: &grp, TargetAuthor: bob}
		return engine.DecisionEffect{ID: wire.LogicalID{0xd0, 3}, At: planAt, Sender: bob, Message: id, Outcome: engine.OutcomeCommitted,
			TakeBack: []byte{}, Action: a, ActionBody: body}
	}
	reaction := wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "\U0001F44D"}
	edit := wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")}
	del := wire.Action{Content: wire.ContentDelete, Target: target}
	// kept is a valid one-to-one action kept until id's take-back: the
	// WithTarget checks pass it, so only the group's rule refuses it.
	kept := func() engine.DecisionEffect {
		k := wire.LogicalID{0x7f}
		w := wire.Action{Content: wire.ContentReaction, Target: id, Emoji: "\U0001F44D"}
		body, err := wire.EncodeAction(w)
		if err != nil {
			t.Fatal(err)
		}
		a := &engine.ActionApply{Peer: bob, ID: k, Dir: engine.DirectionIn, Content: w.Content, Target: id,
			TargetDir: engine.DirectionIn, Reactor: bob, Emoji: w.Emoji, At: planAt}
		return engine.DecisionEffect{ID: wire.LogicalID{0xd0, 4}, At: planAt, Sender: bob, Message: k, Outcome: engine.OutcomeCommitted,
			TakeBack: []byte{}, Action: a, ActionBody: body}
	}
	// keptGroup is carol's group reaction to id, a message of bob's, kept
	// until id's take-back.
	keptGroup := func() engine.DecisionEffect {
		k := wire.LogicalID{0x7c}
		w := wire.Action{Content: wire.ContentReaction, Target: id, Emoji: "👍"}
		body, err := wire.EncodeAction(w)
		if err != nil {
			t.Fatal(err)
		}
		a := &engine.ActionApply{Peer: carol, ID: k, Dir: engine.DirectionIn, Content: w.Content, Target: id,
			TargetDir: engine.DirectionIn, Reactor: carol, Emoji: w.Emoji, At: planAt, Group: &grp, TargetAuthor: bob}
		return engine.DecisionEffect{ID: wire.LogicalID{0xd0, 6}, At: planAt, Sender: carol, Message: k, Outcome: engine.OutcomeCommitted,
			TakeBack: []byte{}, Action: a, ActionBody: body}
	}
	reply := wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("or one")}
	for _, w := range []wire.Action{reaction, edit, del, reply} {
		if err := validate(receivePlan(1, sibling, 3, takeOf(w))); err != nil {
			t.Fatalf("a valid take-back of a group's %s: %v", engine.ActionName(w.Content), err)
		}
	}
	withKept := takeOf(reply)
	withKept.WithTarget = []engine.KeptTakeBack{{On: sibling, Effect: keptGroup()}}
	if err := validate(receivePlan(1, sibling, 3, withKept)); err != nil {
		t.Fatalf("a valid take-back of a group reply with a kept group action: %v", err)
	}
	text := engine.DecisionEffect{ID: wire.LogicalID{0xd0, 7}, At: planAt, Sender: bob, Message: id, Outcome: engine.OutcomeCommitted,
		TakeBack: []byte("hello"), WithTarget: []engine.KeptTakeBack{{On: sibling, Effect: keptGroup()}}}
	if err := validate(receivePlan(1, sibling, 3, text)); err != nil {
		t.Fatalf("a valid take-back of a group text with a kept group action: %v", err)
	}
	// The kept action is one a one-to-one take-back of id may apply.
	oneToOne := engine.DecisionEffect{ID: wire.LogicalID{0xd0, 5}, At: planAt, Sender: bob, Message: id, Outcome: engine.OutcomeCommitted,
		TakeBack: []byte("hello"), WithTarget: []engine.KeptTakeBack{{On: sibling, Effect: kept()}}}
	if err := validate(receivePlan(1, sibling, 3, oneToOne)); err != nil {
		t.Fatalf("a valid one-to-one take-back with a kept action: %v", err)
	}
	for _, c := range []struct {
		name   string
		action wire.Action
		change func(*engine.DecisionEffect)
	}{
		{"another reactor", reaction, func(e *engine.DecisionEffect) { e.Action.Reactor = carol }},
		{"no target's author", reaction, func(e *engine.DecisionEffect) { e.Action.TargetAuthor = engine.Address{} }},
		{"a target kept elsewhere", reaction, func(e *engine.DecisionEffect) { e.Action.TargetPeer = carol }},
		{"another sender", reaction, func(e *engine.DecisionEffect) { e.Action.Peer = carol }},
		{"another emoji", reaction, func(e *engine.DecisionEffect) { e.Action.Emoji = "x" }},
		{"a one-to-one action with a target's author", reaction, func(e *engine.DecisionEffect) { e.Action.Group = nil }},
		{"an edit of another member's message", edit, func(e *engine.DecisionEffect) { e.Action.TargetAuthor = carol }},
		{"a delete of another member's message", del, func(e *engine.DecisionEffect) { e.Action.TargetAuthor = carol }},
		{"kept actions with a reaction", reaction, func(e *engine.DecisionEffect) {
			e.WithTarget = []engine.KeptTakeBack{{On: sibling, Effect: keptGroup()}}
		}},
		{"a one-to-one kept action with a reply", reply, func(e *engine.DecisionEffect) {
			e.WithTarget = []engine.KeptTakeBack{{On: sibling, Effect: kept()}}
		}},
		{"a kept action of another author's target", reply, func(e *engine.DecisionEffect) {
			k := keptGroup()
			k.Action.TargetAuthor = carol
			e.WithTarget = []engine.KeptTakeBack{{On: sibling, Effect: k}}
		}},
		{"a kept action of another group", reply, func(e *engine.DecisionEffect) {
			k := keptGroup()
			k.Action.Group = &wire.GroupID{2}
			e.WithTarget = []engine.KeptTakeBack{{On: sibling, Effect: k}}
		}},
	} {
		e := takeOf(c.action)
		c.change(&e)
		err := validate(receivePlan(1, sibling, 3, e))
		if !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a group take-back with %s: %v, want an invalid plan", c.name, err)
		} else if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
			t.Errorf("a group take-back with %s refused for %d reasons, want one: %v", c.name, n, err)
		}
	}
}

// TestValidateKeepActionWithDiscard: a discard for its target may keep a
// sibling's commit kept for the message with the action as it arrived
// (Finalize.KeepAction), only that message's own action: the refusals.
func TestValidateKeepActionWithDiscard(t *testing.T) {
	target, edit := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")})
	if err != nil {
		t.Fatal(err)
	}
	sw := sessionWrite(bob, 2, "ack")
	grp := wire.GroupID{1}
	base := func() engine.Finalize {
		return engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
			Reason: engine.DiscardTargetDiscarded, At: planAt, Content: wire.ContentEdit, Session: &sw, Ack: ackOut(bob),
			KeepAction: &engine.KeptAction{Sender: bob, ID: edit, Content: wire.ContentEdit, Target: target, Body: body}}
	}
	if err := validate(base()); err != nil {
		t.Fatalf("a valid discard keeping its action: %v", err)
	}
	if p := base(); true {
		p.Group, p.KeepAction.Group = &grp, &grp
		if err := validate(p); err != nil {
			t.Fatalf("a valid group discard keeping its action: %v", err)
		}
	}
	for name, change := range map[string]func(*engine.Finalize){
		"a commit":                func(p *engine.Finalize) { p.Outcome, p.Reason = engine.OutcomeCommitted, engine.DiscardNone },
		"another reason":          func(p *engine.Finalize) { p.Reason = engine.DiscardRejected },
		"another message's":       func(p *engine.Finalize) { p.KeepAction.ID = wire.LogicalID{0x7d} },
		"another sender's":        func(p *engine.Finalize) { p.KeepAction.Sender = engine.MustParseAddress("carol/1") },
		"another content type":    func(p *engine.Finalize) { p.KeepAction.Content = wire.ContentReaction },
		"a reply":                 func(p *engine.Finalize) { p.Content, p.KeepAction.Content = wire.ContentReply, wire.ContentReply },
		"another target":          func(p *engine.Finalize) { p.KeepAction.Target = wire.LogicalID{0x7e} },
		"another body":            func(p *engine.Finalize) { p.KeepAction.Body = []byte("not the message") },
		"a group on a one-to-one": func(p *engine.Finalize) { p.KeepAction.Group = &grp },
		"another group":           func(p *engine.Finalize) { p.Group, p.KeepAction.Group = &grp, &wire.GroupID{2} },
	} {
		p := base()
		k := *p.KeepAction
		p.KeepAction = &k
		change(&p)
		if err := validate(p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("discard keeping %s: %v, want an invalid plan", name, err)
		}
	}
}

// TestValidateKeepOwnActionWithDiscard: a discard for its target may keep
// a sibling's own group action as that sibling's commit (KeepAction.On,
// kept with no commit heard) only naming the action's sender, in a group;
// or the person's commit made here that the rules turned into the discard,
// naming a device of another person than the sender, decided on no other
// device.
func TestValidateKeepOwnActionWithDiscard(t *testing.T) {
	target, reaction := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "+1"})
	if err != nil {
		t.Fatal(err)
	}
	sw := sessionWrite(bob, 2, "ack")
	grp := wire.GroupID{1}
	base := func() engine.Finalize {
		return engine.Finalize{Sender: bob, ID: reaction, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
			Reason: engine.DiscardTargetDiscarded, At: planAt, Content: wire.ContentReaction, Session: &sw, Ack: ackOut(bob), Group: &grp,
			KeepAction: &engine.KeptAction{Sender: bob, ID: reaction, On: bob, Content: wire.ContentReaction, Target: target, Body: body, Group: &grp}}
	}
	if err := validate(base()); err != nil {
		t.Fatalf("a valid discard keeping a sibling's own action: %v", err)
	}
	// The person's commit made on this device (a device of another
	// person than the sender), group or one to one: the store checks at
	// apply that it names this device (TestKeepOwnCommitMadeHere).
	for name, change := range map[string]func(*engine.Finalize){
		"in a group": func(p *engine.Finalize) { p.KeepAction.On = self },
		"one to one": func(p *engine.Finalize) { p.KeepAction.On, p.Group, p.KeepAction.Group = self, nil, nil },
	} {
		p := base()
		k := *p.KeepAction
		p.KeepAction = &k
		change(&p)
		if err := validate(p); err != nil {
			t.Errorf("a valid discard keeping the commit made here %s: %v", name, err)
		}
	}
	for name, change := range map[string]func(*engine.Finalize){
		"another device's commit": func(p *engine.Finalize) { p.KeepAction.On = engine.MustParseAddress("bob/2") },
		"a one-to-one action":     func(p *engine.Finalize) { p.Group, p.KeepAction.Group = nil, nil },
		"a sibling's commit made here": func(p *engine.Finalize) {
			on := engine.MustParseAddress("alice/2")
			p.KeepAction.On, p.DecidedOn = self, &on
		},
		"a malformed device": func(p *engine.Finalize) { p.KeepAction.On = engine.Address{User: "alice"} },
	} {
		p := base()
		k := *p.KeepAction
		p.KeepAction = &k
		change(&p)
		if err := validate(p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("discard keeping %s: %v, want an invalid plan", name, err)
		}
	}
}
