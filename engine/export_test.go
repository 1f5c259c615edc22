package engine

import "context"

// CommitRound runs the loop's commit-on-arrival step on what a round
// received, as Sync does after processing.
func (c *Client) CommitRound(ctx context.Context, received []ReceiveResult) (int, error) {
	c.loopMu.Lock()
	c.policy.Commit, c.commitPending = CommitOnArrival, false
	c.loopMu.Unlock()
	return c.commitByPolicy(ctx, received)
}
