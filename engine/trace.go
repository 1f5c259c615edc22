package engine

import (
	"context"
	"errors"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Trace is what this device knows of one message exchanged with Peer: for
// a message it sent, the envelopes that carried it and where it stands; for
// one it received, where it stands. `parley trace` and the chat's trace view
// draw it (internal/tracetext).
type Trace struct {
	Peer      Address
	ID        wire.LogicalID
	Direction Direction
	// State is, for a sent message, "pending", "on_device" (pending, and
	// the relay reported its latest envelope taken by the recipient's
	// device), "acknowledged", "abandoned" or "unknown" (never sent here,
	// or pruned); for a received one,
	// "pending", "committed", "discarded" or "unknown".
	State    string
	At       time.Time // sent, or arrived; zero when unknown
	Done     time.Time // committed or discarded (received); zero otherwise
	Body     []byte
	Attempts []Attempt // sent messages: oldest first
	// Imported is set when the message's history entry came by import
	// (a linked device's history or a restore) rather than over a
	// session of this device.
	Imported *Imported
}

// Trace returns what this device knows of message id exchanged with peer
// in direction dir.
func (c *Client) Trace(ctx context.Context, peer Address, id wire.LogicalID, dir Direction) (Trace, error) {
	l := Trace{Peer: peer, ID: id, Direction: dir, State: "unknown"}
	e, inHistory, err := c.store.HistoryEntry(ctx, peer, dir, id)
	if err != nil {
		return l, err
	}
	if inHistory {
		l.At, l.Body, l.Imported = e.At, e.Body, e.Imported
	}
	if dir == DirectionOut {
		if inHistory {
			l.State = e.State.String()
		}
		l.Attempts, err = c.store.Attempts(ctx, peer, id)
		if n := len(l.Attempts); err == nil && l.State == SentPending.String() && n > 0 && !l.Attempts[n-1].TakenAt.IsZero() {
			l.State = "on_device"
		}
		return l, err
	}
	if m, err := c.store.Inbound(ctx, peer, id); err == nil {
		l.State, l.At, l.Body = "pending", m.ReceivedAt, m.Body
		return l, nil
	} else if !errors.Is(err, ErrNotPending) {
		return l, err
	}
	switch f, err := c.store.Finalized(ctx, peer, id); {
	case err == nil && f.Outcome == OutcomeDiscarded:
		l.State, l.Done = "discarded", f.At
	case err == nil:
		l.State, l.Done = "committed", f.At
	case !errors.Is(err, ErrNotPending):
		return l, err
	case inHistory:
		l.State = "committed" // its finalized record was pruned
	}
	return l, nil
}
