package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var _ engine.SenderBlocker = (*Conn)(nil)

// ErrSenderBlockUnsupported means the relay of the current connection did
// not announce wire.FeatureSenderBlock (or has not announced its features
// yet): nothing was sent, and a caller keeps its own record and asks again
// on a later connection.
var ErrSenderBlockUnsupported = errors.New("the relay does not support blocking senders")

// BlockSender implements engine.SenderBlocker: it asks the relay to discard
// (blocked) or deliver again (not blocked) sender's envelopes to this
// device. It returns nil once the relay has changed its block list; a
// *ServerError when the relay refused (a full block list, an invalid
// address); ErrSenderBlockUnsupported when the relay does not serve it;
// and another error when the outcome is unknown.
func (c *Conn) BlockSender(ctx context.Context, sender engine.Address, blocked bool) error {
	if f, ok := c.RelayFeatures(); !ok || !f.Has(wire.FeatureSenderBlock) {
		return fmt.Errorf("block %s: %w", sender, ErrSenderBlockUnsupported)
	}
	r, err := c.call(ctx, wire.SenderBlock{Sender: sender.String(), Blocked: blocked})
	if err != nil {
		return fmt.Errorf("block %s: %w", sender, err)
	}
	if _, ok := r.(wire.Done); !ok {
		return unexpected(wire.RelaySenderBlock, r)
	}
	return nil
}
