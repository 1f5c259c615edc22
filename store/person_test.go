package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestHoldPeerDeviceList: a person's list is held by compare-and-set on
// the generation held, and its conversation is kept from the first.
func TestHoldPeerDeviceList(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	list := func(gen uint64) []byte {
		l := wire.DeviceList{User: "carol", Generation: gen, AccountKey: [32]byte{1},
			Entries: []wire.DeviceEntry{{Number: 2, State: wire.DeviceActive}, {Number: 3, State: wire.DeviceActive}}}
		if gen > 1 {
			l.Parent = [32]byte{byte(gen)}
		}
		b, err := wire.EncodeDeviceList(l)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hold := func(from, gen uint64) engine.HoldPeerDeviceList {
		return engine.HoldPeerDeviceList{User: "carol", From: from, AccountKey: [32]byte{1}, Generation: gen, List: list(gen),
			Conversation: carol, At: planAt}
	}
	f.apply(t, hold(0, 1))
	if _, err := f.db.Apply(ctx, hold(0, 2)); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a second first list = %v, want ErrConflict", err)
	}
	f.apply(t, hold(1, 3))
	if _, err := f.db.Apply(ctx, hold(1, 4)); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a list after a generation no longer held = %v, want ErrConflict", err)
	}
	bad := hold(3, 4)
	bad.AccountKey = [32]byte{2}
	if _, err := f.db.Apply(ctx, bad); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a list of another account key = %v, want ErrConflict", err)
	}
	a, ok, err := f.db.PeerAccount(ctx, "carol")
	if err != nil || !ok || a.List.Generation != 3 || a.Conversation != carol {
		t.Fatalf("PeerAccount = %+v, %v, %v; want generation 3 in conversation %s", a, ok, err, carol)
	}
	if users, err := f.db.PeerAccountUsers(ctx, 10); err != nil || len(users) != 1 || users[0] != "carol" {
		t.Fatalf("PeerAccountUsers = %v, %v", users, err)
	}
}

// TestPersonSend: a message to a person is one history entry and a lane
// per device; the entry becomes abandoned once no lane to the person is
// left, and a sent copy's lane never moves it.
func TestPersonSend(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id := wire.LogicalID{0x33}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	own := engine.MustParseAddress("alice/2")
	l, err := wire.EncodeDeviceList(wire.DeviceList{User: "carol", Generation: 1, AccountKey: [32]byte{1},
		Entries: []wire.DeviceEntry{{Number: 2, State: wire.DeviceActive}, {Number: 3, State: wire.DeviceActive}}})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: l, Conversation: c2, At: planAt})
	f.apply(t, engine.CreateAccount{List: secondListPlan(t)}) // alice/1 and alice/2 active
	cp, err := wire.EncodeSentCopy(wire.SentCopy{ID: id, To: c2.String(), Body: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	p := engine.PersonSend{Conversation: c2, ID: id, Body: []byte("hi"), At: planAt, Lanes: []engine.PersonLane{
		{Recipient: c2, Frame: frameOf(t, id, "hi")}, {Recipient: c3, Frame: frameOf(t, id, "hi")}, {Recipient: own, Frame: cp, Own: true}}}
	wrong := p
	wrong.Lanes = []engine.PersonLane{{Recipient: own, Frame: frameOf(t, id, "hi"), Own: true}}
	if _, err := f.db.Apply(ctx, wrong); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a copy lane with the person's frame = %v, want ErrConflict", err)
	}
	f.apply(t, p)
	for _, peer := range []engine.Address{c2, c3} {
		h, err := f.db.History(ctx, peer, 0, 10)
		if err != nil || len(h) != 1 || h[0].ID != id || h[0].State != engine.SentPending {
			t.Fatalf("History(%s) = %+v, %v; want the one pending entry", peer, h, err)
		}
	}
	if n, err := f.db.CountOutbound(ctx, nil); err != nil || n != 3 {
		t.Fatalf("%d pending lanes, %v; want 3", n, err)
	}
	f.apply(t, engine.Abandon{Recipient: own, ID: id, At: planAt})
	f.apply(t, engine.Abandon{Recipient: c2, ID: id, At: planAt})
	if h, _ := f.db.History(ctx, c2, 0, 10); h[0].State != engine.SentPending {
		t.Fatalf("state %v with a lane to carol/3 pending, want pending", h[0].State)
	}
	f.apply(t, engine.Abandon{Recipient: c3, ID: id, At: planAt})
	if h, _ := f.db.History(ctx, c2, 0, 10); h[0].State != engine.SentAbandoned {
		t.Fatalf("state %v with no lane left, want abandoned", h[0].State)
	}
	lanes, err := f.db.PersonLanes(ctx, c2, id)
	if err != nil || len(lanes) != 3 || lanes[0].Recipient != c2 || lanes[2].Recipient != own || !lanes[2].Own ||
		lanes[0].State != engine.LaneAbandoned {
		t.Fatalf("PersonLanes = %+v, %v; want carol/2, carol/3, then the copy, abandoned", lanes, err)
	}
}

// TestKeptDecisionsAreBounded: decisions for messages that never come do
// not fill the table for good: at MaxKeptDecisions the oldest is forgotten
// for the new one, a decision older than MaxDecisionAge is forgotten when
// the next is kept, and only the decisions whose message is pending are
// due.
func TestKeptDecisionsAreBounded(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withInbound(t, f) // bob's idRecv pending; session with bob at version 2
	version := uint64(2)
	keep := func(n int, message wire.LogicalID, at time.Time) {
		t.Helper()
		var fid wire.LogicalID
		binary.BigEndian.PutUint32(fid[:], uint32(n)+1<<24)
		row := f.stage(t)
		f.apply(t, receivePlan(row, bob, version, engine.DecisionEffect{ID: fid, At: at, Sender: bob, Message: message,
			Outcome: engine.OutcomeCommitted, Keep: true}))
		version++
	}
	unseen := func(n int) wire.LogicalID {
		var id wire.LogicalID
		binary.BigEndian.PutUint32(id[:], uint32(n)+2<<24)
		return id
	}
	for n := range engine.MaxKeptDecisions + 2 {
		keep(n, unseen(n), planAt.Add(time.Duration(n)*time.Second))
	}
	kept, err := f.db.KeptDecisions(ctx, 2*engine.MaxKeptDecisions)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != engine.MaxKeptDecisions || kept[0].ID != unseen(2) || kept[len(kept)-1].ID != unseen(engine.MaxKeptDecisions+1) {
		t.Fatalf("%d kept, oldest %x: want %d, the two oldest forgotten", len(kept), kept[0].ID[:4], engine.MaxKeptDecisions)
	}
	if due, held, err := f.db.DueDecisions(ctx, engine.MaxKeptDecisions); err != nil || len(due) != 0 || !held {
		t.Fatalf("due %v held %v err %v: want none due (no message pending), some held", due, held, err)
	}
	// Past the age bound every earlier decision goes; the one for bob's
	// pending message is due.
	keep(engine.MaxKeptDecisions+2, idRecv, planAt.Add(engine.MaxDecisionAge+time.Hour))
	kept, err = f.db.KeptDecisions(ctx, 2*engine.MaxKeptDecisions)
	if err != nil || len(kept) != 1 {
		t.Fatalf("%d kept (%v) after the age bound, want 1", len(kept), err)
	}
	due, held, err := f.db.DueDecisions(ctx, engine.MaxKeptDecisions)
	if err != nil || !held || len(due) != 1 || due[0].ID != idRecv || due[0].Sender != bob {
		t.Fatalf("due %v held %v err %v: want bob's pending message", due, held, err)
	}
}

