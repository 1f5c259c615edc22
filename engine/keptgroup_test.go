package engine_test

import (
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestCatchUpCarriesAnEditedGroupCommitsFirstBody is
// TestCatchUpTellsASiblingOfAGroupCommit with alice's edit of her group
// message applied on bob/2 after bob/2 committed it: bob/2's catch-up
// carries the body the message came with (group_version edit 0), whose
// digest bob/3 recorded, not the edited text, so bob/3 takes its discard
// back.
func TestCatchUpCarriesAnEditedGroupCommitsFirstBody(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, g, id := groupTwoDeviceBob(t, "on its way while bob links", false)
	bob3 := w.linkDevice(bob)
	shareFromSibling(t, bob, bob3, func(r wire.ArchiveRecord) bool {
		_, pin := r.(wire.ArchivePin)
		return pin || groupRecords(r) || stagedRecord(id)(r)
	})
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/3 discards alice's group message: %v", err)
	}
	alice.act(bob, engine.ActionRequest{Group: &g, Content: wire.ContentEdit, Target: id, Text: []byte("arrived")})
	bob2.sync()
	bob2.commitAll()
	if h := bob2.groupHistory(g); !reflect.DeepEqual(h, []string{"alice/1:arrived"}) {
		t.Fatalf("bob/2's group history %q, want the edited message", h)
	}
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	devs := []*device{bob, bob2, bob3}
	for round := 0; ; round++ {
		out := 0
		for _, d := range devs {
			d.sync()
		}
		for _, d := range devs {
			out += d.pendingOut()
		}
		if out == 0 {
			break
		}
		if round == 8 {
			t.Fatalf("bob's devices still have %d lanes to each other after 8 rounds", out)
		}
		for _, d := range devs {
			for _, p := range devs {
				if p != d {
					d.retry(p)
				}
			}
		}
	}
	if s, err := bob3.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/3's record after bob/2's catch-up: %+v, %v; want committed (bob/2 committed it)", s, err)
	}
}
