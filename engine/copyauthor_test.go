package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingCopyAuthorIsTheEntrys: a compromised bob/3 learns the ID X
// of a message to alice (bob/1's, which bob/3 gets a sent copy of, or
// bob/2's own) and gets bob/2 to hold a committed finalized record of
// (bob/3, X) somewhere else: a sent copy of ID X to carol (a decoy: no
// own entry of that ID in carol's conversation, so it is taken), or a
// group message of ID X. bob/3 then sends an edit copy and a delete copy
// of X to alice. Neither applies (not_author): the entry of X in alice's
// conversation names bob/1 as the device its copy came from, or none
// (bob/2's own). Before the fix the author came from Seen(bob/3, X),
// which does not look at the conversation: bob/3's record of the decoy
// made it the author of bob/1's message, and of bob/2's own.
func TestSiblingCopyAuthorIsTheEntrys(t *testing.T) {
	oneGoroutine(t)
	for _, tc := range []struct {
		name  string
		own   bool // X is bob/2's own message, not bob/1's
		group bool // bob/3's record is a group message, not a decoy copy
	}{
		{name: "bob/1's message, decoy copy to carol"},
		{name: "bob/2's own message, decoy copy to carol", own: true},
		{name: "bob/1's message, group message", group: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, alice, bob, bob2, bob3 := threeDeviceBob(t)
			author := bob
			if tc.own {
				author = bob2
			}
			x := author.enqueue(alice, "genuine")
			settle(t, 8, alice, bob, bob2, bob3)
			if e := bob2.entry(alice, x); string(e.Body) != "genuine" {
				t.Fatalf("bob/2's entry of %s's message: %q", author.addr, e.Body)
			}
			if tc.group {
				info, _, err := bob3.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr})
				if err != nil {
					t.Fatal(err)
				}
				settle(t, 8, alice, bob, bob2, bob3)
				frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: x, Group: info.ID, Generation: 1, Content: wire.ContentText, Body: []byte("group decoy")})
				if err != nil {
					t.Fatal(err)
				}
				bob3.raw(bob2, frame)
			} else {
				bob3.raw(bob2, sentCopy(t, x, engine.MustParseAddress("carol/1"), "decoy"))
			}
			bob2.sync()
			bob2.commitAll()
			if s, err := bob2.st.Seen(w.ctx, bob3.addr, x); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
				t.Fatalf("bob/2's record of bob/3's %x: %+v, %v; want the decoy committed (the attack's premise)", x[:4], s, err)
			}
			edit, del := wire.LogicalID{0x28, 1}, wire.LogicalID{0x28, 2}
			bob3.raw(bob2, sentActionCopy(t, edit, alice.addr, wire.Action{Content: wire.ContentEdit, Target: x, Edit: 1, Text: []byte("edited by bob/3")}))
			bob3.raw(bob2, sentActionCopy(t, del, alice.addr, wire.Action{Content: wire.ContentDelete, Target: x}))
			for range 3 {
				bob2.sync()
			}
			e := bob2.entry(alice, x)
			if string(e.Body) != "genuine" || e.Edits != 0 || e.Deleted {
				t.Fatalf("bob/2's entry of %s's message: %q, %d edits, deleted %v; want it unchanged", author.addr, e.Body, e.Edits, e.Deleted)
			}
		})
	}
}

// TestAdoptionTakesOnlyTheRemovedDevicesEntries: bob/3 sends bob/2 a
// decoy sent copy of ID X to carol, X being bob/1's message to alice.
// Removing bob/3 adopts its copy to carol, never bob/1's entry in alice's
// conversation; removing bob/1 adopts that entry, never bob/3's. Before
// the fix the adoption joined the finalized record to the history on the
// ID alone: each removal read both entries as the removed device's.
func TestAdoptionTakesOnlyTheRemovedDevicesEntries(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, bob3 := threeDeviceBob(t)
	x := bob.enqueue(alice, "genuine")
	settle(t, 8, alice, bob, bob2, bob3)
	carol := engine.MustParseAddress("carol/1")
	bob3.raw(bob2, sentCopy(t, x, carol, "decoy"))
	bob2.sync()
	for _, tc := range []struct {
		removed *device
		want    engine.Address
	}{{bob3, carol}, {bob, alice.addr}} {
		copies, err := bob2.st.SentCopiesFrom(w.ctx, tc.removed.addr, w.clock.Now().Add(-engine.MaxAdoptAge), engine.MaxAdoptedMessages)
		if err != nil {
			t.Fatal(err)
		}
		if len(copies) != 1 || copies[0].ID != x || copies[0].Conversation != tc.want {
			var got []engine.Address
			for _, c := range copies {
				got = append(got, c.Conversation)
			}
			t.Fatalf("sent copies of %s on bob/2: %v; want its entry with %s alone", tc.removed.addr, got, tc.want)
		}
	}
}
