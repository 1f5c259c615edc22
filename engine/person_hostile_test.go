package engine_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestStrangerUnderOwnNameCannotSpeakForThisPerson: a device registered
// under bob's name that bob's account never listed (bob/9, as any stranger
// can register at a relay that does not keep device lists) sends bob/1 a
// sent copy and a decision. Both are dropped as not from an own device:
// no message appears in bob's conversation with alice as sent by him, and
// alice's pending message stays pending instead of being discarded
// without bob asking.
func TestStrangerUnderOwnNameCannotSpeakForThisPerson(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("bob/9")
	id := alice.send(bob, "hello bob")
	bob.sync()
	if got := bob.pendingIn(); got != 1 {
		t.Fatalf("bob holds %d pending messages, want alice's one", got)
	}

	var copyID, decisionID wire.LogicalID
	copyID[0], decisionID[0] = 1, 2
	cp, err := wire.EncodeSentCopy(wire.SentCopy{ID: copyID, To: "alice/1", Body: []byte("forged by mallory")})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wire.EncodeDecision(wire.Decision{ID: decisionID, Sender: "alice/1", Message: id, Outcome: wire.DecisionDiscarded})
	if err != nil {
		t.Fatal(err)
	}
	mallory.raw(bob, cp)
	mallory.raw(bob, dec)
	res := bob.sync()
	refused := 0
	for _, err := range errorsIn(res) {
		if errors.Is(err, engine.ErrNotOwnDevice) {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("bob refused %d frames as not from an own device, want 2: %v", refused, res)
	}
	for _, r := range res {
		if r.Kind == engine.ResultSentCopy || r.Kind == engine.ResultDecisionHeard || r.Kind == engine.ResultDecided {
			t.Fatalf("bob took a frame from bob/9 as his own device's: %+v", r)
		}
	}
	if got := bob.pendingIn(); got != 1 {
		t.Fatalf("bob holds %d pending messages after the forged decision, want alice's still pending", got)
	}
	h, err := bob.c.History(w.ctx, alice.addr, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h {
		if string(e.Body) == "forged by mallory" {
			t.Fatalf("bob's history with alice holds the forged copy: %+v", e)
		}
	}
}

// TestFirstListMustNameThePinnedDevices: alice talks to bob/1, then the
// relay serves, as bob's device list, one that another account signed
// naming only bob/5 (a device it controls). Alice refuses to hold it
// (ErrNotInDeviceList): it does not name bob/1 with the identity she
// pinned, so her sends to bob stay on bob/1 and never reach bob/5.
func TestFirstListMustNameThePinnedDevices(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("bob/5")
	alice.send(bob, "hello bob")
	bob.sync()
	fake, err := engine.LoadAccount(w.ctx, mallory.st)
	if err != nil {
		t.Fatal(err)
	}
	if fake.List.User != "bob" {
		t.Fatalf("bob/5's list is of %q", fake.List.User)
	}
	if err := w.net.SetDeviceList(fake.List); err != nil {
		t.Fatal(err)
	}
	if err := alice.c.CheckPeer(w.ctx, bob.addr); !errors.Is(err, engine.ErrNotInDeviceList) {
		t.Fatalf("CheckPeer(bob/1) with a list naming bob/5 alone = %v, want ErrNotInDeviceList", err)
	}
	if _, held, err := alice.st.PeerAccount(w.ctx, "bob"); err != nil || held {
		t.Fatalf("alice holds a list for bob after refusing it (%v, %v)", held, err)
	}

	// bob's own list, which names bob/1 with his identity, is taken.
	real, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(real.List); err != nil {
		t.Fatal(err)
	}
	alice.reopen() // a new connection asks again
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatalf("CheckPeer(bob/1) with bob's own list: %v", err)
	}
	if _, held, err := alice.st.PeerAccount(w.ctx, "bob"); err != nil || !held {
		t.Fatalf("alice holds no list for bob after his own (%v, %v)", held, err)
	}
}

// TestSafetyNumberFromAccounts: once each holds the other's device list,
// alice and bob see one safety number computed from their account keys;
// before, each sees the number of the two devices' identities (its basis
// says so), so two people can tell why their numbers differ; and so does
// alice once a device under bob's name that his list does not name is
// pinned here.
func TestSafetyNumberFromAccounts(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello bob")
	bob.sync()
	bob.send(alice, "hello alice")
	alice.sync()
	before, err := alice.c.Safety(w.ctx, bob.addr)
	if err != nil || before.Basis != engine.SafetyDevices {
		t.Fatalf("alice's safety number before any list: %+v, %v; want the devices' basis", before, err)
	}
	for _, d := range []*device{alice, bob} {
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
		d.reopen()
	}
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	if err := bob.c.CheckPeer(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	a, err := alice.c.Safety(w.ctx, bob.addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bob.c.Safety(w.ctx, alice.addr)
	if err != nil {
		t.Fatal(err)
	}
	if a.Basis != engine.SafetyAccounts || a != b {
		t.Fatalf("safety numbers %+v (alice) and %+v (bob), want one number from the accounts", a, b)
	}
	if a.Number == before.Number {
		t.Fatal("the accounts' number is the devices' one")
	}

	// A device under bob's name that his list does not name (a relay's,
	// or a stranger's at a relay without lists) reaches alice and is
	// pinned on first use: the accounts' number no longer speaks for
	// every session alice has with bob, so she sees the devices' one.
	mallory := w.device("bob/9")
	mallory.send(alice, "it is me, bob")
	alice.sync()
	if got, err := alice.c.Safety(w.ctx, bob.addr); err != nil || got.Basis != engine.SafetyDevices {
		t.Fatalf("alice's safety number with bob once bob/9 is pinned: %+v, %v; want the devices' basis", got, err)
	}
}

// TestInitiationFromAnUnlistedKeyIsRefused: alice holds bob's list, which
// names bob/2 with the keys of bob's real second device. A device with
// other keys starts a session as bob/2 (a relay making up a session under
// a listed address): alice refuses it and pins nothing, so her person
// lanes to bob/2 can never go on a session with the impostor.
func TestInitiationFromAnUnlistedKeyIsRefused(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello bob")
	bob.sync()
	acct, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	real2, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := engine.NextDeviceList(acct.Key, acct.List, engine.DeviceEntryFor(real2, "bob", acct.List.AccountKey, 2, w.clock.Now().Unix()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(list); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	impostor := w.device("bob/2")
	impostor.send(alice, "it is me, bob, on my laptop")
	refused := 0
	for _, err := range errorsIn(alice.sync()) {
		if errors.Is(err, engine.ErrNotInDeviceList) {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("alice refused %d initiations as not in bob's list, want 1", refused)
	}
	if _, err := alice.c.Safety(w.ctx, impostor.addr); !errors.Is(err, engine.ErrNoIdentityPinned) {
		t.Fatalf("alice's safety number with bob/2 = %v, want no identity pinned", err)
	}
	if n := alice.pendingIn(); n != 0 {
		t.Fatalf("alice holds %d pending messages, want none from the impostor", n)
	}
}

// TestLaterListMustMatchThePins: a device under bob's name that his list
// did not name yet (bob/2) was pinned on first use; a later list of bob's
// names bob/2 with other keys. Alice refuses that list: holding it would
// send bob's messages to bob/2 on the session with the identity pinned,
// not with the one bob's account vouched for.
func TestLaterListMustMatchThePins(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello bob")
	bob.sync()
	acct, err := engine.LoadAccount(w.ctx, bob.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(acct.List); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); err != nil {
		t.Fatal(err)
	}
	early := w.device("bob/2")
	early.send(alice, "bob/2 here, before any list names me")
	alice.sync()
	if _, err := alice.c.Safety(w.ctx, early.addr); err != nil {
		t.Fatalf("alice pinned nothing for bob/2: %v", err)
	}
	real2, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := engine.NextDeviceList(acct.Key, acct.List, engine.DeviceEntryFor(real2, "bob", acct.List.AccountKey, 2, w.clock.Now().Unix()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(list); err != nil {
		t.Fatal(err)
	}
	alice.reopen()
	if err := alice.c.CheckPeer(w.ctx, bob.addr); !errors.Is(err, engine.ErrNotInDeviceList) {
		t.Fatalf("CheckPeer with a list naming bob/2 with other keys than pinned = %v, want ErrNotInDeviceList", err)
	}
	if held, ok, err := alice.st.PeerAccount(w.ctx, "bob"); err != nil || !ok || held.List.Generation != acct.List.Generation {
		t.Fatalf("alice holds %+v (%v, %v), want bob's first list still", held.List.Generation, ok, err)
	}
}
