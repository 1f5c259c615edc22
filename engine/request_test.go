package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// withRequests reopens d in request mode (as profiles made by parley init
// are), on relay when it is set.
func (d *device) withRequests(relay engine.Relay) {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	st, err := store.Open(d.w.ctx, d.dir, passphrase, store.Options{})
	if err != nil {
		d.w.t.Fatal(err)
	}
	if relay == nil {
		relay = d.w.net.Endpoint(d.addr)
	}
	c, err := engine.Open(d.w.ctx, engine.Config{Store: st, Relay: relay, Now: d.w.clock.Now, Random: d.random,
		PollInterval: 10 * time.Millisecond, CapStrangers: true, Requests: true})
	if err != nil {
		d.w.t.Fatal(err)
	}
	d.c, d.st = c, st
}

// sentBy counts the envelopes the relay received from d.
func sentBy(t *testing.T, n *enginetest.Network, d *device) int {
	t.Helper()
	count := 0
	for _, raw := range n.Seen() {
		env, err := wire.DecodeEnvelope(raw)
		if err != nil {
			t.Fatal(err)
		}
		if env.Sender == d.addr.String() {
			count++
		}
	}
	return count
}

func kindsOf(res []engine.ReceiveResult) map[engine.ResultKind]int {
	k := map[engine.ResultKind]int{}
	for _, r := range res {
		k[r.Kind]++
	}
	return k
}

// TestRequestSilentUntilAccept: a stranger's two messages are one request;
// bob sends nothing at all to the stranger (no ACK, no announcement), its
// messages are neither listed nor committable; once bob accepts, they are
// ordinary pending deliveries whose commit sends the ACKs.
func TestRequestSilentUntilAccept(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	bob.withRequests(nil)
	alice.send(bob, "hello \x1b[2J")
	id := alice.send(bob, "again")
	if k := kindsOf(bob.sync()); k[engine.ResultRequest] != 2 || k[engine.ResultDelivery] != 0 {
		t.Fatalf("bob's sync: %v, want two requests and no delivery", k)
	}
	alice.sync()
	alice.retry(bob) // copies of a request's messages are no deliveries either
	if k := kindsOf(bob.sync()); k[engine.ResultRequest] != 2 || k[engine.ResultDelivery] != 0 {
		t.Fatalf("bob's sync of the copies: %v, want two requests and no delivery", k)
	}
	if n := sentBy(t, w.net, bob); n != 0 {
		t.Fatalf("bob sent %d envelopes to the relay before accepting, want none", n)
	}
	if n := bob.commitAll(); n != 0 {
		t.Fatalf("bob committed %d messages of a request", n)
	}
	if _, err := bob.c.Commit(w.ctx, alice.addr, id); !errors.Is(err, engine.ErrRequestPending) {
		t.Fatalf("Commit of a request's message: %v, want ErrRequestPending", err)
	}
	reqs, err := bob.c.Requests(w.ctx)
	if err != nil || len(reqs) != 1 || reqs[0].Peer != alice.addr || reqs[0].Count != 2 || reqs[0].Preview != `hello \u001b[2J` {
		t.Fatalf("Requests = %+v, %v; want alice's two messages with a cleaned preview", reqs, err)
	}
	if alice.pendingOut() != 2 {
		t.Fatalf("alice has %d pending, want both", alice.pendingOut())
	}
	if n, err := bob.c.AcceptRequest(w.ctx, alice.addr); n != 2 || err != nil {
		t.Fatalf("AcceptRequest = %d, %v; want 2", n, err)
	}
	if n := bob.commitAll(); n != 2 {
		t.Fatalf("bob committed %d after accepting, want 2", n)
	}
	alice.sync()
	if alice.pendingOut() != 0 || !slices.Equal(bob.received(alice), []string{"hello \x1b[2J", "again"}) {
		t.Fatalf("after accept: alice pending %d, bob's history %q", alice.pendingOut(), bob.received(alice))
	}
	// Accepted for good: the next message is a delivery.
	alice.send(bob, "later")
	if k := kindsOf(bob.sync()); k[engine.ResultDelivery] != 1 {
		t.Fatalf("after accept, bob's sync: %v, want a delivery", k)
	}
}

// TestRequestSendAccepts: writing to a requester accepts its request.
func TestRequestSendAccepts(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	bob.withRequests(nil)
	alice.send(bob, "hello")
	bob.sync()
	bob.send(alice, "hi")
	if reqs, err := bob.c.Requests(w.ctx); len(reqs) != 0 || err != nil {
		t.Fatalf("Requests after bob wrote = %+v, %v", reqs, err)
	}
	if n := bob.commitAll(); n != 1 {
		t.Fatalf("bob committed %d, want alice's message", n)
	}
	converge(t, alice, bob)
	if alice.pendingOut() != 0 || !slices.Equal(alice.received(bob), []string{"hi"}) {
		t.Fatalf("alice: pending %d, history %q", alice.pendingOut(), alice.received(bob))
	}
}

