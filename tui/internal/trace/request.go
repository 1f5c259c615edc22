// Package trace is how a panel asks for the trace of a message it shows (t
// in the inbox, the outbox and the timeline): what the durable records of
// both ends say of it (engine.Trace), which the profile's pane reads and
// draws (internal/tracetext). It imports only engine and wire.
package trace

import (
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Request asks for the trace of message ID exchanged with Peer in
// Direction.
type Request struct {
	Peer      engine.Address
	ID        wire.LogicalID
	Direction engine.Direction
}
