package engine_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// groupHistory returns "sender:body" for each message of a group d keeps.
func (d *device) groupHistory(g wire.GroupID) []string {
	d.w.t.Helper()
	h, err := d.c.GroupHistory(d.w.ctx, g, 0, 1000)
	if err != nil {
		d.w.t.Fatal(err)
	}
	var out []string
	for _, e := range h {
		out = append(out, e.Sender.String()+":"+string(e.Body))
	}
	return out
}

func (d *device) lanes(g wire.GroupID, id wire.LogicalID) map[string]string {
	d.w.t.Helper()
	h, err := d.c.GroupHistory(d.w.ctx, g, 0, 1000)
	if err != nil {
		d.w.t.Fatal(err)
	}
	out := make(map[string]string)
	for _, e := range h {
		if e.ID == id {
			for _, l := range e.Lanes {
				out[l.Recipient.String()] = l.State.String()
			}
		}
	}
	return out
}

func (d *device) members(g wire.GroupID) (uint64, []string) {
	d.w.t.Helper()
	info, err := d.c.Group(d.w.ctx, g)
	if err != nil {
		d.w.t.Fatalf("%s reads group: %v", d.addr, err)
	}
	var ms []string
	for _, m := range info.Roster.Members {
		ms = append(ms, m.Address)
	}
	sort.Strings(ms)
	return info.Roster.Generation, ms
}

// settle runs rounds of sync and commit on every device until nothing is
// pending anywhere, at most rounds times.
func settle(t *testing.T, rounds int, ds ...*device) {
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
	}
	for _, d := range ds {
		t.Logf("%s: %d out, %d in pending", d.addr, d.pendingOut(), d.pendingIn())
	}
	t.Fatalf("not settled after %d rounds", rounds)
}

