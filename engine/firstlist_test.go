package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// The first list held of a person reaches every device it names active
// with the messages sent before it, whatever device they went to
// (docs/protocol.md, "Added lanes").

// TestFirstListCopiesFromAnyDevice: alice holds no list of bob and writes
// to bob/2 (not the conversation's device, bob/1). The first list she
// holds names bob/1 and bob/2: the message gets a lane to bob/1, in the
// conversation of bob/2 where its entry is, and bob/1 receives it once
// and commits it; the entry ends acknowledged with both lanes.
func TestFirstListCopiesFromAnyDevice(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	linkInWorld(t, bob, bob2)
	id := alice.enqueue(bob2, "to bob/2 before the list")
	if _, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); ok {
		t.Fatal("alice holds a list of bob before the round after her send")
	}
	alice.sync()
	held, ok, _ := alice.c.PeerAccount(w.ctx, "bob")
	if !ok || held.Conversation != bob.addr {
		t.Fatalf("alice holds %+v (held %v) after the round, want bob's list with conversation bob/1", held, ok)
	}
	if got := lanesOf(t, alice, bob2.addr, id); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LanePending || len(got) != 2 {
		t.Fatalf("alice's lanes of the message to bob/2 after the first list: %v, want bob/1 and bob/2 pending", got)
	}
	bob.sync()
	if n := bob.commitAll(); n != 1 {
		t.Fatalf("bob/1 decided %d messages, want alice's one", n)
	}
	if got := bob.received(alice); len(got) != 1 || got[0] != "to bob/2 before the list" {
		t.Fatalf("bob/1 received %q, want the message once", got)
	}
	bob2.sync()
	bob2.commitAll()
	alice.sync()
	if got := lanesOf(t, alice, bob2.addr, id); got["bob/1"] != engine.LaneAcknowledged || got["bob/2"] != engine.LaneAcknowledged {
		t.Fatalf("alice's lanes after both ACKs: %v", got)
	}
	if e := ownEntry(t, alice, bob2.addr, id); e.State != engine.SentAcknowledged {
		t.Fatalf("alice's entry is %v, want acknowledged", e.State)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("alice has %d lanes pending after both ACKs", n)
	}
}

// TestFirstListEndsTheRevokedLane: alice holds no list of bob and writes
// to bob/2, which bob then removes. The first list she holds revokes
// bob/2: in its transaction the message gets a lane to bob/1 and its lane
// to bob/2 ends removed. bob/1 receives and commits it, and alice's entry
// ends acknowledged with nothing pending.
func TestFirstListEndsTheRevokedLane(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	linkInWorld(t, bob, bob2)
	id := alice.enqueue(bob2, "to bob/2, removed since")
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	if held, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); !ok || held.List.Generation != 3 {
		t.Fatalf("alice holds generation %d of bob's list (held %v), want 3, which revokes bob/2", held.List.Generation, ok)
	}
	if got := lanesOf(t, alice, bob2.addr, id); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LaneRemoved || len(got) != 2 {
		t.Fatalf("alice's lanes after the first list: %v, want bob/1 pending and bob/2 removed", got)
	}
	if e := ownEntry(t, alice, bob2.addr, id); e.State != engine.SentPending {
		t.Fatalf("alice's entry is %v after the first list, want pending on bob/1", e.State)
	}
	bob.sync()
	if n := bob.commitAll(); n != 1 {
		t.Fatalf("bob/1 decided %d messages, want alice's one", n)
	}
	if got := bob.received(alice); len(got) != 1 || got[0] != "to bob/2, removed since" {
		t.Fatalf("bob/1 received %q, want the message once", got)
	}
	alice.sync()
	if got := lanesOf(t, alice, bob2.addr, id); got["bob/1"] != engine.LaneAcknowledged || got["bob/2"] != engine.LaneRemoved {
		t.Fatalf("alice's lanes after bob/1's ACK: %v, want bob/1 acknowledged and bob/2 removed", got)
	}
	if e := ownEntry(t, alice, bob2.addr, id); e.State != engine.SentAcknowledged {
		t.Fatalf("alice's entry is %v, want acknowledged", e.State)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("alice has %d lanes pending, want none", n)
	}
}

