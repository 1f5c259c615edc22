package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// adoptionWorld is alice with two devices (alice/2 linked from alice/1,
// which holds the account key) and bob, who holds alice's list.
func adoptionWorld(t *testing.T) (w *world, alice, alice2, bob *device) {
	t.Helper()
	w = newWorld(t)
	alice, bob = w.device("alice/1"), w.device("bob/1")
	a, err := engine.LoadAccount(w.ctx, alice.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	alice2 = w.linkDevice(alice)
	if err := bob.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	return w, alice, alice2, bob
}

// resultsFor returns the results of res about message id from sender.
func resultsFor(res []engine.ReceiveResult, sender engine.Address, id wire.LogicalID) []engine.ResultKind {
	var out []engine.ResultKind
	for _, r := range res {
		if r.Sender == sender && r.ID == id {
			out = append(out, r.Kind)
		}
	}
	return out
}

// ownEntry returns d's history entry of its own message id with peer.
func ownEntry(t *testing.T, d *device, peer engine.Address, id wire.LogicalID) engine.HistoryEntry {
	t.Helper()
	h, err := d.c.History(d.w.ctx, peer, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var found []engine.HistoryEntry
	for _, e := range h {
		if e.ID == id && e.Direction == engine.DirectionOut {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s's history with %s holds its message %x %d times, want once", d.addr, peer, id[:4], len(found))
	}
	return found[0]
}

// TestRemovalAdoptsPendingMessage: alice/2 sends bob a message whose
// envelope the relay loses; alice/1 holds its sent copy. alice/1 removes
// alice/2 and, in the same transaction, adopts the message: a lane to bob
// under the same ID. bob receives it once, and alice/1's history shows it
// acknowledged. Without adoption nothing reaches bob.
func TestRemovalAdoptsPendingMessage(t *testing.T) {
	w, alice, alice2, bob := adoptionWorld(t)
	w.net.DropNext(alice2.addr, bob.addr, 1)
	id := alice2.enqueue(bob, "sent from the phone")
	alice.sync()
	if e := ownEntry(t, alice, bob.addr, id); e.State != engine.SentCopied {
		t.Fatalf("alice/1's entry of the copy is %v, want copied", e.State)
	}
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LanePending {
		t.Fatalf("alice/1's lanes of the adopted message: %v, want one pending to bob/1", got)
	}
	if e := ownEntry(t, alice, bob.addr, id); e.State != engine.SentPending {
		t.Fatalf("alice/1's entry of the adopted message is %v, want pending", e.State)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	res := bob.sync()
	if got := resultsFor(res, alice.addr, id); len(got) != 1 || got[0] != engine.ResultDelivery {
		t.Fatalf("bob's receive of the adopted message: %v, want one delivery", got)
	}
	bob.commitAll()
	if got := bob.received(alice); len(got) != 1 || got[0] != "sent from the phone" {
		t.Fatalf("bob's history from alice: %q, want the message once", got)
	}
	alice.sync()
	if e := ownEntry(t, alice, bob.addr, id); e.State != engine.SentAcknowledged {
		t.Errorf("alice/1's entry after bob's ACK is %v, want acknowledged", e.State)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Errorf("alice/1 has %d lanes pending, want none", n)
	}
	// A second sync brings bob nothing more.
	bob.sync()
	if n := bob.pendingIn(); n != 0 {
		t.Errorf("bob holds %d messages pending, want none", n)
	}
}

// TestAdoptedResendIsADuplicate: bob already holds alice/2's message when
// alice/1 adopts it (committed, discarded, or still pending): the resend
// from alice/1, the same logical ID from another device of alice's list,
// is acknowledged as that message and delivered nothing, and alice/1's
// entry is acknowledged.
func TestAdoptedResendIsADuplicate(t *testing.T) {
	for _, tt := range []struct {
		name string
		bob  func(bob *device)
		want engine.ResultKind
	}{
		{"committed", func(bob *device) { bob.commitAll() }, engine.ResultAlreadyCommitted},
		{"discarded", func(bob *device) { bob.discardAll() }, engine.ResultAlreadyDiscarded},
		{"pending", func(*device) {}, engine.ResultDelivery},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, alice, alice2, bob := adoptionWorld(t)
			id := alice2.enqueue(bob, "sent from the phone")
			bob.sync()
			tt.bob(bob)
			alice.sync()
			if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
				t.Fatal(err)
			}
			if _, err := alice.c.Pump(w.ctx); err != nil {
				t.Fatal(err)
			}
			before := bob.pendingIn()
			res := bob.sync()
			if got := resultsFor(res, alice.addr, id); len(got) != 1 || got[0] != tt.want {
				t.Fatalf("bob's receive of the resend: %v, want %v", got, tt.want)
			}
			if n := bob.pendingIn(); n != before {
				t.Fatalf("bob holds %d messages pending after the resend, want %d (nothing new)", n, before)
			}
			bob.commitAll()
			want := 1
			if tt.name == "discarded" {
				want = 0
			}
			if got := bob.received(alice); len(got) != want {
				t.Fatalf("bob's history from alice: %q, want the message %d times", got, want)
			}
			alice.sync()
			if tt.name == "pending" {
				// bob's commit acknowledged alice/2's lane; alice/1's
				// retry is then acknowledged as a repeat.
				alice.retry(bob)
				bob.sync()
				alice.sync()
			}
			if e := ownEntry(t, alice, bob.addr, id); e.State != engine.SentAcknowledged {
				t.Errorf("alice/1's entry after the resend is %v, want acknowledged", e.State)
			}
			if n := alice.pendingOut(); n != 0 {
				t.Errorf("alice/1 has %d lanes pending, want none", n)
			}
			if n := bob.pendingIn(); n != 0 {
				t.Errorf("bob holds %d messages pending, want none", n)
			}
		})
	}
}

// TestStrangerIDSuppressesNothing: a device registered as alice/9, which
// alice's list does not name, sends bob a message under the ID (and body)
// of alice/2's lost one before alice/1 adopts it. It counts as no message
// of alice's: the resend from alice/1 is delivered. Nor does a message
// from another person under that ID (carol/1).
func TestStrangerIDSuppressesNothing(t *testing.T) {
	w, alice, alice2, bob := adoptionWorld(t)
	alice9, carol := w.device("alice/9"), w.device("carol/1")
	w.net.DropNext(alice2.addr, bob.addr, 1)
	id := alice2.enqueue(bob, "sent from the phone")
	alice.sync()
	frame, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: []byte("sent from the phone")})
	if err != nil {
		t.Fatal(err)
	}
	alice9.raw(bob, frame)
	carol.raw(bob, frame)
	res := bob.sync()
	for _, from := range []*device{alice9, carol} {
		if got := resultsFor(res, from.addr, id); len(got) != 1 || got[0] != engine.ResultDelivery {
			t.Fatalf("bob's receive from %s: %v, want a delivery", from.addr, got)
		}
	}
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	before := bob.pendingIn()
	res = bob.sync()
	if got := resultsFor(res, alice.addr, id); len(got) != 1 || got[0] != engine.ResultDelivery {
		t.Fatalf("bob's receive of alice/1's resend: %v, want a delivery (a stranger's ID suppresses nothing)", got)
	}
	if n := bob.pendingIn(); n != before+1 {
		t.Fatalf("bob holds %d messages pending after alice/1's resend, want %d (it is new)", n, before+1)
	}
}

