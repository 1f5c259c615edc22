package engine_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// Groups across a person's devices (docs/protocol.md, "Groups across a
// person's devices"): a roster lists device addresses, a member is a
// person, and every device its person's list vouches for sends and
// receives.

// publishLists makes the network serve each device's account list, as
// the first connection of each person leaves it.
func publishLists(t *testing.T, ds ...*device) {
	t.Helper()
	for _, d := range ds {
		a, err := engine.LoadAccount(d.w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
}

// checkPeers makes d hold the list of each peer's person.
func checkPeers(t *testing.T, d *device, peers ...*device) {
	t.Helper()
	for _, p := range peers {
		if err := d.c.CheckPeer(d.w.ctx, p.addr); err != nil {
			t.Fatalf("%s checks %s: %v", d.addr, p.addr, err)
		}
	}
}

// has reports whether d's group history holds "sender:body".
func (d *device) has(g wire.GroupID, entry string) bool {
	return slices.Contains(d.groupHistory(g), entry)
}

// groupOf is alice/1's group "friends" of alice/1, bob/1 and carol/1, with
// bob/2 linked to bob before it: alice and carol hold bob's list naming
// both of his devices.
func groupOf(t *testing.T) (w *world, g wire.GroupID, alice, bob, bob2, carol *device) {
	t.Helper()
	w = newWorld(t)
	alice, bob, carol = w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	bob2 = w.linkDevice(bob)
	checkPeers(t, alice, bob, carol)
	checkPeers(t, carol, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	return w, info.ID, alice, bob, bob2, carol
}

// TestGroupReachesEveryDeviceOfAMember: the creation, a message and a
// roster change reach bob/2, linked to bob and no entry of the roster,
// because alice holds bob's list; every lane ends acknowledged.
func TestGroupReachesEveryDeviceOfAMember(t *testing.T) {
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	if gen, ms := bob2.members(g); gen != 1 || !slices.Equal(ms, []string{"alice/1", "bob/1", "carol/1"}) {
		t.Fatalf("bob/2 sees generation %d %v, want the group's creation", gen, ms)
	}
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("hello all"))
	if err != nil {
		t.Fatal(err)
	}
	if got := alice.lanes(g, sent.ID); len(got) != 3 || got["bob/2"] != "pending" {
		t.Fatalf("alice's lanes %v, want one to each of bob/1, bob/2 and carol/1", got)
	}
	settle(t, 6, alice, bob, bob2, carol)
	if !bob2.has(g, "alice/1:hello all") {
		t.Fatalf("bob/2's group history %v lacks alice's message", bob2.groupHistory(g))
	}
	if got := alice.lanes(g, sent.ID); got["bob/2"] != "acknowledged" || got["bob/1"] != "acknowledged" {
		t.Fatalf("alice's lanes %v, want bob's both acknowledged", got)
	}
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 6, alice, bob, bob2, carol)
	if gen, ms := bob2.members(g); gen != 2 || !slices.Equal(ms, []string{"alice/1", "bob/1"}) {
		t.Fatalf("bob/2 sees generation %d %v after carol's removal, want 2 without her", gen, ms)
	}
}

// TestLinkedDeviceSendsToGroup: bob/2, no entry of the roster, sends to
// the group: alice and carol take it (their lists of bob vouch for it),
// and bob/1 takes it as bob's own message, committed as it arrives. A
// roster change on bob/2 is refused before anything is stored, naming
// bob/1.
func TestLinkedDeviceSendsToGroup(t *testing.T) {
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	sent, err := bob2.c.SendGroup(w.ctx, g, []byte("from the laptop"))
	if err != nil {
		t.Fatalf("bob/2 sends to the group: %v", err)
	}
	if got := bob2.lanes(g, sent.ID); len(got) != 3 || got["bob/1"] != "pending" || got["alice/1"] != "pending" || got["carol/1"] != "pending" {
		t.Fatalf("bob/2's lanes %v, want alice/1, bob/1 and carol/1", got)
	}
	res := bob.sync()
	if hasError(res, engine.ErrNotMember) {
		t.Fatalf("bob/1 refused its sibling's message: %v", errorsIn(res))
	}
	if n := bob.pendingIn(); n != 0 {
		t.Fatalf("bob/1 has %d messages to decide, want its sibling's committed as it arrived", n)
	}
	h, err := bob.c.GroupHistory(w.ctx, g, 0, 10)
	if err != nil || len(h) != 1 || h[0].ID != sent.ID || !h[0].Own {
		t.Fatalf("bob/1's group history %+v (%v), want bob/2's message once, as bob's own", h, err)
	}
	settle(t, 6, alice, bob, bob2, carol)
	for _, d := range []*device{alice, carol} {
		if !d.has(g, "bob/2:from the laptop") {
			t.Fatalf("%s's group history %v lacks bob/2's message", d.addr, d.groupHistory(g))
		}
	}
	if got := bob2.lanes(g, sent.ID); got["alice/1"] != "acknowledged" || got["carol/1"] != "acknowledged" || got["bob/1"] != "acknowledged" {
		t.Fatalf("bob/2's lanes %v, want every lane acknowledged", got)
	}

	before, err := bob2.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, ops := range [][]wire.RosterChange{
		{{Op: wire.RosterRemove, Address: "carol/1"}},
		{{Op: wire.RosterRemove, Address: "bob/2"}}, // leaving
	} {
		_, err := bob2.c.ChangeRoster(w.ctx, g, ops)
		if !errors.Is(err, engine.ErrNotRosterEntry) || !strings.Contains(err.Error(), "bob/1") {
			t.Fatalf("bob/2's roster change %v = %v, want ErrNotRosterEntry naming bob/1", ops, err)
		}
	}
	after, err := bob2.c.Group(w.ctx, g)
	if err != nil || len(after.Changes) != len(before.Changes) || bob2.pendingOut() != 0 {
		t.Fatalf("bob/2's refused changes stored something: %d changes, was %d (%v); %d pending", len(after.Changes), len(before.Changes), err, bob2.pendingOut())
	}
}

// TestGroupRefusesStrangerUnderMemberName: a device registered at the
// relay under an address bob's list names with other keys never gets a
// message into the group, though bob is a member: its session is refused
// (the list names other keys), and a group frame that came on one anyway
// would be refused not_a_member (vouchOf, TestVouchOf).
func TestGroupRefusesStrangerUnderMemberName(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	// bob's list names bob/2 with the keys of a device that never
	// registers; a stranger registers bob/2 with its own.
	a, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	id, err := engine.NewIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	n := engine.NextDeviceNumber(a.List)
	if _, err := bob.c.AddDevice(w.ctx, engine.DeviceEntryFor(id, "bob", a.Key.Public(), n, w.clock.Now().Unix())); err != nil {
		t.Fatal(err)
	}
	checkPeers(t, alice, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	for range 3 { // alice's lane to the unregistered bob/2 stays pending
		for _, d := range []*device{alice, bob, carol} {
			d.sync()
			d.commitAll()
		}
	}
	stranger := w.device(fmt.Sprintf("bob/%d", n))
	var mid wire.LogicalID
	mid[0] = 7
	frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: mid, Group: g, Generation: 1, Content: wire.ContentText, Body: []byte("forged")})
	if err != nil {
		t.Fatal(err)
	}
	stranger.raw(alice, frame)
	res := alice.sync()
	alice.commitAll()
	if !hasError(res, engine.ErrNotMember) && !hasError(res, engine.ErrNotInDeviceList) {
		t.Fatalf("alice's round: %v, want the stranger refused", errorsIn(res))
	}
	if got := alice.groupHistory(g); slices.Contains(got, stranger.addr.String()+":forged") {
		t.Fatalf("alice took the stranger's message: %v", got)
	}
}

