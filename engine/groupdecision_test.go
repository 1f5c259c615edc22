package engine_test

import (
	"crypto/rand"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// shareFromSibling imports into to what from's link archive holds of the
// kinds keep takes (the group records, a staged message), as a link's
// archive brings them: the groups a linked device holds, and a message
// pending on both devices of a person.
func shareFromSibling(t *testing.T, from, to *device, keep func(wire.ArchiveRecord) bool) {
	t.Helper()
	importRecords(t, to, archived(t, from, keep))
}

// archived returns the records of from's link archive that keep takes.
func archived(t *testing.T, from *device, keep func(wire.ArchiveRecord) bool) []wire.ArchiveRecord {
	t.Helper()
	var recs []wire.ArchiveRecord
	if err := from.st.LinkArchiveRecords(from.w.ctx, func(r wire.ArchiveRecord) error {
		if keep(r) {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s's archive holds nothing to share", from.addr)
	}
	return recs
}

// importRecords imports recs into to as an archive of their own.
func importRecords(t *testing.T, to *device, recs []wire.ArchiveRecord) {
	t.Helper()
	var archive [16]byte
	rand.Read(archive[:])
	now, n := to.w.clock.Now(), uint64(len(recs))
	if _, err := to.st.Apply(to.w.ctx, engine.ImportStart{Archive: archive, Total: n, At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := to.st.Apply(to.w.ctx, engine.ImportRecords{Archive: archive, From: 0, To: n, Total: n, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

func groupRecords(r wire.ArchiveRecord) bool { _, ok := r.(wire.ArchiveGroup); return ok }

func stagedRecord(id wire.LogicalID) func(wire.ArchiveRecord) bool {
	return func(r wire.ArchiveRecord) bool { s, ok := r.(wire.ArchiveStaged); return ok && s.ID == id }
}

// groupTwoDeviceBob is twoDeviceBob with a group of alice/1 and bob/1
// that bob/2 holds too (as a link's archive leaves it), and alice's group
// message id pending on bob/1 and, unless late, on bob/2 (a staged record
// of the link's archive; a member person's fan-out does the same).
func groupTwoDeviceBob(t *testing.T, body string, late bool) (w *world, alice, bob, bob2 *device, g wire.GroupID, id wire.LogicalID) {
	t.Helper()
	return groupTwoDeviceBobIn(t, newWorld(t), body, late)
}

// groupTwoDeviceBobIn is groupTwoDeviceBob in w (made with newWorld, set
// up before its devices open).
func groupTwoDeviceBobIn(t *testing.T, w *world, body string, late bool) (_ *world, alice, bob, bob2 *device, g wire.GroupID, id wire.LogicalID) {
	t.Helper()
	w, alice, bob, bob2 = twoDeviceBobIn(t, w)
	info, _, err := alice.c.CreateGroup(w.ctx, "team", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	// alice's lanes to bob/2 (her list of bob names it) wait: bob/2
	// holds the group as a link's archive leaves it.
	settleBut(t, 5, bob2, alice, bob)
	shareFromSibling(t, bob, bob2, groupRecords)
	// alice's own lane to bob/2 is lost on the way: the message comes to
	// bob/2 as the test brings it.
	w.net.DropNext(alice.addr, bob2.addr, 1)
	sent, err := alice.c.SendGroup(w.ctx, info.ID, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if n := bob.pendingIn(); n != 1 {
		t.Fatalf("bob/1 holds %d messages pending, want alice's group message", n)
	}
	if !late {
		shareFromSibling(t, bob, bob2, stagedRecord(sent.ID))
	}
	return w, alice, bob, bob2, info.ID, sent.ID
}

// decidedOnOf returns the device a group entry of sender's was decided on
// ("" for this device), and whether the entry is in the group's history.
func decidedOnOf(t *testing.T, d *device, g wire.GroupID, id wire.LogicalID) (string, bool) {
	t.Helper()
	h, err := d.c.GroupHistory(d.w.ctx, g, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h {
		if e.ID == id {
			if e.DecidedOn == nil {
				return "", true
			}
			return e.DecidedOn.String(), true
		}
	}
	return "", false
}

// TestGroupDecisionsAreThePersons: a group message pending on bob/1 and
// bob/2, decided on bob/1, is finalized on bob/2 as bob/1 decided,
// without asking: a commit enters bob/2's group history once, decided on
// bob/1; a discard leaves nothing pending and nothing in the history.
// Before the change a group message's finalization told no sibling.
func TestGroupDecisionsAreThePersons(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome engine.Outcome
	}{
		{"commit", engine.OutcomeCommitted},
		{"discard", engine.OutcomeDiscarded},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, alice, bob, bob2, g, id := groupTwoDeviceBob(t, "for the team", false)
			if n := bob2.pendingIn(); n != 1 {
				t.Fatalf("bob/2 holds %d messages pending, want alice's group message", n)
			}
			var err error
			if c.outcome == engine.OutcomeCommitted {
				_, err = bob.c.Commit(w.ctx, alice.addr, id)
			} else {
				_, err = bob.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bob.c.Pump(w.ctx); err != nil {
				t.Fatal(err)
			}
			res := bob2.sync()
			decided := 0
			for _, r := range res {
				if r.Kind == engine.ResultDecided && r.ID == id && r.Decided != nil && r.Decided.On == bob.addr && r.Decided.Outcome == c.outcome {
					decided++
				}
			}
			if decided != 1 {
				t.Fatalf("bob/2's round: %+v; want alice's group message decided once, as bob/1 did", res)
			}
			if n := bob2.pendingIn(); n != 0 {
				t.Fatalf("bob/2 holds %d messages pending after bob/1 decided", n)
			}
			if s, err := bob2.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != c.outcome {
				t.Fatalf("bob/2's record: %+v, %v; want finalized %v", s, err, c.outcome)
			}
			on, in := decidedOnOf(t, bob2, g, id)
			switch {
			case c.outcome == engine.OutcomeCommitted && (!in || on != bob.addr.String()):
				t.Fatalf("bob/2's group history: entry %v, decided on %q; want it, decided on bob/1", in, on)
			case c.outcome == engine.OutcomeDiscarded && in:
				t.Fatalf("bob/2's group history holds the discarded message")
			}
			if want := map[bool][]string{true: {"alice/1:for the team"}}[c.outcome == engine.OutcomeCommitted]; !reflect.DeepEqual(bob2.groupHistory(g), want) {
				t.Fatalf("bob/2's group history %q, want %q", bob2.groupHistory(g), want)
			}
			if on, in := decidedOnOf(t, bob, g, id); c.outcome == engine.OutcomeCommitted && (!in || on != "") {
				t.Fatalf("bob/1's own commit: entry %v, decided on %q; want it, decided here", in, on)
			}
		})
	}
}

// TestGroupDecisionBeforeTheMessage: bob/1 commits alice's group message
// before bob/2 holds it. bob/2 keeps the decision, and once the message
// is pending there (a link's staged record, here) finalizes it as
// committed without asking, decided on bob/1.
func TestGroupDecisionBeforeTheMessage(t *testing.T) {
	w, alice, bob, bob2, g, id := groupTwoDeviceBob(t, "decided before it came", true)
	staged := archived(t, bob, stagedRecord(id)) // what a link's archive would carry
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	res := bob2.sync()
	heard := false
	for _, r := range res {
		heard = heard || r.Kind == engine.ResultDecisionHeard && r.Decided != nil && r.Decided.ID == id
	}
	if !heard {
		t.Fatalf("bob/2's round: %+v; want bob/1's decision heard", res)
	}
	kept, err := bob2.st.KeptDecisions(w.ctx, engine.MaxKeptDecisions)
	if err != nil || len(kept) != 1 || kept[0].ID != id || kept[0].Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2 keeps %+v, %v; want bob/1's commit of the group message", kept, err)
	}
	importRecords(t, bob2, staged)
	bob2.reopen() // as the linked device opens after its import
	bob2.sync()
	if n := bob2.pendingIn(); n != 0 {
		t.Fatalf("bob/2 holds %d messages pending, want none (bob/1 decided)", n)
	}
	if on, in := decidedOnOf(t, bob2, g, id); !in || on != bob.addr.String() {
		t.Fatalf("bob/2's group history: entry %v, decided on %q; want it, decided on bob/1", in, on)
	}
	if kept, err := bob2.st.KeptDecisions(w.ctx, engine.MaxKeptDecisions); err != nil || len(kept) != 0 {
		t.Fatalf("bob/2 still keeps %+v, %v; want the applied decision forgotten", kept, err)
	}
}

// TestGroupDecisionTakesBackADiscard: bob discards alice's group message
// on bob/2 while bob/1 commits it. bob/1's decision carries the body
// (kind 16), and bob/2 takes the message back into the group's history
// (not a one-to-one conversation), decided on bob/1, once. A decision
// with another body, one from a device not of bob's account and one from
// another person take nothing back.
func TestGroupDecisionTakesBackADiscard(t *testing.T) {
	w, alice, bob, bob2, g, id := groupTwoDeviceBob(t, "keep me", false)
	if _, err := bob2.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatal(err)
	}
	// Before bob/1's own decision: forged ones. bob/1 (an own device)
	// with another text; bob/9 (not of bob's account) and carol/1 (another
	// person) with the right one.
	frame := func(n byte, body string) []byte {
		f, err := wire.EncodeDecision(wire.Decision{ID: wire.LogicalID{0xd0, n}, Sender: alice.addr.String(), Message: id,
			Outcome: wire.DecisionCommitted, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	bob.raw(bob2, frame(1, "not what alice wrote"))
	w.device("bob/9").raw(bob2, frame(2, "keep me"))
	w.device("carol/1").raw(bob2, frame(3, "keep me"))
	res := bob2.sync()
	for _, r := range res {
		if r.TakenBack {
			t.Errorf("bob/2 took back %+v", r.Decided)
		}
	}
	if !hasError(res, engine.ErrNotOwnDevice) || len(errorsIn(res)) < 2 {
		t.Errorf("bob/9's and carol/1's decisions were not both refused as from devices not of bob's: %+v", res)
	}
	if _, in := decidedOnOf(t, bob2, g, id); in {
		t.Fatalf("bob/2 took back the group message on a forged decision")
	}

	if _, err := bob.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, r := range bob2.sync() {
		if r.Kind == engine.ResultDecisionHeard && r.TakenBack {
			taken++
		}
	}
	if taken != 1 {
		t.Fatalf("bob/2 took back %d messages, want 1", taken)
	}
	if on, in := decidedOnOf(t, bob2, g, id); !in || on != bob.addr.String() {
		t.Fatalf("bob/2's group history: entry %v, decided on %q; want it, decided on bob/1", in, on)
	}
	if h := bob2.groupHistory(g); !reflect.DeepEqual(h, []string{"alice/1:keep me"}) {
		t.Fatalf("bob/2's group history %q, want the message once", h)
	}
	if n, _ := inHistory(t, bob2, alice, "keep me"); n != 0 {
		t.Fatalf("bob/2's one-to-one history with alice holds the group message %d times: it belongs to its group", n)
	}
	if s, err := bob2.st.Seen(w.ctx, alice.addr, id); err != nil || !s.Finalized || s.Outcome != engine.OutcomeCommitted {
		t.Fatalf("bob/2's record: %+v, %v; want committed", s, err)
	}
	// The decision heard again changes nothing.
	bob.raw(bob2, frame(4, "keep me"))
	bob2.sync()
	if h := bob2.groupHistory(g); !reflect.DeepEqual(h, []string{"alice/1:keep me"}) {
		t.Fatalf("bob/2's group history after the decision again %q, want the message once", h)
	}
}

// TestCatchUpTellsASiblingOfAGroupCommit: bob links bob/3 on bob/1 while
// alice's group message is pending on bob/2; bob/3 holds the group and
// the message as its link's archive leaves them. bob commits it on bob/2,
// whose list does not name bob/3 yet (so the commit tells bob/1 alone),
// and discards it on bob/3. When bob/2 adopts the list naming bob/3, the
// same transaction stores the catch-up lane to bob/3 with the commit's
// body, read from the group's history: bob/3 takes the message back into
// the group's history, decided on bob/2. Before the change the catch-up
// left group commits out (a linked device did not hold the groups), and
// the discard on bob/3 stood.
func TestCatchUpTellsASiblingOfAGroupCommit(t *testing.T) {
	w, alice, bob, bob2, g, id := groupTwoDeviceBob(t, "on its way while bob links", false)
	bob3 := w.linkDevice(bob)
	// The pins go too, as in a link's archive.
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
	if on, in := decidedOnOf(t, bob3, g, id); !in || on != bob2.addr.String() {
		t.Fatalf("bob/3's group history: entry %v, decided on %q; want it, decided on bob/2", in, on)
	}
	if h := bob3.groupHistory(g); !reflect.DeepEqual(h, []string{"alice/1:on its way while bob links"}) {
		t.Fatalf("bob/3's group history %q, want the message once", h)
	}
}

// TestGroupArrivalCommitTellsTheSiblings: bob/1 commits alice's group
// message on arrival (the loop's policy); bob/2, which does not hold it
// yet, hears and keeps bob/1's commit, to apply when the message comes.
// Before the change an arrival commit of a group message told no one.
func TestGroupArrivalCommitTellsTheSiblings(t *testing.T) {
	w, alice, bob, bob2 := twoDeviceBob(t)
	info, _, err := alice.c.CreateGroup(w.ctx, "team", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	settleBut(t, 5, bob2, alice, bob)
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	bob.sync()                               // the switch's pass over what is pending: nothing
	w.net.DropNext(alice.addr, bob2.addr, 1) // alice's lane to bob/2 is late
	sent, err := alice.c.SendGroup(w.ctx, info.ID, []byte("committed as it came"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := bob.c.Sync(w.ctx); err != nil || res.Committed != 1 {
		t.Fatalf("bob/1's round: %d committed, %v; want alice's group message committed on arrival", res.Committed, err)
	}
	if _, err := bob.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	kept, err := bob2.st.KeptDecisions(w.ctx, engine.MaxKeptDecisions)
	if err != nil || len(kept) != 1 || kept[0].ID != sent.ID || kept[0].Sender != alice.addr || kept[0].Outcome != engine.OutcomeCommitted || kept[0].On != bob.addr {
		t.Fatalf("bob/2 keeps %+v, %v; want bob/1's commit of alice's group message", kept, err)
	}
}

// settleBut is settle over ds, where the lanes to skip (a device the test
// brings its messages to another way) may stay pending.
func settleBut(t *testing.T, rounds int, skip *device, ds ...*device) {
	t.Helper()
	for range rounds {
		busy := 0
		for _, d := range ds {
			d.sync()
			busy += d.commitAll()
		}
		for _, d := range ds {
			n, err := d.c.CountOutbound(d.w.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			skipped, err := d.c.CountOutbound(d.w.ctx, &skip.addr)
			if err != nil {
				t.Fatal(err)
			}
			busy += n - skipped + d.pendingIn()
		}
		if busy == 0 {
			return
		}
	}
	t.Fatalf("not settled after %d rounds", rounds)
}