// TestTakeBackLeavesADiscardOfUnknownKind: a discard finalized before
// migration 0025 carries the all-zero group (the migration sets it), so
// whether it was a one-to-one message or a group's is not known: a
// sibling's commit with the body leaves it discarded and writes no
// history. The same discard with no group (one written since, of a
// one-to-one message) is taken back into the conversation.
func TestTakeBackLeavesADiscardOfUnknownKind(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withInbound(t, f) // bob's idRecv pending; session with bob at version 2
	body := "hi PLAINTEXT-MARKER-received"
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: idRecv, Digest: sha256.Sum256([]byte(body)), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardRejected, At: planAt, Session: &sw, Ack: ackOut(bob)})
	if _, err := f.db.sql.ExecContext(ctx, "UPDATE finalized SET grp = zeroblob(16) WHERE sender = ? AND id = ?", bob.String(), idRecv[:]); err != nil {
		t.Fatal(err)
	}
	decide := func(n byte, version uint64) {
		t.Helper()
		row := f.stage(t)
		f.apply(t, receivePlan(row, bob, version, engine.DecisionEffect{ID: wire.LogicalID{0xd0, n}, At: planAt, Sender: bob, Message: idRecv,
			Outcome: engine.OutcomeCommitted, TakeBack: []byte(body)}))
	}
	inHistory := func() int {
		t.Helper()
		h, err := f.db.History(ctx, bob, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range h {
			if e.ID == idRecv && e.Direction == engine.DirectionIn {
				n++
			}
		}
		return n
	}
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.TakeBack {
		t.Fatalf("Seen of a discard of unknown kind: %+v, %v; want no take-back (the engine reports what the store does)", s, err)
	}
	decide(1, 3)
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.Outcome != engine.OutcomeDiscarded || inHistory() != 0 {
		t.Fatalf("a discard of unknown kind after a commit with its body: %+v, %v, %d in history; want it discarded, none", s, err, inHistory())
	}
	if _, err := f.db.sql.ExecContext(ctx, "UPDATE finalized SET grp = NULL WHERE sender = ? AND id = ?", bob.String(), idRecv[:]); err != nil {
		t.Fatal(err)
	}
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || !s.TakeBack {
		t.Fatalf("Seen of a one-to-one discard: %+v, %v; want a take-back", s, err)
	}
	decide(2, 4)
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.Outcome != engine.OutcomeCommitted || inHistory() != 1 {
		t.Fatalf("a one-to-one discard after a commit with its body: %+v, %v, %d in history; want it committed, once", s, err, inHistory())
	}
}

// TestGroupAddedLanesAreChecked: the group lanes a list adds go from a
// device of the list's person to another one the list names active, and
// carry a group message or a signed roster change of their group and ID;
// anything else (a chain announcement, another group's change) refuses
// the plan before it touches the store.
func TestGroupAddedLanesAreChecked(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	list := func(gen uint64, n ...uint32) []byte {
		l := wire.DeviceList{User: "carol", Generation: gen, AccountKey: [32]byte{1}}
		if gen > 1 {
			l.Parent = [32]byte{byte(gen)}
		}
		for _, d := range n {
			l.Entries = append(l.Entries, wire.DeviceEntry{Number: d, State: wire.DeviceActive})
		}
		b, err := wire.EncodeDeviceList(l)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: list(1, 2), Conversation: carol, At: planAt})
	g, id := wire.GroupID{7}, wire.LogicalID{0x44}
	frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: id, Group: g, Generation: 1, Content: wire.ContentText, Body: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	change := func(id wire.LogicalID, g wire.GroupID) []byte {
		b, err := wire.EncodeSignedRoster(wire.SignedRoster{Roster: wire.Roster{ID: id, Group: g, Generation: 2, Name: "crew",
			Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}},
			Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: "carol/2"}, {Address: "dave/1"}}}, Author: "alice/1"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cid := wire.LogicalID{0x45}
	announce, err := wire.EncodeChainAnnounce(wire.ChainAnnounce{ID: id, Group: g, Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	c2, c3, c4 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3"), engine.MustParseAddress("carol/4")
	good := engine.AddedGroupLane{Group: g, ID: id, From: c2, Recipient: c3, Frame: frame}
	// A signed roster change of the group, pending to the person, goes
	// ahead of the messages at its generation.
	goodChange := engine.AddedGroupLane{Group: g, ID: cid, From: c2, Recipient: c3, Frame: change(cid, g)}
	for name, bad := range map[string]engine.AddedGroupLane{
		"to a device the list does not name": {Group: g, ID: id, From: c2, Recipient: c4, Frame: frame},
		"to another person":                  {Group: g, ID: id, From: c2, Recipient: engine.MustParseAddress("dave/3"), Frame: frame},
		"from the device itself":             {Group: g, ID: id, From: c3, Recipient: c3, Frame: frame},
		"of another group":                   {Group: wire.GroupID{8}, ID: id, From: c2, Recipient: c3, Frame: frame},
		"with a one-to-one frame":            {Group: g, ID: id, From: c2, Recipient: c3, Frame: frameOf(t, id, "hi")},
		"with a chain announcement":          {Group: g, ID: id, From: c2, Recipient: c3, Frame: announce},
		"with another group's change":        {Group: g, ID: cid, From: c2, Recipient: c3, Frame: change(cid, wire.GroupID{8})},
		"with a change of another ID":        {Group: g, ID: id, From: c2, Recipient: c3, Frame: change(cid, g)},
		"with a change to another person":    {Group: g, ID: cid, From: c2, Recipient: engine.MustParseAddress("dave/3"), Frame: change(cid, g)},
	} {
		p := engine.HoldPeerDeviceList{User: "carol", From: 1, AccountKey: [32]byte{1}, Generation: 2, List: list(2, 2, 3),
			Conversation: carol, At: planAt, GroupAdded: []engine.AddedGroupLane{bad}}
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a group lane %s = %v, want refused", name, err)
		}
	}
	// A lane whose source is not pending (no such lane here) is not added,
	// and the list is held.
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", From: 1, AccountKey: [32]byte{1}, Generation: 2, List: list(2, 2, 3),
		Conversation: carol, At: planAt, GroupAdded: []engine.AddedGroupLane{goodChange, good}})
	if a, ok, err := f.db.PeerAccount(ctx, "carol"); err != nil || !ok || a.List.Generation != 2 {
		t.Fatalf("PeerAccount = %+v, %v, %v; want generation 2", a, ok, err)
	}
	if _, found, err := f.db.LaneGroup(ctx, c3, id); err != nil || found {
		t.Fatalf("a lane to carol/3 was added for a message with no pending lane (%v)", err)
	}
}

