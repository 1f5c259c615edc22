package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestKeptGroupReactionToAFormerMembersText: carol's group text is
// discarded on bob/2 and committed on bob/1 (its decision to bob/2 lost on
// the way); alice's reaction to it is discarded on bob/2 as
// target_discarded. alice then removes carol from the group, and bob/1's
// commit of the reaction reaches bob/2: its target, carol's text, is found
// by its record in the group (not by the roster, which no longer names
// carol), so the decision is kept with its action, and the text's
// decision, sent again, takes the text and the reaction back. Before the
// change bob/2 looked for the target among the roster's members only: the
// reaction's decision was not kept, and the reaction stayed discarded on
// bob/2 while the text came back.
func TestKeptGroupReactionToAFormerMembersText(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, bob, bob2, carol := groupOf(t)
	settle(t, 6, alice, bob, bob2, carol)
	sent, err := carol.c.SendGroup(w.ctx, g, []byte("lunch at noon"))
	if err != nil {
		t.Fatal(err)
	}
	m := sent.ID
	for _, d := range []*device{alice, bob, bob2} {
		d.sync()
	}
	if _, err := alice.c.Commit(w.ctx, carol.addr, m); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, carol.addr, m); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Discard(w.ctx, carol.addr, m, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	r := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
	bob.sync()
	bob2.sync()
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
		t.Fatalf("bob/2's record of alice's reaction: %+v, %v; want discarded by its engine as target_discarded", s, err)
	}
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: carol.addr.String()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	bob2.sync()
	for _, d := range []*device{bob, bob2} {
		if _, ms := d.members(g); slices.Contains(ms, carol.addr.String()) {
			t.Fatalf("%s's roster %v still names carol", d.addr, ms)
		}
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, r); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 1 || kept[0].ID != r || kept[0].Sender != alice.addr {
		t.Fatalf("bob/2's kept group actions waiting for carol's text: %+v, %v; want alice's reaction", kept, err)
	}
	settleSiblings(t, bob, bob2)
	if s, err := bob2.st.Seen(w.ctx, alice.addr, r); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of alice's reaction: %+v, %v; want committed with its target", s, err)
	}
	want := []string{alice.addr.String() + " " + thumbs}
	for _, d := range []*device{bob, bob2} {
		if got := groupReactionsOf(d.groupEntry(g, m)); !slices.Equal(got, want) {
			t.Errorf("%s shows the text's reactions %q, want %q", d.addr, got, want)
		}
	}
}
