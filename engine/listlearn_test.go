package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingLinkedSinceIsLearnedOnTheConnection: bob/2 is connected
// (its connection's round published its list, generation 2) when bob
// links bob/3. bob/3 sends to alice, with a sent copy to bob/2, which
// refuses it: the list it holds does not name bob/3. That round asks the
// relay for the account's list (the held one is published again, the
// relay answers stale with generation 3, which is adopted), so bob/3's
// retry is taken on the same connection: bob/2's history holds the copy
// once and bob/3's lane to bob/2 ends acknowledged, without waiting for a
// reconnection (which a long-lived TUI may not make for days). Found by
// TestAdversaryPeople with ADVERSARY_PEOPLE_NORECONNECT=1, seed
// 1796581412292071578.
func TestSiblingLinkedSinceIsLearnedOnTheConnection(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
	bob2 := w.linkDevice(bob)
	bob2.sync() // the connection's round: generation 2 published
	bob3 := w.linkDevice(bob)
	if err := bob3.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	id := bob3.enqueue(alice, "from the new laptop")
	if got := lanesOf(t, bob3, alice.addr, id); got["bob/2"] != engine.LanePending {
		t.Fatalf("bob/3's lanes: %v, want a pending copy to bob/2", got)
	}
	if res := bob2.sync(); !hasError(res, engine.ErrNotOwnDevice) {
		t.Fatalf("bob/2 took the copy from bob/3 before holding a list naming it: %v", res)
	}
	a, err := engine.LoadAccount(w.ctx, bob2.st)
	if err != nil {
		t.Fatal(err)
	}
	if a.List.Generation != 3 {
		t.Fatalf("bob/2 holds generation %d of its account's list after refusing bob/3's copy, want 3", a.List.Generation)
	}
	bob3.retry(bob2)
	res := bob2.sync()
	if count(res, engine.ResultSentCopy) != 1 || hasError(res, engine.ErrNotOwnDevice) {
		t.Fatalf("bob/2's round after bob/3's retry: %v, want the sent copy", res)
	}
	h, err := bob2.c.History(w.ctx, alice.addr, 0, 10)
	if err != nil || len(h) != 1 || h[0].ID != id || h[0].Direction != engine.DirectionOut {
		t.Fatalf("bob/2's history with alice: %+v, %v; want bob/3's message once, as sent", h, err)
	}
	bob3.sync()
	if got := lanesOf(t, bob3, alice.addr, id); got["bob/2"] != engine.LaneAcknowledged {
		t.Fatalf("bob/3's lanes after bob/2 took the copy: %v", got)
	}
	// A device under bob's name that no list names is still refused
	// (the relay's list, asked again, does not name it either).
	var forged wire.LogicalID
	forged[0] = 9
	cp, err := wire.EncodeSentCopy(wire.SentCopy{ID: forged, To: "alice/1", Body: []byte("forged")})
	if err != nil {
		t.Fatal(err)
	}
	w.device("bob/9").raw(bob2, cp)
	if res := bob2.sync(); !hasError(res, engine.ErrNotOwnDevice) || count(res, engine.ResultSentCopy) != 0 {
		t.Fatalf("bob/2 took a copy from bob/9: %v", res)
	}
	if a, err := engine.LoadAccount(w.ctx, bob2.st); err != nil || a.List.Generation != 3 {
		t.Fatalf("bob/2's list after bob/9's copy: generation %d, %v; want 3", a.List.Generation, err)
	}
}

