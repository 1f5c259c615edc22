package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// TestAckAfterLinkAddsLanes: alice holds bob's list naming bob/1 alone
// and has a message pending to bob. bob links bob/2, then bob/1 commits
// the message and acknowledges it. On alice's same connection (no list
// check is due), the round that takes that ACK first asks the relay for
// bob's latest list: the message gets its lane to bob/2 before bob/1's
// ACK clears bob/1's, and bob/2 receives it once (issue 34: nothing in
// flight at a link is lost to the new device).
func TestAckAfterLinkAddsLanes(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	a, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	id := alice.enqueue(bob, "in flight at the link")
	alice.sync() // the round after the send checks generation 1: current
	bob.sync()

	linkInWorld(t, bob, bob2)
	bob.commitAll() // the ACK goes to alice
	alice.sync()
	if held, _, _ := alice.c.PeerAccount(w.ctx, "bob"); held.List.Generation != 2 {
		t.Fatalf("alice holds generation %d of bob's list after the ACK's round, want 2", held.List.Generation)
	}
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LaneAcknowledged || got["bob/2"] != engine.LanePending {
		t.Fatalf("alice's lanes after bob/1's ACK: %v, want bob/1 acknowledged and bob/2 pending", got)
	}
	bob2.sync()
	bob2.commitAll()
	if got := bob2.received(alice); len(got) != 1 || got[0] != "in flight at the link" {
		t.Fatalf("bob/2 received %q, want the message once", got)
	}
	alice.sync()
	if n := alice.pendingOut(); n != 0 {
		t.Errorf("alice has %d lanes pending after both ACKs", n)
	}
}

// TestImportedMessageIsNotDeliveredAgain: a message bob sent alice is in
// her history only because a history was imported (the archive of a link
// or a restore: no finalized record travels), and then arrives on a lane
// (bob added one for the new device before device 1's ACK reached him).
// It is not delivered a second time: the receive reports it committed
// and acknowledges it, and bob's lane clears.
func TestImportedMessageIsNotDeliveredAgain(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	id := bob.enqueue(alice, "in the archive and on a lane")
	archive := [16]byte{1}
	now := w.clock.Now()
	if _, err := alice.st.Apply(w.ctx, engine.ImportStart{Archive: archive, Total: 1, At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.st.Apply(w.ctx, engine.ImportRecords{Archive: archive, From: 0, To: 1, Total: 1, Records: []wire.ArchiveRecord{
		wire.ArchiveMessage{Peer: "bob/1", Direction: uint8(engine.DirectionIn), ID: id, At: now.UnixNano(), Body: []byte("in the archive and on a lane")},
	}}); err != nil {
		t.Fatal(err)
	}
	res := alice.sync()
	if len(res) != 1 || res[0].Kind != engine.ResultAlreadyCommitted || res[0].ID != id {
		t.Fatalf("alice's receive of the imported message: %+v, want it already committed", res)
	}
	if n := alice.pendingIn(); n != 0 {
		t.Fatalf("alice holds %d messages pending, want none", n)
	}
	bob.sync()
	if n := bob.pendingOut(); n != 0 {
		t.Errorf("bob has %d messages pending after alice's ACK", n)
	}
	if got := alice.received(bob); len(got) != 1 {
		t.Errorf("alice's history from bob: %q, want the message once", got)
	}
}

// quietListChecking is listChecking on a relay that signals nothing: an
// idle loop then sleeps until its maintenance check (minutes), as over a
// relay whose push has nothing to say.
type quietListChecking struct {
	listChecking
	quiet    chan struct{}
	receives *atomic.Int64
}

func (q quietListChecking) Wake() <-chan struct{} { return q.quiet }

func (q quietListChecking) Receive(ctx context.Context) ([]engine.Leased, error) {
	defer q.receives.Add(1)
	return q.listChecking.Receive(ctx)
}

// TestSendAsksForTheListCheckAtOnce: alice's loop runs, idle, over a
// relay that signals nothing. bob links bob/2; alice stores a message to
// bob. The send itself asks the loop for its round, whose stale-list
// answer gives the message its lane to bob/2 without waiting for the
// relay's next signal or the maintenance check.
func TestSendAsksForTheListCheckAtOnce(t *testing.T) {
	w := newWorld(t)
	quiet, receives := make(chan struct{}), &atomic.Int64{}
	w.relay = func(addr engine.Address, ep *enginetest.Endpoint) engine.Relay {
		if addr.User != "alice" {
			return listChecking{ep}
		}
		return quietListChecking{listChecking{ep}, quiet, receives}
	}
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	a, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { defer close(done); alice.c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// The loop's first round (which takes nothing) before the link, so
	// that only the send can ask for the next.
	for receives.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)

	linkInWorld(t, bob, bob2)
	id, err := alice.c.Enqueue(ctx, []engine.SendRequest{{Peer: bob.addr, Body: []byte("after the link")}})
	if err != nil || id[0].Err != nil {
		t.Fatalf("enqueue: %v %v", err, id)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if held, _, _ := alice.c.PeerAccount(w.ctx, "bob"); held.List.Generation == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's idle loop never asked the relay about bob's list after the send")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, ok := lanesOf(t, alice, bob.addr, id[0].ID)["bob/2"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the message never got its lane to bob/2")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