// TestRequestBlockAndSweep: a blocked stranger's later envelopes are
// dropped unopened, nothing goes back, and the relay hears of the block
// once it can; an unanswered request is swept after RequestLifetime.
func TestRequestBlockAndSweep(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	bob, mallory, carol := w.device("bob/1"), w.device("mallory/1"), w.device("carol/1")
	relay := enginetest.NewBlocker(w.net.Endpoint(bob.addr))
	relay.SetDown(true)
	bob.withRequests(relay)
	mallory.send(bob, "buy now")
	bob.sync()
	if err := bob.c.RejectRequest(w.ctx, mallory.addr, true); err != nil {
		t.Fatal(err)
	}
	if untold, err := bob.st.BlocksUntold(w.ctx); len(untold) != 1 || err != nil {
		t.Fatalf("BlocksUntold with the relay down = %v, %v; want mallory", untold, err)
	}
	relay.SetDown(false)
	if err := bob.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if untold, err := bob.st.BlocksUntold(w.ctx); len(untold) != 0 || err != nil || !relay.Blocked(mallory.addr) {
		t.Fatalf("after maintenance: untold %v, %v; relay blocks mallory: %v", untold, err, relay.Blocked(mallory.addr))
	}
	mallory.retry(bob)
	mallory.send(bob, "again")
	for _, r := range bob.sync() {
		if r.Kind != engine.ResultError || !errors.Is(r.Err, engine.ErrBlocked) {
			t.Fatalf("from a blocked sender: %+v, want a sender_blocked drop", r)
		}
	}
	if n := sentBy(t, w.net, bob); n != 0 {
		t.Fatalf("bob sent %d envelopes, want none", n)
	}
	if err := bob.c.Unblock(w.ctx, mallory.addr); err != nil {
		t.Fatal(err)
	}
	if blocks, err := bob.c.Blocks(w.ctx); len(blocks) != 0 || err != nil || relay.Blocked(mallory.addr) {
		t.Fatalf("after unblock: blocks %v, %v; relay blocks mallory: %v", blocks, err, relay.Blocked(mallory.addr))
	}
	mallory.send(bob, "sorry")
	for _, r := range bob.sync() {
		if errors.Is(r.Err, engine.ErrBlocked) {
			t.Fatalf("after unblock: %+v", r)
		}
	}

	carol.send(bob, "hello?")
	bob.sync()
	w.clock.Advance(engine.RequestLifetime - time.Hour)
	if n, err := bob.c.SweepRequests(w.ctx); n != 0 || err != nil {
		t.Fatalf("SweepRequests before the lifetime = %d, %v", n, err)
	}
	w.clock.Advance(2 * time.Hour)
	if err := bob.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if reqs, err := bob.c.Requests(w.ctx); len(reqs) != 0 || err != nil || bob.pendingIn() != 0 {
		t.Fatalf("after the lifetime: requests %+v, %v; %d pending", reqs, err, bob.pendingIn())
	}
}

// TestRequestBound: past MaxRequests open requests, a new stranger's
// message is dropped (requests_full) with an EventRequestBound, and nothing
// goes back to it; once a request is dealt with, its retry opens one.
func TestRequestBound(t *testing.T) {
	w := newWorld(t)
	bob := w.device("bob/1")
	bob.withRequests(nil)
	var strangers []*device
	for i := 0; i <= engine.MaxRequests; i++ {
		s := w.device(fmt.Sprintf("s%d/1", i))
		s.send(bob, "hello")
		strangers = append(strangers, s)
	}
	full := 0
	for _, r := range bob.sync() {
		if r.Kind == engine.ResultError && errors.Is(r.Err, engine.ErrRequestBound) {
			full++
		}
	}
	bound := 0
	for drained := false; !drained; {
		select {
		case e := <-bob.c.Events():
			if e.Kind == engine.EventRequestBound && e.Op == "requests" {
				bound++
			}
		default:
			drained = true
		}
	}
	reqs, err := bob.c.Requests(w.ctx)
	if err != nil || len(reqs) != engine.MaxRequests || full != 1 || bound != 1 {
		t.Fatalf("%d requests (%v), %d dropped as full, %d bound events; want %d, 1, 1", len(reqs), err, full, bound, engine.MaxRequests)
	}
	if n := sentBy(t, w.net, bob); n != 0 {
		t.Fatalf("bob sent %d envelopes", n)
	}
	if err := bob.c.RejectRequest(w.ctx, reqs[0].Peer, false); err != nil {
		t.Fatal(err)
	}
	strangers[engine.MaxRequests].retry(bob)
	if k := kindsOf(bob.sync()); k[engine.ResultRequest] != 1 {
		t.Fatalf("the retry after a reject made room: %v, want a request", k)
	}
}