// TestPersonSendAction: an own action to a person of several devices is
// one PersonSend with its apply: its lanes are stored and the reaction
// shows on the target in the person's conversation in the same
// transaction; an apply named for another conversation is refused.
func TestPersonSendAction(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	target, id := wire.LogicalID{0x33}, wire.LogicalID{0x34}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	f.apply(t, engine.PersonSend{Conversation: c2, ID: target, Body: []byte("hi"), At: planAt, Lanes: []engine.PersonLane{
		{Recipient: c2, Frame: frameOf(t, target, "hi")}, {Recipient: c3, Frame: frameOf(t, target, "hi")}}})
	a := wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "👍", Order: 1}
	body, err := wire.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: wire.ContentReaction, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	self := engine.MustParseAddress("alice/1")
	apply := engine.ActionApply{Peer: c2, ID: id, Dir: engine.DirectionOut, Content: wire.ContentReaction, Target: target,
		TargetDir: engine.DirectionOut, Reactor: self, Emoji: "👍", Order: 1, At: planAt}
	p := engine.PersonSend{Conversation: c2, ID: id, Body: []byte{}, At: planAt, Action: &apply, Lanes: []engine.PersonLane{
		{Recipient: c2, Frame: frame}, {Recipient: c3, Frame: frame}}}
	wrong, other := p, apply
	other.Peer = c3
	wrong.Action = &other
	if _, err := f.db.Apply(ctx, wrong); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("an action applied under another conversation = %v, want ErrConflict", err)
	}
	f.apply(t, p)
	h, err := f.db.History(ctx, c2, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	shown := false
	for _, e := range h {
		if e.ID == target {
			shown = len(e.Reactions) == 1 && e.Reactions[0].Emoji == "👍" && e.Reactions[0].From == self
		}
	}
	if !shown {
		t.Fatalf("History(%s) = %+v; want the reaction on the target", c2, h)
	}
	if lanes, err := f.db.PersonLanes(ctx, c2, id); err != nil || len(lanes) != 2 {
		t.Fatalf("PersonLanes = %+v, %v; want carol/2 and carol/3", lanes, err)
	}
}

// TestPersonSendActionCopy: an own action to a person goes with a sent
// copy of the action (frame kind 17) on a lane to each other active
// device of this account, in the PersonSend that applies it here. The
// plan check refuses a copy lane to anyone else: a device the account's
// list does not name active, another person's device, or any device on a
// profile without an account; nothing is stored.
func TestPersonSendActionCopy(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	target, id := wire.LogicalID{0x43}, wire.LogicalID{0x44}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	own, stranger := engine.MustParseAddress("alice/2"), engine.MustParseAddress("alice/3")
	f.apply(t, engine.PersonSend{Conversation: c2, ID: target, Body: []byte("hi"), At: planAt, Lanes: []engine.PersonLane{
		{Recipient: c2, Frame: frameOf(t, target, "hi")}}})
	a := wire.Action{Content: wire.ContentReaction, Target: target, Emoji: "👍", Order: 1}
	body, err := wire.EncodeAction(a)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: wire.ContentReaction, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: id, To: c2.String(), Action: a})
	if err != nil {
		t.Fatal(err)
	}
	self := engine.MustParseAddress("alice/1")
	apply := engine.ActionApply{Peer: c2, ID: id, Dir: engine.DirectionOut, Content: wire.ContentReaction, Target: target,
		TargetDir: engine.DirectionOut, Reactor: self, Emoji: "👍", Order: 1, At: planAt}
	plan := func(to engine.Address) engine.PersonSend {
		return engine.PersonSend{Conversation: c2, ID: id, Body: []byte{}, At: planAt, Action: &apply, Lanes: []engine.PersonLane{
			{Recipient: c2, Frame: frame}, {Recipient: to, Frame: cp, Own: true}}}
	}
	refused := func(what string, p engine.PersonSend) {
		t.Helper()
		before := f.state(t)
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("%s: %v, want ErrConflict", what, err)
		}
		if f.state(t) != before {
			t.Fatalf("%s changed the database", what)
		}
	}
	refused("a copy lane on a profile without an account", plan(own))
	f.apply(t, engine.CreateAccount{List: secondListPlan(t)}) // alice/1 and alice/2 active
	refused("a copy lane to a device the account does not list", plan(stranger))
	refused("a copy lane to another person's device", plan(c3))
	refused("a copy lane to this device itself", plan(self))
	f.apply(t, plan(own))
	lanes, err := f.db.PersonLanes(ctx, c2, id)
	if err != nil || len(lanes) != 2 || lanes[1].Recipient != own || !lanes[1].Own {
		t.Fatalf("PersonLanes = %+v, %v; want carol/2, then the copy to alice/2", lanes, err)
	}
}

