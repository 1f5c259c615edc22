package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// The device holding the account key forwards the roster changes it
// records to its person's other devices (engine/rosterforward.go,
// docs/protocol.md "Groups across a person's devices").

// laterLink makes the group of alice, bob and carol with bob/2 linked
// before it, then links bob/3, whose archive holds the group at
// generation 1, and has alice make ops while bob/3 stays away; bob/1 and
// bob/2 receive the change and acknowledge it, so it is pending to nobody
// when alice learns of bob/3.
func laterLink(t *testing.T, w *world, ops []wire.RosterChange, before func(), devs ...*device) (change wire.LogicalID, gid wire.GroupID, bob2, bob3 *device) {
	t.Helper()
	alice, bob, carol := devs[0], devs[1], devs[2]
	bob2 = w.linkHolding(bob)
	checkPeers(t, devs[0], devs[1:]...)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	gid = info.ID
	settle(t, 8, append([]*device{bob2}, devs...)...)
	bob3 = w.linkHolding(bob)
	if gen, _ := bob3.members(gid); gen != 1 {
		t.Fatalf("bob/3 holds generation %d of the group, want 1 from the link", gen)
	}
	if before != nil {
		before()
	}
	res, err := alice.c.ChangeRoster(w.ctx, gid, ops)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID, gid, bob2, bob3
}

// laneState is the state of d's group lane of id to the device to, 0
// when there is none.
func (d *device) laneState(to string, id wire.LogicalID) engine.LaneState {
	return engine.LaneState(d.count("SELECT coalesce(max(state), 0) FROM group_lane WHERE recipient = ? AND id = ?", to, id[:]))
}

// roundsWithout runs rounds of sync and commit on ds (the device left out
// stays away).
func roundsWithout(rounds int, ds ...*device) {
	for range rounds {
		for _, d := range ds {
			d.sync()
			d.commitAll()
		}
	}
}

