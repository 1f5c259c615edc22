package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// groupAct makes an action of d in group g and pumps it.
func (d *device) groupAct(g wire.GroupID, r engine.ActionRequest) wire.LogicalID {
	d.w.t.Helper()
	r.Group = &g
	id, err := d.c.Act(d.w.ctx, r)
	if err != nil {
		d.w.t.Fatalf("%s: %s of %x in the group: %v", d.addr, engine.ActionName(r.Content), r.Target[:4], err)
	}
	if _, err := d.c.Pump(d.w.ctx); err != nil {
		d.w.t.Fatal(err)
	}
	return id
}

// groupEntry returns d's group entry of message id, failing when the
// group's history does not show it.
func (d *device) groupEntry(g wire.GroupID, id wire.LogicalID) engine.GroupEntry {
	d.w.t.Helper()
	h, err := d.c.GroupHistory(d.w.ctx, g, 0, 1000)
	if err != nil {
		d.w.t.Fatal(err)
	}
	for _, e := range h {
		if e.ID == id {
			return e
		}
	}
	d.w.t.Fatalf("%s's group shows no message %x", d.addr, id[:4])
	return engine.GroupEntry{}
}

func groupReactionsOf(e engine.GroupEntry) []string {
	var out []string
	for _, r := range e.Reactions {
		out = append(out, r.From.String()+" "+r.Emoji)
	}
	slices.Sort(out)
	return out
}