// TestTakeBackActionIsChecked: a decision that takes back a discarded
// action applies it only as the message it takes back: an action of
// another ID, or one its action body does not decode to, is an invalid
// plan that changes nothing; the recorded one turns the discard committed and applies the action (a reply's
// quote) in the same transaction.
func TestTakeBackActionIsChecked(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withSession(t, f)
	target := wire.LogicalID{0x7a}
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("yes")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := wire.EncodeAction(wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("no")})
	if err != nil {
		t.Fatal(err)
	}
	// bob's idRecv, the reply, pending; session with bob at version 2.
	f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, idRecv, string(body))))
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: idRecv, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardRejected, At: planAt, Content: wire.ContentReply, Session: &sw, Ack: ackOut(bob)})
	reply := func(id wire.LogicalID) *engine.ActionApply {
		return &engine.ActionApply{Peer: bob, ID: id, Dir: engine.DirectionIn, Content: wire.ContentReply, Target: target, Text: []byte("yes"), At: planAt}
	}
	decide := func(row int64, n byte, version uint64, a *engine.ActionApply, actionBody []byte) error {
		t.Helper()
		_, err := f.db.Apply(ctx, receivePlan(row, bob, version, engine.DecisionEffect{ID: wire.LogicalID{0xd0, n}, At: planAt, Sender: bob, Message: idRecv,
			Outcome: engine.OutcomeCommitted, TakeBack: []byte("yes"), Action: a, ActionBody: actionBody}))
		return err
	}
	row := f.stage(t)
	before := f.state(t)
	if err := decide(row, 1, 3, reply(wire.LogicalID{0x99}), body); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a take-back applying another message's action: %v, want an invalid plan (ErrConflict)", err)
	}
	if err := decide(row, 1, 3, nil, body); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a take-back with an action body and no action: %v, want an invalid plan (ErrConflict)", err)
	}
	if err := decide(row, 1, 3, reply(idRecv), other); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a take-back applying an action its body does not say: %v, want an invalid plan (ErrConflict)", err)
	}
	if after := f.state(t); after != before {
		t.Fatalf("the refused plans changed the store")
	}
	if err := decide(row, 1, 3, reply(idRecv), body); err != nil {
		t.Fatal(err)
	}
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("after the recorded action: %+v, %v; want committed", s, err)
	}
	h, err := f.db.History(ctx, bob, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range h {
		if e.ID == idRecv {
			found = string(e.Body) == "yes" && e.ReplyTo != nil && *e.ReplyTo == target && e.DecidedOn != nil && *e.DecidedOn == bob
		}
	}
	if !found {
		t.Fatalf("the taken-back reply is not in the history with its quote: %+v", h)
	}
}

// TestTakeBackActionKeepsTheRecordedKind: a discard's finalized record
// keeps its content type and arrival (0028). A commit that carries an
// action (kind 18) whose bytes are the discarded message's takes it back
// only when the record says it was that kind of action: a text whose
// bytes decode as a reply, or a record that keeps no type (before 0028),
// stays discarded and has no entry; the recorded reply is taken back,
// written where it arrived, not where it was discarded.
func TestTakeBackActionKeepsTheRecordedKind(t *testing.T) {
	target := wire.LogicalID{0x7a}
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentReply, Target: target, Text: []byte("yes")})
	if err != nil {
		t.Fatal(err)
	}
	arrived := planAt.Add(-time.Hour)
	for _, c := range []struct {
		name    string
		content wire.ContentType
		old     bool // the record's type and arrival erased, as before 0028
		action  bool // Seen.TakeBackAction: a record of an action (the engine compares its kind)
		taken   bool
	}{
		{"text", wire.ContentText, false, false, false},
		{"reaction", wire.ContentReaction, false, true, false},
		{"before 0028", wire.ContentReply, true, false, false},
		{"reply", wire.ContentReply, false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, false)
			ctx := context.Background()
			withSession(t, f)
			f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, idRecv, string(body))))
			sw := sessionWrite(bob, 2, "ack")
			f.apply(t, engine.Finalize{Sender: bob, ID: idRecv, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
				Reason: engine.DiscardRejected, At: planAt, Arrived: arrived, Content: c.content, Session: &sw, Ack: ackOut(bob)})
			if c.old {
				if _, err := f.db.sql.ExecContext(ctx, "UPDATE finalized SET content = NULL, arrived = NULL WHERE id = ?", idRecv[:]); err != nil {
					t.Fatal(err)
				}
			}
			s, err := f.db.Seen(ctx, bob, idRecv)
			if err != nil {
				t.Fatal(err)
			}
			if want := c.content; c.old && (s.Content != 0 || !s.Arrived.IsZero()) || !c.old && (s.Content != want || !s.Arrived.Equal(arrived)) {
				t.Fatalf("Seen = %+v; want the recorded content type and arrival", s)
			}
			if s.TakeBackAction != c.action {
				t.Fatalf("Seen.TakeBackAction = %v, want %v", s.TakeBackAction, c.action)
			}
			a := &engine.ActionApply{Peer: bob, ID: idRecv, Dir: engine.DirectionIn, Content: wire.ContentReply, Target: target, Text: []byte("yes"), At: planAt}
			if _, err := f.db.Apply(ctx, receivePlan(f.stage(t), bob, 3, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: planAt, Sender: bob, Message: idRecv,
				Outcome: engine.OutcomeCommitted, TakeBack: []byte("yes"), Action: a, ActionBody: body})); err != nil {
				t.Fatal(err)
			}
			s, err = f.db.Seen(ctx, bob, idRecv)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Outcome == engine.OutcomeCommitted; got != c.taken {
				t.Fatalf("taken back: %v, want %v (%+v)", got, c.taken, s)
			}
			h, err := f.db.History(ctx, bob, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			var entry *engine.HistoryEntry
			for i := range h {
				if h[i].ID == idRecv {
					entry = &h[i]
				}
			}
			switch {
			case c.taken && (entry == nil || !entry.At.Equal(arrived)):
				t.Fatalf("the taken-back reply's entry: %+v; want it at its arrival %v", entry, arrived)
			case !c.taken && entry != nil:
				t.Fatalf("an entry for a discard not taken back: %+v", entry)
			}
		})
	}
}

