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
// not announce wire.FeatureSenderBlock: nothing changed at the relay, and a
// caller keeps its own record and asks again on a later connection.
var ErrSenderBlockUnsupported = errors.New("the relay does not support blocking senders")

// BlockSender implements engine.SenderBlocker: it asks the relay to discard
// (blocked) or deliver again (not blocked) sender's envelopes to this
// device. It returns nil once the relay has changed its block list; a
// *ServerError when the relay refused (a full block list, an invalid
// address); ErrSenderBlockUnsupported when the relay does not serve it;
// and another error when the outcome is unknown.
//
// The relay pushes its features right after AuthOK, so they may not have
// been read yet when this is called just after connecting: then the request
// is sent all the same, and its reply, which the relay writes after its
// features, settles it (a relay that does not serve kind 17 answers it as a
// bad request).
func (c *Conn) BlockSender(ctx context.Context, sender engine.Address, blocked bool) error {
	supported := func() (ok, known bool) {
		f, known := c.RelayFeatures()
		return f.Has(wire.FeatureSenderBlock), known
	}
	if ok, known := supported(); known && !ok {
		return fmt.Errorf("block %s: %w", sender, ErrSenderBlockUnsupported)
	}
	r, err := c.call(ctx, wire.SenderBlock{Sender: sender.String(), Blocked: blocked})
	var se *ServerError
	if errors.As(err, &se) && se.Code == wire.ErrorBadRequest {
		if ok, _ := supported(); !ok {
			return fmt.Errorf("block %s: %w (%w)", sender, ErrSenderBlockUnsupported, se)
		}
	}
	if err != nil {
		return fmt.Errorf("block %s: %w", sender, err)
	}
	if _, ok := r.(wire.Done); !ok {
		return unexpected(wire.RelaySenderBlock, r)
	}
	return nil
}