// TestRetryAsksForTheList: alice holds bob's list naming bob/1 and bob/2
// and sends to bob; bob/1 acknowledges, bob/2 never does. bob removes
// bob/2 while alice's connection stays up (its connection's round fetched
// the lists already) and alice sends nothing more to bob. Her retry to
// bob/2 notes bob's list for the next round's check (the stale-list
// answer), so the lane to bob/2 ends removed on the same connection
// instead of staying pending until she reconnects. Found by
// TestAdversaryPeople with ADVERSARY_PEOPLE_NORECONNECT=1, seed
// 1796582332154216737.
func TestRetryAsksForTheList(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
	bob2 := w.linkDevice(bob)
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	id := alice.enqueue(bob, "to both devices")
	bob.sync()
	bob.commitAll()
	alice.sync()
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LaneAcknowledged || got["bob/2"] != engine.LanePending {
		t.Fatalf("alice's lanes: %v, want bob/1 acknowledged and bob/2 pending", got)
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	w.net.SetDown(bob2.addr, true) // the relay refuses it from now on
	alice.sync()
	alice.retry(bob2)
	alice.sync()
	if got := lanesOf(t, alice, bob.addr, id); got["bob/2"] != engine.LaneRemoved {
		t.Fatalf("alice's lanes after her retry and a round: %v, want bob/2 removed", got)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("alice has %d lanes pending, want none", n)
	}
}

// TestRetryToSiblingAsksForOwnList: bob/3's sent copy to bob/2 is
// pending when bob/1 removes bob/2. bob/3 stays connected; its retry to
// bob/2 has the next round publish the account's list held, the relay
// answers stale with the later list, and its adoption ends the copy's lane
// to bob/2 removed on the same connection. Found by TestAdversaryPeople
// with ADVERSARY_PEOPLE_NORECONNECT=1, seed 1796582414627012031.
func TestRetryToSiblingAsksForOwnList(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
	bob2 := w.linkDevice(bob)
	bob3 := w.linkDevice(bob)
	w.net.Hold(bob2.addr) // bob/2 never acknowledges
	bob3.sync()           // the connection's round
	if err := bob3.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	id := bob3.enqueue(alice, "from bob/3")
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if got := lanesOf(t, bob3, alice.addr, id); got["bob/2"] != engine.LanePending {
		t.Fatalf("bob/3's lanes before its retry: %v, want the copy to bob/2 pending", got)
	}
	bob3.retry(bob2)
	bob3.sync()
	if got := lanesOf(t, bob3, alice.addr, id); got["bob/2"] != engine.LaneRemoved {
		t.Fatalf("bob/3's lanes after its retry and a round: %v, want the copy to bob/2 removed", got)
	}
}

// TestDiscardHeardAgainstACommitCatchesUp: on a kept connection, bob/2
// commits alice's message while its list does not name bob/3, linked
// since, and bob/1 discards it at once, telling bob/2 and bob/3; bob/1
// takes it back on bob/2's commit, but bob/3 holds the discard, and
// nothing of bob/3's reaches bob/2 to make it learn the list. The discard
// bob/2 hears against its commit makes its round bring its list up to
// date, whose catch-up tells bob/3 of the commit: bob/3 takes the message
// back, decided on bob/2.
func TestDiscardHeardAgainstACommitCatchesUp(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
	bob2 := w.linkDevice(bob)
	bob2.sync()
	// bob/1 and bob/2 settle their sessions first (their first ones
	// collide, as for any pair).
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	alice.enqueue(bob, "first")
	bob.sync()
	bob2.sync()
	bob.commitAll()
	bob2.commitAll()
	for round := 0; bob.pendingOut()+bob2.pendingOut() > 0; round++ {
		if round == 8 {
			t.Fatalf("bob's devices still have lanes to each other after 8 rounds")
		}
		bob.retry(bob2)
		bob2.retry(bob)
		bob.sync()
		bob2.sync()
	}
	bob3 := w.linkDevice(bob)
	alice.reopen() // a new connection fetches bob's list again
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	id := alice.enqueue(bob, "kept on one, dropped on another")
	bob.sync()
	bob2.sync()
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	bob3.sync()
	bob3.sync()
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeDiscarded {
		t.Fatalf("bob/3 after bob/1's discard: %+v, %v; want discarded", s, err)
	}
	bob2.sync() // hears bob/1's discard against its commit
	a, err := engine.LoadAccount(w.ctx, bob2.st)
	if err != nil {
		t.Fatal(err)
	}
	if a.List.Generation != 3 {
		t.Fatalf("bob/2 holds generation %d of its list after hearing a discard against its commit, want 3", a.List.Generation)
	}
	bob3.sync()
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/3 after bob/2's catch-up: %+v, %v; want committed", s, err)
	}
	if n, e := inHistory(t, bob3, alice, "kept on one, dropped on another"); n != 1 || e.DecidedOn == nil || *e.DecidedOn != bob2.addr {
		t.Fatalf("bob/3's history holds the message %d times (%+v), want once, decided on bob/2", n, e)
	}
}

