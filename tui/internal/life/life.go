// Package life is how a panel asks for the life of a message it shows (t
// in the inbox, the outbox and the timeline); the profile's pane draws it.
package life

import (
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Msg asks for the life of message ID exchanged with Peer in Direction.
type Msg struct {
	Peer      engine.Address
	ID        wire.LogicalID
	Direction engine.Direction
}
