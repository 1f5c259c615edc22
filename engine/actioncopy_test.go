package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestOwnActionsReachSibling: bob/1 reacts to alice's message, replies to
// it, edits and then deletes its own message to alice. Each action goes
// to alice and, as a sent copy of an action (frame kind 17), to bob/2,
// which commits it as it arrives under the manual policy and tells
// nobody: bob/2 shows the reaction as bob's on alice's message, the reply
// as an own reply quoting her message, the edit and then the tombstone on
// bob/1's message. Before the fix bob/2 saw none of them.
func TestOwnActionsReachSibling(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2 := twoDeviceBob(t)
	question := alice.enqueue(bob, "lunch?")
	own := bob.enqueue(alice, "from the phone")
	settle(t, 8, alice, bob, bob2)

	bob.act(alice, engine.ActionRequest{Content: wire.ContentReaction, Target: question, Emoji: thumbs})
	reply := bob.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: question, Text: []byte("yes, at noon")})
	bob.act(alice, engine.ActionRequest{Content: wire.ContentEdit, Target: own, Text: []byte("from the phone, edited")})
	res := bob2.sync()
	if n := count(res, engine.ResultSentCopy); n != 3 {
		t.Fatalf("bob/2's round: %d sent copies, want 3 (reaction, reply, edit): %v", n, kinds(res))
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 holds %d of bob/1's copies, want none (committed on arrival)", n)
	}
	if n := bob2.pendingOut(); n != 0 {
		t.Fatalf("bob/2 holds %d lanes after bob/1's copies, want none (nobody is told)", n)
	}
	if got, want := reactionsOf(bob2.entry(alice, question)), []string{"bob/1 " + thumbs}; !slices.Equal(got, want) {
		t.Fatalf("bob/2's entry of alice's message shows reactions %v, want %v", got, want)
	}
	e := bob2.entry(alice, reply)
	if e.Direction != engine.DirectionOut || e.State != engine.SentCopied || string(e.Body) != "yes, at noon" || e.ReplyTo == nil || *e.ReplyTo != question {
		t.Fatalf("bob/2's entry of bob/1's reply: %+v, want an own reply quoting alice's message", e)
	}
	if e := bob2.entry(alice, own); string(e.Body) != "from the phone, edited" || e.Edits != 1 {
		t.Fatalf("bob/2's entry of bob/1's message: %q, %d edits; want bob/1's edit", e.Body, e.Edits)
	}

	bob.act(alice, engine.ActionRequest{Content: wire.ContentDelete, Target: own})
	bob2.sync()
	if e := bob2.entry(alice, own); !e.Deleted || len(e.Body) != 0 {
		t.Fatalf("bob/2's entry of bob/1's deleted message: %+v, want a tombstone", e)
	}
	settle(t, 8, alice, bob, bob2)
	if e := alice.entry(bob, own); !e.Deleted {
		t.Fatalf("alice's entry of bob's deleted message: %+v, want a tombstone", e)
	}
}

// TestSiblingCopyWaitsForItsTarget: bob/1 commits alice's message and
// reacts to it at once; bob/2 gets the message, bob/1's decision and the
// reaction's copy in one round, and the copy waits as a received action
// waits for its target, then is committed (whatever the policy) once the
// target is. Nothing stays pending.
func TestSiblingCopyWaitsForItsTarget(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "dinner?")
	bob.sync()
	if _, err := bob.c.Commit(bob.w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	bob.act(alice, engine.ActionRequest{Content: wire.ContentReaction, Target: id, Emoji: heart})
	res := bob2.sync()
	if n := bob2.pendingIn(); n != 1 || count(res, engine.ResultSentCopy) != 1 {
		t.Fatalf("bob/2's first round: %v, %d pending; want the copy taken and waiting for its target", kinds(res), n)
	}
	for range 3 {
		bob2.sync()
		bob.sync()
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 holds %d messages, want none (alice's decided by bob/1, the copy committed)", n)
	}
	if got, want := reactionsOf(bob2.entry(alice, id)), []string{"bob/1 " + heart}; !slices.Equal(got, want) {
		t.Fatalf("bob/2's entry of alice's message shows reactions %v, want %v", got, want)
	}
}

// TestSiblingCopyOfAnotherDevicesEditIsRefused: an edit's copy applies
// only to a message its sending device sent. bob/2's own message to
// alice is not bob/1's to edit: a copy naming it (as a compromised or
// buggy bob/1 might send) is discarded not_author on bob/2 and changes
// nothing.
func TestSiblingCopyOfAnotherDevicesEditIsRefused(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2 := twoDeviceBob(t)
	mine := bob2.enqueue(alice, "from the laptop")
	theirs := alice.enqueue(bob, "from alice")
	settle(t, 8, alice, bob, bob2)
	var id wire.LogicalID
	id[0] = 7
	for i, target := range []wire.LogicalID{mine, theirs} {
		id[1] = byte(i)
		cp, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: id, To: alice.addr.String(),
			Action: wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1, Text: []byte("forged")}})
		if err != nil {
			t.Fatal(err)
		}
		bob.raw(bob2, cp)
	}
	for range 3 {
		bob2.sync()
	}
	if e := bob2.entry(alice, mine); string(e.Body) != "from the laptop" || e.Edits != 0 {
		t.Fatalf("bob/2's own message after bob/1's edit copy: %q, %d edits; want it unchanged", e.Body, e.Edits)
	}
	if e := bob2.entry(alice, theirs); string(e.Body) != "from alice" || e.Edits != 0 {
		t.Fatalf("alice's message on bob/2 after bob/1's edit copy: %q, %d edits; want it unchanged", e.Body, e.Edits)
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 holds %d messages, want the copies discarded", n)
	}
}

