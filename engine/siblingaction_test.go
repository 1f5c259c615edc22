package engine_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
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

// TestSiblingsGroupActionIsCommittedOnArrival: bob/1's reaction to and
// edit of its own group message reach bob/2 under the manual policy and
// are committed there as they arrive, as bob/1's text is: this person's
// own, nobody's decision, nothing told back. bob/1's reaction to alice's
// message, which bob/2 has not committed yet, waits there for its target;
// once bob/1's commit of that message is applied on bob/2, the hold's
// pass commits the reaction without asking. A file from bob/1 still waits
// for its fetch. Before the fix each action waited for bob on bob/2.
func TestSiblingsGroupActionIsCommittedOnArrival(t *testing.T) {
	w, alice, bob, bob2 := twoDeviceBob(t)
	info, _, err := bob.c.CreateGroup(w.ctx, "bobs", []engine.Address{alice.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob, bob2)
	sent, err := bob.c.SendGroup(w.ctx, g, []byte("plan"))
	if err != nil {
		t.Fatal(err)
	}
	bob2.sync() // the target first: the actions then apply as they arrive
	for _, a := range []engine.ActionRequest{
		{Group: &g, Content: wire.ContentReaction, Target: sent.ID, Emoji: thumbs},
		{Group: &g, Content: wire.ContentEdit, Target: sent.ID, Text: []byte("plan b")},
	} {
		if _, err := bob.c.Act(w.ctx, a); err != nil {
			t.Fatalf("bob/1's %s: %v", engine.ActionName(a.Content), err)
		}
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := kinds(bob2.sync()); slices.Contains(got, "applied reaction") || slices.Contains(got, "applied edit") {
		t.Fatalf("bob/2's round: %v, want bob/1's actions committed by their receive, not left for the hold's pass", got)
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 has %d of bob/1's group messages waiting, want none (bob's own)", n)
	}
	if e := bob2.groupEntry(g, sent.ID); string(e.Body) != "plan b" || e.Edits != 1 || len(e.Reactions) != 1 || e.Reactions[0].From != bob.addr {
		t.Fatalf("bob/2's entry of bob/1's message: %q, %d edits, reactions %v; want bob/1's edit and reaction applied", e.Body, e.Edits, e.Reactions)
	}
	if n := bob2.pendingOut(); n != 0 {
		t.Fatalf("bob/2 holds %d lanes after bob/1's own actions, want none (nothing is told)", n)
	}

	from, err := alice.c.SendGroup(w.ctx, g, []byte("lunch?"))
	if err != nil {
		t.Fatal(err)
	}
	bob.sync()
	bob2.sync()
	if _, err := bob.c.Commit(w.ctx, alice.addr, from.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Act(w.ctx, engine.ActionRequest{Group: &g, Content: wire.ContentReaction, Target: from.ID, Emoji: thumbs}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		bob2.sync()
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 has %d messages waiting after bob/1 committed alice's and reacted, want none", n)
	}
	if e := bob2.groupEntry(g, from.ID); len(e.Reactions) != 1 || e.Reactions[0].From != bob.addr {
		t.Fatalf("bob/2's entry of alice's message: reactions %v, want bob/1's", e.Reactions)
	}
}

// TestLinkedHistoryIsItsAuthorsToEdit: a message alice/1 sent and bob
// acknowledged before alice linked alice/2 comes to alice/2 in the
// link's history, acknowledged. alice/1 sent it, so only alice/1 edits or
// deletes it: alice/2's edit and delete are refused not_author before
// anything is stored. Before the fix alice/2's edit was stored and sent,
// and bob, who finds no message of alice/2 under that ID, held it.
func TestLinkedHistoryIsItsAuthorsToEdit(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := alice.enqueue(bob, "sent before the link")
	settle(t, 5, alice, bob)
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	alice2, archived := w.linkWithHistory(alice, all, all)
	if !archived {
		t.Fatal("the link carried no history")
	}
	before := alice2.pendingOut()
	for _, c := range []wire.ContentType{wire.ContentEdit, wire.ContentDelete} {
		_, err := alice2.c.Act(w.ctx, engine.ActionRequest{Peer: bob.addr, Content: c, Target: id, Text: []byte("changed on the laptop")})
		if !isRefused(err, engine.DiscardNotAuthor) {
			t.Fatalf("%s's %s of %s's message from before the link: %v, want refused not_author", alice2.addr, engine.ActionName(c), alice.addr, err)
		}
	}
	if n := alice2.pendingOut() - before; n != 0 {
		t.Fatalf("%s stored %d lanes for refused actions, want none", alice2.addr, n)
	}
	if _, err := alice.c.Act(w.ctx, engine.ActionRequest{Peer: bob.addr, Content: wire.ContentEdit, Target: id, Text: []byte("changed on the phone")}); err != nil {
		t.Fatalf("%s edits its own message: %v", alice.addr, err)
	}
}
