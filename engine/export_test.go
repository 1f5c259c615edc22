package engine

import (
	"context"
	"time"

	"github.com/parley-chat/parley/wire"
)

// CommitRound runs the loop's commit-on-arrival step on what a round
// received, as Sync does after processing.
func (c *Client) CommitRound(ctx context.Context, received []ReceiveResult) (int, error) {
	c.loopMu.Lock()
	c.policy.Commit, c.commitPending = CommitOnArrival, false
	c.loopMu.Unlock()
	return c.commitByPolicy(ctx, received)
}

// SweepRequestsBefore sweeps the requests first seen before before, as the
// maintenance does with RequestLifetime.
func (c *Client) SweepRequestsBefore(ctx context.Context, before time.Time) (int, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.sweepLocked(ctx, before)
}

// ProcessStagedCommitting processes the staged rows as the loop does under
// CommitOnArrival: each new delivery is committed in the transaction that
// receives it.
func (c *Client) ProcessStagedCommitting(ctx context.Context) ([]ReceiveResult, error) {
	return c.processStaged(ctx, true)
}

// RetryWithBody resends the pending message id to peer with another body
// under the same logical ID, as a modified client could.
func (c *Client) RetryWithBody(ctx context.Context, peer Address, id wire.LogicalID, body []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	m, err := c.store.Outbound(ctx, peer, id)
	if err != nil {
		return err
	}
	if m.Frame, err = wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: body}); err != nil {
		return err
	}
	return c.retryOne(ctx, peer, m)
}