// TestFirstListAddsGroupLanes: alice holds no list of bob when she makes a
// group with bob/1 and carol; her message is pending to bob/1 when bob
// links bob/2 (holding bob's groups from the link). The first list of
// bob's she holds adds a lane of the message to bob/2 in its transaction;
// bob/2 takes it once, and every lane ends acknowledged.
func TestFirstListAddsGroupLanes(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, carol)
	checkPeers(t, alice, bob, carol)
	if _, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); ok {
		t.Fatal("alice holds a list of bob the relay does not have")
	}
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, carol)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("before the list"))
	if err != nil {
		t.Fatal(err)
	}
	bob2 := w.linkHolding(bob)
	if gen, _ := bob2.members(g); gen != 1 {
		t.Fatalf("bob/2 holds generation %d of the group, want 1 from the link", gen)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if _, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); !ok {
		t.Fatal("alice holds no list of bob after checking him again")
	}
	if got := alice.lanes(g, sent.ID); got["bob/2"] != "pending" || len(got) != 3 {
		t.Fatalf("alice's lanes after bob's first list: %v, want bob/2 pending beside bob/1 and carol/1", got)
	}
	settle(t, 8, alice, bob, bob2, carol)
	for _, d := range []*device{bob, bob2, carol} {
		if n := d.countEntry(g, "alice/1:before the list"); n != 1 {
			t.Fatalf("%s holds alice's message %d times: %v", d.addr, n, d.groupHistory(g))
		}
	}
	for r, s := range alice.lanes(g, sent.ID) {
		if s != "acknowledged" {
			t.Fatalf("alice's lane to %s is %s, want acknowledged", r, s)
		}
	}
}

// TestFirstListCopiesGroupLanesFromARevokedDevice: alice holds no list of
// bob when she makes a group with bob/2 and carol and writes to it; both
// are pending to bob/2 when bob removes it. The first list of bob's she
// holds revokes bob/2: its transaction copies the creation and the
// message to bob/1 and then ends the lanes to bob/2 removed. bob/1 starts
// the group from the creation and holds the message once.
func TestFirstListCopiesGroupLanesFromARevokedDevice(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, bob2, carol := w.device("alice/1"), w.device("bob/1"), w.device("bob/2"), w.device("carol/1")
	publishLists(t, alice, carol)
	checkPeers(t, alice, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob2.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	carol.sync()
	alice.sync()
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("to bob/2, removed since"))
	if err != nil {
		t.Fatal(err)
	}
	linkInWorld(t, bob, bob2)
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if got := alice.lanes(g, sent.ID); got["bob/1"] != "pending" || got["bob/2"] != "removed" {
		t.Fatalf("alice's lanes after bob's first list: %v, want bob/1 pending and bob/2 removed", got)
	}
	settle(t, 8, alice, bob, carol)
	for _, d := range []*device{bob, carol} {
		if n := d.countEntry(g, "alice/1:to bob/2, removed since"); n != 1 {
			t.Fatalf("%s holds alice's message %d times: %v", d.addr, n, d.groupHistory(g))
		}
	}
}

