package engine_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// threeDeviceBob is twoDeviceBob with bob/3 linked on bob/1, bob/2
// holding the list that names it, and sessions settled among bob's three
// devices.
func threeDeviceBob(t *testing.T) (w *world, alice, bob, bob2, bob3 *device) {
	t.Helper()
	w, alice, bob, bob2 = twoDeviceBob(t)
	bob3 = w.linkDevice(bob)
	if err := bob2.c.PublishDeviceList(w.ctx); err != nil {
		t.Fatalf("bob/2 adopts the list naming bob/3: %v", err)
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
	return w, alice, bob, bob2, bob3
}

// txCounter counts, through a store's failpoint hook, the transactions
// begun and those persisted: a batch whose plan failed (the store's
// backstop, then a retry row by row) begins more than it persists.
type txCounter struct{ begun, persisted atomic.Int64 }

func (c *txCounter) hook(point string) error {
	switch {
	case strings.HasSuffix(point, "/before-begin"):
		c.begun.Add(1)
	case strings.HasSuffix(point, "/after-persist"):
		c.persisted.Add(1)
	}
	return nil
}

// rolledBack is how many transactions begun did not persist.
func (c *txCounter) rolledBack() int64 { return c.begun.Load() - c.persisted.Load() }

func sentCopy(t *testing.T, id wire.LogicalID, to engine.Address, body string) []byte {
	t.Helper()
	f, err := wire.EncodeSentCopy(wire.SentCopy{ID: id, To: to.String(), Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sentActionCopy(t *testing.T, id wire.LogicalID, to engine.Address, a wire.Action) []byte {
	t.Helper()
	f, err := wire.EncodeSentActionCopy(wire.SentActionCopy{ID: id, To: to.String(), Action: a})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTwoSiblingCopiesOfOneIDInOneBatch: bob/1 and a compromised bob/3
// send bob/2 copies under one new ID, which bob/2 receives in one batch;
// bob/3 then sends an edit copy of that ID. The first copy makes the own
// entry; the second is acknowledged with ErrCopyIDTaken and stores
// nothing, so bob/3 is not the entry's author and its edit is discarded
// (not_author): bob/2 shows bob/1's message as bob/1 sent it. Before the
// fix ErrCopyIDTaken read only what was stored: both copies committed
// (the second's history insert did nothing), bob/3's finalized record made
// it the author, and its edit applied (or its reaction copy hid bob/1's
// message as a reaction).
func TestTwoSiblingCopiesOfOneIDInOneBatch(t *testing.T) {
	oneGoroutine(t)
	for _, name := range []string{"text copies", "text then reaction copy"} {
		t.Run(name, func(t *testing.T) {
			_, alice, bob, bob2, bob3 := threeDeviceBob(t)
			theirs := alice.enqueue(bob, "from alice")
			settle(t, 8, alice, bob, bob2, bob3)
			bob2.commitAll()
			id := wire.LogicalID{0x17, 0x01}
			var txs txCounter
			bob2.openWith(txs.hook)
			bob.raw(bob2, sentCopy(t, id, alice.addr, "genuine"))
			if name == "text copies" {
				bob3.raw(bob2, sentCopy(t, id, alice.addr, "forged"))
			} else {
				bob3.raw(bob2, sentActionCopy(t, id, alice.addr, wire.Action{Content: wire.ContentReaction, Target: theirs, Emoji: thumbs, Order: 1}))
			}
			res := bob2.sync()
			if got := resultsFor(res, bob.addr, id); !slices.Contains(got, engine.ResultSentCopy) {
				t.Fatalf("bob/2's results for bob/1's copy: %v, want it taken", got)
			}
			if !hasError(res, engine.ErrCopyIDTaken) {
				t.Fatalf("bob/2's batch reported no %v: %v", engine.ErrCopyIDTaken, kinds(res))
			}
			if n := txs.rolledBack(); n != 0 {
				// The engine refuses the second copy while it builds the
				// page; the store's guard is the last resort.
				t.Fatalf("bob/2 rolled back %d transactions: the page failed in the store", n)
			}
			edit := wire.LogicalID{0x17, 0x02}
			bob3.raw(bob2, sentActionCopy(t, edit, alice.addr, wire.Action{Content: wire.ContentEdit, Target: id, Edit: 1, Text: []byte("edited by bob/3")}))
			for range 3 {
				bob2.sync()
			}
			if s, err := bob2.st.Seen(bob2.w.ctx, bob3.addr, id); err != nil || s.Pending || s.Finalized {
				t.Fatalf("bob/2 holds bob/3's copy: %+v, %v; want nothing of it", s, err)
			}
			e := bob2.entry(alice, id)
			if string(e.Body) != "genuine" || e.Edits != 0 || e.Deleted {
				t.Fatalf("bob/2's entry of bob/1's message: %q, %d edits; want bob/1's body unedited", e.Body, e.Edits)
			}
			if got := reactionsOf(bob2.entry(alice, theirs)); len(got) != 0 {
				t.Fatalf("alice's message on bob/2 shows reactions %v, want none", got)
			}
			if n := bob2.pendingIn() + bob2.pendingFrom(bob3); n != 0 {
				t.Fatalf("bob/2 holds %d messages, want none", n)
			}
		})
	}
}

// TestHoldReleasesOneOfTwoCopiesOfOneID: bob/1 and a compromised bob/3
// send bob/2 reaction copies under one ID to alice's message, which bob/2
// holds pending: both wait for their target. Once bob/2 commits it, one
// pass of the hold releases them together: the first commits, the second
// is discarded (not_author) and changes nothing. Before the fix both
// committed, the second applying its reaction under the first one's entry
// and leaving its sender a committed record of that ID.
func TestHoldReleasesOneOfTwoCopiesOfOneID(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, bob3 := threeDeviceBob(t)
	target := alice.enqueue(bob, "dinner?")
	bob2.sync()
	id := wire.LogicalID{0x17, 0x03}
	bob.raw(bob2, sentActionCopy(t, id, alice.addr, wire.Action{Content: wire.ContentReaction, Target: target, Emoji: thumbs, Order: 1}))
	bob3.raw(bob2, sentActionCopy(t, id, alice.addr, wire.Action{Content: wire.ContentReaction, Target: target, Emoji: heart, Order: 1}))
	var txs txCounter
	bob2.openWith(txs.hook)
	bob2.sync()
	if n := bob2.pendingFrom(bob) + bob2.pendingFrom(bob3); n != 2 {
		t.Fatalf("bob/2 holds %d copies, want both waiting for their target", n)
	}
	if _, err := bob2.c.Commit(w.ctx, alice.addr, target); err != nil {
		t.Fatal(err)
	}
	res := bob2.sync()
	var applied, discarded int
	for _, r := range res {
		if r.ID != id {
			continue
		}
		switch {
		case r.Kind == engine.ResultApplied:
			applied++
		case r.Kind == engine.ResultActionDiscarded && r.Reason == engine.DiscardNotAuthor:
			discarded++
		}
	}
	if applied != 1 || discarded != 1 {
		t.Fatalf("bob/2's hold pass: %d applied, %d discarded not_author; want one of each: %v", applied, discarded, kinds(res))
	}
	if n := txs.rolledBack(); n != 0 {
		t.Fatalf("bob/2 rolled back %d transactions: the pass's batch failed in the store", n)
	}
	if got := reactionsOf(bob2.entry(alice, target)); len(got) != 1 {
		t.Fatalf("alice's message on bob/2 shows reactions %v, want one", got)
	}
	committed := 0
	for _, d := range []*device{bob, bob3} {
		s, err := bob2.st.Seen(w.ctx, d.addr, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Finalized && s.Outcome == engine.OutcomeCommitted {
			committed++
		}
	}
	if committed != 1 {
		t.Fatalf("bob/2 holds %d committed copies of the ID, want one", committed)
	}
}

// TestEditedCopyWithoutFirstBodyIsReported: alice/2 sends bob a message
// and edits it; alice/1 applied both copies, but no longer holds the
// body first sent (its version 0 is gone, as when the edits came with an
// imported history). Removing alice/2 does not resend the message (its
// current body would reach bob as a new message under the old ID) and
// reports it: an EventSyncFailed of op "adopt" wrapping
// ErrAdoptFirstBody, counting it. Before the fix the query left it out
// and nothing said so.
func TestEditedCopyWithoutFirstBodyIsReported(t *testing.T) {
	oneGoroutine(t)
	w, alice, alice2, bob := adoptionWorld(t)
	id := alice2.enqueue(bob, "from the phone")
	settle(t, 8, alice, alice2, bob)
	bob.commitAll()
	alice2.act(bob, engine.ActionRequest{Content: wire.ContentEdit, Target: id, Text: []byte("from the phone, edited")})
	settle(t, 8, alice, alice2, bob)
	bob.commitAll()
	if e := ownEntry(t, alice, bob.addr, id); e.Edits != 1 {
		t.Fatalf("alice/1's entry of alice/2's message: %+v, want the edit applied", e)
	}
	alice.execSQL("DELETE FROM message_version WHERE edit = 0")
	for drained := false; !drained; {
		select {
		case <-alice.c.Events():
		default:
			drained = true
		}
	}
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	reported := false
	for drained := false; !drained; {
		select {
		case e := <-alice.c.Events():
			if e.Kind == engine.EventSyncFailed && e.Op == "adopt" && errors.Is(e.Err, engine.ErrAdoptFirstBody) {
				reported = true
				if msg := e.Err.Error(); !strings.Contains(msg, "1 edited") || !strings.Contains(msg, alice2.addr.String()) ||
					!strings.Contains(msg, fmt.Sprintf("%s %x", bob.addr, id[:4])) {
					t.Errorf("the report %q does not count one copy of %s and name it", e.Err, alice2.addr)
				}
			}
		default:
			drained = true
		}
	}
	if !reported {
		t.Fatalf("alice/1 did not report the edited copy it could not adopt (%v)", engine.ErrAdoptFirstBody)
	}
	if lanes, err := alice.c.PersonLanes(w.ctx, bob.addr, id); err != nil || len(lanes) != 0 {
		t.Fatalf("alice/1's lanes of the message: %+v, %v; want none (not resent)", lanes, err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range resultsFor(bob.sync(), alice.addr, id) {
		if k == engine.ResultDelivery {
			t.Fatalf("bob took a resend of the edited message as new")
		}
	}
}

// execSQL closes d, runs q on its database and opens it again (a state
// the engine's own transitions do not make).
func (d *device) execSQL(q string) {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db"))
	if err != nil {
		d.w.t.Fatal(err)
	}
	if _, err := db.Exec(q); err != nil {
		d.w.t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	d.open()
}

// TestCatchUpCountsOnlyDecisions is TestCatchUpTellsASiblingLinkedSince
// with bob/2 holding, newer than its commit, more records from bob/1 (its
// sent copies, as a person who writes from the phone piles them up) than
// MaxCatchUpDecisions: the catch-up's bound counts decisions only, so
// bob/2 still tells bob/3 of the commit and bob/3 takes the message back.
// Before the fix the copies filled the bound (the engine then skipped
// them) and the commit was never told: bob/3's discard stood.
func TestCatchUpCountsOnlyDecisions(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2 := twoDeviceBob(t)
	id := alice.enqueue(bob, "on its way while bob links")
	bob3 := w.linkDevice(bob)
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	if _, err := bob2.c.Commit(w.ctx, alice.addr, id); err != nil {
		t.Fatal(err)
	}
	bob3.sync()
	if _, err := bob3.c.Discard(w.ctx, alice.addr, id, engine.DiscardRejected); err != nil {
		t.Fatalf("bob/3 discards alice's message: %v (did it come?)", err)
	}
	// Records of bob/1's sent copies, newer than the commit (their
	// digests are never read here).
	bob2.execSQL(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO finalized (sender, id, outcome, reason, at, sealed_digest) SELECT '%s', randomblob(16), 1, 0, %d + i, zeroblob(48) FROM n`,
		engine.MaxCatchUpDecisions+8, bob.addr, w.clock.Now().UnixNano()))
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

// TestHoldPassIgnoresARefusedCopysDelete: bob/2 holds, waiting for bob/3's
// message M, bob/1's reaction copy of ID X on M, a compromised bob/3's
// delete copy of M under the same ID X, and bob/1's later reaction copy
// (ID Y) on M. M's copy comes; one pass of the hold releases the three:
// bob/1's X applies, bob/3's X is refused (not_author: the ID is taken
// earlier in the pass) and so deletes nothing, and Y applies. Were the
// pass not to remember the ID its first copy takes, it would count the
// refused delete as taking M (a later action over its tombstone is
// discarded target_deleted) before the finalize batch refused it.
func TestHoldPassIgnoresARefusedCopysDelete(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2, bob3 := threeDeviceBob(t)
	m := wire.LogicalID{0x17, 0x10}
	x, y := wire.LogicalID{0x17, 0x11}, wire.LogicalID{0x17, 0x12}
	bob.raw(bob2, sentActionCopy(t, x, alice.addr, wire.Action{Content: wire.ContentReaction, Target: m, Emoji: thumbs, Order: 1}))
	bob3.raw(bob2, sentActionCopy(t, x, alice.addr, wire.Action{Content: wire.ContentDelete, Target: m}))
	bob.raw(bob2, sentActionCopy(t, y, alice.addr, wire.Action{Content: wire.ContentReaction, Target: m, Emoji: heart, Order: 2}))
	bob2.sync()
	if n := bob2.pendingFrom(bob) + bob2.pendingFrom(bob3); n != 3 {
		t.Fatalf("bob/2 holds %d copies, want the three waiting for M", n)
	}
	bob3.raw(bob2, sentCopy(t, m, alice.addr, "M"))
	var res []engine.ReceiveResult
	for range 3 {
		res = append(res, bob2.sync()...)
	}
	if got := resultsFor(res, bob.addr, y); !slices.Contains(got, engine.ResultApplied) {
		t.Fatalf("bob/2's results for bob/1's reaction Y: %v, want it applied", got)
	}
	if e := bob2.entry(alice, m); e.Deleted || string(e.Body) != "M" {
		t.Fatalf("bob/2's entry of M: %q, deleted %v; want it standing", e.Body, e.Deleted)
	}
	if got := reactionsOf(bob2.entry(alice, m)); len(got) != 1 {
		t.Fatalf("M on bob/2 shows reactions %v, want bob/1's one", got)
	}
}

// TestStoreRefusedCopyIsAcknowledged: the store's guard refuses a page of
// one row, bob/1's sent copy of ID X, because an own entry of X appeared
// in alice's conversation after the engine checked (a state the engine's
// ordering does not make; the test writes it from the failpoint hook just
// before the transaction). The row is prepared again as a refused copy:
// acknowledged, nothing stored, nothing quarantined. Before the fix the
// row went to quarantine unacknowledged, and bob/1's lane retried it for
// ever.
func TestStoreRefusedCopyIsAcknowledged(t *testing.T) {
	oneGoroutine(t)
	w, alice, bob, bob2, _ := threeDeviceBob(t)
	x := wire.LogicalID{0x17, 0x20}
	var armed atomic.Bool
	bob2.openWith(func(point string) error {
		if point != "receive-commit/before-begin" || !armed.CompareAndSwap(true, false) {
			return nil
		}
		db, err := sql.Open("sqlite", "file:"+filepath.Join(bob2.dir, "parley.db")+"?_pragma=busy_timeout(5000)")
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.Exec("INSERT INTO history (peer, direction, id, at, state, sealed_body) VALUES (?, 2, ?, 1, 2, x'00')", alice.addr.String(), x[:])
		return err
	})
	bob2.sync() // what is left of the setup: the copy is a page alone
	bob.raw(bob2, sentCopy(t, x, alice.addr, "copy"))
	armed.Store(true)
	res := bob2.sync()
	if armed.Load() {
		t.Fatal("the hook never wrote the own entry")
	}
	if !hasError(res, engine.ErrCopyIDTaken) {
		t.Fatalf("bob/2's round: %v, want the copy refused with %v", errorsIn(res), engine.ErrCopyIDTaken)
	}
	if q, err := bob2.c.Quarantine(w.ctx, 0, 100); err != nil || len(q) != 0 {
		t.Fatalf("bob/2's quarantine: %+v, %v; want nothing", q, err)
	}
	if s, err := bob2.st.Seen(w.ctx, bob.addr, x); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's record of bob/1's copy: %+v, %v; want nothing stored", s, err)
	}
	if n := bob2.count("SELECT count(*) FROM inbox"); n != 0 {
		t.Fatalf("bob/2 keeps %d staged rows, want none", n)
	}
}

// TestCopyToOwnAccountDroppedByTheEngine: bob/3 sends bob/2 a sent copy
// (kind 14) naming bob/1, a conversation of bob's own account, in one
// page with bob/1's genuine copy. The engine drops it with
// ErrCopyConversation, as it drops such an action copy, and the page
// commits in one transaction with the genuine copy. Before the fix only
// the store refused it: the page's transaction failed and was retried
// row by row.
func TestCopyToOwnAccountDroppedByTheEngine(t *testing.T) {
	oneGoroutine(t)
	_, alice, bob, bob2, bob3 := threeDeviceBob(t)
	bob2.sync()
	var txs txCounter
	bob2.openWith(txs.hook)
	genuine, own := wire.LogicalID{0x17, 0x30}, wire.LogicalID{0x17, 0x31}
	bob.raw(bob2, sentCopy(t, genuine, alice.addr, "genuine"))
	bob3.raw(bob2, sentCopy(t, own, bob.addr, "to myself"))
	res := bob2.sync()
	if !hasError(res, engine.ErrCopyConversation) {
		t.Fatalf("bob/2's round: %v, want the copy to bob/1 refused with %v", errorsIn(res), engine.ErrCopyConversation)
	}
	if n := txs.rolledBack(); n != 0 {
		t.Fatalf("bob/2 rolled back %d transactions: the store refused the page", n)
	}
	if e := bob2.entry(alice, genuine); string(e.Body) != "genuine" {
		t.Fatalf("bob/2's entry of bob/1's copy: %q", e.Body)
	}
	if s, err := bob2.st.Seen(bob2.w.ctx, bob3.addr, own); err != nil || s.Pending || s.Finalized {
		t.Fatalf("bob/2's record of the copy to bob/1: %+v, %v; want nothing", s, err)
	}
}
