package engine_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

const thumbs, heart = "\U0001F44D", "\u2764\ufe0f"

// act makes an action of d in the conversation with peer and hands it to
// the relay (Act stores it, Pump sends it).
func (d *device) act(peer *device, r engine.ActionRequest) wire.LogicalID {
	d.w.t.Helper()
	r.Peer = peer.addr
	id, err := d.c.Act(d.w.ctx, r)
	if err != nil {
		d.w.t.Fatalf("%s: %s of %x: %v", d.addr, engine.ActionName(r.Content), r.Target[:4], err)
	}
	if _, err := d.c.Pump(d.w.ctx); err != nil {
		d.w.t.Fatal(err)
	}
	return id
}

// entry returns d's history entry of message id with peer (either
// direction), failing when the conversation does not show it.
func (d *device) entry(peer *device, id wire.LogicalID) engine.HistoryEntry {
	d.w.t.Helper()
	h, err := d.c.History(d.w.ctx, peer.addr, 0, 1000)
	if err != nil {
		d.w.t.Fatal(err)
	}
	for _, e := range h {
		if e.ID == id {
			return e
		}
	}
	d.w.t.Fatalf("%s shows no message %x with %s", d.addr, id[:4], peer.addr)
	return engine.HistoryEntry{}
}

func reactionsOf(e engine.HistoryEntry) []string {
	var out []string
	for _, r := range e.Reactions {
		out = append(out, r.From.String()+" "+r.Emoji)
	}
	return out
}

// actionPair is alice and bob, bob committing on arrival, with one message
// from alice that bob committed.
func actionPair(t *testing.T) (w *world, alice, bob *device, m wire.LogicalID) {
	w = newWorld(t)
	alice, bob = w.device("alice/1"), w.device("bob/1")
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	alice.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	m = alice.send(bob, "lunch at noon")
	bob.sync()
	alice.sync()
	return w, alice, bob, m
}

// kinds lists the results of a round as "kind" or "kind reason".
func kinds(res []engine.ReceiveResult) []string {
	var out []string
	for _, r := range res {
		s := r.Kind.String()
		if r.Reason != engine.DiscardNone {
			s += " " + r.Reason.String()
		}
		if r.Action != nil {
			s += " " + engine.ActionName(r.Action.Content)
		}
		out = append(out, s)
	}
	return out
}

