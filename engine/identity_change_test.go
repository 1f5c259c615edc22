package engine_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

// TestIdentityChangeAcceptedAndResent: bob reinstalls (a new identity for
// bob/1). Alice's pending messages cannot reach the new bob; when she meets
// the new identity she gets IdentityChanged, accepts it, and a retry resends
// the pending messages to the new identity with their old logical IDs.
func TestIdentityChangeAcceptedAndResent(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	oldSafety, err := alice.c.SafetyNumber(w.ctx, bob.addr)
	if err != nil {
		t.Fatal(err)
	}

	pending := alice.send(bob, "sent to the old bob")
	bob.c.Close()
	bob.c = nil
	newBob := w.device("bob/1") // reinstall: new profile, new identity, new bundle
	// The old session's envelope cannot be read by the new device.
	if res := newBob.sync(); count(res, engine.ResultDelivery) != 0 {
		t.Fatalf("the new bob read a message for the old one: %+v", res)
	}
	// The new bob writes first: alice meets the new identity.
	newBob.send(alice, "it's me, reinstalled")
	res := alice.sync()
	if !hasError(res, engine.ErrIdentityChanged) {
		t.Fatalf("alice's view of the new identity: %+v", res)
	}
	if got, _ := alice.c.PendingInbound(w.ctx, engine.PageQuery{Limit: 10}); len(got) != 0 {
		t.Fatal("a message from an unaccepted identity was stored")
	}
	// Sending to a new session is refused until the change is accepted.
	// (alice still has the old session, so the refusal comes on receive.)
	key, err := alice.c.AcceptIdentity(w.ctx, bob.addr, newBob.c.Identity().Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	if key != newBob.c.Identity() {
		t.Fatal("accepted another identity than the new bob's")
	}
	newSafety, _ := alice.c.SafetyNumber(w.ctx, bob.addr)
	if newSafety == oldSafety {
		t.Fatal("the safety number did not change with the identity")
	}
	ids := alice.retry(newBob)
	if len(ids) != 1 || ids[0] != pending {
		t.Fatalf("retry resent %x, want the old logical ID %x", ids, pending)
	}
	newBob.retry(alice)
	converge(t, alice, newBob)
	if got := newBob.received(alice); !reflect.DeepEqual(got, []string{"sent to the old bob"}) {
		t.Fatalf("new bob's history %q", got)
	}
	if got := alice.received(newBob); !reflect.DeepEqual(got, []string{"it's me, reinstalled"}) {
		t.Fatalf("alice's history %q", got)
	}
}

// TestIdentityChangeOnBundle: without a session, a bundle with another
// identity fails the send with IdentityChanged and stores nothing.
func TestIdentityChangeOnBundle(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	// Drop alice's session by accepting bob's (unchanged) identity, then let
	// bob reinstall: the next send fetches a bundle with a new identity.
	if _, err := alice.c.AcceptIdentity(w.ctx, bob.addr, bob.c.Identity().Fingerprint()); err != nil {
		t.Fatal(err)
	}
	bob.c.Close()
	bob.c = nil
	w.device("bob/1")
	before := w.net.Accepted()
	if _, err := alice.c.Send(w.ctx, bob.addr, []byte("x")); !errors.Is(err, engine.ErrIdentityChanged) {
		t.Fatalf("send: %v, want ErrIdentityChanged", err)
	}
	if alice.pendingOut() != 0 || w.net.Accepted() != before {
		t.Fatal("a refused send stored or sent something")
	}
}

// TestExpiredSignedPreKey: a bundle whose signed prekey expired is refused,
// and an initiation that relies on a deleted (expired) prekey fails.
func TestExpiredSignedPreKey(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	w.clock.Advance(engine.SignedPreKeyLifetime)
	if _, err := alice.c.Send(w.ctx, bob.addr, []byte("late")); !errors.Is(err, engine.ErrExpiredSignedPreKey) {
		t.Fatalf("send with an expired bundle: %v, want ErrExpiredSignedPreKey", err)
	}
	if alice.pendingOut() != 0 {
		t.Fatal("the refused send stored a message")
	}
	// Bob rotates: a fresh bundle works again.
	if err := bob.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	alice.send(bob, "after rotation")
	if res := bob.sync(); count(res, engine.ResultDelivery) != 1 {
		t.Fatalf("after rotation: %+v", res)
	}

	// An initiation made just before expiry but received after it fails.
	carol := w.device("carol/1")
	w.clock.Advance(engine.SignedPreKeyRotation) // bob's new keys are now halfway
	dave := w.device("dave/1")
	carol.send(dave, "made in time")
	w.clock.Advance(engine.SignedPreKeyLifetime + time.Hour)
	if res := dave.sync(); !hasError(res, engine.ErrExpiredSignedPreKey) {
		t.Fatalf("late initiation: %+v, want ErrExpiredSignedPreKey", res)
	}
}