// TestGroupFanOut: a group's creation and messages reach every member once,
// only in the group's history, and every lane ends acknowledged; a removed
// member's lanes end as removed and it gets nothing sent after.
func TestGroupFanOut(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, res, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil || len(res.Unsent) != 0 {
		t.Fatalf("create: %v, unsent %v", err, res.Unsent)
	}
	g := info.ID
	settle(t, 5, alice, bob, carol)
	want := []string{"alice/1", "bob/1", "carol/1"}
	for _, d := range []*device{alice, bob, carol} {
		if gen, ms := d.members(g); gen != 1 || !reflect.DeepEqual(ms, want) {
			t.Fatalf("%s sees generation %d %v, want 1 %v", d.addr, gen, ms, want)
		}
	}

	sent, err := alice.c.SendGroup(w.ctx, g, []byte("hello all"))
	if err != nil || len(sent.Unsent) != 0 {
		t.Fatalf("send: %v, unsent %v", err, sent.Unsent)
	}
	if got := alice.lanes(g, sent.ID); got["bob/1"] != "pending" || got["carol/1"] != "pending" {
		t.Fatalf("lanes after send %v, want both pending", got)
	}
	if _, err := bob.c.SendGroup(w.ctx, g, []byte("hi from bob")); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	if got, want := alice.lanes(g, sent.ID), map[string]string{"bob/1": "acknowledged", "carol/1": "acknowledged"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lanes %v, want %v", got, want)
	}
	for _, d := range []*device{alice, bob, carol} {
		h := d.groupHistory(g)
		sort.Strings(h)
		if want := []string{"alice/1:hello all", "bob/1:hi from bob"}; !reflect.DeepEqual(h, want) {
			t.Fatalf("%s group history %v, want %v", d.addr, h, want)
		}
	}
	if got := carol.received(alice); len(got) != 0 {
		t.Fatalf("carol's one-to-one history with alice holds %v: group messages belong to the group", got)
	}

	// Carol goes offline with a message pending to her; alice removes her.
	m2, err := alice.c.SendGroup(w.ctx, g, []byte("before removal"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	if got := alice.lanes(g, m2.ID)["carol/1"]; got != "removed" {
		t.Fatalf("carol's lane after removal is %q, want removed", got)
	}
	m3, err := alice.c.SendGroup(w.ctx, g, []byte("after removal"))
	if err != nil {
		t.Fatal(err)
	}
	if got := alice.lanes(g, m3.ID); len(got) != 1 || got["bob/1"] != "pending" {
		t.Fatalf("lanes after removal %v, want bob's alone", got)
	}
	settle(t, 6, alice, bob, carol)
	if gen, ms := carol.members(g); gen != 2 || !reflect.DeepEqual(ms, []string{"alice/1", "bob/1"}) {
		t.Fatalf("carol sees generation %d %v, want 2 without her", gen, ms)
	}
	if gen, ms := bob.members(g); gen != 2 || !reflect.DeepEqual(ms, []string{"alice/1", "bob/1"}) {
		t.Fatalf("bob sees generation %d %v", gen, ms)
	}
	for _, h := range carol.groupHistory(g) {
		if h == "alice/1:after removal" {
			t.Fatal("carol got a message sent after her removal")
		}
	}
}

// TestGroupMessageFromNonMember: a member's message to a device that does
// not count it in the roster is refused with not_a_member, which ends the
// sender's lane instead of leaving it pending.
func TestGroupMessageFromNonMember(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "trio", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	// Alice removes bob; carol learns it before bob does, and bob still
	// sends at generation 1, which held him: carol accepts it.
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterRemove, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	carol.sync()
	sent, err := bob.c.SendGroup(w.ctx, info.ID, []byte("sent while a member"))
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 6, alice, bob, carol)
	if got := carol.groupHistory(info.ID); len(got) != 1 || got[0] != "bob/1:sent while a member" {
		t.Fatalf("carol's history %v: a message sent at a generation that held its sender is accepted", got)
	}
	// Now bob knows he is out: SendGroup refuses.
	if _, err := bob.c.SendGroup(w.ctx, info.ID, []byte("late")); err == nil {
		t.Fatal("a removed member could send")
	}
	_ = sent
}

// TestGroupHoldsAnUnseenGeneration: a message from a member just added can
// overtake the admin's roster frame (FIFO holds per pair only); it is held,
// neither acknowledged nor refused, and delivered once the roster arrives.
func TestGroupHoldsAnUnseenGeneration(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "growing", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob)
	w.net.Hold(bob.addr)
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdd, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	carol.sync()
	sent, err := carol.c.SendGroup(w.ctx, info.ID, []byte("hello, I am new"))
	if err != nil {
		t.Fatal(err)
	}
	// Bob receives carol's message before alice's roster frame: held.
	if n := len(w.net.Held(bob.addr)); n != 2 {
		t.Fatalf("%d envelopes held for bob, want the roster change and carol's message", n)
	}
	w.net.DeliverHeld(bob.addr, 1)
	for range 3 {
		bob.sync()
	}
	if n := bob.pendingIn(); n != 0 {
		t.Fatalf("bob has %d pending: a message naming an unseen generation is held", n)
	}
	if got := carol.lanes(info.ID, sent.ID)["bob/1"]; got != "pending" {
		t.Fatalf("carol's lane to bob is %q while held, want pending", got)
	}
	w.net.Release(bob.addr)
	settle(t, 6, alice, bob, carol)
	if got := bob.groupHistory(info.ID); len(got) != 1 || got[0] != "carol/1:hello, I am new" {
		t.Fatalf("bob's history %v, want carol's message once", got)
	}
	if got := carol.lanes(info.ID, sent.ID); got["bob/1"] != "acknowledged" || got["alice/1"] != "acknowledged" {
		t.Fatalf("carol's lanes %v, want both acknowledged", got)
	}
}