// TestTakeBackActionRule: a commit that carries a one-to-one action
// (kind 18) also takes back an action the engine discarded because the
// person discarded its target (target_discarded), and so does one of a
// group's action, in a known group; a commit that carries a text takes
// back only the person's discards. Seen reports the same rule (SeenMessage.TakeBackAction).
func TestTakeBackActionRule(t *testing.T) {
	grp := make([]byte, 16)
	grp[0] = 1
	for _, c := range []struct {
		reason         engine.DiscardReason
		grp            []byte
		content        wire.ContentType
		action, wanted bool
	}{
		{engine.DiscardTargetDiscarded, nil, wire.ContentReaction, true, true},
		{engine.DiscardTargetDiscarded, nil, wire.ContentReaction, false, false},
		{engine.DiscardRejected, nil, wire.ContentReply, true, true},
		{engine.DiscardTargetDeleted, nil, wire.ContentEdit, true, false},
		{engine.DiscardWindowPassed, nil, wire.ContentEdit, true, false},
		// A group's action: a discard the person made, or the engine's
		// target_discarded (its others stay), in a known group.
		{engine.DiscardRejected, grp, wire.ContentReply, true, true},
		{engine.DiscardOther, grp, wire.ContentReaction, true, true},
		{engine.DiscardRejected, make([]byte, 16), wire.ContentReaction, true, false},
		{engine.DiscardWindowPassed, grp, wire.ContentEdit, true, false},
		{engine.DiscardRejected, grp, wire.ContentText, false, true},
		{engine.DiscardTargetDiscarded, grp, wire.ContentReaction, true, true},
		{engine.DiscardTargetDiscarded, make([]byte, 16), wire.ContentReaction, true, false},
		{engine.DiscardTargetDiscarded, grp, wire.ContentText, false, false},
		{engine.DiscardTargetMissing, grp, wire.ContentReaction, true, false},
		// The content type the record keeps (0028): an action's commit
		// takes back only a record of an action, a text's commit never
		// one; a record from before 0028 (none) only a text's commit.
		{engine.DiscardRejected, nil, wire.ContentText, true, false},
		{engine.DiscardRejected, nil, 0, true, false},
		{engine.DiscardRejected, nil, wire.ContentReply, false, false},
		{engine.DiscardRejected, nil, 0, false, true},
		{engine.DiscardRejected, nil, wire.ContentText, false, true},
		// A discarded file is never taken back by a text's commit (its
		// manifest's bytes relabelled as text would hold the file key).
		{engine.DiscardRejected, nil, wire.ContentFile, false, false},
		{engine.DiscardRejected, grp, wire.ContentFile, false, false},
		{engine.DiscardRejected, nil, wire.ContentFile, true, false},
	} {
		if got := takeBackable(c.reason, c.grp, true, c.content, c.action); got != c.wanted {
			t.Errorf("takeBackable(%s, group %v, content %d, action %v) = %v, want %v", c.reason, c.grp != nil, c.content, c.action, got, c.wanted)
		}
	}
	f := newFixture(t, false)
	ctx := context.Background()
	withInbound(t, f)
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: idRecv, Digest: sha256.Sum256([]byte("hi PLAINTEXT-MARKER-received")), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardTargetDiscarded, At: planAt, Content: wire.ContentReaction, Session: &sw, Ack: ackOut(bob)})
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.TakeBack || !s.TakeBackAction || s.Reason != engine.DiscardTargetDiscarded || !s.At.Equal(planAt) {
		t.Fatalf("Seen of an action discarded as target_discarded: %+v, %v; want a take-back by an action's commit only, its reason and time", s, err)
	}
	if _, err := f.db.sql.ExecContext(ctx, "UPDATE finalized SET grp = ? WHERE sender = ? AND id = ?", grp, bob.String(), idRecv[:]); err != nil {
		t.Fatal(err)
	}
	if s, err := f.db.Seen(ctx, bob, idRecv); err != nil || s.TakeBackAction || !s.InGroup {
		t.Fatalf("Seen of a group's target_discarded action: %+v, %v; want no take-back (a group action stays discarded with its target)", s, err)
	}
}

// TestTakenBackEditHonoursTheEntrysAuthor: a taken-back edit (kind 18)
// applies to its target only when the target's entry names the edit's
// sender as the device that sent it, or names nobody; an entry another
// device of the person sent (a reused ID) keeps its body.
func TestTakenBackEditHonoursTheEntrysAuthor(t *testing.T) {
	for _, c := range []struct {
		sentBy  any
		applied bool
	}{
		{"bob/2", false},
		{bob.String(), true},
		{nil, true},
	} {
		f := newFixture(t, false)
		ctx := context.Background()
		withSession(t, f)
		target, edit := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
		// bob's message, committed, its entry naming c.sentBy.
		f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, target, "lunch at noon")))
		sw := sessionWrite(bob, 2, "ack")
		f.apply(t, engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeCommitted,
			Body: []byte("lunch at noon"), At: planAt, Session: &sw, Ack: ackOut(bob)})
		if _, err := f.db.sql.Exec("UPDATE history SET sent_by = ? WHERE direction = 1 AND id = ?", c.sentBy, target[:]); err != nil {
			t.Fatal(err)
		}
		// bob's edit of it, discarded here by the person.
		body, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")})
		if err != nil {
			t.Fatal(err)
		}
		f.apply(t, receivePlan(f.stage(t), bob, 3, deliver(t, edit, string(body))))
		sw = sessionWrite(bob, 4, "ack")
		f.apply(t, engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
			Reason: engine.DiscardRejected, At: planAt, Content: wire.ContentEdit, Session: &sw, Ack: ackOut(bob)})
		a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
			TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("lunch at one"), At: planAt}
		if _, err := f.db.Apply(ctx, receivePlan(f.stage(t), bob, 5, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 7}, At: planAt, Sender: bob,
			Message: edit, Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body})); err != nil {
			t.Fatalf("entry naming %v: %v", c.sentBy, err)
		}
		if s, err := f.db.Seen(ctx, bob, edit); err != nil || s.Outcome != engine.OutcomeCommitted {
			t.Fatalf("entry naming %v: the edit's record %+v, %v; want it taken back", c.sentBy, s, err)
		}
		h, err := f.db.History(ctx, bob, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, e := range h {
			if e.ID == target {
				got = string(e.Body)
			}
		}
		want := "lunch at noon"
		if c.applied {
			want = "lunch at one"
		}
		if got != want {
			t.Errorf("entry naming %v: the target reads %q after the taken-back edit, want %q", c.sentBy, got, want)
		}
	}
}

// TestKeptActionWaitsWhenItsTargetIsNotTakenBack: a decision that would
// take back a target and with it a kept action (WithTarget) applies the
// action only when the target was taken back; when the store refuses
// the target's take-back (here, a body other than the one discarded),
// the decision still applies and the action stays discarded, where an
// edit would otherwise find no entry and fail the batch (ErrConflict).
func TestKeptActionWaitsWhenItsTargetIsNotTakenBack(t *testing.T) {
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
	f.apply(t, engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardTargetDiscarded, At: planAt, Content: wire.ContentEdit, Session: &sw, Ack: ackOut(bob)})
	a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
		TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("lunch at one"), At: planAt}
	kept := engine.KeptTakeBack{On: engine.MustParseAddress("alice/2"), Effect: engine.DecisionEffect{At: planAt, Sender: bob, Message: edit, Outcome: engine.OutcomeCommitted,
		TakeBack: []byte{}, Action: a, ActionBody: body}}
	if _, err := f.db.Apply(ctx, receivePlan(f.stage(t), bob, 5, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 7}, At: planAt, Sender: bob,
		Message: target, Outcome: engine.OutcomeCommitted, TakeBack: []byte("lunch at nine"), WithTarget: []engine.KeptTakeBack{kept}})); err != nil {
		t.Fatalf("a decision whose take-back the store refuses, with a kept edit of its target: %v", err)
	}
	for _, id := range []wire.LogicalID{target, edit} {
		if s, err := f.db.Seen(ctx, bob, id); err != nil || s.Outcome != engine.OutcomeDiscarded {
			t.Fatalf("record %x: %+v, %v; want it still discarded", id[:], s, err)
		}
	}
}

