package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// What the owner does with message requests (request.go).

// Requests lists the open message requests, oldest first (none when the
// store keeps no requests).
func (c *Client) Requests(ctx context.Context) ([]Request, error) {
	rs := c.store
	return rs.Requests(ctx)
}

// AcceptRequest accepts peer: its open request, if any, becomes ordinary
// pending deliveries (committed and acknowledged as the policy says), and
// its later messages are deliveries. It reports how many messages the
// request held (0 when peer had none: it is then accepted before it writes).
func (c *Client) AcceptRequest(ctx context.Context, peer Address) (int, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.acceptLocked(ctx, peer)
}

func (c *Client) acceptLocked(ctx context.Context, peer Address) (int, error) {
	rs := c.store
	r, err := rs.Request(ctx, peer)
	if err != nil && !errors.Is(err, ErrNotPending) {
		return 0, fmt.Errorf("accept %s: %w", peer, err)
	}
	work := make(map[Address]*peerState)
	ad, err := c.prepareAdoptions(ctx, work, peer)
	if err != nil {
		return 0, fmt.Errorf("accept %s: %w", peer, err)
	}
	plan := AcceptRequest{Peer: peer, Count: r.Count, At: c.cfg.Now(), Rosters: ad.rosters, Sessions: ad.sessions}
	if _, err := c.applyWork(ctx, work, []Plan{plan}); err != nil {
		return 0, fmt.Errorf("accept %s: %w", peer, err)
	}
	// An ACK that does not go out now goes out when the author sends the
	// change again (a repeat is acknowledged again).
	_ = c.adoptionsAck(ctx, ad.acks)
	for _, a := range ad.rosters {
		if a.Effect != nil && len(a.Effect.Forward) > 0 {
			c.wantLanesPumped() // a change forwarded to this person's devices
			break
		}
	}
	if r.Count > 0 {
		// The policy commits what is pending at its next round.
		c.loopMu.Lock()
		c.commitPending = true
		c.loopMu.Unlock()
		c.emit(Event{Kind: EventRequestAccepted, At: c.cfg.Now(), Peer: peer, Count: r.Count})
	}
	return r.Count, nil
}

// acceptIfRequested accepts peer's open request before this device writes
// to it: writing to a requester is accepting it.
func (c *Client) acceptIfRequested(ctx context.Context, peer Address) error {
	rs := c.store
	if _, err := rs.Request(ctx, peer); errors.Is(err, ErrNotPending) {
		return nil
	} else if err != nil {
		return err
	}
	_, err := c.acceptLocked(ctx, peer)
	return err
}

// requestOpen reports whether peer has an open request.
func (c *Client) requestOpen(ctx context.Context, peer Address) (bool, error) {
	rs := c.store
	_, err := rs.Request(ctx, peer)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotPending):
		return false, nil
	}
	return false, err
}

// RejectRequest deletes peer's open request: its messages and the session
// it set up; the sender is told nothing. With block,
// peer's later envelopes are dropped unopened and the relay is asked to
// discard them (at once when it can be reached, else by the maintenance).
// It fails with ErrNotPending when peer has no open request.
func (c *Client) RejectRequest(ctx context.Context, peer Address, block bool) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	_, err := c.store.Apply(ctx, RejectRequest{Peer: peer, Block: block, At: c.cfg.Now()})
	c.forget(peer)
	if err != nil {
		return fmt.Errorf("reject %s: %w", peer, err)
	}
	if block {
		// The block is durable; telling the relay is retried by the
		// maintenance when it fails here.
		_ = c.tellBlocks(ctx)
	}
	return nil
}

// tellBlocks tells the relay of every block it has not heard of, when the
// relay can stop senders (SenderBlocker).
func (c *Client) tellBlocks(ctx context.Context) error {
	rs := c.store
	sb := c.relay
	untold, err := rs.BlocksUntold(ctx)
	if err != nil {
		return err
	}
	for _, ch := range untold {
		if err := sb.BlockSender(ctx, ch.Peer, ch.Blocked); err != nil {
			return fmt.Errorf("tell the relay of the block of %s (blocked %v): %w", ch.Peer, ch.Blocked, err)
		}
		if _, err := c.store.Apply(ctx, MarkBlockTold(ch)); err != nil {
			return fmt.Errorf("record the block of %s told: %w", ch.Peer, err)
		}
	}
	return nil
}

// Blocks lists the blocked senders.
func (c *Client) Blocks(ctx context.Context) ([]Address, error) {
	rs := c.store
	return rs.Blocks(ctx)
}

// Unblock ends the block of peer: its later envelopes are opened again
// (a first one is a request), and the relay is told as for a block. It
// fails with ErrNotPending when peer is not blocked.
func (c *Client) Unblock(ctx context.Context, peer Address) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if _, err := c.store.Apply(ctx, Unblock{Peer: peer, At: c.cfg.Now()}); err != nil {
		return fmt.Errorf("unblock %s: %w", peer, err)
	}
	// Durable; the maintenance tells the relay when this fails.
	_ = c.tellBlocks(ctx)
	return nil
}

// SweepRequests deletes the requests first seen more than RequestLifetime
// ago and reports how many; the maintenance runs it.
func (c *Client) SweepRequests(ctx context.Context) (int, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.sweepLocked(ctx, c.cfg.Now().Add(-RequestLifetime))
}

func (c *Client) sweepLocked(ctx context.Context, before time.Time) (int, error) {
	rs := c.store
	open, err := rs.Requests(ctx)
	if err != nil {
		return 0, err
	}
	var old []Address
	for _, r := range open {
		if r.FirstSeen.Before(before) {
			old = append(old, r.Peer)
		}
	}
	if len(old) == 0 {
		return 0, nil
	}
	r, err := c.store.Apply(ctx, SweepRequests{Before: before})
	for _, p := range old {
		c.forget(p)
	}
	if err != nil {
		return 0, fmt.Errorf("sweep requests: %w", err)
	}
	if r.Pruned > 0 {
		c.emit(Event{Kind: EventRequestsSwept, At: c.cfg.Now(), Count: int(r.Pruned)})
	}
	return int(r.Pruned), nil
}
