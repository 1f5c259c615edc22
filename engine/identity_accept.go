package engine

import (
	"context"
	"errors"
	"fmt"

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

// AcceptIdentity accepts the identity a peer's relay bundle now carries: it
// pins it and removes the session with that device, keeping pending messages
// and processed IDs. The next retry starts a session to the accepted identity
// and resends the stored frames with their logical IDs.
func (c *Client) AcceptIdentity(ctx context.Context, peer Address) (IdentityKey, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	_, key, err := c.fetchBundle(ctx, peer)
	if err != nil {
		return IdentityKey{}, err
	}
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return IdentityKey{}, err
	}
	plan := AcceptIdentity{Peer: peer, Identity: key, SessionVersion: ps.version, At: c.cfg.Now()}
	if _, err := c.commitWork(ctx, map[Address]*peerState{peer: {pinned: &key}}, []Plan{plan}); err != nil {
		return IdentityKey{}, fmt.Errorf("accept identity of %s: %w", peer, err)
	}
	c.noteConverged(peer)
	c.emit(Event{Kind: EventIdentityAccepted, At: c.cfg.Now(), Peer: peer})
	return key, nil
}