// TestDirectTakeBackForgetsAKeptAction: an action decision kept until its
// target's take-back (KeepAction) is forgotten when another decision takes
// the action back directly: nothing is left to wait for.
func TestDirectTakeBackForgetsAKeptAction(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	withSession(t, f)
	target, edit := wire.LogicalID{0x7b}, wire.LogicalID{0x7c}
	f.apply(t, receivePlan(f.stage(t), bob, 1, deliver(t, target, "lunch at noon")))
	sw := sessionWrite(bob, 2, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: target, Digest: sha256.Sum256([]byte("lunch at noon")), Outcome: engine.OutcomeCommitted,
		Body: []byte("lunch at noon"), At: planAt, Session: &sw, Ack: ackOut(bob)})
	body, err := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("lunch at one")})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, receivePlan(f.stage(t), bob, 3, deliver(t, edit, string(body))))
	sw = sessionWrite(bob, 4, "ack")
	f.apply(t, engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardRejected, At: planAt, Content: wire.ContentEdit, Session: &sw, Ack: ackOut(bob)})
	on := engine.MustParseAddress("alice/2")
	f.apply(t, receivePlan(f.stage(t), bob, 5, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeCommitted, Keep: true,
		KeepAction: &engine.KeptAction{Sender: bob, ID: edit, On: on, Content: wire.ContentEdit, Target: target, Body: body}}))
	if kept, err := f.db.KeptActions(ctx, bob, target); err != nil || len(kept) != 1 {
		t.Fatalf("kept actions before: %+v, %v; want the edit", kept, err)
	}
	a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
		TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("lunch at one"), At: planAt}
	f.apply(t, receivePlan(f.stage(t), bob, 6, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 2}, At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeCommitted, TakeBack: []byte{}, Action: a, ActionBody: body}))
	if s, err := f.db.Seen(ctx, bob, edit); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("the edit's record: %+v, %v; want it taken back", s, err)
	}
	if kept, err := f.db.KeptActions(ctx, bob, target); err != nil || len(kept) != 0 {
		t.Fatalf("kept actions after the edit's take-back: %+v, %v; want none", kept, err)
	}
}

// TestKeepDecisionMerges: the merge of sqlKeepDecision for a kept action.
// A plain decision (kind 15) on bob's edit is kept first, a discard; the
// kind-18 commit of the edit, kept with its action, merges into it: the
// row is a commit with the action (coalesce), and a plain discard after
// it neither drops the action nor undoes the commit. The
// target's take-back then applies it (WithTarget, as the engine builds it
// from KeptActions) and forgets it.
func TestKeepDecisionMerges(t *testing.T) {
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
	f.apply(t, engine.Finalize{Sender: bob, ID: edit, Digest: sha256.Sum256(body), Outcome: engine.OutcomeDiscarded,
		Reason: engine.DiscardTargetDiscarded, At: planAt, Content: wire.ContentEdit, Session: &sw, Ack: ackOut(bob)})
	on := engine.MustParseAddress("alice/2")
	f.apply(t, receivePlan(f.stage(t), bob, 5, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 1}, At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeDiscarded, Keep: true}))
	if kept, err := f.db.KeptActions(ctx, bob, target); err != nil || len(kept) != 0 {
		t.Fatalf("kept actions after the plain decision: %+v, %v; want none", kept, err)
	}
	f.apply(t, receivePlan(f.stage(t), bob, 6, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 2}, At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeCommitted, Keep: true,
		KeepAction: &engine.KeptAction{Sender: bob, ID: edit, On: on, Content: wire.ContentEdit, Target: target, Body: body}}))
	f.apply(t, receivePlan(f.stage(t), bob, 7, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 3}, At: planAt, Sender: bob, Message: edit,
		Outcome: engine.OutcomeDiscarded, Keep: true}))
	if all, err := f.db.KeptDecisions(ctx, 100); err != nil || len(all) != 1 || all[0].ID != edit || all[0].Outcome != engine.OutcomeCommitted {
		t.Fatalf("kept decisions after the merge: %+v, %v; want one commit of the edit", all, err)
	}
	kept, err := f.db.KeptActions(ctx, bob, target)
	if err != nil || len(kept) != 1 || kept[0].ID != edit || kept[0].Content != wire.ContentEdit || string(kept[0].Body) != string(body) {
		t.Fatalf("kept actions after the merge: %+v, %v; want the edit's action", kept, err)
	}
	a := &engine.ActionApply{Peer: bob, ID: edit, Dir: engine.DirectionIn, Content: wire.ContentEdit, Target: target,
		TargetDir: engine.DirectionIn, Edit: 1, Text: []byte("lunch at one"), At: planAt}
	k := engine.KeptTakeBack{On: kept[0].On, Effect: engine.DecisionEffect{At: planAt, Sender: bob, Message: edit, Outcome: engine.OutcomeCommitted,
		TakeBack: []byte{}, Action: a, ActionBody: kept[0].Body}}
	f.apply(t, receivePlan(f.stage(t), bob, 8, engine.DecisionEffect{ID: wire.LogicalID{0xd0, 4}, At: planAt, Sender: bob,
		Message: target, Outcome: engine.OutcomeCommitted, TakeBack: []byte("lunch at noon"), WithTarget: []engine.KeptTakeBack{k}}))
	for _, id := range []wire.LogicalID{target, edit} {
		if s, err := f.db.Seen(ctx, bob, id); err != nil || s.Outcome != engine.OutcomeCommitted {
			t.Fatalf("record %x: %+v, %v; want it taken back", id[:], s, err)
		}
	}
	if all, err := f.db.KeptDecisions(ctx, 100); err != nil || len(all) != 0 {
		t.Fatalf("kept decisions after the take-back: %+v, %v; want none", all, err)
	}
}

