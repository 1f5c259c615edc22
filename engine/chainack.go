package engine

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Cumulative acknowledgements of chain messages (docs/protocol.md, "Sender
// chains", "Cumulative acknowledgements"). A receive page that decides
// chain messages does not encrypt one ACK per message: it notes them
// (ackStep) and, after the page's rows, seals one acknowledgement per
// (sender device, group) naming them all (chainAckPlans): a cumulative ACK
// (frame kind 10) for two or more, a plain ACK (kind 2) for one. The ACK's
// encryption step is its own plan (ChainAck), applied in the page's
// transaction after the receives it answers, so that the messages and
// their acknowledgement commit together, as a per-message ACK commits with
// its receive. A cumulative ACK that is lost is recovered as a lost ACK is:
// the sender's lanes stay pending, its retry sends the messages again,
// pairwise, and each repeat is acknowledged again.
//
// The sender takes a cumulative ACK in one Receive (ChainAcksEffect): every
// named message that is a lane of the named group to the acknowledging
// device ends, in that one transaction; a name that is no such lane ends
// nothing (as an ACK of an unknown message clears nothing).

// ChainAck is the encryption step of a cumulative acknowledgement that a
// receive page sends Peer for the chain messages of Group it decided (IDs,
// ascending): the ACK envelope and the session it leaves. Each ID must be
// finalized from Peer when it applies (ErrNotPending otherwise): the
// acknowledgement names only what this device decided.
type ChainAck struct {
	Peer    Address
	Group   wire.GroupID
	IDs     []wire.LogicalID
	Session SessionWrite
	Ack     Outgoing
}

// ChainAcksEffect is a received cumulative acknowledgement: it ends the
// lanes of Group to the sender that IDs name, as an AckEffect each.
type ChainAcksEffect struct {
	Group wire.GroupID
	IDs   []wire.LogicalID
	// At is when the ACK was received here (AckEffect.At).
	At time.Time
}

func (ChainAck) plan()          {}
func (ChainAcksEffect) effect() {}

// Kind implements Plan.
func (ChainAck) Kind() string { return "chain-ack" }

// deferredAcks are the chain messages a page decided from one sender
// device, by group in first-seen order.
type deferredAcks struct {
	groups []wire.GroupID
	ids    map[wire.GroupID][]wire.LogicalID
}

// ackStep makes the acknowledgement of message id that step commits: for a
// chain message of a group, noted for the page's cumulative ACK
// (chainAckPlans) and nil; otherwise encrypted on the session step.next
// holds (ackOnNext).
func (c *Client) ackStep(bs *batchState, in *incoming, op opening, step *frameStep, group *wire.GroupID, id wire.LogicalID) (*Outgoing, error) {
	if op.chain == nil || group == nil || c.cfg.PerMessageChainAcks {
		return c.ackOnNext(&step.next, in.sender, id)
	}
	d := bs.acks[in.sender]
	if d == nil {
		d = &deferredAcks{ids: make(map[wire.GroupID][]wire.LogicalID)}
		bs.acks[in.sender] = d
		bs.ackOrder = append(bs.ackOrder, in.sender)
	}
	if _, ok := d.ids[*group]; !ok {
		d.groups = append(d.groups, *group)
	}
	d.ids[*group] = append(d.ids[*group], id)
	step.res.ackDeferred = true
	return nil, nil
}

// chainAckPlans seals the acknowledgements a page noted (ackStep), after
// its rows: per sender device and group, one frame per MaxChainAckIDs
// messages, each on the sender's session as the page leaves it. A session
// that cannot send (none, or its window full) sends nothing: the ACKs are
// owed, and the sender's retry asks for them again, as for a per-message
// ACK.
func (c *Client) chainAckPlans(bs *batchState) ([]prepared, error) {
	var out []prepared
	for _, peer := range bs.ackOrder {
		ps, d := bs.work[peer], bs.acks[peer]
		for _, g := range d.groups {
			ids := wire.SortChainAckIDs(d.ids[g])
			for len(ids) > 0 && ps != nil && ps.session != nil && canSend(ps.session) {
				chunk := ids[:min(len(ids), wire.MaxChainAckIDs)]
				ids = ids[len(chunk):]
				frame, err := chainAckFrame(g, chunk)
				if err != nil {
					return nil, err
				}
				if err := c.fail("chain-ack", "before-seal"); err != nil {
					return nil, err
				}
				cand := ps.session.Clone()
				env, err := c.seal(cand, peer, frame)
				if err != nil {
					return nil, fmt.Errorf("acknowledge %d chain messages of %s: %w", len(chunk), peer, err)
				}
				sw, err := sessionWrite(peer, ps.version, cand)
				if err != nil {
					return nil, err
				}
				ps.session, ps.version = cand, ps.version+1
				ack := Outgoing{Envelope: env, IsAck: true}
				out = append(out, prepared{plan: ChainAck{Peer: peer, Group: g, IDs: chunk, Session: sw, Ack: ack}, ack: &ack})
			}
		}
	}
	return out, nil
}

// chainAckFrame returns the acknowledgement of ids (ascending) of group: a
// plain ACK for one message, a cumulative ACK for more.
func chainAckFrame(g wire.GroupID, ids []wire.LogicalID) ([]byte, error) {
	if len(ids) == 1 {
		return wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: ids[0]})
	}
	return wire.EncodeChainAcks(wire.ChainAcks{Group: g, IDs: ids})
}

// prepareChainAcksFrame is a received cumulative ACK's step: the lanes it
// names end (ChainAcksEffect); the result is an acknowledgement whose
// Acked the receipt fills.
func prepareChainAcksFrame(in *incoming, op opening, a wire.ChainAcks) frameStep {
	step := in.step(op, a.IDs[0], nil, wire.ContentText)
	step.effect = ChainAcksEffect{Group: a.Group, IDs: a.IDs, At: in.now}
	step.res.Kind = ResultAcknowledgement
	return step
}

// receivePlanEffect returns a Receive plan's effect, or nil.
func receivePlanEffect(p Plan) FrameEffect {
	if r, ok := p.(Receive); ok {
		return r.Effect
	}
	return nil
}
