package store

import (
	"bytes"
	"context"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Cumulative acknowledgements of chain messages (engine/chainack.go).

const sqlFinalizedAny = "SELECT 1 FROM finalized WHERE sender = ? AND id = ?"

// chainAck writes the encryption step of a cumulative acknowledgement, on
// condition that every message it names is finalized from the peer (by the
// receives before it in the batch, or before): it names only what this
// device decided.
func (t *tx) chainAck(ctx context.Context, p engine.ChainAck) (engine.Receipt, error) {
	from := p.Peer.String()
	for _, id := range p.IDs {
		var one int
		found, err := t.scan(ctx, "finalized-read", sqlFinalizedAny, []any{from, id[:]}, &one)
		if err != nil {
			return engine.Receipt{}, err
		}
		if !found {
			return engine.Receipt{}, fmt.Errorf("acknowledge chain message %x from %s: not finalized: %w", id[:], from, engine.ErrNotPending)
		}
	}
	return engine.Receipt{}, t.writeSession(ctx, p.Session)
}

// clearChainLanes ends the lanes a received cumulative acknowledgement
// names: each a pending message to the peer that is a lane of the named
// group, cleared as an ACK of it would clear it. It returns the messages
// cleared; a name that is no pending lane of the group is skipped.
func (t *tx) clearChainLanes(ctx context.Context, peer engine.Address, e engine.ChainAcksEffect) ([]wire.LogicalID, error) {
	var acked []wire.LogicalID
	for _, id := range e.IDs {
		var g []byte
		found, err := t.scan(ctx, "lane-read", sqlLaneGroup, []any{peer.String(), id[:]}, &g)
		if err != nil {
			return nil, err
		}
		if !found || !bytes.Equal(g, e.Group[:]) {
			continue
		}
		cleared, err := t.clearOutbound(ctx, peer, id, e.At)
		if err != nil {
			return nil, err
		}
		if cleared {
			acked = append(acked, id)
		}
	}
	return acked, nil
}

// checkChainAckIDs checks a cumulative acknowledgement's list: 1 to
// wire.MaxChainAckIDs IDs, strictly ascending.
func checkChainAckIDs(ids []wire.LogicalID) error {
	if len(ids) == 1 {
		return nil
	}
	if _, err := wire.EncodeChainAcks(wire.ChainAcks{IDs: ids}); err != nil {
		return invalid("cumulative acknowledgement of %d IDs: %v", len(ids), err)
	}
	return nil
}