// TestActionOrdering: the ordering rules of actions, each on real profiles
// and the in-process relay, the envelopes reordered by dropping one and
// retrying it.
func TestActionOrdering(t *testing.T) {
	t.Run("reaction after its target", func(t *testing.T) {
		_, alice, bob, m := actionPair(t)
		r := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		if got := kinds(bob.sync()); !slices.Equal(got, []string{"delivery reaction"}) {
			t.Fatalf("bob's round: %v, want the reaction applied on arrival", got)
		}
		if got := reactionsOf(bob.entry(alice, m)); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Fatalf("bob shows %v", got)
		}
		if got := reactionsOf(alice.entry(bob, m)); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Fatalf("alice shows %v: her own reaction applies when stored", got)
		}
		alice.sync()
		if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
			t.Fatalf("pending: alice %d out, bob %d in; want none", alice.pendingOut(), bob.pendingIn())
		}
		// The reaction's own entry is not a message of the conversation.
		h, _ := bob.c.History(bob.w.ctx, alice.addr, 0, 100)
		for _, e := range h {
			if e.ID == r {
				t.Fatal("bob's conversation shows the reaction as a message")
			}
		}
	})

	t.Run("action before its target", func(t *testing.T) {
		w, alice, bob, _ := actionPair(t)
		w.net.DropNext(alice.addr, bob.addr, 1)
		m := alice.send(bob, "late")
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		bob.sync()
		if bob.pendingIn() != 1 {
			t.Fatalf("bob holds %d pending, want the reaction waiting", bob.pendingIn())
		}
		if _, err := bob.c.Commit(w.ctx, alice.addr, bob.pendingIDs()[0]); !errors.Is(err, engine.ErrTargetPending) {
			t.Fatalf("commit of the waiting reaction: %v, want ErrTargetPending", err)
		}
		alice.retry(bob)
		got := kinds(bob.sync())
		if !slices.Contains(got, "applied reaction") {
			t.Fatalf("bob's round: %v, want the reaction applied after its target", got)
		}
		if got := reactionsOf(bob.entry(alice, m)); !slices.Equal(got, []string{"alice/1 " + thumbs}) {
			t.Fatalf("bob shows %v", got)
		}
		alice.sync()
		if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
			t.Fatalf("pending: alice %d out, bob %d in; want none", alice.pendingOut(), bob.pendingIn())
		}
	})

	t.Run("target discarded", func(t *testing.T) {
		w, alice, bob, _ := actionPair(t)
		bob.c.SetPolicy(engine.Policy{Commit: engine.CommitManual})
		w.net.DropNext(alice.addr, bob.addr, 1)
		m := alice.send(bob, "spam")
		r := alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		bob.sync()
		alice.retry(bob)
		bob.sync()
		if _, err := bob.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
			t.Fatal(err)
		}
		if got := kinds(bob.sync()); !slices.Equal(got, []string{"action_discarded target_discarded"}) {
			t.Fatalf("bob's round: %v, want the reaction discarded", got)
		}
		alice.sync()
		if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
			t.Fatalf("pending: alice %d out, bob %d in; want none (the lane ends)", alice.pendingOut(), bob.pendingIn())
		}
		f, err := bob.c.Finalized(w.ctx, alice.addr, r)
		if err != nil || f.Reason != engine.DiscardTargetDiscarded {
			t.Fatalf("the reaction's record: %+v", f)
		}
	})

	t.Run("target never arrives", func(t *testing.T) {
		w, alice, bob, _ := actionPair(t)
		w.net.DropNext(alice.addr, bob.addr, 1)
		m := alice.send(bob, "lost")
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		bob.sync()
		w.clock.Advance(engine.ActionHold + time.Minute)
		if got := kinds(bob.sync()); !slices.Equal(got, []string{"action_discarded target_missing"}) {
			t.Fatalf("bob's round after the hold: %v", got)
		}
	})

	t.Run("edit of a deleted message", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		w.net.DropNext(alice.addr, bob.addr, 1)
		alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
		bob.sync()
		e := bob.entry(alice, m)
		if !e.Deleted || len(e.Body) != 0 {
			t.Fatalf("bob's entry after the delete: %+v", e)
		}
		alice.retry(bob)
		if got := kinds(bob.sync()); !slices.Contains(got, "action_discarded target_deleted") {
			t.Fatalf("bob's round with the late edit: %v", got)
		}
		if e := bob.entry(alice, m); !e.Deleted || len(e.Body) != 0 || e.Edits != 0 {
			t.Fatalf("the late edit changed the tombstone: %+v", e)
		}
		if _, err := alice.c.Act(w.ctx, engine.ActionRequest{Peer: bob.addr, Content: wire.ContentEdit, Target: m, Text: []byte("x")}); !isRefused(err, engine.DiscardTargetDeleted) {
			t.Fatalf("alice edits her deleted message: %v, want target_deleted", err)
		}
	})

	t.Run("edit after a delete in one batch", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		// The edit is lost, the delete arrives; alice's retry puts the
		// edit after the delete in bob's mailbox: one round takes both.
		w.net.DropNext(alice.addr, bob.addr, 1)
		edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
		alice.retry(bob)
		got := kinds(bob.sync())
		if !slices.Contains(got, "action_discarded target_deleted") {
			t.Fatalf("bob's round: %v, want the edit discarded as target_deleted", got)
		}
		if f, err := bob.c.Finalized(w.ctx, alice.addr, edit); err != nil || f.Outcome != engine.OutcomeDiscarded || f.Reason != engine.DiscardTargetDeleted {
			t.Fatalf("the edit's record: %+v (%v), want discarded target_deleted", f, err)
		}
		if e := bob.entry(alice, m); !e.Deleted || len(e.Body) != 0 || e.Edits != 0 {
			t.Fatalf("bob's entry: %+v, want the tombstone", e)
		}
		alice.sync()
		if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
			t.Fatalf("pending: alice %d out, bob %d in; want none", alice.pendingOut(), bob.pendingIn())
		}
	})

	t.Run("edit after a delete, both waiting", func(t *testing.T) {
		w, alice, bob, _ := actionPair(t)
		// The message and its edit are lost, the delete waits; the retry
		// brings the message and the edit: the hold's pass applies the
		// delete and must not apply the edit over its tombstone.
		w.net.DropNext(alice.addr, bob.addr, 2)
		m := alice.send(bob, "lunch at noon")
		edit := alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
		bob.sync()
		alice.retry(bob)
		bob.sync()
		if f, err := bob.c.Finalized(w.ctx, alice.addr, edit); err != nil || f.Outcome != engine.OutcomeDiscarded || f.Reason != engine.DiscardTargetDeleted {
			t.Fatalf("the edit's record: %+v (%v), want discarded target_deleted", f, err)
		}
		if e := bob.entry(alice, m); !e.Deleted || len(e.Body) != 0 || e.Edits != 0 {
			t.Fatalf("bob's entry: %+v, want the tombstone", e)
		}
	})

	t.Run("two edits reordered", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		w.net.DropNext(alice.addr, bob.addr, 1)
		alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at two")})
		bob.sync()
		alice.retry(bob)
		bob.sync()
		for _, d := range []*device{alice, bob} {
			peer := map[*device]*device{alice: bob, bob: alice}[d]
			e := d.entry(peer, m)
			if string(e.Body) != "lunch at two" || e.Edits != 2 {
				t.Fatalf("%s shows %q after edit %d, want the author's later edit", d.addr, e.Body, e.Edits)
			}
			vs, err := d.c.MessageVersions(w.ctx, peer.addr, e.Direction, m)
			var bodies []string
			for _, v := range vs {
				bodies = append(bodies, string(v.Body))
			}
			if err != nil || !slices.Equal(bodies, []string{"lunch at noon", "lunch at one"}) {
				t.Fatalf("%s keeps versions %q (%v)", d.addr, bodies, err)
			}
		}
	})

	t.Run("reaction replaced and removed", func(t *testing.T) {
		_, alice, bob, m := actionPair(t)
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		bob.act(alice, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: heart})
		bob.sync()
		alice.sync()
		want := []string{"bob/1 " + thumbs, "alice/1 " + heart}
		for _, d := range []*device{alice, bob} {
			peer := map[*device]*device{alice: bob, bob: alice}[d]
			got := reactionsOf(d.entry(peer, m))
			slices.Sort(got)
			if !slices.Equal(got, []string{"alice/1 " + heart, "bob/1 " + thumbs}) {
				t.Fatalf("%s shows %v, want %v", d.addr, got, want)
			}
		}
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Remove: true})
		bob.sync()
		if got := reactionsOf(bob.entry(alice, m)); !slices.Equal(got, []string{"bob/1 " + thumbs}) {
			t.Fatalf("bob shows %v after alice took hers back", got)
		}
	})

	t.Run("edit by a non-author", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		if _, err := bob.c.Act(w.ctx, engine.ActionRequest{Peer: alice.addr, Content: wire.ContentEdit, Target: m, Text: []byte("mine now")}); !isRefused(err, engine.DiscardNotAuthor) {
			t.Fatalf("bob edits alice's message: %v, want not_author", err)
		}
		// A hostile bob sends the edit all the same.
		body, _ := wire.EncodeAction(wire.Action{Content: wire.ContentEdit, Target: m, Edit: 1, Text: []byte("mine now")})
		frame, _ := wire.EncodeContentMessage(wire.ContentMessage{ID: wire.LogicalID{0xee}, Content: wire.ContentEdit, Body: body})
		if err := bob.c.SendRawFrame(w.ctx, alice.addr, frame); err != nil {
			t.Fatal(err)
		}
		if got := kinds(alice.sync()); !slices.Contains(got, "action_discarded not_author") {
			t.Fatalf("alice's round: %v, want the edit discarded as not_author", got)
		}
		if e := alice.entry(bob, m); string(e.Body) != "lunch at noon" || e.Edits != 0 {
			t.Fatalf("alice's message changed: %+v", e)
		}
	})

	t.Run("window passed", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		w.clock.Advance(engine.ActionWindow + time.Minute)
		if _, err := alice.c.Act(w.ctx, engine.ActionRequest{Peer: bob.addr, Content: wire.ContentDelete, Target: m}); !isRefused(err, engine.DiscardWindowPassed) {
			t.Fatalf("a delete a day later: %v, want window_passed", err)
		}
		// A reaction has no window.
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	})

	t.Run("replay changes nothing", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		w.net.DuplicateNext(alice.addr, bob.addr, 2)
		alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
		alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
		bob.sync()
		// And alice retries both before she hears the ACKs.
		alice.retry(bob)
		bob.sync()
		e := bob.entry(alice, m)
		if string(e.Body) != "lunch at one" || e.Edits != 1 || len(e.Reactions) != 1 {
			t.Fatalf("bob's entry after the replays: %q edit %d, %d reactions", e.Body, e.Edits, len(e.Reactions))
		}
		vs, _ := bob.c.MessageVersions(w.ctx, alice.addr, engine.DirectionIn, m)
		if len(vs) != 1 {
			t.Fatalf("bob keeps %d versions, want the original once", len(vs))
		}
		alice.sync()
		if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
			t.Fatalf("pending: alice %d out, bob %d in; want none", alice.pendingOut(), bob.pendingIn())
		}
	})

	t.Run("reply quotes its target", func(t *testing.T) {
		w, alice, bob, m := actionPair(t)
		r := bob.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("see you")})
		alice.sync()
		for _, d := range []*device{alice, bob} {
			peer := map[*device]*device{alice: bob, bob: alice}[d]
			e := d.entry(peer, r)
			if string(e.Body) != "see you" || e.ReplyTo == nil || *e.ReplyTo != m {
				t.Fatalf("%s shows the reply as %q quoting %v", d.addr, e.Body, e.ReplyTo)
			}
		}
		// A reply to an unknown message is still a message.
		bob.act(alice, engine.ActionRequest{Content: wire.ContentReply, Target: wire.LogicalID{1}, Text: []byte("?")})
		alice.sync()
		if alice.pendingIn() != 0 || len(alice.received(bob)) != 2 {
			t.Fatalf("alice: %d pending, received %q", alice.pendingIn(), alice.received(bob))
		}
		_ = w
	})
}

