package engine_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestKeptGroupDeleteForgetsTheKeptEdit: bob/2 discards alice's group
// text, so its engine discards her edit and her delete of it
// (target_discarded), while bob/1 commits the text (its decision to bob/2
// lost on the way), the edit and the delete. The delete's decision reaches
// bob/2 before the edit's: both are kept with their actions, the delete
// first. The text's decision, sent again, takes the text back and applies
// the delete, which takes the text out: the edit no longer applies, and
// its kept decision, which keeps the edited text sealed, goes in the same
// transaction. Before the change the edit's row stayed kept (its text
// with it) until MaxDecisionAge.
func TestKeptGroupDeleteForgetsTheKeptEdit(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, m := groupTwoDeviceBob(t, "lunch at noon", false)
	if _, err := bob2.c.Discard(w.ctx, alice.addr, m, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(alice.addr, bob2.addr, 2)
	e := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentEdit, Target: m, Text: []byte("lunch at one")})
	d := alice.groupAct(g, engine.ActionRequest{Content: wire.ContentDelete, Target: m})
	w.net.DropNext(bob.addr, bob2.addr, 1) // the text's decision, sent again below
	if _, err := bob.c.Commit(w.ctx, alice.addr, m); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if ids := bob.pendingIDs(); len(ids) != 2 {
		t.Fatalf("bob/1 holds %x pending, want alice's edit and delete", ids)
	}
	shareFromSibling(t, bob, bob2, func(r wire.ArchiveRecord) bool { return stagedRecord(e)(r) || stagedRecord(d)(r) })
	w.net.Hold(bob2.addr)
	bob2.sync()
	for _, id := range []wire.LogicalID{e, d} {
		if s, err := bob2.st.Seen(w.ctx, alice.addr, id); err != nil || s.Outcome != engine.OutcomeDiscarded || s.Reason != engine.DiscardTargetDiscarded {
			t.Fatalf("bob/2's record of %x: %+v, %v; want discarded by its engine as target_discarded", id[:4], s, err)
		}
	}
	for _, id := range []wire.LogicalID{e, d} {
		if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(w.net.Held(bob2.addr)); n != 2 {
		t.Fatalf("%d envelopes held for bob/2, want the edit's and the delete's decisions", n)
	}
	w.net.DeliverHeld(bob2.addr, 1) // the delete's decision first
	bob2.sync()
	w.clock.Advance(time.Second)
	w.net.Release(bob2.addr)
	bob2.sync()
	kept, err := bob2.st.KeptGroupActions(w.ctx, g, m)
	if err != nil || len(kept) != 2 || kept[0].ID != d || kept[1].ID != e {
		t.Fatalf("bob/2's kept group actions waiting for the text: %+v, %v; want the delete's, then the edit's", kept, err)
	}
	settleSiblings(t, bob, bob2)
	for _, dev := range []*device{bob, bob2} {
		if got := dev.groupEntry(g, m); !got.Deleted {
			t.Errorf("%s shows the text %+v, want it deleted", dev.addr, got)
		}
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, d); err != nil || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record of the delete: %+v, %v; want committed with its target", s, err)
	}
	if kept, err := bob2.st.KeptGroupActions(w.ctx, g, m); err != nil || len(kept) != 0 {
		t.Fatalf("bob/2 still keeps %+v, %v after the delete took the text out, want nothing", kept, err)
	}
	if all, err := bob2.st.KeptDecisions(w.ctx, 100); err != nil || len(all) != 0 {
		t.Fatalf("bob/2 still keeps decisions %+v, %v, want none", all, err)
	}
}
