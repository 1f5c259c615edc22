package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// Receiving by a sender chain (docs/protocol.md, "Sender chains"). A chain
// announcement (kind 8) on the pairwise session is kept as a received chain
// and acknowledged at once; a chain message (envelope type 4) is opened on
// the chain its sender announced, with no session step, and its group
// message goes on as one received pairwise would (DecideGroupMessage, the
// delivery, the ACK on the pairwise session). A chain message whose chain
// is not here yet is held, within the holds' bounds, until its
// announcement arrives or MaxGroupHold passes; its sender's lane stays
// pending, and a retry brings the message pairwise.

// Chain receive refusals, matched with errors.Is.
var (
	// ErrChainUnknown means a chain message's chain was never announced
	// here and its hold ran out (MaxGroupHold).
	ErrChainUnknown = errors.New("chain message for a chain not announced here")
	// ErrChainMismatch means a chain message or announcement does not fit
	// the chain kept (another signing key, group or generation), or a
	// chain message's plaintext is not a message of the chain's group and
	// generation.
	ErrChainMismatch = session.ErrChainMismatch
	// ErrBeforeChainStart means a chain message was sent before this
	// device was entitled to the chain.
	ErrBeforeChainStart = session.ErrBeforeChainStart
)

type chainKey struct {
	sender Address
	chain  wire.ChainID
}

// chainOpened is what opening a chain message, or taking an announcement,
// leaves to write: the chain as the receive leaves it.
type chainOpened struct {
	key   chainKey
	chain *session.ReceiverChain
	write *ReceivedChainWrite
}

// receivedChain returns the chain sender announced under that ID, as this
// batch leaves it, or nil.
func (c *Client) receivedChain(ctx context.Context, bs *batchState, k chainKey) (*session.ReceiverChain, error) {
	if rc, ok := bs.chains[k]; ok {
		return rc, nil
	}
	kept, found, err := c.store.ReceivedChain(ctx, k.sender, k.chain)
	if err != nil || !found {
		return nil, err
	}
	rc, err := session.UnmarshalReceiverChain(kept.Record)
	if err != nil {
		return nil, fmt.Errorf("chain of %s: %w: %w", k.sender, ErrMalformedState, err)
	}
	if rc.Sender() != k.sender.String() || rc.ID() != k.chain || rc.Group() != kept.Group || rc.Generation() != kept.Generation {
		return nil, fmt.Errorf("chain of %s: %w", k.sender, ErrMalformedState)
	}
	bs.chains[k] = rc
	return rc, nil
}

// chainWrite makes the write of a received chain.
func chainWrite(k chainKey, rc *session.ReceiverChain) (*chainOpened, error) {
	rec, err := rc.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return &chainOpened{key: k, chain: rc, write: &ReceivedChainWrite{Sender: k.sender, Chain: k.chain, Group: rc.Group(),
		Generation: rc.Generation(), Record: rec}}, nil
}

// commitChain makes a plan's chain write the batch's view of the chain.
func (bs *batchState) commitChain(op opening) *ReceivedChainWrite {
	if op.chain == nil {
		return nil
	}
	bs.chains[op.chain.key] = op.chain.chain
	return op.chain.write
}

// prepareChain opens a chain message on a copy of its chain.
func (c *Client) prepareChain(ctx context.Context, bs *batchState, in *incoming) (opening, error) {
	m, err := wire.DecodeChainMessage(in.env.Payload)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, err)), nil
	}
	k := chainKey{in.sender, m.Chain}
	rc, err := c.receivedChain(ctx, bs, k)
	if err != nil {
		return opening{}, err
	}
	if in.ps.session == nil {
		// No session to acknowledge on: the sender's retry sets one up.
		// Checked before the hold, so that a sender without a session (or
		// an address a hostile relay made up) takes no hold slot.
		return final(in.drop(wire.LogicalID{}, fmt.Errorf("chain message from %s: %w", in.sender, ErrNoSession))), nil
	}
	if rc == nil {
		if heldFor(in) > MaxGroupHold {
			return final(in.drop(wire.LogicalID{}, fmt.Errorf("chain %x of %s: %w", m.Chain[:4], in.sender, ErrChainUnknown))), nil
		}
		// Its announcement is late, lost or behind it: held, bounded,
		// until it arrives, and asked for (chainneed.go); the sender's
		// retry brings it pairwise meanwhile.
		bs.noteNeedChain(in.sender, m.Chain, m.Position)
		return final(in.hold()), nil
	}
	cand := rc.Clone()
	pt, err := cand.Open(in.sender.String(), m)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, fmt.Errorf("chain %x position %d: %w", m.Chain[:4], m.Position, err))), nil
	}
	if kind, _ := wire.PeekFrameKind(pt); kind != wire.FrameGroupMessage {
		return final(in.drop(wire.LogicalID{}, fmt.Errorf("chain message of frame kind %d: %w", kind, ErrChainMismatch))), nil
	}
	gm, err := wire.DecodeGroupMessage(pt)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, err)), nil
	}
	if gm.Group != cand.Group() || gm.Generation != cand.Generation() {
		return final(in.drop(gm.ID, fmt.Errorf("chain message names another group or generation: %w", ErrChainMismatch))), nil
	}
	opened, err := chainWrite(k, cand)
	if err != nil {
		return opening{}, err
	}
	return opening{session: in.ps.session.Clone(), plaintext: pt, chain: opened}, nil
}

// receiveChainAnnounce takes a chain announcement: kept (or, for a repeat,
// checked against the chain kept) and acknowledged at once. It is judged as
// a group message of its group and generation (DecideGroupMessage): held
// for a group or generation not seen yet, and from a device that is not a
// member at its generation refused with not_a_member, which ends its lane.
func (c *Client) receiveChainAnnounce(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	a, err := wire.DecodeChainAnnounce(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	// Judged as a group message of its group and generation would be.
	verdict, err := c.judgeGroupFrame(ctx, bs, in, op, a.Group, a.Generation)
	if err != nil {
		return prepared{}, err
	}
	switch verdict {
	case GroupHold:
		return in.hold(), nil
	case GroupDrop:
		return in.drop(a.ID, fmt.Errorf("chain announcement for group %x generation %d: %w", a.Group[:4], a.Generation, ErrGroupHoldExpired)), nil
	case GroupRefuse:
		// Its lane ends as not_a_member on the sender's side.
		return c.refuseGroupMessage(bs, in, op, wire.GroupMessage{ID: a.ID, Group: a.Group, Generation: a.Generation})
	}
	k := chainKey{in.sender, a.Chain}
	rc, err := c.receivedChain(ctx, bs, k)
	if err != nil {
		return prepared{}, err
	}
	if rc != nil {
		if err := rc.Check(in.sender.String(), a); err != nil {
			return in.drop(a.ID, fmt.Errorf("chain announcement %x: %w", a.ID[:4], err)), nil
		}
	} else {
		if op.chain, err = chainWrite(k, session.NewReceiverChain(in.sender.String(), a)); err != nil {
			return prepared{}, err
		}
	}
	ack, _ := wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: a.ID})
	res := ReceiveResult{Kind: ResultChainAnnounced, Sender: in.sender, ID: a.ID, Group: &a.Group, Generation: a.Generation}
	return c.groupVerdict(bs, in, op, RepeatEffect{}, ack, res)
}