// TestHeldActionsAreBounded: a sender's actions waiting for targets that
// never come stay within MaxHeldActionsPerSender; the oldest go, and their
// sender's lanes end.
func TestHeldActionsAreBounded(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, _ := actionPair(t)
	n := engine.MaxHeldActionsPerSender + 3
	for i := range n {
		body, _ := wire.EncodeAction(wire.Action{Content: wire.ContentReaction, Target: wire.LogicalID{0xaa, byte(i)}, Emoji: thumbs})
		frame, _ := wire.EncodeContentMessage(wire.ContentMessage{ID: wire.LogicalID{0xbb, byte(i)}, Content: wire.ContentReaction, Body: body})
		if err := alice.c.SendRawFrame(w.ctx, bob.addr, frame); err != nil {
			t.Fatal(err)
		}
	}
	got := kinds(bob.sync())
	full := 0
	for _, k := range got {
		if k == "action_discarded hold_full" {
			full++
		}
	}
	if full != 3 || bob.pendingIn() != engine.MaxHeldActionsPerSender {
		t.Fatalf("%d discarded as hold_full, %d waiting; want 3 and %d", full, bob.pendingIn(), engine.MaxHeldActionsPerSender)
	}
	// A message from alice still goes through.
	alice.send(bob, "still here")
	bob.sync()
	if got := bob.received(alice); !slices.Contains(got, "still here") {
		t.Fatalf("bob received %q", got)
	}
}