// TestRequestGroupMembersAccepted: a group run by a peer bob accepted
// accepts its members for the group's messages: carol, whom bob never
// accepted, writes to alice's group and bob gets a delivery (committed and
// acknowledged as any), while her one-to-one message still waits as a
// request; a group a stranger made accepts nobody.
func TestRequestGroupMembersAccepted(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	bob.withRequests(nil)
	if _, err := bob.c.AcceptRequest(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	sent, err := carol.c.SendGroup(w.ctx, info.ID, []byte("hi from carol"))
	if err != nil || len(sent.Unsent) != 0 {
		t.Fatalf("carol's group send: %v, unsent %v", err, sent.Unsent)
	}
	if k := kindsOf(bob.sync()); k[engine.ResultDelivery] != 1 || k[engine.ResultRequest] != 0 {
		t.Fatalf("bob's sync of carol's group message: %v, want one delivery and no request", k)
	}
	settle(t, 5, alice, bob, carol)
	if got := carol.lanes(info.ID, sent.ID); got["bob/1"] != "acknowledged" {
		t.Fatalf("carol's lanes %v, want bob's acknowledged", got)
	}
	if h := bob.groupHistory(info.ID); !slices.Contains(h, "carol/1:hi from carol") {
		t.Fatalf("bob's group history %v", h)
	}
	carol.send(bob, "and privately")
	if k := kindsOf(bob.sync()); k[engine.ResultRequest] != 1 || k[engine.ResultDelivery] != 0 {
		t.Fatalf("bob's sync of carol's one-to-one message: %v, want a request", k)
	}

	// A group a stranger made vouches for nobody: dave adds bob to his own
	// group, and the roster change itself waits as dave's request,
	// unacknowledged; dave's message to the group is held (bob keeps no such
	// group) and never reaches bob's history before he accepts dave.
	dave := w.device("dave/1")
	spam, created, err := dave.c.CreateGroup(w.ctx, "offers", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	if k := kindsOf(bob.sync()); k[engine.ResultRequest] != 1 || k[engine.ResultGroupChanged] != 0 {
		t.Fatalf("bob's sync of a stranger's group creation: %v, want a request", k)
	}
	if acked(dave.sync(), created.ID) {
		t.Fatalf("dave's creation was acknowledged by bob before he accepted dave")
	}
	if _, err := bob.c.Group(w.ctx, spam.ID); !errors.Is(err, engine.ErrUnknownGroup) {
		t.Fatalf("bob keeps the stranger's group before accepting: %v", err)
	}
	if _, err := dave.c.SendGroup(w.ctx, spam.ID, []byte("buy now")); err != nil {
		t.Fatal(err)
	}
	if k := kindsOf(bob.sync()); k[engine.ResultDelivery] != 0 {
		t.Fatalf("bob's sync of a stranger's group message: %v, want nothing delivered", k)
	}
	if h := bob.groupHistory(spam.ID); len(h) != 0 {
		t.Fatalf("bob's history of the stranger's group: %v, want nothing before accept", h)
	}
	// Accepting dave applies the creation that waited (and acknowledges
	// it); the held message is then delivered.
	if _, err := bob.c.AcceptRequest(w.ctx, dave.addr); err != nil {
		t.Fatal(err)
	}
	g, err := bob.c.Group(w.ctx, spam.ID)
	if err != nil || !g.Roster.Has("bob/1") || !g.Roster.IsAdmin("dave/1") {
		t.Fatalf("bob's group after accepting dave: %+v, %v", g.Roster, err)
	}
	if k := kindsOf(bob.sync()); k[engine.ResultDelivery] != 1 {
		t.Fatalf("bob's sync after accepting dave: %v, want the held message delivered", k)
	}
	if !acked(dave.sync(), created.ID) {
		t.Fatalf("dave's creation was not acknowledged once bob accepted dave")
	}
}

// acked reports whether rs clears the pending message id.
func acked(rs []engine.ReceiveResult, id wire.LogicalID) bool {
	for _, r := range rs {
		if r.Kind == engine.ResultAcknowledgement && r.ID == id && r.Cleared {
			return true
		}
	}
	return false
}
