package engine_test

import (
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// firstAttempt returns the envelope type of the first attempt of message
// id to peer.
func firstAttempt(t *testing.T, d *device, peer *device, id wire.LogicalID) wire.EnvelopeType {
	t.Helper()
	as, err := d.c.Attempts(d.w.ctx, peer.addr, id)
	if err != nil || len(as) == 0 {
		t.Fatalf("%s's attempts of %x to %s: %v, %v", d.addr, id[:4], peer.addr, as, err)
	}
	return as[0].Type
}

// TestGroupChainEndToEnd: in a group of four, the first message goes
// pairwise with the sender's chain announced to every member; once they
// acknowledged it, the next goes by the chain (one envelope of type 4 per
// member, the same payload) and every lane ends acknowledged. A member
// removed reads nothing sent after its removal: the next generation has a
// new chain, never announced to it. Every member reads every message once.
func TestGroupChainEndToEnd(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol, dave, erin := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1"), w.device("erin/1")
	all := []*device{alice, bob, carol, dave, erin}
	members := []*device{bob, carol, dave, erin}
	info, _, err := alice.c.CreateGroup(w.ctx, "team", []engine.Address{bob.addr, carol.addr, dave.addr, erin.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	g := info.ID

	send := func(body string) wire.LogicalID {
		t.Helper()
		res, err := alice.c.SendGroup(w.ctx, g, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unsent) != 0 {
			t.Fatalf("SendGroup(%s) left %v unsent", body, res.Unsent)
		}
		return res.ID
	}
	one := send("one")
	for _, d := range members {
		if typ := firstAttempt(t, alice, d, one); typ == wire.EnvelopeChain {
			t.Fatalf("the first message went to %s by the chain, before its announcement", d.addr)
		}
	}
	settle(t, 5, all...)
	two := send("two")
	for _, d := range members {
		if typ := firstAttempt(t, alice, d, two); typ != wire.EnvelopeChain {
			t.Fatalf("the second message went to %s as %v, want by the chain", d.addr, typ)
		}
	}
	settle(t, 5, all...)
	for _, id := range []wire.LogicalID{one, two} {
		for _, d := range members {
			if got := alice.lanes(g, id); got[d.addr.String()] != "acknowledged" {
				t.Fatalf("lanes of %x: %v, want every one acknowledged", id[:4], got)
			}
		}
	}
	want := []string{"alice/1:one", "alice/1:two"}
	for _, d := range members {
		if got := d.groupHistory(g); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s's group history %v, want %v", d.addr, got, want)
		}
	}

	// Dave leaves the group (alice removes him): the chain rotates with
	// the generation.
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "dave/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	// A new generation, a new chain: the first message after the removal
	// goes pairwise, with the new chain's announcements; the next by it.
	three := send("three")
	if typ := firstAttempt(t, alice, bob, three); typ == wire.EnvelopeChain {
		t.Fatal("the first message of a new generation went by a chain not yet acknowledged")
	}
	settle(t, 5, all...)
	four := send("four")
	for _, d := range []*device{bob, carol, erin} {
		if typ := firstAttempt(t, alice, d, four); typ != wire.EnvelopeChain {
			t.Fatalf("the message after the new chain's announcement went to %s as %v, want by the chain", d.addr, typ)
		}
	}
	settle(t, 5, all...)
	if got := dave.groupHistory(g); !reflect.DeepEqual(got, want) {
		t.Fatalf("removed dave's group history %v, want only %v", got, want)
	}
	want = append(want, "alice/1:three", "alice/1:four")
	for _, d := range []*device{bob, carol, erin} {
		if got := d.groupHistory(g); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s's group history %v, want %v", d.addr, got, want)
		}
	}
	if got := alice.lanes(g, four); len(got) != 3 || got["bob/1"] != "acknowledged" || got["carol/1"] != "acknowledged" || got["erin/1"] != "acknowledged" {
		t.Fatalf("lanes of the last message %v, want bob, carol and erin acknowledged", got)
	}
}
