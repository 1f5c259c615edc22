package engine_test

import (
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// adoptionWorld is alice with two devices (alice/2 linked from alice/1,
// which holds the account key) and bob, who holds alice's list; alice/1
// holds bob's (she talks with him: adoption resends to no stranger).
func adoptionWorld(t *testing.T) (w *world, alice, alice2, bob *device) {
	t.Helper()
	w = newWorld(t)
	alice, bob = w.device("alice/1"), w.device("bob/1")
	alice2 = listedWorld(t, w, alice, bob)
	return w, alice, alice2, bob
}

// listedWorld publishes the lists of alice and bob, has alice hold bob's,
// links alice/2 and has bob hold alice's list naming it; it returns
// alice/2.
func listedWorld(t *testing.T, w *world, alice, bob *device) *device {
	t.Helper()
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	alice2 := w.linkDevice(alice)
	if err := bob.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	return alice2
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
	oneGoroutine(t)
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
	oneGoroutine(t)
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
	oneGoroutine(t)
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
	oneGoroutine(t)
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
	oneGoroutine(t)
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

// TestForgedFirstListBeforeTheReceiveIsHeldNowhere: bob has never heard
// from alice when alice/1 and alice/2 both write to him, and the relay
// serves, as alice's list, one another account signed naming only alice/5.
// bob fetches a first list before the receive (two of alice's devices
// wrote: a deduplication by person is possible) but holds nothing from
// it: both messages are delivered and pin their senders, the forged list
// is then refused against the pins, and alice's own list is taken after.
func TestForgedFirstListBeforeTheReceiveIsHeldNowhere(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	a, err := engine.LoadAccount(w.ctx, alice.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	alice2 := w.linkDevice(alice)
	real, err := engine.LoadAccount(w.ctx, alice.st)
	if err != nil {
		t.Fatal(err)
	}
	id1 := alice.send(bob, "from the laptop")
	id2 := alice2.send(bob, "from the phone")
	fake, err := engine.LoadAccount(w.ctx, w.device("alice/5").st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(fake.List); err != nil {
		t.Fatal(err)
	}
	res := bob.sync()
	for _, m := range []struct {
		from *device
		id   wire.LogicalID
	}{{alice, id1}, {alice2, id2}} {
		if got := resultsFor(res, m.from.addr, m.id); len(got) != 1 || got[0] != engine.ResultDelivery {
			t.Fatalf("bob's receive from %s: %v, want a delivery", m.from.addr, got)
		}
	}
	if _, held, err := bob.st.PeerAccount(w.ctx, "alice"); err != nil || held {
		t.Fatalf("bob holds a list for alice after the relay served a forged one (%v, %v)", held, err)
	}
	if err := w.net.SetDeviceList(real.List); err != nil {
		t.Fatal(err)
	}
	bob.reopen() // a new connection asks again
	if err := bob.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatalf("CheckPeer(alice/1) with alice's own list: %v", err)
	}
	held, ok, err := bob.st.PeerAccount(w.ctx, "alice")
	if err != nil || !ok || held.List.Generation != real.List.Generation {
		t.Fatalf("bob holds %+v (%v, %v) for alice, want her own list", held.List, ok, err)
	}
}

// TestUnlistedSiblingChecksTheHeldList: bob holds alice's list naming
// alice/1 alone and keeps his connection while alice links alice/2, whose
// message reaches him; alice then removes alice/2 and alice/1 adopts the
// message. Before processing alice/2's envelope bob asks the relay for a
// list later than his (the device is not named in it) and holds the one
// naming alice/2, so the resend is the same message: bob holds it once.
// Without the check the list stays stale for the connection, the resend
// matches nothing and is delivered twice.
func TestUnlistedSiblingChecksTheHeldList(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob := w.device("alice/1"), w.device("bob/1")
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if err := bob.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	bob.sync() // the connection's checks are spent
	alice2 := w.linkDevice(alice)
	id := alice2.enqueue(bob, "sent from the phone")
	res := bob.sync()
	if got := resultsFor(res, alice2.addr, id); len(got) != 1 || got[0] != engine.ResultDelivery {
		t.Fatalf("bob's receive from alice/2: %v, want a delivery", got)
	}
	held, ok, err := bob.st.PeerAccount(w.ctx, "alice")
	if err != nil || !ok {
		t.Fatalf("bob holds no list for alice (%v, %v)", ok, err)
	}
	if _, named := findNamed(held.List, alice2.addr.Device); !named {
		t.Fatalf("bob's list for alice (generation %d) does not name alice/2 after its message", held.List.Generation)
	}
	alice.sync()
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	res = bob.sync()
	if got := resultsFor(res, alice.addr, id); len(got) != 1 || got[0] == engine.ResultDelivery && bob.pendingIn() != 1 {
		t.Fatalf("bob's receive of the resend: %v with %d pending, want one message held", got, bob.pendingIn())
	}
	bob.commitAll()
	if got := bob.received(alice); len(got) != 1 {
		t.Fatalf("bob's history from alice: %q, want the message once", got)
	}
}

// findNamed reports whether l names device number n (active or revoked).
func findNamed(l wire.DeviceList, n uint32) (wire.DeviceEntry, bool) {
	for _, e := range l.Entries {
		if e.Number == n {
			return e, true
		}
	}
	return wire.DeviceEntry{}, false
}

// TestSiblingWithAnotherBodySuppressesNothing: bob holds alice/2's message
// when alice/1 (a listed sibling, compromised say) sends one under its ID
// with another body. An adopted resend always carries the copy's body, so
// this is no resend: it is a new message from alice/1, delivered, and
// alice/2's stays as it was (not dropped as a conflict either way).
func TestSiblingWithAnotherBodySuppressesNothing(t *testing.T) {
	oneGoroutine(t)
	_, alice, alice2, bob := adoptionWorld(t)
	id := alice2.enqueue(bob, "sent from the phone")
	bob.sync()
	frame, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: []byte("another text")})
	if err != nil {
		t.Fatal(err)
	}
	alice.raw(bob, frame)
	res := bob.sync()
	if got := resultsFor(res, alice.addr, id); len(got) != 1 || got[0] != engine.ResultDelivery {
		t.Fatalf("bob's receive of alice/1's other body: %v, want a delivery", got)
	}
	if n := bob.pendingIn(); n != 2 {
		t.Fatalf("bob holds %d messages pending, want both", n)
	}
}

// TestAdoptionBoundedByBytes: alice/2 sent bob more large messages than
// MaxAdoptedBytes of frames holds, all lost. The removal stores the
// revoking list and adopts the newest that fit, no more: the transaction
// that stores the list stays small.
func TestAdoptionBoundedByBytes(t *testing.T) {
	oneGoroutine(t)
	w, alice, alice2, bob := adoptionWorld(t)
	const size, count = 150 << 10, 30
	w.net.DropNext(alice2.addr, bob.addr, count)
	body := string(make([]byte, size))
	for i := 0; i < count; i++ {
		alice2.enqueue(bob, body)
	}
	alice.sync()
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	a, err := engine.LoadAccount(w.ctx, alice.st)
	if err != nil {
		t.Fatal(err)
	}
	if len(engine.ActiveAddresses(a.List)) != 1 {
		t.Fatalf("alice/1's list names %v active after the removal, want alice/1 alone", engine.ActiveAddresses(a.List))
	}
	n := alice.pendingOut()
	if n == 0 || n*size > engine.MaxAdoptedBytes || n >= count {
		t.Fatalf("alice/1 adopted %d messages of %d bytes, want some, at most %d bytes of them", n, size, engine.MaxAdoptedBytes)
	}
}

// TestCopyToAStrangerIsNotAdopted: alice/2 (stolen, say) claims to have
// sent carol, whom alice/1 never talked with, a message whose envelope is
// lost. The removal resends alice/1's own conversations' copies only:
// nothing goes to carol, and alice/1 keeps the copy as a copy.
func TestCopyToAStrangerIsNotAdopted(t *testing.T) {
	oneGoroutine(t)
	w, alice, alice2, _ := adoptionWorld(t)
	carol := w.device("carol/1")
	w.net.DropNext(alice2.addr, carol.addr, 1)
	id := alice2.enqueue(carol, "to a stranger of alice/1")
	alice.sync()
	if e := ownEntry(t, alice, carol.addr, id); e.State != engine.SentCopied {
		t.Fatalf("alice/1's entry of the copy is %v, want copied", e.State)
	}
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Fatalf("alice/1 has %d lanes pending after the removal, want none to carol", n)
	}
	if e := ownEntry(t, alice, carol.addr, id); e.State != engine.SentCopied {
		t.Fatalf("alice/1's entry is %v after the removal, want still copied", e.State)
	}
}

// TestResendOfARequestStaysInTheRequest: bob, in request mode, holds
// alice/2's message in her request (not accepted); alice/1 adopts it. The
// resend repeats alice/2's record, so it is judged by alice/2's request:
// still a request, never surfaced as a delivery from alice/1.
func TestResendOfARequestStaysInTheRequest(t *testing.T) {
	oneGoroutine(t)
	w, alice, alice2, bob := adoptionWorld(t)
	bob.withRequests(nil)
	id := alice2.enqueue(bob, "sent from the phone")
	if got := resultsFor(bob.sync(), alice2.addr, id); len(got) != 1 || got[0] != engine.ResultRequest {
		t.Fatalf("bob's receive from alice/2: %v, want a request", got)
	}
	alice.sync()
	if _, err := alice.c.RemoveDevice(w.ctx, alice2.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := resultsFor(bob.sync(), alice.addr, id); len(got) != 1 || got[0] != engine.ResultRequest {
		t.Fatalf("bob's receive of alice/1's resend: %v, want a request (alice/2's is open)", got)
	}
}
