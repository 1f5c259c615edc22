package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestSiblingsMessageIsItsAuthorsToEdit: the author of an edit or a delete
// is the device that sends it. bob/2 holds bob/1's message to alice as a
// sent copy and bob/1's group message as bob's own (Own, Sibling); its
// edit or delete of them is refused not_author before anything is
// stored, one to one as in the group, and bob/1 edits its own. Before the fix bob/2 stored and sent the one-to-one edit, which
// alice's device, finding no message of bob/2's under that ID, would hold
// for ActionHold and then discard.
func TestSiblingsMessageIsItsAuthorsToEdit(t *testing.T) {
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := bob.enqueue(alice, "from the phone")
	bob2.sync()
	for _, c := range []wire.ContentType{wire.ContentEdit, wire.ContentDelete} {
		_, err := bob2.c.Act(w.ctx, engine.ActionRequest{Peer: alice.addr, Content: c, Target: id, Text: []byte("changed on the laptop")})
		if !isRefused(err, engine.DiscardNotAuthor) {
			t.Fatalf("bob/2's %s of bob/1's message: %v, want refused not_author", engine.ActionName(c), err)
		}
	}
	if _, err := bob.c.Act(w.ctx, engine.ActionRequest{Peer: alice.addr, Content: wire.ContentEdit, Target: id, Text: []byte("changed on the phone")}); err != nil {
		t.Fatalf("bob/1 edits its own message: %v", err)
	}

	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 6, alice, bob, bob2)
	sent, err := bob.c.SendGroup(w.ctx, info.ID, []byte("group note"))
	if err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if e := bob2.groupEntry(info.ID, sent.ID); !e.Own || !e.Sibling {
		t.Fatalf("bob/2's entry of bob/1's group message: %+v, want Own and Sibling", e)
	}
	if e := bob.groupEntry(info.ID, sent.ID); !e.Own || e.Sibling || len(e.Lanes) == 0 {
		t.Fatalf("bob/1's entry of its group message: %+v, want Own, not Sibling, with lanes", e)
	}
	g := info.ID
	for _, c := range []wire.ContentType{wire.ContentEdit, wire.ContentDelete} {
		_, err := bob2.c.Act(w.ctx, engine.ActionRequest{Group: &g, Content: c, Target: sent.ID, Text: []byte("changed on the laptop")})
		if !isRefused(err, engine.DiscardNotAuthor) {
			t.Fatalf("bob/2's group %s of bob/1's message: %v, want refused not_author", engine.ActionName(c), err)
		}
	}
}