// actionTrio is alice, bob and carol in a group, committing on arrival,
// with one message of alice's that everyone has.
func actionTrio(t *testing.T) (w *world, g wire.GroupID, alice, bob, carol *device, m wire.LogicalID) {
	w = newWorld(t)
	alice, bob, carol = w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	for _, d := range []*device{alice, bob, carol} {
		d.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	}
	info, _, err := alice.c.CreateGroup(w.ctx, "trio", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settleGroup(t, 8, alice, bob, carol)
	sent, err := alice.c.SendGroup(w.ctx, info.ID, []byte("lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	settleGroup(t, 8, alice, bob, carol)
	return w, info.ID, alice, bob, carol, sent.ID
}

// settleGroup is settle with a retry of what stays pending after each
// round: two members that never talked start their sessions at once, and
// the loser's pending lanes go again on the winner's (as the loop's retry
// does).
func settleGroup(t *testing.T, rounds int, ds ...*device) {
	t.Helper()
	for range rounds {
		busy := 0
		for _, d := range ds {
			d.sync()
			busy += d.commitAll()
		}
		for _, d := range ds {
			for _, peer := range ds {
				if peer != d && d.pendingOut() > 0 {
					d.retry(peer)
				}
			}
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

// sameEntry checks that every device shows message m of group g with body,
// edit number, tombstone and reactions.
func sameEntry(t *testing.T, g wire.GroupID, m wire.LogicalID, body string, edits uint32, deleted bool, reactions []string, ds ...*device) {
	t.Helper()
	for _, d := range ds {
		e := d.groupEntry(g, m)
		if string(e.Body) != body || e.Edits != edits || e.Deleted != deleted || !slices.Equal(groupReactionsOf(e), reactions) {
			t.Fatalf("%s shows %q edit %d deleted %v reactions %v; want %q edit %d deleted %v reactions %v",
				d.addr, e.Body, e.Edits, e.Deleted, groupReactionsOf(e), body, edits, deleted, reactions)
		}
	}
}

// TestGroupActionOrdering: the ordering rules of actions in a group, each
// on real profiles and the in-process relay, the envelopes reordered by
// dropping one and retrying it.
func TestGroupActionOrdering(t *testing.T) {
	t.Run("every action reaches every member once", func(t *testing.T) {
		w, g, alice, bob, carol, m := actionTrio(t)
		bob.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: heart})
		r := carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("see you")})
		alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		bob.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: heart}) // replaces his
		settleGroup(t, 8, alice, bob, carol)
		sameEntry(t, g, m, "lunch at one", 1, false, []string{"bob/1 " + heart, "carol/1 " + heart}, alice, bob, carol)
		for _, d := range []*device{alice, bob, carol} {
			e := d.groupEntry(g, r)
			if string(e.Body) != "see you" || e.ReplyTo == nil || *e.ReplyTo != m {
				t.Fatalf("%s shows the reply as %q quoting %v", d.addr, e.Body, e.ReplyTo)
			}
			if n := len(d.groupHistory(g)); n != 2 {
				t.Fatalf("%s's group shows %d entries, want the message and the reply", d.addr, n)
			}
			vs, err := d.c.GroupMessageVersions(w.ctx, g, alice.addr, m)
			if err != nil || len(vs) != 1 || string(vs[0].Body) != "lunch at noon" {
				t.Fatalf("%s keeps versions %+v (%v)", d.addr, vs, err)
			}
		}
		alice.groupAct(g, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
		settleGroup(t, 8, alice, bob, carol)
		// A tombstone keeps no edit: every member shows the same.
		sameEntry(t, g, m, "", 0, true, nil, alice, bob, carol)
	})

	t.Run("action before its target", func(t *testing.T) {
		w, g, alice, bob, carol, _ := actionTrio(t)
		// Alice's message to bob is lost; carol reacts, and her reaction
		// reaches bob first.
		w.net.DropNext(alice.addr, bob.addr, 1)
		sent, err := alice.c.SendGroup(w.ctx, g, []byte("late"))
		if err != nil {
			t.Fatal(err)
		}
		carol.sync()
		carol.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: sent.ID, Emoji: thumbs})
		bob.sync()
		if bob.pendingIn() != 1 {
			t.Fatalf("bob holds %d pending, want carol's reaction waiting", bob.pendingIn())
		}
		alice.retry(bob)
		if got := kinds(bob.sync()); !slices.Contains(got, "applied reaction") {
			t.Fatalf("bob's round: %v, want the reaction applied after its target", got)
		}
		settleGroup(t, 8, alice, bob, carol)
		sameEntry(t, g, sent.ID, "late", 0, false, []string{"carol/1 " + thumbs}, alice, bob, carol)
	})

	t.Run("target discarded", func(t *testing.T) {
		w, g, alice, bob, carol, _ := actionTrio(t)
		bob.c.SetPolicy(engine.Policy{Commit: engine.CommitManual})
		w.net.DropNext(alice.addr, bob.addr, 1)
		sent, err := alice.c.SendGroup(w.ctx, g, []byte("spam"))
		if err != nil {
			t.Fatal(err)
		}
		edit := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: sent.ID, Text: []byte("more spam")})
		bob.sync()
		alice.retry(bob)
		bob.sync()
		if _, err := bob.c.Discard(w.ctx, alice.addr, sent.ID, engine.DiscardRejected); err != nil {
			t.Fatal(err)
		}
		if got := kinds(bob.sync()); !slices.Equal(got, []string{"action_discarded target_discarded"}) {
			t.Fatalf("bob's round: %v, want the edit discarded", got)
		}
		if f, err := bob.c.Finalized(w.ctx, alice.addr, edit); err != nil || f.Reason != engine.DiscardTargetDiscarded {
			t.Fatalf("the edit's record: %+v (%v)", f, err)
		}
		settleGroup(t, 8, alice, bob, carol)
	})

	t.Run("edit of a deleted message", func(t *testing.T) {
		w, g, alice, bob, carol, m := actionTrio(t)
		w.net.DropNext(alice.addr, bob.addr, 1)
		alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.groupAct(g, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
		bob.sync()
		alice.retry(bob)
		if got := kinds(bob.sync()); !slices.Contains(got, "action_discarded target_deleted") {
			t.Fatalf("bob's round with the late edit: %v", got)
		}
		settleGroup(t, 8, alice, bob, carol)
		sameEntry(t, g, m, "", 0, true, nil, alice, bob, carol)
		if _, err := alice.c.Act(w.ctx, engine.ActionRequest{Group: &g, Content: wire.ContentEdit, Target: m, Text: []byte("x")}); !isRefused(err, engine.DiscardTargetDeleted) {
			t.Fatalf("alice edits her deleted message: %v, want target_deleted", err)
		}
	})

	t.Run("two edits reordered", func(t *testing.T) {
		w, g, alice, bob, carol, m := actionTrio(t)
		w.net.DropNext(alice.addr, bob.addr, 1)
		alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at two")})
		bob.sync()
		alice.retry(bob)
		settleGroup(t, 8, alice, bob, carol)
		sameEntry(t, g, m, "lunch at two", 2, false, nil, alice, bob, carol)
		vs, err := bob.c.GroupMessageVersions(w.ctx, g, alice.addr, m)
		var bodies []string
		for _, v := range vs {
			bodies = append(bodies, string(v.Body))
		}
		if err != nil || !slices.Equal(bodies, []string{"lunch at noon", "lunch at one"}) {
			t.Fatalf("bob keeps versions %q (%v)", bodies, err)
		}
	})

	t.Run("edit and delete by a non-author", func(t *testing.T) {
		w, g, alice, bob, carol, m := actionTrio(t)
		for _, c := range []wire.ContentType{wire.ContentEdit, wire.ContentDelete} {
			r := engine.ActionRequest{Group: &g, Content: c, Target: m}
			if c == wire.ContentEdit {
				r.Text = []byte("mine now")
			}
			if _, err := bob.c.Act(w.ctx, r); !isRefused(err, engine.DiscardNotAuthor) {
				t.Fatalf("bob's %s of alice's message: %v, want not_author", engine.ActionName(c), err)
			}
		}
		// A hostile bob sends them all the same, to carol.
		_, gen := groupGeneration(t, bob, g)
		for i, a := range []wire.Action{
			{Content: wire.ContentEdit, Target: m, Edit: 1, Text: []byte("mine now")},
			{Content: wire.ContentDelete, Target: m},
		} {
			body, _ := wire.EncodeAction(a)
			frame, _ := wire.EncodeGroupMessage(wire.GroupMessage{ID: wire.LogicalID{0xee, byte(i)}, Group: g, Generation: gen, Content: a.Content, Body: body})
			if err := bob.c.SendRawFrame(w.ctx, carol.addr, frame); err != nil {
				t.Fatal(err)
			}
		}
		got := kinds(carol.sync())
		if n := len(slices.DeleteFunc(got, func(k string) bool { return k != "action_discarded not_author" })); n != 2 {
			t.Fatalf("carol's round: %v, want both discarded as not_author", kinds(carol.sync()))
		}
		settleGroup(t, 8, alice, bob, carol)
		sameEntry(t, g, m, "lunch at noon", 0, false, nil, alice, bob, carol)
	})

	t.Run("action of a non-member", func(t *testing.T) {
		w, g, alice, bob, carol, m := actionTrio(t)
		dave := w.device("dave/1")
		dave.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
		if _, err := dave.c.Act(w.ctx, engine.ActionRequest{Group: &g, Content: wire.ContentReaction, Target: m, Emoji: thumbs}); !errors.Is(err, engine.ErrUnknownGroup) && !errors.Is(err, engine.ErrNotMember) {
			t.Fatalf("dave reacts in a group he is not in: %v", err)
		}
		body, _ := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		frame, _ := wire.EncodeGroupMessage(wire.GroupMessage{ID: wire.LogicalID{0xdd}, Group: g, Generation: 1, Content: wire.ContentReaction, Body: body})
		if err := dave.c.SendRawFrame(w.ctx, carol.addr, frame); err != nil {
			t.Fatal(err)
		}
		res := carol.sync()
		if !hasError(res, engine.ErrNotMember) {
			t.Fatalf("carol's round: %v, want dave refused as not a member", kinds(res))
		}
		settleGroup(t, 8, alice, bob, carol)
		sameEntry(t, g, m, "lunch at noon", 0, false, nil, alice, bob, carol)
	})
}

// groupGeneration returns d's merged roster generation of group g.
func groupGeneration(t *testing.T, d *device, g wire.GroupID) (engine.GroupInfo, uint64) {
	t.Helper()
	info, err := d.c.Group(d.w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	return info, info.Roster.Generation
}
