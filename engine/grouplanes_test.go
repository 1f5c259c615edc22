package engine_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// A newer device list adds lanes to the group messages pending to its
// person (docs/protocol.md, "Groups across a person's devices"), and a
// list and a group send are ordered by sendMu.

// countEntry counts the entries "sender:body" of d's group history.
func (d *device) countEntry(g wire.GroupID, entry string) int {
	n := 0
	for _, e := range d.groupHistory(g) {
		if e == entry {
			n++
		}
	}
	return n
}

// openWith reopens d with fp as its store's failpoint hook, called on the
// goroutine that applies (failpointHook holds its lock across the call,
// which a hook that waits on another apply cannot have).
func (d *device) openWith(fp engine.Failpoint) {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	st, err := store.Open(d.w.ctx, d.dir, passphrase, store.Options{Failpoint: fp})
	if err != nil {
		d.w.t.Fatal(err)
	}
	c, err := engine.Open(d.w.ctx, engine.Config{Store: st, Relay: d.w.net.Endpoint(d.addr), Now: d.w.clock.Now, Random: d.random, PollInterval: 10 * time.Millisecond})
	if err != nil {
		d.w.t.Fatal(err)
	}
	d.c, d.st = c, st
}

// linkHolding links a new device to owner's account that holds owner's
// groups from the link's archive (history none: the groups alone), with
// its prekeys published.
func (w *world) linkHolding(owner *device) *device {
	w.t.Helper()
	none := engine.HistoryChoice{Mode: engine.HistoryNone}
	d, _ := w.linkWithHistory(owner, none, none)
	if err := d.c.RefreshPreKeys(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	return d
}

// blobWorld is a world whose devices reach a blob store (a link's
// archive goes by it).
func blobWorld(t *testing.T) *world {
	w := newWorld(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	return w
}

// TestNewerListAddsGroupLanes: alice's group message is pending to bob (bob/1
// has not connected) when bob links bob/2. The list alice then holds adds
// a lane of the message to bob/2 in its transaction; bob/2, holding bob's
// groups from the link, takes it once, and every lane ends acknowledged.
func TestNewerListAddsGroupLanes(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	checkPeers(t, alice, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, carol)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("while bob links"))
	if err != nil {
		t.Fatal(err)
	}
	bob2 := w.linkHolding(bob)
	if gen, _ := bob2.members(g); gen != 1 {
		t.Fatalf("bob/2 holds generation %d of the group, want 1 from the link", gen)
	}
	if _, ok := alice.lanes(g, sent.ID)["bob/2"]; ok {
		t.Fatal("alice has a lane to bob/2 before she holds the list naming it")
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if got := alice.lanes(g, sent.ID); got["bob/2"] != "pending" || len(got) != 3 {
		t.Fatalf("alice's lanes after bob's newer list: %v, want bob/2 pending beside bob/1 and carol/1", got)
	}
	settle(t, 8, alice, bob, bob2, carol)
	for _, d := range []*device{bob, bob2, carol} {
		if n := d.countEntry(g, "alice/1:while bob links"); n != 1 {
			t.Fatalf("%s holds alice's message %d times: %v", d.addr, n, d.groupHistory(g))
		}
	}
	for r, s := range alice.lanes(g, sent.ID) {
		if s != "acknowledged" {
			t.Fatalf("alice's lane to %s is %s, want acknowledged", r, s)
		}
	}
	// A message acknowledged by the person gets no lane: bob/3 linked now
	// finds nothing pending.
	bob3 := w.linkHolding(bob)
	alice.reopen()
	checkPeers(t, alice, bob)
	if _, ok := alice.lanes(g, sent.ID)[bob3.addr.String()]; ok {
		t.Fatalf("alice added a lane to %s for a message bob acknowledged: %v", bob3.addr, alice.lanes(g, sent.ID))
	}
}

// TestNewerListAddsGroupLanesBesideTheChain: in a group of four, alice's
// message goes to bob/1 by her sender chain. The lane a newer list of bob's
// adds to bob/2, never announced the chain, is pending like any other and
// goes pairwise: bob/2 opens it with no chain. Her next message announces
// the chain to bob/2 and reaches it too.
func TestNewerListAddsGroupLanesBesideTheChain(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol, dave := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	publishLists(t, alice, bob, carol, dave)
	checkPeers(t, alice, bob, carol, dave)
	info, _, err := alice.c.CreateGroup(w.ctx, "four", []engine.Address{bob.addr, carol.addr, dave.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	all := []*device{alice, bob, carol, dave}
	settle(t, 6, all...)
	if _, err := alice.c.SendGroup(w.ctx, g, []byte("first")); err != nil {
		t.Fatal(err)
	}
	settle(t, 6, all...) // the chain's announcements are acknowledged
	before := alice.c.ChainLanes()
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("by the chain"))
	if err != nil {
		t.Fatal(err)
	}
	if alice.c.ChainLanes() == before {
		t.Fatal("alice's second message went by no chain")
	}
	bob2 := w.linkHolding(bob)
	alice.reopen()
	checkPeers(t, alice, bob)
	if got := alice.lanes(g, sent.ID)["bob/2"]; got != "pending" {
		t.Fatalf("alice's lane to bob/2 is %q, want pending", got)
	}
	all = append(all, bob2)
	settle(t, 8, all...)
	if n := bob2.countEntry(g, "alice/1:by the chain"); n != 1 {
		t.Fatalf("bob/2 holds alice's chain message %d times: %v", n, bob2.groupHistory(g))
	}
	if got := alice.lanes(g, sent.ID)["bob/2"]; got != "acknowledged" {
		t.Fatalf("alice's lane to bob/2 is %q, want acknowledged", got)
	}
	if _, err := alice.c.SendGroup(w.ctx, g, []byte("after")); err != nil {
		t.Fatal(err)
	}
	settle(t, 8, all...)
	if !bob2.has(g, "alice/1:after") {
		t.Fatalf("bob/2's history %v lacks alice's next message", bob2.groupHistory(g))
	}
}

// TestNewerOwnListAddsGroupLanes: alice/2's group message is pending to
// alice/1 when alice/1 links alice/3. The list alice/2 adopts from the relay
// adds a lane of it to alice/3, which takes it once as its
// person's own. alice/1's own message, pending to alice/2, gets a lane to
// alice/3 in the link's own transaction.
func TestNewerOwnListAddsGroupLanes(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	alice2 := w.linkHolding(alice)
	checkPeers(t, alice, bob, carol)
	checkPeers(t, alice2, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	all := []*device{alice, alice2, bob, carol}
	settle(t, 6, all...)
	fromTwo, err := alice2.c.SendGroup(w.ctx, g, []byte("from alice/2"))
	if err != nil {
		t.Fatal(err)
	}
	bob.sync() // bob has alice/2's message: alice/1's lane alone is pending
	fromOne, err := alice.c.EnqueueGroup(w.ctx, g, []byte("from alice/1"))
	if err != nil {
		t.Fatal(err)
	}
	alice3 := w.linkHolding(alice)
	if got := alice.lanes(g, fromOne.ID)["alice/3"]; got != "pending" {
		t.Fatalf("alice/1's lane to alice/3 after linking it is %q, want pending", got)
	}
	// alice/2 publishes the list it holds; the relay's later one, naming
	// alice/3, comes back and is adopted (storeOwnList).
	if err := alice2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatal(err)
	}
	if a, err := engine.LoadAccount(w.ctx, alice2.st); err != nil || len(engine.ActiveAddresses(a.List)) != 3 {
		t.Fatalf("alice/2's list after its connection: %v (%v), want it to name alice/3", a.List, err)
	}
	if _, ok := alice2.lanes(g, fromTwo.ID)["alice/3"]; !ok {
		t.Fatalf("alice/2's lanes after adopting the list naming alice/3: %v, want one to alice/3", alice2.lanes(g, fromTwo.ID))
	}
	all = append(all, alice3)
	settle(t, 8, all...)
	for entry, want := range map[string]int{"alice/2:from alice/2": 1, "alice/1:from alice/1": 1} {
		if n := alice3.countEntry(g, entry); n != want {
			t.Fatalf("alice/3 holds %q %d times: %v", entry, n, alice3.groupHistory(g))
		}
	}
	for _, l := range []map[string]string{alice2.lanes(g, fromTwo.ID), alice.lanes(g, fromOne.ID)} {
		if l["alice/3"] != "acknowledged" {
			t.Fatalf("lanes %v, want alice/3's acknowledged", l)
		}
	}
}

// TestNewerListAddsBoundedGroupLanes: with more group messages pending to
// bob than maxAddedGroupLanes, bob's newer list adds lanes to bob/2 for the
// oldest ones up to the bound, in its one transaction; the newest goes to
// bob/1 alone.
func TestNewerListAddsBoundedGroupLanes(t *testing.T) {
	oneGoroutine(t)
	w := blobWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	var ids []wire.LogicalID
	for i := range engine.MaxAddedGroupLanes + 2 {
		res, err := alice.c.EnqueueGroup(w.ctx, g, fmt.Appendf(nil, "m%d", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	w.linkHolding(bob)
	alice.reopen()
	checkPeers(t, alice, bob)
	h, err := alice.c.GroupHistory(w.ctx, g, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	with := make(map[wire.LogicalID]bool)
	for _, e := range h {
		for _, l := range e.Lanes {
			if l.Recipient.String() == "bob/2" {
				with[e.ID] = true
			}
		}
	}
	if len(with) != engine.MaxAddedGroupLanes {
		t.Fatalf("%d messages got a lane to bob/2, want the bound, %d", len(with), engine.MaxAddedGroupLanes)
	}
	if !with[ids[0]] || with[ids[len(ids)-1]] {
		t.Fatal("the lanes to bob/2 are not the oldest messages'")
	}
}

// holdDuring reopens d with a store hook that, the first time the store
// is about to begin a plan of kind, starts d's hold of user's list and
// waits for it (at most a second: the bound only gives an unordered hold
// the time to show the fault). It returns the hold's outcome.
func (d *device) holdDuring(kind, user string) <-chan error {
	done := make(chan error, 1)
	var once sync.Once
	d.openWith(func(p string) error {
		if p != kind+"/before-begin" {
			return nil
		}
		once.Do(func() {
			c := d.c
			go func() {
				_, _, err := c.RefreshPeerList(d.w.ctx, user)
				done <- err
			}()
			select {
			case err := <-done:
				done <- err
			case <-time.After(time.Second):
			}
		})
		return nil
	})
	return done
}

// TestListAndPersonSendAreOrdered: as TestListAndGroupSendAreOrdered for a
// message to a person (Enqueue): bob's list revoking bob/2 is held while
// alice's message is planned with the list naming it; the message has no
// lane to bob/2 left open.
func TestListAndPersonSendAreOrdered(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	bob2 := w.linkDevice(bob)
	checkPeers(t, alice, bob)
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	done := alice.holdDuring("person-send", "bob")
	res, err := alice.c.Enqueue(w.ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("planned with bob/2")}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, ok := lanesOf(t, alice, bob.addr, res[0].ID)["bob/2"]; ok && got != engine.LaneRemoved {
		t.Fatalf("alice's lane to the removed bob/2 is %s, want removed or none", got)
	}
}

// TestListAndGroupSendAreOrdered: alice plans a group send with the list
// of bob's that names bob/2 while the list revoking it is being stored.
// Between the plan and its transaction (the store's failpoint
// group-send/before-begin) the list's hold starts: it waits for the send
// (both hold sendMu), whose lane to bob/2 its transaction then ends
// removed. Without the order the list was stored first, and the send left
// a pending lane to a device bob removed.
func TestListAndGroupSendAreOrdered(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	// Unordered, the list is stored in the hook; ordered, its hold waits
	// for this send.
	done := alice.holdDuring("group-send", "bob")
	sent, err := alice.c.EnqueueGroup(w.ctx, g, []byte("planned with bob/2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	held, ok, err := alice.c.PeerAccount(w.ctx, "bob")
	if err != nil || !ok {
		t.Fatalf("alice holds no list of bob's (%v)", err)
	}
	for _, a := range engine.ActiveAddresses(held.List) {
		if a == bob2.addr {
			t.Fatal("alice's list of bob's still names bob/2 active")
		}
	}
	if got, ok := alice.lanes(g, sent.ID)["bob/2"]; ok && got != "removed" {
		t.Fatalf("alice's lane to the removed bob/2 is %q, want removed or none", got)
	}
}

// TestGroupAckAfterLinkAddsLanes: alice's group message reached bob/1,
// undecided, when bob linked bob/2 (the link's archive carries it as
// undecided). bob/1's acknowledgement reaches alice, whose receive asks a
// relay that answers list checks for bob's later list before processing
// it (checkListsBeforeAcks: a group lane is pending to bob): the lane to
// bob/2 is added before bob/1's clears. bob/2 holds the message once,
// from the archive and the lane, and alice's lanes end acknowledged.
func TestGroupAckAfterLinkAddsLanes(t *testing.T) {
	// The list is taken under sendMu from within the receive round
	// (syncMu held): the checker sees the order kept.
	stop := engine.CheckLockOrder()
	defer func() {
		if _, violations := stop(); len(violations) > 0 {
			t.Errorf("lock order violated:\n%s", violations[0])
		}
	}()
	w := blobWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("in flight at the link"))
	if err != nil {
		t.Fatal(err)
	}
	alice.sync()
	bob.sync() // pending at bob/1, undecided
	bob2 := w.linkHolding(bob)
	bob.commitAll() // the ACK goes to alice
	alice.sync()
	if got := alice.lanes(g, sent.ID); got["bob/1"] != "acknowledged" || got["bob/2"] != "pending" {
		t.Fatalf("alice's lanes after bob/1's ACK: %v, want bob/1 acknowledged and bob/2 pending", got)
	}
	settle(t, 8, alice, bob, bob2)
	if n := bob2.countEntry(g, "alice/1:in flight at the link"); n != 1 {
		t.Fatalf("bob/2 holds alice's message %d times: %v", n, bob2.groupHistory(g))
	}
	if got := alice.lanes(g, sent.ID); got["bob/2"] != "acknowledged" {
		t.Fatalf("alice's lanes %v, want bob/2's acknowledged", got)
	}
}

// TestAddedGroupLaneToADeviceWithoutTheGroup: bob/2 was linked without
// bob's groups (no archive). The lane alice's newer list of bob's adds
// brings it a message of a group it does not hold: it is held (rule 1),
// never starts the group (a message starts none) and is not refused, so
// alice's lane stays pending rather than ending not_a_member. (bob/1
// linked it with AddDevice, which sends no group state, and never syncs
// again: TestLinkWithoutArchiveSendsTheGroups has the link that does.)
func TestAddedGroupLaneToADeviceWithoutTheGroup(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("to a device without the group"))
	if err != nil {
		t.Fatal(err)
	}
	bob2 := w.linkDevice(bob)
	alice.reopen()
	checkPeers(t, alice, bob)
	for range 3 {
		alice.sync()
		bob2.sync()
		bob2.commitAll()
	}
	if gs, err := bob2.c.Groups(w.ctx); err != nil || len(gs) != 0 {
		t.Fatalf("bob/2 holds groups %v (%v), want none: a message starts no group", gs, err)
	}
	if got := alice.lanes(g, sent.ID)["bob/2"]; got != "pending" && got != "relay_accepted" {
		t.Fatalf("alice's lane to bob/2 is %q, want it still open", got)
	}
}

// openGroupLanes counts d's group lanes still pending.
func (d *device) openGroupLanes() int {
	return d.count("SELECT count(*) FROM group_lane WHERE state = 1")
}

// laneSeq returns the sequence number of d's outbound row of id to the
// device to, 0 when there is none.
func (d *device) laneSeq(to string, id wire.LogicalID) int {
	return d.count("SELECT coalesce(max(seq), 0) FROM outbound WHERE recipient = ? AND id = ?", to, id[:])
}

// changeWhileBobIsAway makes the group of alice, bob and carol, then lets
// alice make the roster change ops (pending to bob: bob/1 is away) and
// send "after the change" at its generation, and links bob/2, whose
// archive holds the group as bob/1 has it.
func changeWhileBobIsAway(t *testing.T, ops []wire.RosterChange, bobSyncs bool) (w *world, g wire.GroupID, change, sent wire.LogicalID, alice, bob, bob2, carol, dave *device) {
	t.Helper()
	w = blobWorld(t)
	alice, bob, carol, dave = w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	publishLists(t, alice, bob, carol, dave)
	checkPeers(t, alice, bob, carol, dave)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g = info.ID
	settle(t, 6, alice, bob, carol)
	res, err := alice.c.ChangeRoster(w.ctx, g, ops)
	if err != nil {
		t.Fatal(err)
	}
	change = res.ID
	if bobSyncs {
		bob.sync() // bob/1 has the change; its ACK has not reached alice
	}
	if msg, err := alice.c.SendGroup(w.ctx, g, []byte("after the change")); err == nil {
		sent = msg.ID
	} else if !errors.Is(err, engine.ErrNotMember) {
		t.Fatal(err)
	}
	bob2 = w.linkHolding(bob)
	return w, g, change, sent, alice, bob, bob2, carol, dave
}

// TestAddedLanesCarryAPendingChange: alice adds dave to the group while
// bob/1 is away, and sends; bob links bob/2, whose archive holds the group
// before the change. alice then holds bob's newer list: the change pending
// to bob gets a lane to bob/2 ahead of the message at its generation, so
// bob/2 merges the generation, takes the message once, and every lane
// ends. Before, the group got no added lane at all while the change was
// pending (the device would never have merged the generation), and its
// later messages waited on bob/2 and were dropped.
func TestAddedLanesCarryAPendingChange(t *testing.T) {
	oneGoroutine(t)
	w, g, change, sent, alice, bob, bob2, carol, dave := changeWhileBobIsAway(t, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, false)
	if gen, _ := bob2.members(g); gen != 1 {
		t.Fatalf("bob/2 holds generation %d of the group, want 1 from the link", gen)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if got := alice.lanes(g, sent)["bob/2"]; got != "pending" {
		t.Fatalf("alice's lanes after bob's newer list: %v, want bob/2 pending", alice.lanes(g, sent))
	}
	cs, ms := alice.laneSeq("bob/2", change), alice.laneSeq("bob/2", sent)
	if cs == 0 || ms == 0 || cs > ms {
		t.Fatalf("alice's rows to bob/2: change at %d, message at %d; want the change first", cs, ms)
	}
	all := []*device{alice, bob, bob2, carol, dave}
	settle(t, 8, all...)
	if gen, members := bob2.members(g); gen != 2 || len(members) != 4 {
		t.Fatalf("bob/2 holds generation %d with %v, want 2 with dave", gen, members)
	}
	for _, d := range []*device{bob, bob2, carol, dave} {
		if n := d.countEntry(g, "alice/1:after the change"); n != 1 {
			t.Fatalf("%s holds alice's message %d times: %v", d.addr, n, d.groupHistory(g))
		}
	}
	for r, s := range alice.lanes(g, sent) {
		if s != "acknowledged" {
			t.Fatalf("alice's lane to %s is %s, want acknowledged", r, s)
		}
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open, want none", n)
	}
	if _, err := alice.c.SendGroup(w.ctx, g, []byte("later")); err != nil {
		t.Fatal(err)
	}
	settle(t, 8, all...)
	if n := bob2.countEntry(g, "alice/1:later"); n != 1 {
		t.Fatalf("bob/2 holds alice's later message %d times: %v", n, bob2.groupHistory(g))
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open after her later message, want none", n)
	}
}

// TestAddedLaneCarriesAChangeTheArchiveHad: bob/1 received alice's change
// before linking bob/2 (its archive holds the generation), but its ACK had
// not reached alice when she held bob's newer list: the change's lane to
// bob/2 brings a change bob/2 has recorded, which it acknowledges again
// (rule 3), and nothing is held twice.
func TestAddedLaneCarriesAChangeTheArchiveHad(t *testing.T) {
	oneGoroutine(t)
	_, g, change, _, alice, bob, bob2, carol, dave := changeWhileBobIsAway(t, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}, true)
	if gen, _ := bob2.members(g); gen != 2 {
		t.Fatalf("bob/2 holds generation %d of the group, want 2 from the link", gen)
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
	if n := bob2.countEntry(g, "alice/1:after the change"); n != 1 {
		t.Fatalf("bob/2 holds alice's message %d times: %v", n, bob2.groupHistory(g))
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open, want none", n)
	}
}

// TestAddedLaneTellsARemoval: alice removes bob while bob/1 is away; bob
// links bob/2, whose archive holds the group with bob in it. The removal,
// pending to bob, gets a lane to bob/2 when alice holds bob's newer list:
// bob/2 learns it was removed, and the lane ends.
func TestAddedLaneTellsARemoval(t *testing.T) {
	oneGoroutine(t)
	_, g, change, _, alice, bob, bob2, carol, dave := changeWhileBobIsAway(t, []wire.RosterChange{{Op: wire.RosterRemove, Address: "bob/1"}}, false)
	alice.reopen()
	checkPeers(t, alice, bob)
	if alice.laneSeq("bob/2", change) == 0 {
		t.Fatal("alice added no lane of the removal pending to bob")
	}
	settle(t, 8, alice, bob, bob2, carol, dave)
	for _, d := range []*device{bob, bob2} {
		gen, members := d.members(g)
		if gen != 2 || slices.Contains(members, "bob/1") {
			t.Fatalf("%s holds generation %d with %v, want 2 without bob", d.addr, gen, members)
		}
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice has %d group lanes open, want none", n)
	}
}
