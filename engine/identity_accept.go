package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/wire"
)

// Identity acceptance. A peer's identity as the relay states it comes from
// its bundle, fetched and verified in one place (fetchBundle): a session is
// set up from it (ensureSession), an interface shows it beside a changed
// identity (RelayIdentity), and the user accepts it in place of the pin
// (AcceptIdentity).

// fetchBundle fetches peer's bundle from the relay and verifies it: the
// signatures, the prekeys' expiry, and that it is peer's. It returns the
// bundle and the identity it carries; it pins nothing.
func (c *Client) fetchBundle(ctx context.Context, peer Address) (wire.Bundle, IdentityKey, error) {
	bundle, err := c.relay.FetchBundle(ctx, peer)
	if err != nil {
		return wire.Bundle{}, IdentityKey{}, bundleError(peer, err)
	}
	addr, key, err := VerifyBundle(bundle, c.cfg.Now())
	if err != nil {
		return wire.Bundle{}, IdentityKey{}, err
	}
	if addr != peer {
		return wire.Bundle{}, IdentityKey{}, fmt.Errorf("bundle for %s names %s: %w", peer, addr, ErrBadSignature)
	}
	if err := c.checkListed(ctx, peer, key); err != nil {
		return wire.Bundle{}, IdentityKey{}, err
	}
	return bundle, key, nil
}

// bundleError reports a failed bundle fetch for peer: the relay's own words
// when it says the peer is not registered, which name the peer already.
func bundleError(peer Address, err error) error {
	if errors.Is(err, ErrPeerNotRegistered) {
		return err
	}
	return fmt.Errorf("fetch bundle of %s: %w", peer, err)
}

// RelayIdentity reads and verifies the identity that peer's bundle at the
// relay carries, without pinning anything: what an interface shows (its
// safety number) next to a changed identity before the user accepts it.
func (c *Client) RelayIdentity(ctx context.Context, peer Address) (IdentityKey, error) {
	_, key, err := c.fetchBundle(ctx, peer)
	return key, err
}

// AcceptIdentity accepts in place of the pin the identity that peer's relay
// bundle carries, provided it is the one the person was shown: fingerprint
// is the one shown beside its safety number (IdentityKey.Fingerprint;
// spaces and case do not matter). The bundle is fetched again here, so a
// relay that serves another key by then is refused with
// ErrFingerprintMismatch and nothing changes: what is pinned is exactly
// what was compared. It pins the identity and removes the session with that
// device, retiring the session's initiation (a replay of its PreKeyMessage
// after a return to the old identity is stale, as after a reset), and keeps
// pending messages and processed IDs. The next retry starts a session to
// the accepted identity and resends the stored frames with their logical
// IDs.
func (c *Client) AcceptIdentity(ctx context.Context, peer Address, fingerprint string) (IdentityKey, error) {
	want, err := ParseFingerprint(fingerprint)
	if err != nil {
		return IdentityKey{}, fmt.Errorf("accept identity of %s: %w", peer, err)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	_, key, err := c.fetchBundle(ctx, peer)
	if err != nil {
		return IdentityKey{}, err
	}
	if got := key.Fingerprint(); got != want {
		return IdentityKey{}, fmt.Errorf("accept identity of %s: the relay now serves %s, not %s: %w", peer, got, want, ErrFingerprintMismatch)
	}
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return IdentityKey{}, err
	}
	now := c.cfg.Now()
	plan := AcceptIdentity{Peer: peer, Identity: key, SessionVersion: ps.version, At: now}
	if s := ps.session; s != nil {
		// Its initiation is retired, and the next one names it as the
		// session it replaces: a device that still holds it (the identity
		// did not change after all) replaces it at once.
		plan.Retire = &RetiredInitiation{ID: s.ID, SignedPreKeyID: s.SignedPreKeyID, RetiredAt: now.Unix()}
		plan.Replaces = s.ID
	} else {
		plan.Replaces = ps.replaces
	}
	next := &peerState{pinned: &key, replaces: plan.Replaces, refused: ps.refused}
	if _, err := c.applyWork(ctx, map[Address]*peerState{peer: next}, []Plan{plan}); err != nil {
		return IdentityKey{}, fmt.Errorf("accept identity of %s: %w", peer, err)
	}
	c.noteConverged(peer)
	c.emit(Event{Kind: EventIdentityAccepted, At: now, Peer: peer})
	return key, nil
}

// ParseFingerprint reads a fingerprint as IdentityKey.Fingerprint prints
// it (eight groups of four hex digits), with or without the spaces, in
// either case, and returns it as Fingerprint prints it.
func ParseFingerprint(s string) (string, error) {
	hexDigits := strings.ToLower(strings.Join(strings.Fields(s), ""))
	if len(hexDigits) != 32 {
		return "", fmt.Errorf("fingerprint %q: want 32 hex digits: %w", s, ErrFingerprintMismatch)
	}
	if _, err := hex.DecodeString(hexDigits); err != nil {
		return "", fmt.Errorf("fingerprint %q: want 32 hex digits: %w", s, ErrFingerprintMismatch)
	}
	var b strings.Builder
	for i := 0; i < len(hexDigits); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(hexDigits[i : i+4])
	}
	return b.String(), nil
}