// TestGroupNotAMember: two admins change the roster at once, one adding
// dave and one removing him; remove beats add, so a member that merged
// both refuses dave's message with not_a_member, and dave's lane ends.
func TestGroupNotAMember(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol, dave := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "contested", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	// Generation 3, concurrently: alice adds dave, bob removes him (a
	// no-op remove on bob's roster, but it names dave).
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterRemove, Address: "dave/1"}}); err != nil {
		t.Fatal(err)
	}
	carol.sync()
	if gen, ms := carol.members(info.ID); gen != 3 || !reflect.DeepEqual(ms, []string{"alice/1", "bob/1", "carol/1"}) {
		t.Fatalf("carol merged generation %d %v, want 3 without dave", gen, ms)
	}
	dave.sync()
	sent, err := dave.c.SendGroup(w.ctx, info.ID, []byte("am I in?"))
	if err != nil {
		t.Fatal(err)
	}
	res := carol.sync()
	refused := false
	for _, r := range res {
		refused = refused || (r.Sender == dave.addr && r.Err != nil)
	}
	if !refused {
		t.Fatalf("carol's results %+v: want dave's message refused", res)
	}
	dave.sync()
	if got := dave.lanes(info.ID, sent.ID)["carol/1"]; got != "not_a_member" {
		t.Fatalf("dave's lane to carol is %q, want not_a_member", got)
	}
	settle(t, 8, alice, bob, carol, dave)
	for _, d := range []*device{alice, bob, carol} {
		if gen, ms := d.members(info.ID); gen != 3 || !reflect.DeepEqual(ms, []string{"alice/1", "bob/1", "carol/1"}) {
			t.Fatalf("%s sees generation %d %v: every device agrees on the merged roster", d.addr, gen, ms)
		}
	}
}

// TestGroupConcurrentAddsConverge: two admins each add a member at the same
// generation; each change reaches the member the other added (its author
// forwards it once it learns of the other), and all five devices agree.
func TestGroupConcurrentAddsConverge(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	dave, erin := w.device("dave/1"), w.device("erin/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "five", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdd, Address: "dave/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdd, Address: "erin/1"}, {Op: wire.RosterRemove, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	all := []*device{alice, bob, carol, dave, erin}
	settle(t, 8, all...)
	want := []string{"alice/1", "bob/1", "dave/1", "erin/1"}
	for _, d := range all {
		if gen, ms := d.members(info.ID); gen != 3 || !reflect.DeepEqual(ms, want) {
			t.Fatalf("%s sees generation %d %v, want 3 %v", d.addr, gen, ms, want)
		}
	}
	m, err := erin.c.SendGroup(w.ctx, info.ID, []byte("hello from erin"))
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 6, all...)
	for _, d := range []*device{alice, bob, dave} {
		if got := d.groupHistory(info.ID); len(got) != 1 || got[0] != "erin/1:hello from erin" {
			t.Fatalf("%s's history %v", d.addr, got)
		}
	}
	if got := erin.lanes(info.ID, m.ID); len(got) != 3 {
		t.Fatalf("erin's lanes %v, want alice, bob and dave", got)
	}
}

// TestGroupMemberWithoutBundle: a member whose bundle cannot be fetched gets
// a pending lane; the group send does not fail, and the others' lanes go.
func TestGroupMemberWithoutBundle(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	ghost := engine.MustParseAddress("ghost/1") // never published a bundle
	info, res, err := alice.c.CreateGroup(w.ctx, "haunted", []engine.Address{bob.addr, ghost})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(res.Unsent) != 1 || res.Unsent[0] != ghost {
		t.Fatalf("unsent %v, want ghost/1's lane alone", res.Unsent)
	}
	bob.sync()
	sent, err := alice.c.SendGroup(w.ctx, info.ID, []byte("boo"))
	if err != nil || len(sent.Unsent) != 1 {
		t.Fatalf("send: %v, unsent %v; want the send stored with ghost's lane pending", err, sent.Unsent)
	}
	bob.sync()
	bob.commitAll()
	alice.sync()
	if got := alice.lanes(info.ID, sent.ID); got["bob/1"] != "acknowledged" || got["ghost/1"] != "pending" {
		t.Fatalf("lanes %v, want bob's acknowledged and ghost's pending", got)
	}
	if n := alice.pendingOut(); n != 2 {
		t.Fatalf("%d pending, want ghost's two lanes (the creation and the message)", n)
	}
}