// TestFirstListAddsLanes: a first list held (From 0) stores the lanes it
// adds to a message sent to the conversation's device before any list was
// held, beside the lane it was copied from.
func TestFirstListAddsLanes(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id := wire.LogicalID{0x44}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	f.apply(t, sendPlan(t, c2, id, "before the list", 0))
	l, err := wire.EncodeDeviceList(wire.DeviceList{User: "carol", Generation: 1, AccountKey: [32]byte{1},
		Entries: []wire.DeviceEntry{{Number: 2, State: wire.DeviceActive}, {Number: 3, State: wire.DeviceActive}}})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: l, Conversation: c2, At: planAt,
		Added: []engine.AddedLane{{Conversation: c2, ID: id, From: c2, Recipient: c3, Frame: frameOf(t, id, "before the list")}}})
	if _, err := f.db.Outbound(ctx, c3, id); err != nil {
		t.Fatalf("Outbound(carol/3) = %v, want the added lane pending", err)
	}
	lanes, err := f.db.PersonLanes(ctx, c2, id)
	if err != nil || len(lanes) != 2 || lanes[0].Recipient != c2 || lanes[1].Recipient != c3 ||
		lanes[0].State != engine.LanePending || lanes[1].State != engine.LanePending {
		t.Fatalf("PersonLanes = %+v, %v; want carol/2 and carol/3 pending", lanes, err)
	}
}

// firstListOf encodes carol's list of generation gen naming active the
// devices of active and revoked those of revoked.
func firstListOf(t *testing.T, gen uint64, active, revoked []uint32) []byte {
	t.Helper()
	l := wire.DeviceList{User: "carol", Generation: gen, AccountKey: [32]byte{1}}
	if gen > 1 {
		l.Parent = [32]byte{byte(gen)}
	}
	for _, d := range active {
		l.Entries = append(l.Entries, wire.DeviceEntry{Number: d, State: wire.DeviceActive})
	}
	for _, d := range revoked {
		l.Entries = append(l.Entries, wire.DeviceEntry{Number: d, State: wire.DeviceRevoked})
	}
	sort.Slice(l.Entries, func(i, j int) bool { return l.Entries[i].Number < l.Entries[j].Number })
	b, err := wire.EncodeDeviceList(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFirstListCopiesFromAnotherDevice: a first list whose conversation is
// carol/2 adds a lane to carol/2 for a message sent before it to carol/3,
// in carol/3's conversation (where its entry is), beside the lane it was
// copied from.
func TestFirstListCopiesFromAnotherDevice(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id := wire.LogicalID{0x46}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	f.apply(t, sendPlan(t, c3, id, "to carol/3", 0))
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: firstListOf(t, 1, []uint32{2, 3}, nil),
		Conversation: c2, At: planAt,
		Added: []engine.AddedLane{{Conversation: c3, ID: id, From: c3, Recipient: c2, Frame: frameOf(t, id, "to carol/3")}}})
	if _, err := f.db.Outbound(ctx, c2, id); err != nil {
		t.Fatalf("Outbound(carol/2) = %v, want the added lane pending", err)
	}
	lanes, err := f.db.PersonLanes(ctx, c3, id)
	if err != nil || len(lanes) != 2 || lanes[0].Recipient != c2 || lanes[1].Recipient != c3 ||
		lanes[0].State != engine.LanePending || lanes[1].State != engine.LanePending {
		t.Fatalf("PersonLanes(carol/3) = %+v, %v; want carol/2 and carol/3 pending", lanes, err)
	}
}

// TestFirstListEndsTheRevokedSource: a first list that revokes carol/3, to
// which a message was sent before it, adds the message's lane to carol/2
// and then ends its lane to carol/3 removed, in one transaction: the
// entry stays pending on carol/2.
func TestFirstListEndsTheRevokedSource(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id := wire.LogicalID{0x47}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	f.apply(t, sendPlan(t, c3, id, "to carol/3", 0))
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: firstListOf(t, 1, []uint32{2}, []uint32{3}),
		Conversation: c2, At: planAt, Removed: []engine.Address{c3},
		Added: []engine.AddedLane{{Conversation: c3, ID: id, From: c3, Recipient: c2, Frame: frameOf(t, id, "to carol/3")}}})
	if _, err := f.db.Outbound(ctx, c3, id); !errors.Is(err, engine.ErrNotPending) {
		t.Fatalf("Outbound(carol/3) = %v, want the lane to the revoked device gone", err)
	}
	if _, err := f.db.Outbound(ctx, c2, id); err != nil {
		t.Fatalf("Outbound(carol/2) = %v, want the added lane pending", err)
	}
	lanes, err := f.db.PersonLanes(ctx, c3, id)
	if err != nil || len(lanes) != 2 || lanes[0].Recipient != c2 || lanes[1].Recipient != c3 ||
		lanes[0].State != engine.LanePending || lanes[1].State != engine.LaneRemoved {
		t.Fatalf("PersonLanes(carol/3) = %+v, %v; want carol/2 pending and carol/3 removed", lanes, err)
	}
	state := func() engine.SentState {
		t.Helper()
		h, err := f.db.History(ctx, c3, 0, 10)
		if err != nil || len(h) != 1 {
			t.Fatalf("History(carol/3) = %+v, %v; want the message", h, err)
		}
		return h[0].State
	}
	if s := state(); s != engine.SentPending {
		t.Fatalf("entry %v after the first list, want pending on carol/2", s)
	}
	// A later list that names carol/4 copies the message from carol/2:
	// the plan says the person's conversation, but the lane is stored in
	// carol/3's, where the lane copied from is and the entry is kept.
	c4 := engine.MustParseAddress("carol/4")
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", From: 1, AccountKey: [32]byte{1}, Generation: 2, List: firstListOf(t, 2, []uint32{2, 4}, []uint32{3}),
		Conversation: c2, At: planAt,
		Added: []engine.AddedLane{{Conversation: c2, ID: id, From: c2, Recipient: c4, Frame: frameOf(t, id, "to carol/3")}}})
	if _, err := f.db.Outbound(ctx, c4, id); err != nil {
		t.Fatalf("Outbound(carol/4) = %v, want the later list's lane pending", err)
	}
	lanes, err = f.db.PersonLanes(ctx, c3, id)
	if err != nil || len(lanes) != 3 || lanes[2].Recipient != c4 || lanes[2].State != engine.LanePending {
		t.Fatalf("PersonLanes(carol/3) = %+v, %v; want carol/4 pending beside carol/2 and carol/3", lanes, err)
	}
	if s := state(); s != engine.SentPending {
		t.Fatalf("entry %v after the later list, want pending on carol/2 and carol/4", s)
	}
}

