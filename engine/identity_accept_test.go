package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// bundleRelay is a relay that serves the bundles the test chooses, as a
// hostile relay can: one key when the person looks, another when the
// client fetches again. Without a choice it serves what was published,
// with no one-time prekey when bare is set.
type bundleRelay struct {
	*enginetest.Endpoint
	mu    sync.Mutex
	serve map[engine.Address]wire.Bundle
	bare  bool
}

func (r *bundleRelay) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	r.mu.Lock()
	b, ok := r.serve[peer]
	bare := r.bare
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := r.Endpoint.FetchBundle(ctx, peer)
	if bare {
		b.OneTimePreKey = nil
	}
	return b, err
}

// set makes the relay serve b for peer from now on.
func (r *bundleRelay) set(peer engine.Address, b wire.Bundle) {
	r.mu.Lock()
	r.serve[peer] = b
	r.mu.Unlock()
}

// bundleWorld is a world whose devices reach the network through
// bundleRelays.
func bundleWorld(t *testing.T, bare bool) (*world, func(engine.Address) *bundleRelay) {
	w := newWorld(t)
	var mu sync.Mutex
	relays := map[engine.Address]*bundleRelay{}
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		r := &bundleRelay{Endpoint: e, serve: map[engine.Address]wire.Bundle{}, bare: bare}
		mu.Lock()
		relays[a] = r
		mu.Unlock()
		return r
	}
	return w, func(a engine.Address) *bundleRelay {
		mu.Lock()
		defer mu.Unlock()
		return relays[a]
	}
}

// published returns the bundle the network holds for d now.
func published(t *testing.T, w *world, d *device) wire.Bundle {
	t.Helper()
	b, err := w.net.Endpoint(engine.MustParseAddress("observer/1")).FetchBundle(w.ctx, d.addr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAcceptPinsTheIdentityShown: the person compares the safety number of
// the key the relay served then; if the relay serves another key when the
// client accepts, nothing is pinned (fingerprint_mismatch), and the key
// that was shown is pinned only while the relay serves it.
func TestAcceptPinsTheIdentityShown(t *testing.T) {
	oneGoroutine(t)
	w, relayOf := bundleWorld(t, false)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	alice.send(bob, "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	old := bob.c.Identity()

	bob.c.Close()
	bob.c = nil
	newBob := w.device("bob/1") // a reinstall: the key the person is shown
	newBundle := published(t, w, newBob)
	shown, err := alice.c.RelayIdentity(w.ctx, bob.addr)
	if err != nil || shown != newBob.c.Identity() {
		t.Fatalf("RelayIdentity = %x, %v; want the new bob's", shown.SigningKey[:4], err)
	}
	mallory := w.device("bob/1") // the key the relay serves next
	relayOf(alice.addr).set(bob.addr, published(t, w, mallory))

	if _, err := alice.c.AcceptIdentity(w.ctx, bob.addr, shown.Fingerprint()); !errors.Is(err, engine.ErrFingerprintMismatch) {
		t.Fatalf("accept while the relay serves another key: %v, want ErrFingerprintMismatch", err)
	}
	if pin, err := alice.c.PinnedIdentity(w.ctx, bob.addr); err != nil || pin == nil || *pin != old {
		t.Fatalf("pinned after a refused accept: %v, %v; want the old identity still", pin, err)
	}
	if !alice.hasSession(bob) {
		t.Fatal("a refused accept removed the session")
	}
	for _, bad := range []string{"", "not a fingerprint", shown.Fingerprint()[:10]} {
		if _, err := alice.c.AcceptIdentity(w.ctx, bob.addr, bad); !errors.Is(err, engine.ErrFingerprintMismatch) {
			t.Fatalf("accept with fingerprint %q: %v, want ErrFingerprintMismatch", bad, err)
		}
	}

	// The relay serves the key shown again: that one, and only it, is
	// pinned, whatever the spacing and case of the fingerprint.
	relayOf(alice.addr).set(bob.addr, newBundle)
	loose := " " + strings.ToUpper(strings.ReplaceAll(shown.Fingerprint(), " ", "")) + " "
	key, err := alice.c.AcceptIdentity(w.ctx, bob.addr, loose)
	if err != nil || key != shown {
		t.Fatalf("accept of the key shown: %x, %v", key.SigningKey[:4], err)
	}
	if pin, _ := alice.c.PinnedIdentity(w.ctx, bob.addr); pin == nil || *pin != shown {
		t.Fatal("the key shown is not the one pinned")
	}
}

// TestAcceptRetiresTheOldInitiation: accepting a changed identity removes
// the session and retires its initiation in the same plan, as a reset
// does. After going back to the old identity, a replay of the old
// session's first PreKeyMessage is stale; before, it set the old session
// up again. (No one-time prekey in the initiation, or the replay would
// fail on the consumed key whatever the retirement said.)
func TestAcceptRetiresTheOldInitiation(t *testing.T) {
	oneGoroutine(t)
	w, relayOf := bundleWorld(t, true)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	oldBundle := published(t, w, bob)
	first := len(w.net.Seen())
	bob.send(alice, "hello")
	initiation := w.net.Seen()[first]
	alice.sync()
	alice.commitAll()
	bob.sync()
	old := alice.sessionID(bob)

	bob.c.Close()
	bob.c = nil
	newBob := w.device("bob/1")
	if _, err := alice.c.AcceptIdentity(w.ctx, bob.addr, newBob.c.Identity().Fingerprint()); err != nil {
		t.Fatal(err)
	}
	// Back to the old identity (a restored device, or a relay that serves
	// the old bundle): accepted again, with no session.
	relayOf(alice.addr).set(bob.addr, oldBundle)
	oldKey, err := alice.c.RelayIdentity(w.ctx, bob.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.AcceptIdentity(w.ctx, bob.addr, oldKey.Fingerprint()); err != nil {
		t.Fatal(err)
	}
	if alice.hasSession(bob) {
		t.Fatal("a session survived two identity changes")
	}

	w.net.Inject(alice.addr, initiation)
	res := alice.sync()
	if !hasError(res, engine.ErrStaleSessionInitiation) {
		t.Fatalf("the old session's first PreKeyMessage replayed: %+v, want stale_session_initiation", res)
	}
	if alice.hasSession(bob) && alice.sessionID(bob) == old {
		t.Fatal("the replay set the old session up again")
	}
}

// hasSession reports whether d holds a session with peer.
func (d *device) hasSession(peer *device) bool {
	d.w.t.Helper()
	has, err := d.c.HasSession(d.w.ctx, peer.addr)
	if err != nil {
		d.w.t.Fatal(err)
	}
	return has
}
