package engine

import "context"

// SenderBlocker is the part of Relay that stops one sender's
// envelopes to this device at the relay: a blocked sender's submissions are
// answered as accepted and discarded, so the sender learns nothing. The
// block list lives at the relay and is bounded there; the engine keeps its
// own durable record and tells the relay again until it has heard.
type SenderBlocker interface {
	// BlockSender asks the relay to discard (blocked true) or deliver
	// again (false) sender's envelopes to this device.
	BlockSender(ctx context.Context, sender Address, blocked bool) error
}