// TestGroupStrandedLaneAbandoned: two admins remove each other at once, and
// one of them, before it learns of the other's change, makes another change
// and sends at the generation that change creates. The merge removes both,
// so that change does not count: carol holds the message for a generation
// that will not come, and the sender's lane would stay pending for ever.
// Once the sender merges its own removal it abandons that lane.
func TestGroupStrandedLaneAbandoned(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "duel", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)

	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "alice/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	sent, err := bob.c.SendGroup(w.ctx, g, []byte("at a generation that will not be"))
	if err != nil {
		t.Fatal(err)
	}
	// An action at that generation (it has no history entry of its own)
	// is stranded the same way.
	if _, err := bob.c.Act(w.ctx, engine.ActionRequest{Group: &g, Content: wire.ContentReaction, Target: sent.ID, Emoji: "👍"}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		for _, d := range []*device{alice, bob, carol} {
			d.sync()
			d.commitAll()
		}
	}
	for _, d := range []*device{alice, bob, carol} {
		if gen, ms := d.members(g); gen != 3 || !reflect.DeepEqual(ms, []string{"carol/1"}) {
			t.Fatalf("%s sees generation %d %v, want 3 [carol/1]", d.addr, gen, ms)
		}
	}
	if got := bob.lanes(g, sent.ID)["carol/1"]; got != "abandoned" {
		t.Fatalf("bob's lane to carol is %q, want abandoned: it names generation 4, which no member will merge", got)
	}
	if n := bob.pendingOut(); n != 0 {
		t.Fatalf("bob has %d pending out", n)
	}
	if got := carol.groupHistory(g); len(got) != 0 {
		t.Fatalf("carol's history %v, want nothing from bob at generation 4", got)
	}
}

// TestGroupStrandedAnnouncementAbandoned: as TestGroupStrandedLaneAbandoned
// in a group of four, whose messages go by sender chains: bob's message at
// the generation that will not be comes with the announcement of his chain
// for it, each pending on a lane of its own. Once bob merges his removal,
// the announcements' lanes are abandoned with the message's: nothing of
// his stays pending for ever.
func TestGroupStrandedAnnouncementAbandoned(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol, dave, erin := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1"), w.device("erin/1")
	all := []*device{alice, bob, carol, dave, erin}
	info, _, err := alice.c.CreateGroup(w.ctx, "duel of five", []engine.Address{bob.addr, carol.addr, dave.addr, erin.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "alice/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	before := bob.pendingOut()
	if _, err := bob.c.SendGroup(w.ctx, g, []byte("at a generation that will not be")); err != nil {
		t.Fatal(err)
	}
	if n := bob.pendingOut() - before; n != 6 {
		t.Fatalf("bob's send stored %d lanes, want the message and its chain's announcement to carol, dave and erin", n)
	}
	for range 4 {
		for _, d := range all {
			d.sync()
			d.commitAll()
		}
	}
	if gen, ms := bob.members(g); gen != 3 || !reflect.DeepEqual(ms, []string{"carol/1", "dave/1", "erin/1"}) {
		t.Fatalf("bob sees generation %d %v, want 3 [carol/1 dave/1 erin/1]", gen, ms)
	}
	if n := bob.pendingOut(); n != 0 {
		out, _ := bob.c.PendingOutbound(w.ctx, engine.PageQuery{Limit: 10})
		t.Fatalf("bob has %d pending out after merging his removal, want none: %+v", n, out)
	}
}
