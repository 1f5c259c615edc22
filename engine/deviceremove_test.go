package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// linkInWorld adds dev to owner's account as a finished link ceremony
// would leave owner: the next generation naming dev, countersigned with
// dev's identity, held by owner and served by the network.
func linkInWorld(t *testing.T, owner, dev *device) wire.DeviceList {
	t.Helper()
	ctx := owner.w.ctx
	a, err := engine.LoadAccount(ctx, owner.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	prof, err := dev.st.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := session.UnmarshalIdentity(prof.Identity)
	if err != nil {
		t.Fatal(err)
	}
	next, err := owner.c.AddDevice(ctx, engine.DeviceEntryFor(id, dev.addr.User, a.Key.Public(), dev.addr.Device, owner.w.clock.Now().Unix()))
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// enqueue stores a text message to peer as the command line does (on a
// lane per device of a person) and hands it off.
func (d *device) enqueue(peer *device, body string) wire.LogicalID {
	d.w.t.Helper()
	res, err := d.c.Enqueue(d.w.ctx, []engine.SendRequest{{Peer: peer.addr, Body: []byte(body)}})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		d.w.t.Fatalf("%s enqueues %q: %v", d.addr, body, err)
	}
	if _, err := d.c.Pump(d.w.ctx); err != nil {
		d.w.t.Fatalf("%s pumps: %v", d.addr, err)
	}
	return res[0].ID
}

// lanesOf returns recipient -> state of the lanes of d's message id in
// conversation conv.
func lanesOf(t *testing.T, d *device, conv engine.Address, id wire.LogicalID) map[string]engine.LaneState {
	t.Helper()
	ls, err := d.c.PersonLanes(d.w.ctx, conv, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]engine.LaneState{}
	for _, l := range ls {
		out[l.Recipient.String()] = l.State
	}
	return out
}

// TestRemovedDeviceList: the list after a removal revokes the device and
// keeps its number; what may not be removed is refused by cause.
func TestRemovedDeviceList(t *testing.T) {
	k := newDeviceKit(t)
	g1 := k.next(nil, k.entry(1))
	g2 := k.next(&g1, k.entry(1), k.entry(2))
	g3, err := engine.RemovedDeviceList(k.account, g2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.VerifyDeviceList(g3, &g2); err != nil {
		t.Fatalf("the list after the removal does not follow: %v", err)
	}
	if got := engine.ActiveAddresses(g3); len(got) != 1 || got[0].Device != 1 || len(g3.Entries) != 2 {
		t.Fatalf("generation 3 names %v active of %d entries, want alice/1 of 2", got, len(g3.Entries))
	}
	if got := engine.NextDeviceNumber(g3); got != 3 {
		t.Fatalf("the next device number after removing 2 is %d, want 3 (never reused)", got)
	}
	if got := engine.RevokedSince(&g2, g3); len(got) != 1 || got[0].String() != "alice/2" {
		t.Fatalf("RevokedSince = %v, want alice/2", got)
	}
	if got := engine.RevokedSince(&g3, g3); len(got) != 0 {
		t.Fatalf("RevokedSince of the same list = %v, want none", got)
	}
	for _, tt := range []struct {
		name   string
		key    *engine.AccountKey
		prev   wire.DeviceList
		number uint32
		err    error
	}{
		{"without the account key", nil, g2, 2, engine.ErrNotAccountHolder},
		{"a device not in the list", k.account, g2, 7, engine.ErrNoSuchDevice},
		{"a device removed already", k.account, g3, 2, engine.ErrNoSuchDevice},
		{"the last active device", k.account, g1, 1, engine.ErrDeviceListInvalid},
	} {
		if _, err := engine.RemovedDeviceList(tt.key, tt.prev, tt.number); !errors.Is(err, tt.err) {
			t.Errorf("%s: RemovedDeviceList = %v, want %v", tt.name, err, tt.err)
		}
	}
}

// TestRemoveDeviceEndsLanes: bob removes bob/2 from bob/1. His own sent
// copy to bob/2 ends removed at once; alice, holding bob's list, ends her
// pending lane to bob/2 removed when she holds the new list (her message
// stays acknowledged by bob/1), and her next message goes to bob/1 alone.
// bob/1 cannot remove itself, a device of another person, one not in the
// list, or bob/2 twice.
func TestRemoveDeviceEndsLanes(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	linkInWorld(t, bob, bob2)
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	id := alice.enqueue(bob, "to both devices")
	if got := lanesOf(t, alice, bob.addr, id); len(got) != 2 {
		t.Fatalf("alice's lanes: %v, want one per device of bob", got)
	}
	bob.sync()
	bob.commitAll()
	alice.sync()
	own := bob.enqueue(alice, "from bob")
	if got := lanesOf(t, bob, alice.addr, own); got["bob/2"] != engine.LanePending {
		t.Fatalf("bob's lanes: %v, want a pending copy to bob/2", got)
	}

	for _, tt := range []struct {
		dev string
		err error
	}{
		{"bob/1", engine.ErrRemoveSelf},
		{"alice/1", engine.ErrNoSuchDevice},
		{"bob/7", engine.ErrNoSuchDevice},
	} {
		if _, err := bob.c.RemoveDevice(w.ctx, engine.MustParseAddress(tt.dev)); !errors.Is(err, tt.err) {
			t.Errorf("RemoveDevice(%s) = %v, want %v", tt.dev, err, tt.err)
		}
	}
	l, err := bob.c.RemoveDevice(w.ctx, bob2.addr)
	if err != nil || l.Generation != 3 {
		t.Fatalf("RemoveDevice(bob/2) = generation %d, %v; want 3", l.Generation, err)
	}
	if _, err := bob.c.RemoveDevice(w.ctx, bob2.addr); !errors.Is(err, engine.ErrNoSuchDevice) {
		t.Errorf("RemoveDevice(bob/2) again = %v, want ErrNoSuchDevice", err)
	}
	if got := lanesOf(t, bob, alice.addr, own); got["bob/2"] != engine.LaneRemoved || got["alice/1"] != engine.LanePending {
		t.Errorf("bob's lanes after the removal: %v, want the copy to bob/2 removed", got)
	}

	// alice's next connection holds generation 3.
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LaneAcknowledged || got["bob/2"] != engine.LaneRemoved {
		t.Errorf("alice's lanes after bob removed bob/2: %v, want bob/1 acknowledged, bob/2 removed", got)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Errorf("alice has %d messages pending, want none to the removed device", n)
	}
	h, err := alice.c.History(w.ctx, bob.addr, 0, 10)
	if err != nil || len(h) != 1 || h[0].State != engine.SentAcknowledged {
		t.Fatalf("alice's history with bob: %+v, %v; want the message acknowledged", h, err)
	}
	alice.enqueue(bob, "after")
	if n := alice.pendingOut(); n != 1 {
		t.Errorf("alice's message after the removal is pending on %d lanes, want bob/1's alone", n)
	}
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); len(got) != 2 {
		t.Errorf("bob/1 received %q, want both messages", got)
	}
}

// TestNewerListAddsLanes: alice holds bob's list naming bob/1 alone and
// sends twice; bob/1 acknowledges the first. bob links bob/2. When alice
// holds the newer list, the message still pending gets a lane to bob/2 in
// the same transaction (the one bob/1 acknowledged does not), and bob/2
// receives it once.
func TestNewerListAddsLanes(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
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
	alice.enqueue(bob, "acknowledged early")
	bob.sync()
	bob.commitAll()
	alice.sync()
	id := alice.enqueue(bob, "still pending")
	if n := alice.pendingOut(); n != 1 {
		t.Fatalf("alice has %d messages pending, want one", n)
	}

	linkInWorld(t, bob, bob2)
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LanePending || len(got) != 2 {
		t.Fatalf("alice's lanes of the pending message after bob linked bob/2: %v, want bob/1 and bob/2 pending", got)
	}
	if n := alice.pendingOut(); n != 2 {
		t.Fatalf("alice has %d lanes pending, want the message's two", n)
	}
	if _, err := alice.c.Pump(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob2.sync()
	bob2.commitAll()
	if got := bob2.received(alice); len(got) != 1 || got[0] != "still pending" {
		t.Fatalf("bob/2 received %q, want the pending message once", got)
	}
	bob.sync()
	bob.commitAll()
	alice.sync()
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LaneAcknowledged || got["bob/2"] != engine.LaneAcknowledged {
		t.Errorf("alice's lanes after both ACKs: %v", got)
	}
	if n := alice.pendingOut(); n != 0 {
		t.Errorf("alice has %d lanes pending after both ACKs", n)
	}
}

// listChecking is a network endpoint that announces the device list kinds
// and the stale-list answer, as a relay run with --device-lists does.
type listChecking struct{ *enginetest.Endpoint }

func (listChecking) RelayFeatures() (wire.FeatureSet, bool) {
	return wire.FeatureDeviceLists | wire.FeatureDeviceListCheck, true
}

// TestStaleListAnswerAddsLanes: alice holds bob's list naming bob/1 alone.
// bob links bob/2; on the same connection (no new list check is due)
// alice sends to bob, and the round after the send tells the relay the
// generation she holds: the relay's later list comes back, and the
// message gets its lane to bob/2, which receives it once.
func TestStaleListAnswerAddsLanes(t *testing.T) {
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
	linkInWorld(t, bob, bob2)
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := alice.c.PeerAccount(w.ctx, "bob"); held.List.Generation != 1 {
		t.Fatalf("alice holds generation %d of bob's list before sending, want 1 (checked once per connection)", held.List.Generation)
	}
	id := alice.enqueue(bob, "after the link")
	alice.sync()
	if held, _, _ := alice.c.PeerAccount(w.ctx, "bob"); held.List.Generation != 2 {
		t.Fatalf("alice holds generation %d of bob's list after the round, want 2", held.List.Generation)
	}
	if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LanePending {
		t.Fatalf("alice's lanes after the stale-list answer: %v, want bob/1 and bob/2 pending", got)
	}
	bob2.sync()
	bob2.commitAll()
	if got := bob2.received(alice); len(got) != 1 || got[0] != "after the link" {
		t.Fatalf("bob/2 received %q, want the message once", got)
	}
}

// TestFirstListAddsLanes: the relay holds no list of bob when alice first
// asks on this connection, so she holds none and sends to bob/1 alone
// (the round after it fetches again and finds none). bob links bob/2 and
// publishes his list; alice's next send, a minute on, is followed by a
// fetch (she holds no generation to check), and the first list she holds
// adds lanes to bob/2 for both messages pending, the one sent before the
// list as well. bob/2 receives each once.
func TestFirstListAddsLanes(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return listChecking{ep} }
	alice, bob, bob2 := w.device("alice/1"), w.device("bob/1"), w.device("bob/2")
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); ok {
		t.Fatal("alice holds a list of bob the relay does not have")
	}
	first := alice.enqueue(bob, "before the list")
	alice.sync()
	linkInWorld(t, bob, bob2)
	w.clock.Advance(engine.NoListRefetch)
	second := alice.enqueue(bob, "after the link")
	alice.sync()
	if held, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); !ok || held.List.Generation != 2 {
		t.Fatalf("alice holds generation %d of bob's list (held %v) after the round, want 2", held.List.Generation, ok)
	}
	for _, id := range []wire.LogicalID{first, second} {
		if got := lanesOf(t, alice, bob.addr, id); got["bob/1"] != engine.LanePending || got["bob/2"] != engine.LanePending {
			t.Fatalf("alice's lanes of %x after the first list: %v, want bob/1 and bob/2 pending", id[:4], got)
		}
	}
	bob2.sync()
	bob2.commitAll()
	got := bob2.received(alice)
	slices.Sort(got)
	if len(got) != 2 || got[0] != "after the link" || got[1] != "before the list" {
		t.Fatalf("bob/2 received %q, want each message once", got)
	}
}

