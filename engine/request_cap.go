package engine

import (
	"context"
	"errors"
	"fmt"
)

// Caps on pending received messages. A pending message is kept on disk,
// body and all, until its owner commits or discards it, and SPEC §6 stages
// every envelope before it is even parsed: without a cap, anyone who can
// fetch a bundle can fill a profile. The caps bite while a staged envelope
// is processed (the sender is known only then): an application frame over
// its cap is dropped from staging with no session step and no ACK, so the
// sender keeps it pending and its retries deliver once there is room.
// ACK frames and repeats of a message already pending or finalized are
// never capped.
const (
	// MaxPendingPerStranger is the most pending messages from one peer
	// this device has not accepted (never wrote to, not a contact): a
	// first conversation needs a few messages, not a mailbox; 32 of the
	// largest bodies (256 KiB) are 8 MiB.
	MaxPendingPerStranger = 32
	// MaxPendingStrangers is the most pending messages from all such
	// peers together: fresh addresses are free, so a per-peer cap alone
	// does not bound a profile. Friends are counted apart, so strangers
	// never crowd them out.
	MaxPendingStrangers = 256
	// MaxPendingPerPeer is the most pending messages from one accepted
	// peer: far above any conversation's backlog, it bounds a friend's
	// runaway client without ever biting in ordinary use.
	MaxPendingPerPeer = 10000
)

// ErrPendingCap means an application frame was dropped because its sender
// has as many pending messages as the caps allow; the sender's retries
// deliver it once the owner commits or discards some.
var ErrPendingCap = errors.New("too many pending messages from this sender")

// capState is what one batch has counted of the caps so far: the pending
// counts read from the store, plus the deliveries the batch adds.
type capState struct {
	accepted map[Address]bool
	perPeer  map[Address]int
	// strangers is the count of pending messages from all strangers;
	// -1 until read.
	strangers int
}

func newCapState() *capState {
	return &capState{accepted: map[Address]bool{}, perPeer: map[Address]int{}, strangers: -1}
}

// admitPending reports whether a new pending message from sender fits
// under the caps, and counts it when it does. With Config.CapStrangers
// unset, every peer counts as accepted.
func (c *Client) admitPending(ctx context.Context, cs *capState, sender Address) error {
	ok, known := cs.accepted[sender]
	if !known {
		ok = true
		if c.cfg.CapStrangers {
			var err error
			if ok, err = c.store.Accepted(ctx, sender); err != nil {
				return err
			}
		}
		cs.accepted[sender] = ok
	}
	n, known := cs.perPeer[sender]
	if !known {
		var err error
		if n, err = c.store.CountInbound(ctx, &sender); err != nil {
			return err
		}
	}
	limit := MaxPendingPerPeer
	if !ok {
		limit = MaxPendingPerStranger
		if cs.strangers < 0 {
			var err error
			if cs.strangers, err = c.store.CountInboundStrangers(ctx); err != nil {
				return err
			}
		}
		if cs.strangers >= MaxPendingStrangers {
			return fmt.Errorf("%s: %d pending from strangers (cap %d): %w", sender, cs.strangers, MaxPendingStrangers, ErrPendingCap)
		}
	}
	if n >= limit {
		return fmt.Errorf("%s: %d pending (cap %d): %w", sender, n, limit, ErrPendingCap)
	}
	cs.perPeer[sender] = n + 1
	if !ok {
		cs.strangers++
	}
	return nil
}