// TestLinkerForwardsARosterChange: bob/1 links bob/3 while the group of
// alice, bob and carol stands at generation 1. alice then adds dave; bob/1
// and bob/2 receive the change and acknowledge it before alice learns of
// bob/3, so the change is pending to nobody and the newer list adds no
// lane of it. bob/1, which holds bob's account key, forwarded it to bob/2
// and bob/3 in the transaction that recorded it: bob/3 merges generation 2,
// takes alice's next message once, and every lane ends. bob/2, which had
// the change from alice, takes the forwarded copy as a repeat. Without the
// forward bob/3 holds the group's later messages for good.
func TestLinkerForwardsARosterChange(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol, dave := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	publishLists(t, alice, bob, carol, dave)
	change, g, bob2, bob3 := laterLink(t, w, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, nil, alice, bob, carol, dave)
	roundsWithout(8, alice, bob, bob2, carol, dave)
	for _, d := range []*device{bob, bob2} {
		if gen, _ := d.members(g); gen != 2 {
			t.Fatalf("%s holds generation %d, want 2", d.addr, gen)
		}
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open before bob/3 is known, want none", n)
	}
	if bob.laneState("bob/3", change) != engine.LanePending || bob.laneState("bob/2", change) != engine.LaneAcknowledged {
		t.Fatalf("bob/1's lanes of the change: to bob/2 %s, to bob/3 %s; want acknowledged and pending",
			bob.laneState("bob/2", change), bob.laneState("bob/3", change))
	}
	if bob2.laneState("bob/3", change) != 0 {
		t.Fatal("bob/2, which holds no account key, forwarded the change")
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if alice.laneSeq("bob/3", change) != 0 {
		t.Fatal("alice added a lane of a change pending to nobody")
	}
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("after the change"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := alice.lanes(g, sent.ID)["bob/3"]; !ok {
		t.Fatalf("alice's lanes of her message: %v, want one to bob/3", alice.lanes(g, sent.ID))
	}
	all := []*device{alice, bob, bob2, bob3, carol, dave}
	settleRetrying(t, 12, all...)
	for _, d := range []*device{bob2, bob3} {
		if gen, members := d.members(g); gen != 2 || len(members) != 4 {
			t.Fatalf("%s holds generation %d with %v, want 2 with dave", d.addr, gen, members)
		}
	}
	if n := bob3.countEntry(g, "alice/1:after the change"); n != 1 {
		t.Fatalf("bob/3 holds alice's message %d times: %v", n, bob3.groupHistory(g))
	}
	if a, b := bob.laneState("bob/2", change), bob.laneState("bob/3", change); a != engine.LaneAcknowledged || b != engine.LaneAcknowledged {
		t.Fatalf("bob/1's forwarded lanes: to bob/2 %s, to bob/3 %s; want both acknowledged", a, b)
	}
	if _, err := alice.c.SendGroup(w.ctx, g, []byte("later")); err != nil {
		t.Fatal(err)
	}
	settleRetrying(t, 12, all...)
	if n := bob3.countEntry(g, "alice/1:later"); n != 1 {
		t.Fatalf("bob/3 holds alice's later message %d times: %v", n, bob3.groupHistory(g))
	}
	for _, d := range all {
		if n := d.openGroupLanes(); n != 0 {
			t.Fatalf("%s has %d group lanes open, want none", d.addr, n)
		}
	}
}

// dropTo loses every envelope to one device while drop is set, as a
// network that ate them: the sender's lane stays pending and its retry
// sends it again.
type dropTo struct {
	*enginetest.Endpoint
	to   string
	drop *atomic.Bool
}

func (d dropTo) Submit(ctx context.Context, env wire.Envelope) error {
	if d.drop.Load() && env.Recipient == d.to {
		return nil
	}
	return d.Endpoint.Submit(ctx, env)
}

func (d dropTo) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	return enginetest.SubmitEach(ctx, d.Submit, envs)
}

// TestLinkerForwardsAHeldChange: bob/1 receives alice's change of
// generation 3 before her change of generation 2 (the network lost the
// first on its way to bob/1): it records the later one, which waits for
// the earlier, and merges both when alice's retry brings generation 2.
// Both reach bob/3, linked before either, from bob/1, and bob/3 merges
// generation 3.
func TestLinkerForwardsAHeldChange(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	var drop atomic.Bool
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		if a.String() != "alice/1" {
			return e
		}
		return dropTo{Endpoint: e, to: "bob/1", drop: &drop}
	}
	alice, bob, carol, dave, eve := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1"), w.device("eve/1")
	publishLists(t, alice, bob, carol, dave, eve)
	checkPeers(t, alice, eve)
	first, g, bob2, bob3 := laterLink(t, w, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, func() { drop.Store(true) }, alice, bob, carol, dave)
	drop.Store(false)
	second, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdd, Address: "eve/1"}})
	if err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if gen, _ := bob.members(g); gen != 1 {
		t.Fatalf("bob/1 holds generation %d before alice's retry, want 1 (generation 3 waiting)", gen)
	}
	if bob.laneState("bob/3", second.ID) == 0 {
		t.Fatal("bob/1 did not forward the change it recorded ahead of its generation")
	}
	alice.retry(bob)
	roundsWithout(8, alice, bob, bob2, carol, dave, eve)
	if gen, _ := bob.members(g); gen != 3 {
		t.Fatalf("bob/1 holds generation %d after alice's retry, want 3", gen)
	}
	if bob.laneState("bob/3", first) == 0 {
		t.Fatal("bob/1 did not forward the change that arrived late")
	}
	all := []*device{alice, bob, bob2, bob3, carol, dave, eve}
	settleRetrying(t, 12, all...)
	if gen, members := bob3.members(g); gen != 3 || len(members) != 5 {
		t.Fatalf("bob/3 holds generation %d with %v, want 3 with dave and eve", gen, members)
	}
	for _, d := range all {
		if n := d.openGroupLanes(); n != 0 {
			t.Fatalf("%s has %d group lanes open, want none", d.addr, n)
		}
	}
}