// TestLaterListReachesALaneCopiedByTheFirst: alice holds no list of bob
// and writes to bob/2; the first list she holds copies the message to
// bob/1, in bob/2's conversation where its entry is. bob then links bob/3
// before either device takes it: the later list alice holds gives bob/3 a
// lane too, in that same conversation, and bob/3 receives it once.
func TestLaterListReachesALaneCopiedByTheFirst(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob, bob2, bob3 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2"), w.device("bob/3")
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	linkInWorld(t, bob, bob2)
	id := alice.enqueue(bob2, "to bob/2 before the list")
	alice.sync()
	if got := lanesOf(t, alice, bob2.addr, id); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LanePending || len(got) != 2 {
		t.Fatalf("alice's lanes after the first list: %v, want bob/1 and bob/2 pending", got)
	}
	linkInWorld(t, bob, bob3)
	alice.enqueue(bob, "after bob/3's link")
	alice.sync()
	if held, _, _ := alice.c.PeerAccount(w.ctx, "bob"); held.List.Generation != 3 {
		t.Fatalf("alice holds generation %d of bob's list, want 3, which names bob/3", held.List.Generation)
	}
	if got := lanesOf(t, alice, bob2.addr, id); got["bob/3"] != engine.LanePending || len(got) != 3 {
		t.Fatalf("alice's lanes after the later list: %v, want bob/3 pending beside bob/1 and bob/2", got)
	}
	bob3.sync()
	bob3.commitAll()
	got := bob3.received(alice)
	slices.Sort(got)
	if len(got) != 2 || got[0] != "after bob/3's link" || got[1] != "to bob/2 before the list" {
		t.Fatalf("bob/3 received %q, want each message once", got)
	}
}

// TestFirstListWithASenderOfTwoDevices: alice has a second device, so what
// she sends before holding a list of bob is a PersonSend with lanes (the
// lane to bob/2 and the copy to alice/2). She writes to bob/2 a text and a
// reply, and bob removes bob/2. The first list she holds copies the text
// to bob/1 from its existing lane and ends that lane removed; the reply,
// which a list copies no more than a later one would (text alone), keeps
// its lane to bob/2 pending and its entry pending, rather than ending with
// no lane left. bob/1 receives the text once.
func TestFirstListWithASenderOfTwoDevices(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, alice2, bob, bob2 := w.device("alice/1"), w.device("alice/2"), w.device("bob/1"), w.device("bob/2")
	linkInWorld(t, alice, alice2)
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	linkInWorld(t, bob, bob2)
	text := alice.enqueue(bob2, "to bob/2, removed since")
	reply := alice.act(bob2, engine.ActionRequest{Content: wire.ContentReply, Target: text, Text: []byte("a reply")})
	for _, id := range []wire.LogicalID{text, reply} {
		if got := lanesOf(t, alice, bob2.addr, id); got["bob/2"] != engine.LanePending || got["alice/2"] != engine.LanePending || len(got) != 2 {
			t.Fatalf("alice's lanes of %x before any list: %v, want bob/2 and the copy to alice/2 pending", id[:4], got)
		}
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	if held, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); !ok || held.List.Generation != 3 {
		t.Fatalf("alice holds generation %d of bob's list (held %v), want 3, which revokes bob/2", held.List.Generation, ok)
	}
	if got := lanesOf(t, alice, bob2.addr, text); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LaneRemoved {
		t.Fatalf("alice's lanes of the text after the first list: %v, want bob/1 pending and bob/2 removed", got)
	}
	if got := lanesOf(t, alice, bob2.addr, reply); got["bob/2"] != engine.LanePending || got["bob/1"] != 0 {
		t.Fatalf("alice's lanes of the reply after the first list: %v, want bob/2 pending still and none to bob/1", got)
	}
	for _, id := range []wire.LogicalID{text, reply} {
		if e := ownEntry(t, alice, bob2.addr, id); e.State != engine.SentPending {
			t.Fatalf("alice's entry %x is %v after the first list, want pending", id[:4], e.State)
		}
	}
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); len(got) != 1 || got[0] != "to bob/2, removed since" {
		t.Fatalf("bob/1 received %q, want the text once", got)
	}
	alice.sync()
	if e := ownEntry(t, alice, bob2.addr, text); e.State != engine.SentAcknowledged {
		t.Fatalf("alice's entry of the text is %v, want acknowledged", e.State)
	}
}
