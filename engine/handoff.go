package engine

import (
	"context"

	"github.com/parley-chat/parley/wire"
)

// Hand-offs: what goes to the relay after a transition committed, and the
// encryption of the ACKs that such transitions carry.

// handOffMessages gives the envelopes of application messages to the relay
// in order (ids[i] is the message envs[i] carries) and returns one result
// each, remembering which message each accepted envelope carries.
func (c *Client) handOffMessages(ctx context.Context, kind string, envs []wire.Envelope, ids []wire.LogicalID) []error {
	errs := c.handOffAll(ctx, kind, HandoffMessage, envs)
	if len(errs) == len(envs) && len(ids) == len(envs) {
		c.noteHandedOff(envs, ids, errs)
	}
	return errs
}

// handOffAll gives envelopes to the relay in order and returns one result
// each; what says what they carry (HandoffOf).
func (c *Client) handOffAll(ctx context.Context, kind string, what Handoff, envs []wire.Envelope) []error {
	ctx = withHandoff(ctx, what)
	errs := make([]error, len(envs))
	if err := c.fail(kind, "before-handoff"); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	switch len(envs) {
	case 0:
		return errs
	case 1:
		errs[0] = c.relay.Submit(ctx, envs[0])
		return errs
	}
	return c.relay.SubmitBatch(ctx, envs)
}

// sendAcks hands off ACKs whose session steps already committed, in order
// (nil entries are skipped). It reports for each whether the relay took it;
// a cancellation propagates.
func (c *Client) sendAcks(ctx context.Context, kind string, outs []*Outgoing) ([]bool, error) {
	return c.handOffOutgoing(ctx, kind, HandoffAck, outs)
}

// handOffOutgoing hands off what committed transitions produced, in order
// (nil entries are skipped), as what. It reports for each whether the relay
// took it; a cancellation propagates.
func (c *Client) handOffOutgoing(ctx context.Context, kind string, what Handoff, outs []*Outgoing) ([]bool, error) {
	sent := make([]bool, len(outs))
	var envs []wire.Envelope
	var idx []int
	for i, o := range outs {
		if o != nil {
			envs = append(envs, o.Envelope)
			idx = append(idx, i)
		}
	}
	if len(envs) == 0 {
		return sent, nil
	}
	for k, err := range c.handOffAll(ctx, kind, what, envs) {
		if err != nil && isCancel(err) {
			return sent, err
		}
		sent[idx[k]] = err == nil
	}
	return sent, nil
}

// prepareAck encrypts an ACK for id on the existing session with peer (never
// starting one). It returns nil when there is no session, or when its
// sending window is full (window.go): the peer could not read the ACK, and
// its next retry of the message brings the repeat that is acknowledged
// again.
func (c *Client) prepareAck(ps *peerState, peer Address, id wire.LogicalID) (*SessionWrite, *Outgoing, error) {
	if ps.session == nil || !canSend(ps.session) {
		return nil, nil, nil
	}
	frame, _ := wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: id})
	cand := ps.session.Clone()
	env, err := c.seal(cand, peer, frame)
	if err != nil {
		return nil, nil, err
	}
	sw, err := sessionWrite(peer, ps.version, cand)
	if err != nil {
		return nil, nil, err
	}
	ps.session, ps.version = cand, ps.version+1
	return &sw, &Outgoing{Envelope: env, IsAck: true}, nil
}
