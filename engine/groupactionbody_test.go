package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestCatchUpCarriesAGroupAction: alice's group reaction is pending on
// bob/1 and bob/2; bob commits it on bob/2, whose decision to bob/1 the
// relay keeps back; a minute later bob/1 links bob/3 with all its history,
// so the link's archive carries the reaction pending, and bob discards it
// on bob/3. bob/2's catch-up of bob/3 carries the reaction with its action
// body (kind 18), kept with its finalized record, and bob/3 takes its
// discard back and shows the reaction. Before the change a group action's
// record kept no action body: the catch-up told bob/3 a plain commit,
// which takes no action back, and bob/3's discard stood for good.
func TestCatchUpCarriesAGroupAction(t *testing.T) {
	oneGoroutine(t)
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	w, alice, bob, bob2, g, m, r := groupActionBobIn(t, blobWorld(t))
	w.net.Hold(bob.addr)
	if _, err := bob2.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if d, ok, err := bob2.st.MadeDecision(w.ctx, alice.addr, r); err != nil || !ok || d.ActionBody == nil || d.Content != wire.ContentReaction {
		t.Fatalf("bob/2's decision on the reaction: %+v, %v, %v; want its action body kept", d, ok, err)
	}
	w.clock.Advance(time.Minute)
	bob3, archived := w.linkWithHistory(bob, all, all)
	if !archived {
		t.Fatal("the link carried no archive")
	}
	if _, err := bob3.c.Discard(w.ctx, alice.addr, r, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/3 discards the reaction the archive carried pending: %v", err)
	}
	w.net.Release(bob.addr)
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
	}
	settleDevices(t, bob, bob2, bob3)
	if s, err := bob3.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/3's record of the reaction: %+v, %v; want committed (bob committed it on bob/2)", s, err)
	}
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2, bob3} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
}

// TestAnswerCarriesAGroupAction: bob commits alice's group reaction on
// bob/1, whose decision to bob/2 is lost and then abandoned (it told bob/2
// nothing), and discards it on bob/2, which tells bob/1. bob/1 answers the
// discard with its commit, carrying the action body (kind 18), and bob/2
// takes its discard back and shows the reaction. Before the change the
// answer was a plain commit, which takes no action back.
func TestAnswerCarriesAGroupAction(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m, r := groupActionBob(t)
	w.net.DropNext(bob.addr, bob2.addr, 1)
	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	out, err := bob.c.PendingOutbound(w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	abandoned := 0
	for _, o := range out {
		if o.Recipient == bob2.addr {
			if err := bob.c.Abandon(w.ctx, bob2.addr, o.ID); err != nil {
				t.Fatal(err)
			}
			abandoned++
		}
	}
	if abandoned != 1 {
		t.Fatalf("bob/1 abandoned %d lanes to bob/2, want its decision on the reaction", abandoned)
	}
	if _, err := bob2.c.Discard(w.ctx, alice.addr, r, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if told, err := bob.st.ToldOf(w.ctx, bob2.addr, alice.addr, r); err != nil || !told {
		t.Fatalf("bob/1 answered bob/2's discard: %v, %v; want its answer", told, err)
	}
	settleSiblings(t, bob, bob2)
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the reaction: %+v, %v; want committed (bob committed it on bob/1)", s, err)
	}
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
}

// TestGroupDeleteForgetsActionBodies: in a group committing on arrival,
// alice replies to her text, carol reacts to the reply and alice edits
// it; bob's finalized records keep the three action bodies for a
// catch-up. alice then deletes the reply: the records of the reply and of
// carol's reaction and alice's edit of it keep no body any more (the
// catch-up and an answer must not send what the delete took out), while
// the delete's own and a reaction to another message keep theirs.
func TestGroupDeleteForgetsActionBodies(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, bob, carol, m := actionTrio(t)
	x := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("or one")})
	settleGroup(t, 8, alice, bob, carol)
	r := carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: x, Emoji: thumbs})
	other := carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: heart})
	e := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: x, Text: []byte("or two")})
	settleGroup(t, 8, alice, bob, carol)
	body := func(from *device, id wire.LogicalID) []byte {
		t.Helper()
		d, ok, err := bob.st.MadeDecision(w.ctx, from.addr, id)
		if err != nil || !ok || d.Outcome != engine.OutcomeCommitted {
			t.Fatalf("bob's decision on %x from %s: %+v, %v, %v; want a commit", id[:4], from.addr, d, ok, err)
		}
		return d.ActionBody
	}
	kept := []struct {
		name string
		from *device
		id   wire.LogicalID
	}{{"alice's reply", alice, x}, {"carol's reaction to it", carol, r}, {"alice's edit of it", alice, e}, {"carol's reaction to the text", carol, other}}
	for _, k := range kept {
		if body(k.from, k.id) == nil {
			t.Fatalf("bob's record of %s keeps no action body before the delete", k.name)
		}
	}
	del := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentDelete, Target: x})
	settleGroup(t, 8, alice, bob, carol)
	if got := bob.groupEntry(g, x); !got.Deleted {
		t.Fatalf("bob's entry of the reply: %+v, want deleted", got)
	}
	for _, k := range kept[:3] {
		if b := body(k.from, k.id); b != nil {
			t.Errorf("bob's record of %s keeps its action body %q after the delete, want none", k.name, b)
		}
	}
	if body(carol, other) == nil {
		t.Errorf("bob's record of carol's reaction to the text lost its action body to a delete of the reply")
	}
	if body(alice, del) == nil {
		t.Errorf("bob's record of the delete keeps no action body")
	}
}