// groupWithLinked is a world whose relay keeps and checks lists, with
// alice/1 and bob/1 published, bob's devices linked (links of them), and
// alice/1's group with bob/1, which reaches every device of bob's (alice
// holds his list) and settles.
func groupWithLinked(t *testing.T, links int) (w *world, g wire.GroupID, alice, bob *device, linked []*device) {
	t.Helper()
	w = newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	alice, bob = w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	for range links {
		linked = append(linked, w.linkDevice(bob))
	}
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	all := append([]*device{alice, bob}, linked...)
	settle(t, 6, all...)
	for _, d := range all {
		if _, err := d.c.Group(w.ctx, info.ID); err != nil {
			t.Fatalf("%s holds no group: %v", d.addr, err)
		}
	}
	return w, info.ID, alice, bob, linked
}

// TestRetriedGroupLaneToSiblingAsksForOwnList: bob/3's group message has
// a lane to its sibling bob/2, which never acknowledges, when bob/1
// removes bob/2. bob/3 stays connected; its retry to bob/2 has the next
// round publish the account's list held, and the adopted later list ends
// the lane to bob/2 removed on the same connection. Before the change a
// retried group lane asked for no list, so the lane stayed pending until
// bob/3 reconnected. Found by TestAdversaryPeopleGroups (every connection
// kept on odd seeds), seed 1796610096311410595.
func TestRetriedGroupLaneToSiblingAsksForOwnList(t *testing.T) {
	oneGoroutine(t)
	w, g, _, bob, linked := groupWithLinked(t, 2)
	bob2, bob3 := linked[0], linked[1]
	w.net.Hold(bob2.addr) // bob/2 never acknowledges
	sent, err := bob3.c.SendGroup(w.ctx, g, []byte("from bob/3"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if got := bob3.lanes(g, sent.ID); got["bob/2"] != "pending" {
		t.Fatalf("bob/3's lanes before its retry: %v, want the lane to bob/2 pending", got)
	}
	bob3.retry(bob2)
	bob3.sync()
	if got := bob3.lanes(g, sent.ID); got["bob/2"] != "removed" {
		t.Fatalf("bob/3's lanes after its retry and a round: %v, want the lane to bob/2 removed", got)
	}
}

// TestRetriedGroupLaneAsksForTheList: alice's group message has a lane to
// bob/2 (her list of bob names it), which never acknowledges; bob removes
// bob/2 while alice's connection stays up. Her retry to bob/2 notes bob's
// list for the next round's check (the stale-list answer), so the lane
// ends removed on the same connection. Before the change a retried group
// lane asked for no list.
func TestRetriedGroupLaneAsksForTheList(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, bob, linked := groupWithLinked(t, 1)
	bob2 := linked[0]
	w.net.Hold(bob2.addr)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("to both of bob's"))
	if err != nil {
		t.Fatal(err)
	}
	bob.sync()
	bob.commitAll()
	alice.sync()
	if got := alice.lanes(g, sent.ID); got["bob/1"] != "acknowledged" || got["bob/2"] != "pending" {
		t.Fatalf("alice's lanes: %v, want bob/1 acknowledged and bob/2 pending", got)
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	w.net.SetDown(bob2.addr, true)
	alice.sync()
	alice.retry(bob2)
	alice.sync()
	if got := alice.lanes(g, sent.ID); got["bob/2"] != "removed" {
		t.Fatalf("alice's lanes after her retry and a round: %v, want the lane to bob/2 removed", got)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("alice has %d lanes pending, want none", n)
	}
}