// TestDecideAction: DecideAction's rules, in its order.
func TestDecideAction(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sent := engine.ActionTarget{Found: true, Direction: engine.DirectionIn, At: t0}
	for _, tt := range []struct {
		name    string
		t       engine.ActionTarget
		content wire.ContentType
		arrived time.Duration
		now     time.Duration
		want    engine.ActionVerdict
	}{
		{"reply to nothing", engine.ActionTarget{}, wire.ContentReply, 0, 0, engine.ActionVerdict{}},
		{"reaction to a reaction", engine.ActionTarget{Found: true, Action: wire.ContentReaction}, wire.ContentReaction, 0, 0, engine.ActionVerdict{Reason: engine.DiscardTargetMissing}},
		{"reaction to a reply", engine.ActionTarget{Found: true, Action: wire.ContentReply}, wire.ContentReaction, 0, 0, engine.ActionVerdict{}},
		{"target discarded", engine.ActionTarget{Discarded: true}, wire.ContentEdit, 0, 0, engine.ActionVerdict{Reason: engine.DiscardTargetDiscarded}},
		{"target pending", engine.ActionTarget{Pending: true}, wire.ContentReaction, 0, 0, engine.ActionVerdict{Hold: true}},
		{"target unknown, within the hold", engine.ActionTarget{}, wire.ContentDelete, 0, engine.ActionHold, engine.ActionVerdict{Hold: true}},
		{"target unknown, past the hold", engine.ActionTarget{}, wire.ContentDelete, 0, engine.ActionHold + 1, engine.ActionVerdict{Reason: engine.DiscardTargetMissing}},
		{"deleted", engine.ActionTarget{Found: true, Deleted: true, Direction: engine.DirectionIn}, wire.ContentReaction, 0, 0, engine.ActionVerdict{Reason: engine.DiscardTargetDeleted}},
		{"edit of an own message", engine.ActionTarget{Found: true, Direction: engine.DirectionOut}, wire.ContentEdit, 0, 0, engine.ActionVerdict{Reason: engine.DiscardNotAuthor}},
		{"delete of an own message", engine.ActionTarget{Found: true, Direction: engine.DirectionOut}, wire.ContentDelete, 0, 0, engine.ActionVerdict{Reason: engine.DiscardNotAuthor}},
		{"reaction to an own message", engine.ActionTarget{Found: true, Direction: engine.DirectionOut}, wire.ContentReaction, 0, 0, engine.ActionVerdict{}},
		{"edit at the window", sent, wire.ContentEdit, engine.ActionWindow, engine.ActionWindow, engine.ActionVerdict{}},
		{"edit past the window", sent, wire.ContentEdit, engine.ActionWindow + 1, engine.ActionWindow + 1, engine.ActionVerdict{Reason: engine.DiscardWindowPassed}},
		{"edit before its target arrived", sent, wire.ContentEdit, -time.Hour, engine.ActionWindow * 3, engine.ActionVerdict{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := engine.DecideAction(tt.t, tt.content, true, t0.Add(tt.arrived), t0.Add(tt.now))
			if got != tt.want {
				t.Fatalf("DecideAction = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestDecideOwnAction: this device's own edit or delete (byPeer false)
// applies to a message it sent, not to a sent copy, which another device
// of this person wrote (only that device edits or deletes it); a reaction
// to a sent copy applies.
func TestDecideOwnAction(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mine := engine.ActionTarget{Found: true, Direction: engine.DirectionOut, At: t0}
	copied := mine
	copied.Copied = true
	for _, tt := range []struct {
		name    string
		t       engine.ActionTarget
		content wire.ContentType
		want    engine.ActionVerdict
	}{
		{"edit of a message sent here", mine, wire.ContentEdit, engine.ActionVerdict{}},
		{"delete of a message sent here", mine, wire.ContentDelete, engine.ActionVerdict{}},
		{"edit of a sent copy", copied, wire.ContentEdit, engine.ActionVerdict{Reason: engine.DiscardNotAuthor}},
		{"delete of a sent copy", copied, wire.ContentDelete, engine.ActionVerdict{Reason: engine.DiscardNotAuthor}},
		{"reaction to a sent copy", copied, wire.ContentReaction, engine.ActionVerdict{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := engine.DecideAction(tt.t, tt.content, false, t0, t0); got != tt.want {
				t.Fatalf("DecideAction = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func isRefused(err error, reason engine.DiscardReason) bool {
	var re *engine.ActionRefusedError
	return errors.As(err, &re) && re.Reason == reason
}

// pendingIDs lists the IDs of d's pending received messages.
func (d *device) pendingIDs() []wire.LogicalID {
	d.w.t.Helper()
	msgs, err := d.c.PendingInbound(d.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		d.w.t.Fatal(err)
	}
	var out []wire.LogicalID
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

// TestDeleteForgetsActionBodies: a committed one-to-one action's record
// keeps its action body for a catch-up (0028); a delete of its target (or
// of the action, a reply) takes that text out of the records as it does
// out of history, so that no catch-up sends it again.
func TestDeleteForgetsActionBodies(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, m := actionPair(t)
	alice.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
	reply := alice.act(bob, engine.ActionRequest{Content: wire.ContentReply, Target: m, Text: []byte("see you there")})
	alice.act(bob, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: heart})
	bob.sync()
	kept := func() (texts []string) {
		t.Helper()
		made, err := bob.st.Decisions(w.ctx, time.Time{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range made {
			for _, s := range []string{"lunch at one", "see you there", heart} {
				if bytes.Contains(d.ActionBody, []byte(s)) {
					texts = append(texts, s)
				}
			}
		}
		slices.Sort(texts)
		return texts
	}
	if got, want := kept(), []string{"lunch at one", "see you there", heart}; !slices.Equal(got, want) {
		t.Fatalf("action bodies kept before the deletes: %q, want %q", got, want)
	}
	alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: reply})
	bob.sync()
	if got, want := kept(), []string{"lunch at one", heart}; !slices.Equal(got, want) {
		t.Fatalf("action bodies kept after the reply's delete: %q, want %q", got, want)
	}
	alice.act(bob, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
	bob.sync()
	if got := kept(); len(got) != 0 {
		t.Fatalf("action bodies kept after the message's delete: %q, want none", got)
	}
}