// fetchCounting is listChecking counting the fetches of each user's list.
type fetchCounting struct {
	listChecking
	fetched map[string]int
}

func (f fetchCounting) FetchDeviceList(ctx context.Context, user string) (wire.DeviceList, error) {
	f.fetched[user]++
	return f.listChecking.FetchDeviceList(ctx, user)
}

// TestUnlistedFetchIsSpaced: bob never publishes a list. Each of alice's
// sends to him is followed by a round, but the rounds fetch his list at
// most once per engine.NoListRefetch on the connection, not after every
// send: ten sends in a row cost the one fetch of the first send's round
// (CheckPeer's once-per-connection fetch aside), and a send after the
// interval costs one more.
func TestUnlistedFetchIsSpaced(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	fetched := map[string]int{}
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay {
		return fetchCounting{listChecking{ep}, fetched}
	}
	alice, bob := w.device("alice/1"), w.device("bob/1")
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	base := fetched["bob"]
	for i := range 10 {
		alice.enqueue(bob, fmt.Sprintf("message %d", i))
		alice.sync()
	}
	if n := fetched["bob"] - base; n != 1 {
		t.Fatalf("alice fetched bob's list %d times after ten sends, want once", n)
	}
	w.clock.Advance(engine.NoListRefetch)
	alice.enqueue(bob, "a minute on")
	alice.sync()
	alice.sync()
	if n := fetched["bob"] - base; n != 2 {
		t.Fatalf("alice fetched bob's list %d times after a send a minute on, want twice", n)
	}
	if _, ok, _ := alice.c.PeerAccount(w.ctx, "bob"); ok {
		t.Fatal("alice holds a list of bob, who published none")
	}
}
