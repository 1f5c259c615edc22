package engine

import (
	"context"

	"github.com/parley-chat/parley/wire"
)

// Reads. What an interface pages and counts, read straight from the store:
// no plan, no lock, no event.

// PendingOutbound pages pending sent messages.
func (c *Client) PendingOutbound(ctx context.Context, q PageQuery) ([]OutboundMessage, error) {
	return c.store.PendingOutbound(ctx, q)
}

// CountOutbound counts pending sent messages.
func (c *Client) CountOutbound(ctx context.Context, peer *Address) (int, error) {
	return c.store.CountOutbound(ctx, peer)
}

// PendingInbound pages pending received messages.
func (c *Client) PendingInbound(ctx context.Context, q PageQuery) ([]InboundMessage, error) {
	return c.store.PendingInbound(ctx, q)
}

// CountInbound counts pending received messages (Store.CountInbound: a
// sibling's action copy waiting for its target counts only from its peer).
func (c *Client) CountInbound(ctx context.Context, peer *Address) (int, error) {
	return c.store.CountInbound(ctx, peer)
}

// History pages a conversation, newest first.
func (c *Client) History(ctx context.Context, peer Address, before int64, limit int) ([]HistoryEntry, error) {
	return c.store.History(ctx, peer, before, limit)
}

// Conversations lists the peers.
func (c *Client) Conversations(ctx context.Context) ([]Conversation, error) {
	return c.store.Conversations(ctx)
}

// ConversationsByPerson lists the conversations with the devices of a
// person whose device list is held folded into one: what an interface
// shows as one conversation per person.
func (c *Client) ConversationsByPerson(ctx context.Context) ([]Conversation, error) {
	return c.store.ConversationsByPerson(ctx)
}

// Finalized returns the terminal record of a message received from sender
// (ErrNotPending when there is none: still pending, pruned or never seen).
func (c *Client) Finalized(ctx context.Context, sender Address, id wire.LogicalID) (FinalizedRecord, error) {
	return c.store.Finalized(ctx, sender, id)
}

// Attempts returns the envelopes that carried the message id sent to peer,
// oldest first: the send, then each retry (at most store.MaxAttempts kept).
func (c *Client) Attempts(ctx context.Context, peer Address, id wire.LogicalID) ([]Attempt, error) {
	return c.store.Attempts(ctx, peer, id)
}