// TestForgedActionCopyIsRefused: a sent copy of an action from anyone but
// a listed sibling (alice, the person bob talks to, or bob/9, a device
// under bob's name that his account never listed) is dropped with
// ErrNotOwnDevice: no reaction, no entry, nothing pending.
func TestForgedActionCopyIsRefused(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "hello")
	settle(t, 8, alice, bob, bob2)
	mallory := w.device("bob/9")
	for i, from := range []*device{alice, mallory} {
		var cid wire.LogicalID
		cid[0], cid[1] = 9, byte(i)
		cp, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: cid, To: alice.addr.String(),
			Action: wire.Action{Content: wire.ContentReaction, Target: id, Emoji: thumbs, Order: 1}})
		if err != nil {
			t.Fatal(err)
		}
		from.raw(bob2, cp)
		res := bob2.sync()
		if !hasError(res, engine.ErrNotOwnDevice) || count(res, engine.ResultSentCopy) != 0 {
			t.Fatalf("bob/2 took an action copy from %s: %v", from.addr, res)
		}
	}
	if got := reactionsOf(bob2.entry(alice, id)); len(got) != 0 {
		t.Fatalf("bob/2's entry of alice's message shows reactions %v after forged copies, want none", got)
	}
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 holds %d messages after forged copies, want none", n)
	}
}

// TestActionCopyIsNotAdopted: alice/2 replies to bob and the relay loses
// the lane to bob; alice/1 holds the reply's sent copy. Removing alice/2
// adopts her text messages, not her actions: alice/1 keeps the reply as a
// copy (no lane, never resent as a plain text) and bob gets nothing.
// Before the store left action copies out, the reply went to bob again
// as a text without its quote.
func TestActionCopyIsNotAdopted(t *testing.T) {
	oneGoroutine(t)
	w, alice, alice2, bob := adoptionWorld(t)
	first := alice2.enqueue(bob, "from the phone")
	settle(t, 8, alice, alice2, bob)
	w.net.DropNext(alice2.addr, bob.addr, 1)
	reply := alice2.act(bob, engine.ActionRequest{Content: wire.ContentReply, Target: first, Text: []byte("and a reply")})
	alice.sync()
	if e := ownEntry(t, alice, bob.addr, reply); e.State != engine.SentCopied || e.ReplyTo == nil || *e.ReplyTo != first {
		t.Fatalf("alice/1's entry of alice/2's reply: %+v, want a copied reply", e)
	}
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if got := lanesOf(t, alice, bob.addr, reply); len(got) != 0 {
		t.Fatalf("alice/1's lanes of alice/2's reply after the removal: %v, want none (actions are not adopted)", got)
	}
	if e := ownEntry(t, alice, bob.addr, reply); e.State != engine.SentCopied {
		t.Fatalf("alice/1's entry of the reply is %v, want still copied", e.State)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := resultsFor(bob.sync(), alice.addr, reply); len(got) != 0 {
		t.Fatalf("bob's receive after the removal: %v, want nothing of the reply", got)
	}
}
