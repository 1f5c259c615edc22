package engine

import (
	"context"
	"time"
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
