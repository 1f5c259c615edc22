package engine_test

import (
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestGroupNewcomerGetsConcurrentRemoval: alice removes dave at generation
// 3 while bob, who has not seen it, names carol admin at 3 and then adds erin
// at 4. Bob's change carries the roster as bob saw it, dave included, and
// erin starts from it (rule 1); alice's removal went to the roster at 3,
// which erin is not in. An admin that has merged both restates the roster at
// 4, and every member, erin too, ends with the same one.
func TestGroupNewcomerGetsConcurrentRemoval(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	dave, erin := w.device("dave/1"), w.device("erin/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "stale", []engine.Address{bob.addr, carol.addr, dave.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol, dave)

	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "dave/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "carol/1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdd, Address: "erin/1"}}); err != nil {
		t.Fatal(err)
	}
	all := []*device{alice, bob, carol, dave, erin}
	settle(t, 8, all...)
	want := []string{"alice/1", "bob/1", "carol/1", "erin/1"}
	for _, d := range []*device{alice, bob, carol, erin} {
		if gen, ms := d.members(g); gen != 4 || !reflect.DeepEqual(ms, want) {
			t.Fatalf("%s sees generation %d %v, want 4 %v", d.addr, gen, ms, want)
		}
	}
	info, err = erin.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Roster.IsAdmin("carol/1") {
		t.Fatalf("erin's roster %v: carol is an admin", info.Roster.Members)
	}
}
