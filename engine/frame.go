package engine

import (
	"context"
	"errors"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Receiving by frame kind. prepareFrame dispatches an opened envelope's
// frame to one function per kind: an ACK (prepareAckFrame), a text message
// (prepareMessage), a file manifest (prepareContent, file.go's layout), a
// group frame (prepareGroupFrame, groupframe.go). Text, files and accepted
// group messages then share one delivery (prepareMessage); only a group
// message reads its group, and only a delivery reads the requests.

// prepareFrame decides what the frame of an opened envelope does, by its
// kind, and makes the row's Receive plan: the session step (with the
// handshake of an accepted initiation) and the frame's effect.
func (c *Client) prepareFrame(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	switch kind, _ := wire.PeekFrameKind(op.plaintext); {
	case kind == wire.FrameContent:
		return c.prepareContent(ctx, bs, in, op)
	case kind == wire.FrameSentCopy:
		return c.prepareSentCopy(ctx, bs, in, op)
	case kind == wire.FrameSentActionCopy:
		return c.prepareSentActionCopy(ctx, bs, in, op)
	case kind == wire.FrameDecision, kind == wire.FrameDecisionBody, kind == wire.FrameDecisionAction:
		return c.prepareDecision(ctx, bs, in, op)
	case kind == wire.FrameGroupState:
		return c.prepareGroupState(ctx, bs, in, op)
	case kind == wire.FrameChainAcks:
		a, err := wire.DecodeChainAcks(op.plaintext)
		if err != nil {
			return in.drop(wire.LogicalID{}, err), nil
		}
		return in.receive(bs, op, prepareChainAcksFrame(in, op, a))
	case kind >= wire.FrameGroupMessage:
		return c.prepareGroupFrame(ctx, bs, in, op, kind)
	}
	frame, err := wire.DecodeFrame(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	if frame.Kind == wire.FrameAck {
		return in.receive(bs, op, prepareAckFrame(in, op, frame))
	}
	return c.prepareMessage(ctx, bs, in, op, arrival{frame: frame, content: wire.ContentText})
}

// prepareAckFrame is an ACK's step: it clears a sent message. An ACK of no
// message (the zero ID) announces the session that won, where the own
// pending messages must now go.
func prepareAckFrame(in *incoming, op opening, frame wire.Frame) frameStep {
	step := in.step(op, frame.ID, nil, wire.ContentText)
	step.effect = AckEffect{ID: frame.ID, At: in.now}
	step.res.Kind = ResultAcknowledgement
	step.res.converged = step.res.converged || frame.ID == (wire.LogicalID{})
	return step
}

// prepareContent receives a content frame: a file manifest, delivered as an
// application frame of its content type.
func (c *Client) prepareContent(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	frame, content, err := contentFrame(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	return c.prepareMessage(ctx, bs, in, op, arrival{frame: frame, content: content})
}

// prepareGroupFrame receives a group frame: a roster change or a refusal is
// its own verdict (groupFrame); a group message to accept goes on as an
// application frame of its group.
func (c *Client) prepareGroupFrame(ctx context.Context, bs *batchState, in *incoming, op opening, kind wire.FrameKind) (prepared, error) {
	frame, group, done, err := c.groupFrame(ctx, bs, in, op, kind)
	if done != nil || err != nil {
		return derefPrepared(done), err
	}
	a := arrival{frame: frame, group: group, content: groupContent(op.plaintext)}
	if in.sender.User == c.self.User {
		// Another device of this person's, vouched for by the account's
		// list: its group message is this person's own.
		v, err := c.vouchSender(ctx, in.sender, senderKey(in, op))
		if err != nil {
			return prepared{}, err
		}
		a.own = v == VouchListed
	}
	return c.prepareMessage(ctx, bs, in, op, a)
}

// arrival is an application frame to deliver: a text message, a file
// manifest or a group message, with its group (nil for one-to-one).
type arrival struct {
	frame   wire.Frame
	group   *wire.GroupID
	content wire.ContentType
	// own: a group message another device of this person sent (the
	// account's list names it with its identity). Its text, and its
	// action once it applies, are committed as they arrive whatever the
	// policy: this person wrote them, so they ask nobody's decision. A
	// file is committed by its fetch, as any file.
	own bool
}

// prepareMessage delivers an application frame: new, repeated (with the
// ACK again when it was finalized) or refused as a conflict.
func (c *Client) prepareMessage(ctx context.Context, bs *batchState, in *incoming, op opening, a arrival) (prepared, error) {
	id, body := a.frame.ID, a.frame.Body
	d := digest(body)
	effect, kind, err := c.classify(ctx, bs, inboundKey{in.sender, id}, d)
	holder := in.sender // the device whose record a repeat repeats
	if _, fresh := effect.(DeliverEffect); err == nil && fresh && a.group == nil {
		// New from this device: maybe not from its person (adoption.go).
		effect, kind, holder, err = c.classifyByPerson(ctx, bs, in, op, inboundKey{in.sender, id}, d)
	}
	if errors.Is(err, ErrLogicalMessageConflict) {
		return in.drop(id, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	step := in.step(op, id, a.group, a.content)
	step.effect, step.res.Kind = effect, kind
	switch _, repeat := effect.(RepeatEffect); {
	case kind == ResultDelivery && repeat:
		step.res.Body = body
		// A copy of a message that waits in a request is no delivery
		// either.
		if waits, err := c.repeatInRequest(ctx, bs, holder, a.group); err != nil {
			return prepared{}, err
		} else if waits {
			step.res.Kind, step.res.Body = ResultRequest, nil
		}
	case kind == ResultDelivery:
		step.res.Body = body
		err = c.deliverNew(ctx, bs, in, op, a, d, &step)
		if errors.Is(err, ErrPendingCap) || errors.Is(err, ErrRequestBound) {
			return in.drop(id, err), nil
		}
	case kind == ResultAlreadyCommitted || kind == ResultAlreadyDiscarded:
		// The ACK's encryption step commits with this receive.
		step.ack, err = c.ackStep(bs, in, op, &step, a.group, id)
	}
	if err != nil {
		return prepared{}, err
	}
	return in.receive(bs, op, step)
}

// deliverNew prepares a new delivery: counted against the pending caps
// (ErrPendingCap), staged as its sender's request unless the sender or its
// group is accepted (ErrRequestBound), then committed as it arrives when the
// batch commits what CommitOnArrival would, or left pending.
func (c *Client) deliverNew(ctx context.Context, bs *batchState, in *incoming, op opening, a arrival, d [32]byte, step *frameStep) error {
	sender, id, body := in.sender, a.frame.ID, a.frame.Body
	if err := c.admitPending(ctx, bs.caps, sender); err != nil {
		return err
	}
	// A message arrived when its envelope was staged on this device; the
	// conversation shows and orders it by that.
	at := in.row.ReceivedAt
	if at.IsZero() {
		at = in.now
	}
	var request *RequestStage
	var err error
	if !a.own {
		if request, err = c.requestOf(ctx, bs, sender, senderKey(in, op), a, at); err != nil {
			return err
		}
	}
	step.request = request
	step.effect = DeliverEffect{ID: id, Frame: op.plaintext, Digest: d, At: at}
	bs.delivered[inboundKey{sender, id}] = d
	// An action commits on arrival only when it applies now; one that
	// waits for its target, or is to be discarded, stays pending for the
	// hold's pass (actionhold.go).
	var act *ActionApply
	waits := false
	// A sibling's own message is committed as it arrives whatever the
	// policy: its text, and its action when the action applies now (one
	// that waits is committed by the hold's pass when its target is
	// here). A file waits for its fetch, here as everywhere.
	commit := bs.commit || a.own
	if wire.IsAction(a.content) && request == nil && commit {
		var v ActionVerdict
		act, v, err = c.receivedAction(ctx, &InboundMessage{Sender: sender, ID: id, ReceivedAt: at, Body: body, Content: a.content, Group: a.group}, in.now)
		if err != nil {
			return err
		}
		waits = act == nil || v.Hold
		if act != nil && act.Content != wire.ContentReply && bs.deleted[act.targetKey()] {
			// Deleted earlier in this batch: not applied over the
			// tombstone but discarded by the hold's pass.
			waits = true
		}
		if act != nil && !waits && act.Content == wire.ContentDelete {
			bs.deleted[act.targetKey()] = true
		}
	}
	switch {
	case request != nil:
		// Not a delivery until accepted: the policy does not commit it,
		// and nothing goes back to the sender.
		step.res.Kind, step.res.opened = ResultRequest, !request.Join
	case commit && a.content != wire.ContentFile && !waits:
		// Committed as it arrives; the ACK's encryption step commits with
		// it.
		if step.ack, err = c.ackStep(bs, in, op, step, a.group, id); err != nil {
			return err
		}
		e := CommitEffect{ID: id, Digest: d, Arrived: at, At: in.now, Content: a.content, Body: body, Group: a.group, Action: act}
		if a.content == wire.ContentText || a.content == wire.ContentReply {
			// The kept action decisions that wait for it apply with its
			// commit (keptForCommit; one to one, keptForPeerCommit), as
			// with a Finalize's.
			if a.group != nil {
				e.WithKept, err = c.keptForCommit(ctx, bs, *a.group, sender, id, at, in.now)
			} else {
				e.WithKept, err = c.keptForPeerCommit(ctx, bs, sender, id, at, in.now)
			}
			if err != nil {
				return err
			}
		}
		var told []byte // the committed text travels with its decision
		if a.content == wire.ContentText {
			told = body
		}
		var content wire.ContentType
		if act != nil {
			e.Body = actionHistoryBody(wire.Action{Content: act.Content, Text: act.Text})
			step.res.Action = appliedOf(act)
			// An action, one-to-one or a group's, travels with its
			// decision (kind 18).
			told, content = body, a.content
			if !a.own && len(body) <= wire.MaxDecisionActionSize {
				// Kept for a catch-up and an answer (one to one or in a
				// group), which send no sibling's own message.
				e.ActionBody = body
			}
		}
		// Decisions are the person's, for group messages too: an arrival
		// commit tells the other devices as a Commit does. A sibling's own
		// message is committed on every device of the person as it
		// arrives there: nobody is told.
		if !a.own {
			if e.Tell, err = c.arrivalTell(ctx, bs, sender, id, content, told); err != nil {
				return err
			}
		}
		step.effect = e
		step.res.committed = true
	default:
		step.res.fresh = &InboundMessage{Sender: sender, ID: id, ReceivedAt: at, Digest: d, Body: body, Group: a.group, Content: a.content}
	}
	return nil
}

// requestOf stages a new delivery as its sender's request, or into the one
// open: nil when the sender is accepted or request mode is off, and for a
// group message when the group vouches for its members (groupVouched: a
// group message passed DecideGroupMessage, so its sender is in the roster
// of a group this device is in).
func (c *Client) requestOf(ctx context.Context, bs *batchState, sender Address, key *IdentityKey, a arrival, at time.Time) (*RequestStage, error) {
	if a.group != nil {
		if vouched, err := c.groupVouched(ctx, bs, a.group); err != nil || vouched {
			return nil, err
		}
	}
	return c.stageRequest(ctx, bs, sender, key, requestBody(a.content, a.frame.Body), len(a.frame.Body), at)
}

// repeatInRequest reports whether a repeat of a pending message waits in
// its sender's request: the sender's request is open and, for a group
// message, the group does not vouch for it.
func (c *Client) repeatInRequest(ctx context.Context, bs *batchState, sender Address, group *wire.GroupID) (bool, error) {
	if group != nil {
		if vouched, err := c.groupVouched(ctx, bs, group); err != nil || vouched {
			return false, err
		}
	}
	return c.inRequest(ctx, bs, sender)
}

// ackOnNext encrypts the ACK of id on the session next will hold, and
// advances that session by the ACK's step, so that both commit with the
// receive.
func (c *Client) ackOnNext(next *peerState, sender Address, id wire.LogicalID) (*Outgoing, error) {
	tmp := *next
	_, ack, err := c.prepareAck(&tmp, sender, id)
	if err != nil {
		return nil, err
	}
	next.session = tmp.session
	return ack, nil
}

// frameStep is what receiving one frame writes: the sender's state after
// the session step, the frame's effect, the ACK that goes back and the
// request the delivery joins, and the result it reports.
type frameStep struct {
	next       peerState
	pastRecord []byte // the past chains, when the message left one
	effect     FrameEffect
	ack        *Outgoing
	request    *RequestStage
	res        ReceiveResult
}

// step starts a frame's step from the session step that opened it. A
// session the peer set up is where the own pending messages must now go.
func (in *incoming) step(op opening, id wire.LogicalID, group *wire.GroupID, content wire.ContentType) frameStep {
	ps, hs := in.ps, op.handshake
	next := peerState{pinned: ps.pinned, session: op.session, version: ps.version + 1, replaces: ps.replaces, past: ps.past, refused: ps.refused}
	if hs != nil && hs.Pin != nil {
		next.pinned = hs.Pin
	}
	step := frameStep{next: next,
		res: ReceiveResult{Sender: in.sender, ID: id, Group: group, Content: content, handshake: hs != nil, converged: hs != nil}}
	if op.left != nil {
		step.next.past = ps.past.With(op.session.ID, *op.left)
		step.pastRecord = step.next.past.Marshal()
	}
	return step
}

// receive makes the row's Receive plan from a frame's step and moves the
// sender's working state on; later rows of the batch see what this one
// consumes and retires.
func (in *incoming) receive(bs *batchState, op opening, step frameStep) (prepared, error) {
	ps, hs := in.ps, op.handshake
	sw, err := sessionWrite(in.sender, ps.version, step.next.session)
	if err != nil {
		return prepared{}, err
	}
	*ps = step.next
	if hs != nil && hs.ConsumeOneTime != nil {
		bs.consumed[*hs.ConsumeOneTime] = true
	}
	if hs != nil && hs.Retire != nil {
		bs.retired[retiredKey{in.sender, hs.Retire.ID}] = true
	}
	return prepared{
		plan: Receive{StagedRow: in.row.Row, Peer: in.sender, Session: sw, Handshake: hs, Effect: step.effect,
			Ack: step.ack, PastChains: step.pastRecord, Request: step.request, Chain: bs.commitChain(op)},
		result: step.res,
		ack:    step.ack,
	}, nil
}