// TestFirstListKeepsTheLanesItDoesNotCopy: a message sent before any list
// as a PersonSend (this account has a second device, so it has lanes) to
// carol/3 gets no copy from the first list that revokes carol/3 (the
// engine copies text alone, from the oldest rows): its lane to carol/3
// stays pending and its entry pending, rather than ending with no lane
// open.
func TestFirstListKeepsTheLanesItDoesNotCopy(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id, copied := wire.LogicalID{0x49}, wire.LogicalID{0x4a}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	own := engine.MustParseAddress("alice/2")
	f.apply(t, engine.CreateAccount{List: secondListPlan(t)}) // alice/1 and alice/2 active
	for _, m := range []wire.LogicalID{id, copied} {
		cp, err := wire.EncodeSentCopy(wire.SentCopy{ID: m, To: c3.String(), Body: []byte("hi")})
		if err != nil {
			t.Fatal(err)
		}
		f.apply(t, engine.PersonSend{Conversation: c3, ID: m, Body: []byte("hi"), At: planAt, Lanes: []engine.PersonLane{
			{Recipient: c3, Frame: frameOf(t, m, "hi")}, {Recipient: own, Frame: cp, Own: true}}})
	}
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: firstListOf(t, 1, []uint32{2}, []uint32{3}),
		Conversation: c2, At: planAt, Removed: []engine.Address{c3},
		Added: []engine.AddedLane{{Conversation: c3, ID: copied, From: c3, Recipient: c2, Frame: frameOf(t, copied, "hi")}}})
	if _, err := f.db.Outbound(ctx, c3, id); err != nil {
		t.Fatalf("Outbound(carol/3) of the message not copied = %v, want its lane pending", err)
	}
	if _, err := f.db.Outbound(ctx, c3, copied); !errors.Is(err, engine.ErrNotPending) {
		t.Fatalf("Outbound(carol/3) of the message copied = %v, want its lane ended", err)
	}
	want := map[wire.LogicalID]engine.LaneState{id: engine.LanePending, copied: engine.LaneRemoved}
	for m, st := range want {
		lanes, err := f.db.PersonLanes(ctx, c3, m)
		got := engine.LaneState(0)
		for _, l := range lanes {
			if l.Recipient == c3 {
				got = l.State
			}
		}
		if err != nil || got != st {
			t.Fatalf("PersonLanes(carol/3, %x) = %+v, %v; want carol/3 %v", m[:1], lanes, err, st)
		}
	}
	h, err := f.db.History(ctx, c3, 0, 10)
	if err != nil || len(h) != 2 || h[0].State != engine.SentPending || h[1].State != engine.SentPending {
		t.Fatalf("History(carol/3) = %+v, %v; want both entries pending", h, err)
	}
}

// TestAddedLaneDoesNotReopenAnEndedLane: a device with a lane of a message
// that ended (abandoned) gets no new one from a list's added lanes, though
// the entry is pending on another device and no outbound row to it is
// left. The engine proposes lanes only to devices with no pending row; the
// store checks every lane in any state.
func TestAddedLaneDoesNotReopenAnEndedLane(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id := wire.LogicalID{0x4b}
	c2, c3 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3")
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: firstListOf(t, 1, []uint32{2, 3}, nil),
		Conversation: c2, At: planAt})
	f.apply(t, engine.PersonSend{Conversation: c2, ID: id, Body: []byte("hi"), At: planAt, Lanes: []engine.PersonLane{
		{Recipient: c2, Frame: frameOf(t, id, "hi")}, {Recipient: c3, Frame: frameOf(t, id, "hi")}}})
	f.apply(t, engine.Abandon{Recipient: c2, ID: id, At: planAt})
	f.apply(t, engine.HoldPeerDeviceList{User: "carol", From: 1, AccountKey: [32]byte{1}, Generation: 2, List: firstListOf(t, 2, []uint32{2, 3, 4}, nil),
		Conversation: c2, At: planAt,
		Added: []engine.AddedLane{{Conversation: c2, ID: id, From: c3, Recipient: c2, Frame: frameOf(t, id, "hi")}}})
	if _, err := f.db.Outbound(ctx, c2, id); !errors.Is(err, engine.ErrNotPending) {
		t.Fatalf("Outbound(carol/2) = %v, want none: its lane was abandoned", err)
	}
	lanes, err := f.db.PersonLanes(ctx, c2, id)
	if err != nil || len(lanes) != 2 || lanes[0].Recipient != c2 || lanes[0].State != engine.LaneAbandoned {
		t.Fatalf("PersonLanes = %+v, %v; want carol/2 abandoned beside carol/3", lanes, err)
	}
}

// TestAddedLanesAreChecked: a list's added lanes go between two devices of
// its person, to one it names active, once per message and device, in
// the person's conversation (a first list's also in the conversation of
// the device copied from); anything else refuses the plan.
func TestAddedLanesAreChecked(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	id := wire.LogicalID{0x48}
	c2, c3, c4 := engine.MustParseAddress("carol/2"), engine.MustParseAddress("carol/3"), engine.MustParseAddress("carol/4")
	fr := frameOf(t, id, "hi")
	lane := func(conv, from, to engine.Address) engine.AddedLane {
		return engine.AddedLane{Conversation: conv, ID: id, From: from, Recipient: to, Frame: fr}
	}
	first := engine.HoldPeerDeviceList{User: "carol", AccountKey: [32]byte{1}, Generation: 1, List: firstListOf(t, 1, []uint32{2, 3}, []uint32{4}),
		Conversation: c2, At: planAt}
	for name, added := range map[string][]engine.AddedLane{
		"to a revoked device":              {lane(c2, c2, c4)},
		"to a device the list lacks":       {lane(c2, c2, engine.MustParseAddress("carol/5"))},
		"to the device copied from":        {lane(c3, c3, c3)},
		"to another person":                {lane(c2, c2, engine.MustParseAddress("dave/3"))},
		"in another device's conversation": {lane(c4, c2, c3)},
		"twice to one device":              {lane(c2, c2, c3), lane(c4, c4, c3)},
	} {
		p := first
		p.Added = added
		if _, err := f.db.Apply(ctx, p); !errors.Is(err, engine.ErrConflict) {
			t.Errorf("a first list's lane %s = %v, want refused", name, err)
		}
	}
	later := engine.HoldPeerDeviceList{User: "carol", From: 1, AccountKey: [32]byte{1}, Generation: 2, List: firstListOf(t, 2, []uint32{2, 3}, []uint32{4}),
		Conversation: c2, At: planAt, Added: []engine.AddedLane{lane(c4, c4, c3)}}
	f.apply(t, first)
	if _, err := f.db.Apply(ctx, later); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("a later list's lane in the conversation of the device copied from = %v, want refused", err)
	}
}