// discardAll discards every pending received message.
func (d *device) discardAll() {
	d.w.t.Helper()
	msgs, err := d.c.PendingInbound(d.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		d.w.t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := d.c.Discard(d.w.ctx, m.Sender, m.ID, engine.DiscardRejected); err != nil {
			d.w.t.Fatalf("%s discards %x: %v", d.addr, m.ID, err)
		}
	}
}

// TestLateOriginalAfterAdoption: the relay holds alice/2's envelope back
// until bob took alice/1's resend. alice/2's original, from a device the
// list now revokes, arrives after: it is the same message (acknowledged,
// not delivered again), and bob's history holds it once.
func TestLateOriginalAfterAdoption(t *testing.T) {
	w, alice, alice2, bob := adoptionWorld(t)
	w.net.Hold(bob.addr)
	id := alice2.enqueue(bob, "sent from the phone")
	alice.sync()
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if err := bob.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(w.net.Held(bob.addr)); n != 2 {
		t.Fatalf("the relay holds %d envelopes for bob, want alice/2's and alice/1's", n)
	}
	w.net.DeliverHeld(bob.addr, 1)
	res := bob.sync()
	if got := resultsFor(res, alice.addr, id); len(got) != 1 || got[0] != engine.ResultDelivery {
		t.Fatalf("bob's receive of the resend: %v, want a delivery", got)
	}
	bob.commitAll()
	w.net.Release(bob.addr)
	res = bob.sync()
	if got := resultsFor(res, alice2.addr, id); len(got) != 1 || got[0] != engine.ResultAlreadyCommitted {
		t.Fatalf("bob's receive of alice/2's late original: %v, want already committed", got)
	}
	if n := bob.pendingIn(); n != 0 {
		t.Fatalf("bob holds %d messages pending, want none", n)
	}
	if got := bob.received(alice); len(got) != 1 {
		t.Fatalf("bob's history from alice: %q, want the message once", got)
	}
	alice.sync()
	if e := ownEntry(t, alice, bob.addr, id); e.State != engine.SentAcknowledged {
		t.Errorf("alice/1's entry is %v, want acknowledged", e.State)
	}
}

// TestSiblingDecisionOnTheOriginalDecidesTheResend: bob has two devices.
// bob/2 holds alice/2's message; bob/1's lane of it was lost, so bob/1
// gets alice/1's adopted resend instead. bob/2 commits: its decision
// names alice/2, and bob/1 applies it to the message it holds from
// alice/1 (the same message of alice's), without asking.
func TestSiblingDecisionOnTheOriginalDecidesTheResend(t *testing.T) {
	w, alice, alice2, bob := adoptionWorld(t)
	a, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	bob2 := w.linkDevice(bob)
	for _, d := range []*device{alice, alice2} {
		if err := d.c.CheckPeer(w.ctx, bob.addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := bob2.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	w.net.DropNext(alice2.addr, bob.addr, 1)
	id := alice2.enqueue(bob, "sent from the phone")
	alice.sync()
	bob2.sync()
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if n := bob.pendingIn(); n != 1 {
		t.Fatalf("bob/1 holds %d messages pending, want alice/1's resend", n)
	}
	if _, err := bob2.c.Commit(w.ctx, alice2.addr, id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob2.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.sync()
	if n := bob.pendingIn(); n != 0 {
		t.Fatalf("bob/1 holds %d messages pending after bob/2's commit, want none (decided there)", n)
	}
	if got := bob.received(alice); len(got) != 1 {
		t.Fatalf("bob/1's history from alice: %q, want the message once", got)
	}
	bob2.sync()
	if got := bob2.received(alice); len(got) != 1 {
		t.Fatalf("bob/2's history from alice: %q, want the message once", got)
	}
}