// TestForwardedAndDirectChangeMergesOnce: alice adds dave while bob/1 is
// away; bob links bob/2 (bob/1 the linker), whose archive holds the group
// before the change. bob/1 then receives the change and forwards it to
// bob/2, and alice, holding bob's newer list, adds a lane of it to bob/2
// too (it was pending to bob/1): bob/2 gets it twice, records it once,
// acknowledges both, and takes alice's message once.
func TestForwardedAndDirectChangeMergesOnce(t *testing.T) {
	oneGoroutine(t)
	_, g, change, _, alice, bob, bob2, carol, dave := changeWhileBobIsAway(t, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, false)
	bob.sync()
	if bob.laneState("bob/2", change) == 0 {
		t.Fatal("bob/1 did not forward the change to bob/2")
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if alice.laneSeq("bob/2", change) == 0 {
		t.Fatal("alice added no lane of the change still pending to bob")
	}
	settle(t, 8, alice, bob, bob2, carol, dave)
	if gen, members := bob2.members(g); gen != 2 || len(members) != 4 {
		t.Fatalf("bob/2 holds generation %d with %v, want 2 with dave", gen, members)
	}
	if n := bob2.count("SELECT count(*) FROM group_change WHERE id = ?", change[:]); n != 1 {
		t.Fatalf("bob/2 holds the change %d times, want once", n)
	}
	if got := bob.laneState("bob/2", change); got != engine.LaneAcknowledged {
		t.Fatalf("bob/1's forwarded lane to bob/2 is %s, want acknowledged", got)
	}
	if got := alice.laneState("bob/2", change); got != engine.LaneAcknowledged {
		t.Fatalf("alice's lane of the change to bob/2 is %s, want acknowledged", got)
	}
	if n := bob2.countEntry(g, "alice/1:after the change"); n != 1 {
		t.Fatalf("bob/2 holds alice's message %d times: %v", n, bob2.groupHistory(g))
	}
	for _, d := range []*device{alice, bob, bob2, carol, dave} {
		if n := d.openGroupLanes(); n != 0 {
			t.Fatalf("%s has %d group lanes open, want none", d.addr, n)
		}
	}
}

// TestForgedForwardedChangeIsRefused: bob/1 sends bob/3 a roster change
// of alice's group whose signature does not verify under alice's pin,
// ahead of the change it forwards: bob/3 refuses the forged one
// (ErrRosterUnverified), does not stop, and merges the genuine one.
func TestForgedForwardedChangeIsRefused(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol, dave := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	publishLists(t, alice, bob, carol, dave)
	_, g, bob2, bob3 := laterLink(t, w, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, nil, alice, bob, carol, dave)
	pin, err := bob3.c.PinnedIdentity(w.ctx, alice.addr)
	if err != nil || pin == nil {
		t.Fatalf("bob/3 pins no key for alice (%v)", err)
	}
	forged, err := wire.EncodeSignedRoster(wire.SignedRoster{
		Roster: wire.Roster{ID: wire.LogicalID{0xf0, 0x0d}, Group: g, Generation: 2, Name: "friends",
			Changes: []wire.RosterChange{{Op: wire.RosterAdd, Address: "mallory/1"}},
			Members: []wire.RosterMember{{Address: "alice/1", Admin: true}, {Address: "bob/1"}, {Address: "carol/1"}, {Address: "mallory/1"}}},
		Author: "alice/1", AuthorKey: pin.SigningKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.c.SendRawFrame(w.ctx, bob3.addr, forged); err != nil {
		t.Fatal(err)
	}
	roundsWithout(8, alice, bob, bob2, carol, dave)
	res := bob3.sync()
	if !hasError(res, engine.ErrRosterUnverified) {
		t.Fatalf("bob/3's results %v, want the forged change refused as unverified", errorsIn(res))
	}
	settleRetrying(t, 12, alice, bob, bob2, bob3, carol, dave)
	gen, members := bob3.members(g)
	if gen != 2 || len(members) != 4 {
		t.Fatalf("bob/3 holds generation %d with %v, want 2 with dave", gen, members)
	}
	for _, m := range members {
		if m == "mallory/1" {
			t.Fatalf("bob/3 took the forged change: %v", members)
		}
	}
}

// settleRetrying is settle with each device retrying its lanes to the
// others between rounds (two devices starting their first sessions with
// each other at once collide, and retries settle it as for any pair).
func settleRetrying(t *testing.T, rounds int, ds ...*device) {
	t.Helper()
	for range rounds {
		busy := 0
		for _, d := range ds {
			d.sync()
			busy += d.commitAll()
		}
		for _, d := range ds {
			busy += d.pendingOut() + d.pendingIn()
		}
		if busy == 0 {
			return
		}
		for _, d := range ds {
			for _, p := range ds {
				if p != d {
					d.retry(p)
				}
			}
		}
	}
	for _, d := range ds {
		t.Logf("%s: %d out, %d in pending", d.addr, d.pendingOut(), d.pendingIn())
	}
	t.Fatalf("not settled after %d rounds", rounds)
}

// forwardLanes counts d's lanes of roster changes it forwards to sibling
// in state.
func (d *device) forwardLanes(sibling string, state engine.LaneState) int {
	return d.count("SELECT count(*) FROM group_lane WHERE recipient = ? AND state = ?", sibling, int(state))
}

// unpinnedForward makes mallory's group with bob, whose frames reach bob/1
// only (bob/2 never hears from her, so it pins no key for her): her
// creation waits in mallory's request on bob/1 and is forwarded to bob/2
// when bob accepts her (the request-accept path). bob/2 cannot check it
// and drops it unacknowledged: it may pin her later.
func unpinnedForward(t *testing.T) (w *world, g wire.GroupID, bob, bob2, mallory *device) {
	t.Helper()
	w = blobWorld(t)
	var drop atomic.Bool
	drop.Store(true)
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		if a.String() != "mallory/1" {
			return e
		}
		return dropTo{Endpoint: e, to: "bob/2", drop: &drop}
	}
	bob, mallory = w.device("bob/1"), w.device("mallory/1")
	publishLists(t, bob, mallory)
	bob2 = w.linkHolding(bob)
	bob.withRequests(nil)
	checkPeers(t, mallory, bob)
	info, _, err := mallory.c.CreateGroup(w.ctx, "spam", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	roundsWithout(4, mallory, bob, bob2)
	if n := bob.count("SELECT count(*) FROM group_lane"); n != 0 {
		t.Fatalf("bob/1 has %d group lanes before it accepts mallory, want none (her creation waits in her request)", n)
	}
	if n, err := bob.c.AcceptRequest(w.ctx, mallory.addr); err != nil || n == 0 {
		t.Fatalf("bob/1 accepts mallory: %d, %v; want her request's change adopted", n, err)
	}
	if s := bob.forwardLanes("bob/2", engine.LanePending); s != 1 {
		t.Fatalf("bob/1 has %d forward lanes pending to bob/2 after accepting mallory, want 1", s)
	}
	for range 4 {
		roundsWithout(1, mallory, bob, bob2)
		bob.retry(bob2)
	}
	if gen, _ := bob.members(info.ID); gen != 1 {
		t.Fatalf("bob/1 holds generation %d of mallory's group, want 1", gen)
	}
	if n := bob.forwardLanes("bob/2", engine.LanePending); n != 1 {
		t.Fatalf("bob/1 has %d forward lanes to bob/2 pending (%d acknowledged), want 1: bob/2 must not acknowledge a forward it may take later",
			n, bob.forwardLanes("bob/2", engine.LaneAcknowledged))
	}
	if n := bob2.count("SELECT count(*) FROM grp"); n != 0 {
		t.Fatalf("bob/2 keeps %d groups, want none (it could not check mallory's change)", n)
	}
	if pin, err := bob2.c.PinnedIdentity(w.ctx, mallory.addr); err != nil || pin != nil {
		t.Fatalf("bob/2 pins %v for mallory (%v), want none", pin, err)
	}
	return w, info.ID, bob, bob2, mallory
}

// TestForwardFromAnUnpinnedAuthorEnds: bob/2 never pins mallory, so it
// never takes the forward of her creation and never acknowledges it
// (unpinnedForward); bob/1's lane ends by expiry instead: retried until it
// has been pending MaxGroupHold, then abandoned.
func TestForwardFromAnUnpinnedAuthorEnds(t *testing.T) {
	oneGoroutine(t)
	w, _, bob, bob2, mallory := unpinnedForward(t)
	w.clock.Advance(engine.MaxGroupHold + time.Hour)
	bob.retry(bob2)
	roundsWithout(2, mallory, bob, bob2)
	if n := bob.forwardLanes("bob/2", engine.LaneAbandoned); n != 1 {
		t.Fatalf("bob/1 has %d abandoned forward lanes to bob/2 (%d pending), want 1", n, bob.forwardLanes("bob/2", engine.LanePending))
	}
	if n := bob2.count("SELECT count(*) FROM grp"); n != 0 {
		t.Fatalf("bob/2 keeps %d groups, want none", n)
	}
}

// TestForwardTakenOnceTheAuthorIsPinned: bob/2 drops the forward of
// mallory's creation unacknowledged while it pins no key for her
// (unpinnedForward: what a new device meets before its link's history
// import stored its pins). Once it pins her (here by writing to her),
// bob/1's retry brings the forward again and bob/2 starts the group from
// it and acknowledges it: the lane was the only copy bob/2 would get.
func TestForwardTakenOnceTheAuthorIsPinned(t *testing.T) {
	oneGoroutine(t)
	w, g, bob, bob2, mallory := unpinnedForward(t)
	bob2.send(mallory, "hello")
	bob2.commitAll()
	if pin, err := bob2.c.PinnedIdentity(w.ctx, mallory.addr); err != nil || pin == nil {
		t.Fatalf("bob/2 pins %v for mallory (%v) after writing to her, want her key", pin, err)
	}
	bob.retry(bob2)
	roundsWithout(2, bob, bob2)
	if gen, _ := bob2.members(g); gen != 1 {
		t.Fatalf("bob/2 holds generation %d of mallory's group, want 1 from the forward", gen)
	}
	if n := bob.forwardLanes("bob/2", engine.LaneAcknowledged); n != 1 {
		t.Fatalf("bob/1 has %d acknowledged forward lanes to bob/2 (%d pending), want 1", n, bob.forwardLanes("bob/2", engine.LanePending))
	}
}

// TestForwardLaneExpires: bob/2 stays away while bob/1 forwards alice's
// change to it; once the forward has been pending past MaxGroupHold, bob/1's
// retry abandons it instead of sending it again.
func TestForwardLaneExpires(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	bob2 := w.linkHolding(bob)
	checkPeers(t, alice, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	roundsWithout(6, alice, bob, carol)
	if gen, _ := bob.members(info.ID); gen != 1 {
		t.Fatalf("bob/1 holds generation %d, want 1", gen)
	}
	if n := bob.forwardLanes("bob/2", engine.LanePending); n != 1 {
		t.Fatalf("bob/1 has %d forward lanes pending to bob/2, want 1", n)
	}
	bob.retry(bob2)
	if n := bob.forwardLanes("bob/2", engine.LanePending); n != 1 {
		t.Fatalf("bob/1 abandoned its forward to bob/2 before MaxGroupHold (%d pending)", n)
	}
	w.clock.Advance(engine.MaxGroupHold + time.Hour)
	bob.retry(bob2)
	if n := bob.forwardLanes("bob/2", engine.LaneAbandoned); n != 1 {
		t.Fatalf("bob/1 has %d abandoned forward lanes to bob/2 (%d pending), want 1", n, bob.forwardLanes("bob/2", engine.LanePending))
	}
}

// TestForwardOnlyACountedChange: mallory, a member of alice's group but
// no admin, signs a change that adds dave and sends it to bob/1 alone.
// bob/1 records it (no merge counts it) and forwards nothing of it to
// bob/2: only a change whose author counts in the merge is forwarded,
// so a hostile member cannot make bob/1 fan her changes out. alice's own
// change is forwarded as before.
func TestForwardOnlyACountedChange(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("mallory/1")
	publishLists(t, alice, bob, mallory)
	bob2 := w.linkHolding(bob)
	checkPeers(t, alice, bob, mallory)
	checkPeers(t, mallory, bob)
	info, res, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, mallory.addr})
	if err != nil {
		t.Fatal(err)
	}
	settleRetrying(t, 12, alice, bob, bob2, mallory)
	if bob.laneState("bob/2", res.ID) != engine.LaneAcknowledged {
		t.Fatalf("bob/1's forward of alice's creation to bob/2 is %s, want acknowledged", bob.laneState("bob/2", res.ID))
	}
	id := mallory.forge(bob, info.ID, 2, "+dave/1", "alice/1* bob/1 dave/1 mallory/1")
	roundsWithout(2, bob)
	if n := bob.count("SELECT count(*) FROM group_change WHERE id = ?", id[:]); n != 1 {
		t.Fatalf("bob/1 holds mallory's change %d times, want it recorded once", n)
	}
	if s := bob.laneState("bob/2", id); s != 0 {
		t.Fatalf("bob/1 forwarded mallory's change, which no merge counts, to bob/2 (%s)", s)
	}
}

// TestLinkAddsNoLaneOfAForward: bob/1's forward of alice's group to bob/2
// is pending (bob/2 is away) when bob/1 links bob/3. The list naming
// bob/3 adds no lane of the forward: bob/3's archive holds the group.
func TestLinkAddsNoLaneOfAForward(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	bob2 := w.linkHolding(bob)
	checkPeers(t, alice, bob, carol)
	info, res, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	roundsWithout(6, alice, bob, carol)
	if s := bob.laneState(bob2.addr.String(), res.ID); s != engine.LanePending {
		t.Fatalf("bob/1's forward of the creation to bob/2 is %s, want pending", s)
	}
	bob3 := w.linkHolding(bob)
	if gen, _ := bob3.members(info.ID); gen != 1 {
		t.Fatalf("bob/3 holds generation %d from its link's archive, want 1", gen)
	}
	if s := bob.laneState(bob3.addr.String(), res.ID); s != 0 {
		t.Fatalf("bob/1 added a lane of its forward to bob/3 (%s), whose archive holds the change", s)
	}
}
