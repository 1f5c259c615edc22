package engine

import (
	"context"

	"github.com/parley-chat/parley/wire"
)

// Message returns the history entry of message id in the conversation
// with peer, received or sent (the received one first), and whether there
// is one: what a reply quotes or a pending action names, for a view that
// shows it.
func (c *Client) Message(ctx context.Context, peer Address, id wire.LogicalID) (HistoryEntry, bool, error) {
	for _, dir := range []Direction{DirectionIn, DirectionOut} {
		e, ok, err := c.store.HistoryEntry(ctx, peer, dir, id)
		if err != nil || ok {
			return e, ok, err
		}
	}
	return HistoryEntry{}, false, nil
}
