package engine

import (
	"context"
	"github.com/parley-chat/parley/engine/session"
)

// Transitions: a plan is prepared on working copies of peer state, applied
// by the store in one transaction, and only then do the copies become the
// live state (applyWork).

// working returns the batch's working copy of a peer's state.
func (c *Client) working(ctx context.Context, work map[Address]*peerState, peer Address) (*peerState, error) {
	if ps, ok := work[peer]; ok {
		return ps, nil
	}
	snap, err := c.snapshot(ctx, peer)
	if err != nil {
		return nil, err
	}
	work[peer] = &snap
	return &snap, nil
}

// applyAll applies plans in one transaction (one plan: Apply).
func (c *Client) applyAll(ctx context.Context, plans []Plan) ([]Receipt, error) {
	if len(plans) == 1 {
		r, err := c.store.Apply(ctx, plans[0])
		if err != nil {
			return nil, err
		}
		c.noteMarker(r.Marker)
		return []Receipt{r}, nil
	}
	rs, err := c.store.ApplyBatch(ctx, plans)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		c.noteMarker(r.Marker)
	}
	return rs, nil
}

// snapshot returns a copy of a peer's state to prepare a transition on.
func (c *Client) snapshot(ctx context.Context, peer Address) (peerState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return peerState{}, ErrClosed
	}
	ps, err := c.peerLocked(ctx, peer)
	if err != nil {
		return peerState{}, err
	}
	cp := *ps
	if cp.session != nil {
		cp.session = cp.session.Clone()
	}
	if cp.pinned != nil {
		k := *cp.pinned
		cp.pinned = &k
	}
	return cp, nil
}

// hasSession reports whether there is a session with peer, without copying
// it (see snapshot).
func (c *Client) hasSession(ctx context.Context, peer Address) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, ErrClosed
	}
	ps, err := c.peerLocked(ctx, peer)
	if err != nil {
		return false, err
	}
	return ps.session != nil, nil
}

// swap installs committed state for a peer.
func (c *Client) swap(peer Address, ps peerState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := ps
	c.peers[peer] = &cp
}

// forget drops cached state, so that the next use reloads it from the store
// (after a failed batch, for example).
func (c *Client) forget(peer Address) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.peers, peer)
}

// sessionWrite describes storing s as the session with peer, prepared from
// version.
func sessionWrite(peer Address, version uint64, s *session.Session) (SessionWrite, error) {
	rec, err := s.MarshalBinary()
	if err != nil {
		return SessionWrite{}, err
	}
	return SessionWrite{Peer: peer, Version: version, ID: s.ID, AwaitingReply: s.AwaitingReply, Record: rec}, nil
}

// applyWork applies plans prepared on the working states in work. On
// failure the candidates are dropped: every peer they touched is reloaded
// from the store at its next use. On success they become the live state.
func (c *Client) applyWork(ctx context.Context, work map[Address]*peerState, plans []Plan) ([]Receipt, error) {
	receipts, err := c.applyAll(ctx, plans)
	if err != nil {
		for peer := range work {
			c.forget(peer)
		}
		return nil, err
	}
	for peer, ps := range work {
		c.swap(peer, *ps)
	}
	return receipts, nil
}