// TestRevokedDeviceLanesEndRemoved: bob/2 is offline with a group message
// and a roster change pending to it from alice, and one group message
// from bob/1. bob removes bob/2: bob/1's lane to it ends removed in the
// removal's transaction, and alice's lanes (the roster change's too) end
// removed in the transaction that holds bob's new list. A message bob/2
// sends after that is refused not_a_member.
func TestRevokedDeviceLanesEndRemoved(t *testing.T) {
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	msg, err := alice.c.SendGroup(w.ctx, g, []byte("while bob/2 sleeps"))
	if err != nil {
		t.Fatal(err)
	}
	change, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "carol/1"}})
	if err != nil {
		t.Fatal(err)
	}
	own, err := bob.c.SendGroup(w.ctx, g, []byte("from bob/1"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, d := range []*device{alice, bob, carol} {
			d.sync()
			d.commitAll()
		}
	}
	if got := alice.lanes(g, msg.ID)["bob/2"]; got != "pending" {
		t.Fatalf("alice's lane to bob/2 is %q before the removal, want pending", got)
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	if got := bob.lanes(g, own.ID)["bob/2"]; got != "removed" {
		t.Fatalf("bob/1's lane to bob/2 after removing it is %q, want removed", got)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if got := alice.lanes(g, msg.ID)["bob/2"]; got != "removed" {
		t.Fatalf("alice's message lane to bob/2 after bob's new list is %q, want removed", got)
	}
	lanes, err := alice.st.Lanes(w.ctx, g, change.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lanes {
		if l.Recipient == bob2.addr && l.State != engine.LaneRemoved {
			t.Fatalf("alice's roster change lane to bob/2 is %s after bob's new list, want removed", l.State)
		}
	}
	if !slices.ContainsFunc(lanes, func(l engine.Lane) bool { return l.Recipient == bob2.addr }) {
		t.Fatalf("alice's roster change had no lane to bob/2: %v", lanes)
	}
	var mid wire.LogicalID
	mid[0] = 9
	frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: mid, Group: g, Generation: 2, Content: wire.ContentText, Body: []byte("after removal")})
	if err != nil {
		t.Fatal(err)
	}
	bob2.raw(alice, frame)
	res := alice.sync()
	alice.commitAll()
	if !hasError(res, engine.ErrNotMember) || alice.has(g, "bob/2:after removal") {
		t.Fatalf("alice's round after bob/2's removal: %v, history %v; want bob/2 refused", errorsIn(res), alice.groupHistory(g))
	}
}

// TestUnlistedDeviceHeldUntilListLearned: alice holds bob's list from
// before bob linked bob/2. bob/1 makes a group (its own list reaches
// bob/2), and bob/2 sends to it: alice holds the message (refusing it
// would end bob/2's lane for good) and takes it once she holds bob's
// newer list.
func TestUnlistedDeviceHeldUntilListLearned(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	checkPeers(t, alice, bob)
	bob2 := w.linkDevice(bob)
	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, bob2, carol)
	if gen, _ := bob2.members(g); gen != 1 {
		t.Fatalf("bob/2 sees generation %d, want bob/1's group", gen)
	}
	sent, err := bob2.c.SendGroup(w.ctx, g, []byte("new laptop"))
	if err != nil {
		t.Fatal(err)
	}
	res := alice.sync()
	alice.commitAll()
	if hasError(res, engine.ErrNotMember) || alice.has(g, "bob/2:new laptop") {
		t.Fatalf("alice's round: %v, history %v; want bob/2's message held", errorsIn(res), alice.groupHistory(g))
	}
	bob2.sync()
	if got := bob2.lanes(g, sent.ID)["alice/1"]; got != "pending" {
		t.Fatalf("bob/2's lane to alice is %q while she holds the message, want pending", got)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	alice.sync()
	alice.commitAll()
	if !alice.has(g, "bob/2:new laptop") {
		t.Fatalf("alice's history %v after learning bob's list, want bob/2's message", alice.groupHistory(g))
	}
	bob2.sync()
	if got := bob2.lanes(g, sent.ID)["alice/1"]; got != "acknowledged" {
		t.Fatalf("bob/2's lane to alice is %q, want acknowledged", got)
	}
}

// TestChainReachesEveryDevice: in a group large enough for sender chains,
// alice's chain is announced to bob/2 on its own lane, and bob/2's chain
// to alice, and the messages each sends by it reach the other.
func TestChainReachesEveryDevice(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol, dave := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	publishLists(t, alice, bob, carol, dave)
	bob2 := w.linkDevice(bob)
	for _, d := range []*device{alice, carol, dave} {
		checkPeers(t, d, bob)
	}
	info, _, err := alice.c.CreateGroup(w.ctx, "four", []engine.Address{bob.addr, carol.addr, dave.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	all := []*device{alice, bob, bob2, carol, dave}
	settle(t, 6, all...)
	for i := range 3 {
		if _, err := alice.c.SendGroup(w.ctx, g, fmt.Appendf(nil, "a%d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := bob2.c.SendGroup(w.ctx, g, fmt.Appendf(nil, "b%d", i)); err != nil {
			t.Fatal(err)
		}
		settle(t, 6, all...)
	}
	if alice.c.ChainLanes() == 0 || bob2.c.ChainLanes() == 0 {
		t.Fatalf("chain lanes: alice %d, bob/2 %d; want some by the chain", alice.c.ChainLanes(), bob2.c.ChainLanes())
	}
	for i := range 3 {
		if !bob2.has(g, fmt.Sprintf("alice/1:a%d", i)) {
			t.Fatalf("bob/2's history %v lacks alice's a%d", bob2.groupHistory(g), i)
		}
		for _, d := range []*device{alice, carol, dave} {
			if !d.has(g, fmt.Sprintf("bob/2:b%d", i)) {
				t.Fatalf("%s's history %v lacks bob/2's b%d", d.addr, d.groupHistory(g), i)
			}
		}
	}

	// bob removes bob/2: alice forgets the chain announced to it when she
	// holds bob's new list, and her next message goes by a new chain that
	// bob/2 is never told of.
	before, found, err := alice.st.OwnChain(w.ctx, g, 1)
	if err != nil || !found {
		t.Fatalf("alice's chain: %v, %v", found, err)
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	if _, found, err := alice.st.OwnChain(w.ctx, g, 1); err != nil || found {
		t.Fatalf("alice still keeps the chain announced to bob/2 after bob's new list (%v)", err)
	}
	sent, err := alice.c.SendGroup(w.ctx, g, []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	after, found, err := alice.st.OwnChain(w.ctx, g, 1)
	if err != nil || !found || after.Chain == before.Chain {
		t.Fatalf("alice's chain after bob/2's removal: %x (found %v, %v), want a new one, not %x", after.Chain, found, err, before.Chain)
	}
	for _, m := range after.Members {
		if m.Member == bob2.addr {
			t.Fatal("alice announced her new chain to the removed bob/2")
		}
	}
	if _, ok := alice.lanes(g, sent.ID)["bob/2"]; ok {
		t.Fatalf("alice's message after the removal has a lane to bob/2: %v", alice.lanes(g, sent.ID))
	}
}

// TestUnlistedDeviceAsksForTheList: as TestUnlistedDeviceHeldUntilListLearned,
// on a relay that answers list checks: the envelope from bob/2, which the
// list alice holds does not name, makes her receive ask for bob's later
// list first, and the message is taken in that same round.
func TestUnlistedDeviceAsksForTheList(t *testing.T) {
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	checkPeers(t, alice, bob)
	bob2 := w.linkDevice(bob)
	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, bob2, carol)
	if held, ok, err := alice.c.PeerAccount(w.ctx, "bob"); err != nil || !ok || held.List.Generation != 1 {
		t.Fatalf("alice holds bob's list at generation %d (%v, %v), want 1 before bob/2 writes", held.List.Generation, ok, err)
	}
	if _, err := bob2.c.SendGroup(w.ctx, g, []byte("new laptop")); err != nil {
		t.Fatal(err)
	}
	res := alice.sync()
	alice.commitAll()
	if hasError(res, engine.ErrNotMember) || !alice.has(g, "bob/2:new laptop") {
		t.Fatalf("alice's round: %v, history %v; want bob/2's message taken once she asked for bob's list", errorsIn(res), alice.groupHistory(g))
	}
}

// TestSiblingsGroupIsNoRequest: on bob/2, which asks before taking
// strangers' messages, a group bob/1 made is no request: the account's
// list names bob/1, so the group starts there and its messages are
// delivered.
func TestSiblingsGroupIsNoRequest(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	bob2 := w.linkDevice(bob)
	bob2.withRequests(nil)
	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr})
	if err != nil {
		t.Fatal(err)
	}
	res := bob2.sync()
	if k := kindsOf(res); k[engine.ResultRequest] != 0 || k[engine.ResultGroupChanged] != 1 {
		t.Fatalf("bob/2's round of bob/1's group: %v, want the group started, no request", k)
	}
	if _, err := bob.c.SendGroup(w.ctx, info.ID, []byte("note to self")); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if !bob2.has(info.ID, "bob/1:note to self") {
		t.Fatalf("bob/2's group history %v, want bob/1's message", bob2.groupHistory(info.ID))
	}
}

// TestUnlistedSiblingAsksForOwnList: bob/2 holds bob's list from before
// bob/3 was linked, on a connection kept up. bob/3's group message is held
// on bob/2 (not refused), the round asks the relay for the account's later
// list, and the next round takes the message as bob's own.
func TestUnlistedSiblingAsksForOwnList(t *testing.T) {
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	bob2 := w.linkDevice(bob)
	bob2.sync() // the connection's round: generation 2 published
	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, bob2)
	bob3 := w.linkDevice(bob)
	// bob/3 joins the group with bob/1's next change, the first it gets.
	carol := w.device("carol/1")
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdd, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if gen, _ := bob3.members(g); gen != 2 {
		t.Fatalf("bob/3 sees generation %d, want bob/1's change", gen)
	}
	for _, d := range []*device{alice, carol, bob2} {
		d.sync()
	}
	if a, err := engine.LoadAccount(w.ctx, bob2.st); err != nil || a.List.Generation != 2 {
		t.Fatalf("bob/2 holds generation %d of its list (%v), want 2: bob/3 unknown to it", a.List.Generation, err)
	}
	sent, err := bob3.c.SendGroup(w.ctx, g, []byte("third device"))
	if err != nil {
		t.Fatal(err)
	}
	if got := bob3.lanes(g, sent.ID); got["bob/2"] != "pending" {
		t.Fatalf("bob/3's lanes %v, want one to bob/2", got)
	}
	if res := bob2.sync(); hasError(res, engine.ErrNotMember) || bob2.has(g, "bob/3:third device") {
		t.Fatalf("bob/2's round: %v, want bob/3's message held", errorsIn(res))
	}
	if a, err := engine.LoadAccount(w.ctx, bob2.st); err != nil || a.List.Generation != 3 {
		t.Fatalf("bob/2 holds generation %d of its list after holding bob/3's message (%v), want 3", a.List.Generation, err)
	}
	bob2.sync()
	h, err := bob2.c.GroupHistory(w.ctx, g, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(h, func(e engine.GroupEntry) bool { return e.ID == sent.ID && e.Own }) {
		t.Fatalf("bob/2's group history %+v, want bob/3's message as bob's own", h)
	}
}

// TestNoListHeldAsksForIt: alice holds no list for bob, so bob/2, linked
// to bob and no entry of the roster, cannot be vouched for by one. Its
// group message is held, not refused (which would end its lane for
// good), the round fetches bob's list, and the next round accepts it. A
// group send of alice's asks for the lists she lacks the same way.
func TestNoListHeldAsksForIt(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	bob2 := w.linkDevice(bob)
	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, bob2, carol)
	if _, held, err := alice.c.PeerAccount(w.ctx, "bob"); err != nil || held {
		t.Fatalf("alice holds bob's list (%v, %v) before the test", held, err)
	}
	sent, err := bob2.c.SendGroup(w.ctx, g, []byte("new laptop"))
	if err != nil {
		t.Fatal(err)
	}
	res := alice.sync()
	alice.commitAll()
	if hasError(res, engine.ErrNotMember) {
		t.Fatalf("alice refused bob/2's message: %v", errorsIn(res))
	}
	if _, held, err := alice.c.PeerAccount(w.ctx, "bob"); err != nil || !held {
		t.Fatalf("alice's round did not fetch bob's list (%v, %v)", held, err)
	}
	alice.sync()
	alice.commitAll()
	if !alice.has(g, "bob/2:new laptop") {
		t.Fatalf("alice's history %v after learning bob's list, want bob/2's message", alice.groupHistory(g))
	}
	bob2.sync()
	if got := bob2.lanes(g, sent.ID)["alice/1"]; got != "acknowledged" {
		t.Fatalf("bob/2's lane to alice is %q, want acknowledged", got)
	}

	// carol holds no list for bob either; her send asks for it, and her
	// next send reaches bob/2.
	if _, err := carol.c.SendGroup(w.ctx, g, []byte("first")); err != nil {
		t.Fatal(err)
	}
	carol.sync()
	if _, held, err := carol.c.PeerAccount(w.ctx, "bob"); err != nil || !held {
		t.Fatalf("carol's round after her group send did not fetch bob's list (%v, %v)", held, err)
	}
	second, err := carol.c.SendGroup(w.ctx, g, []byte("second"))
	if err != nil {
		t.Fatal(err)
	}
	if got := carol.lanes(g, second.ID); got["bob/2"] == "" {
		t.Fatalf("carol's second message's lanes %v, want one to bob/2", got)
	}
}

// TestMemberCannotStartALinkedDevicesGroup: bob/2 is linked after alice's
// group exists (and, in this world, gets no archive). carol, a member and
// no admin, signs a change under the group's ID that names her admin and
// adds eve, and sends it to bob/2 alone. It carries bob's entry but adds
// none of bob's devices: it starts nothing on bob/2, which holds it, and
// bob/2 has no group to send to eve through.
func TestMemberCannotStartALinkedDevicesGroup(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol, eve := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("eve/1")
	publishLists(t, alice, bob, carol, eve)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, carol)
	bob2 := w.linkDevice(bob)
	checkPeers(t, carol, bob)
	carol.forge(bob2, g, 2, "+eve/1", "alice/1 bob/1 carol/1* eve/1")
	for range 4 {
		for _, d := range []*device{bob2, carol, eve} {
			d.sync()
		}
	}
	if info, err := bob2.c.Group(w.ctx, g); !errors.Is(err, engine.ErrUnknownGroup) {
		t.Fatalf("bob/2 started the group from carol's forged change: %+v (%v)", info.Roster, err)
	}
	if _, err := bob2.c.SendGroup(w.ctx, g, []byte("secret")); err == nil {
		t.Fatal("bob/2 sends to a group it should not keep")
	}
}

// TestRevokedEntryLosesItsAuthority: bob/2 is the group's entry for bob,
// and an admin. Once bob revokes bob/2 and alice and carol hold the list
// that says so, bob/2's roster change (removing carol) counts nowhere,
// and bob/1's refused change names no revoked device as the one to use.
func TestRevokedEntryLosesItsAuthority(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	bob2 := w.linkDevice(bob)
	checkPeers(t, alice, bob, carol)
	checkPeers(t, carol, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob2.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, bob2, carol)
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/2"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 6, alice, bob, bob2, carol)
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	checkPeers(t, alice, bob)
	carol.reopen()
	checkPeers(t, carol, bob)
	_, err = bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "bob/2"}})
	if !errors.Is(err, engine.ErrNotRosterEntry) || strings.Contains(err.Error(), ": bob/2") {
		t.Fatalf("bob/1's roster change: %v, want ErrNotRosterEntry not naming the revoked bob/2", err)
	}
	if _, err := bob2.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "carol/1"}}); err != nil {
		t.Fatalf("the revoked bob/2's change was not even stored there: %v", err)
	}
	for range 6 {
		for _, d := range []*device{bob2, alice, carol, bob} {
			d.sync()
		}
	}
	for _, d := range []*device{alice, carol} {
		if _, ms := d.members(g); !slices.Contains(ms, "carol/1") {
			t.Fatalf("%s's roster %v: the revoked bob/2 removed carol", d.addr, ms)
		}
	}
}
