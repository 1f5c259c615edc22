package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// groupFrame decides what a received group frame does. A group message that
// DecideGroupMessage accepts comes back as an application frame with its
// group, to be delivered and deduplicated by (sender, ID) like any message;
// every other outcome is the row's verdict (done): a held message has no
// plan (its row stays staged), a refused one answers not_a_member, a roster
// change is recorded and acknowledged, a not_a_member ends a lane.
func (c *Client) groupFrame(ctx context.Context, bs *batchState, in *incoming, op opening, kind wire.FrameKind) (wire.Frame, *wire.GroupID, *prepared, error) {
	gs, err := c.groupStore()
	if err != nil {
		p := in.drop(wire.LogicalID{}, err)
		return wire.Frame{}, nil, &p, nil
	}
	switch kind {
	case wire.FrameGroupMessage:
		m, err := wire.DecodeGroupMessage(op.plaintext)
		if err != nil {
			p := in.drop(wire.LogicalID{}, err)
			return wire.Frame{}, nil, &p, nil
		}
		g, known, err := lookupGroup(ctx, gs, m.Group)
		if err != nil {
			return wire.Frame{}, nil, nil, err
		}
		verdict := DecideGroupMessage(GroupMessageInput{Known: known, Merged: g.Roster.Generation, Generation: m.Generation,
			AtMessage: rosterAt(g, m.Generation), Sender: in.sender.String(), Self: c.self.String(), HeldFor: heldFor(in)})
		switch verdict {
		case GroupHold:
			return wire.Frame{}, nil, &prepared{}, nil
		case GroupDrop:
			p := in.drop(m.ID, fmt.Errorf("group %x generation %d: %w", m.Group[:], m.Generation, ErrGroupHoldExpired))
			return wire.Frame{}, nil, &p, nil
		case GroupRefuse:
			p, err := c.refuseGroupMessage(bs, in, op, m)
			return wire.Frame{}, nil, &p, err
		}
		return wire.Frame{Kind: wire.FrameApplication, ID: m.ID, Body: m.Body}, &m.Group, nil, nil
	case wire.FrameRoster:
		r, err := wire.DecodeRoster(op.plaintext)
		if err != nil {
			p := in.drop(wire.LogicalID{}, err)
			return wire.Frame{}, nil, &p, nil
		}
		p, err := c.receiveRoster(ctx, bs, gs, in, op, r)
		return wire.Frame{}, nil, &p, err
	default:
		n, err := wire.DecodeNotAMember(op.plaintext)
		if err != nil {
			p := in.drop(wire.LogicalID{}, err)
			return wire.Frame{}, nil, &p, nil
		}
		res := ReceiveResult{Kind: ResultNotAMember, Sender: in.sender, ID: n.ID, Group: &n.Group, Generation: n.Generation}
		p, err := c.groupVerdict(bs, in, op, NotAMemberEffect{Group: n.Group, ID: n.ID}, nil, res)
		return wire.Frame{}, nil, &p, err
	}
}

// heldFor is how long a row has been staged (0 when its time is unknown).
func heldFor(in *incoming) time.Duration {
	if in.row.ReceivedAt.IsZero() {
		return 0
	}
	return in.now.Sub(in.row.ReceivedAt)
}

// lookupGroup returns a group and whether this device keeps it.
func lookupGroup(ctx context.Context, gs GroupStore, id wire.GroupID) (GroupInfo, bool, error) {
	g, err := gs.Group(ctx, id)
	switch {
	case errors.Is(err, ErrUnknownGroup):
		return GroupInfo{}, false, nil
	case err != nil:
		return GroupInfo{}, false, err
	}
	return g, true, nil
}

// rosterAt is the group's roster at generation gen (the merged roster when
// gen is not above it).
func rosterAt(g GroupInfo, gen uint64) Roster {
	if gen >= g.Roster.Generation {
		return g.Roster
	}
	r, _ := MergeRoster(g.Changes, gen)
	return r
}

// refuseGroupMessage answers a group message from a sender the roster at its
// generation omits with not_a_member, encrypted on the session like an ACK
// and never stored as pending.
func (c *Client) refuseGroupMessage(bs *batchState, in *incoming, op opening, m wire.GroupMessage) (prepared, error) {
	frame, err := wire.EncodeNotAMember(wire.NotAMember{ID: m.ID, Group: m.Group, Generation: m.Generation})
	if err != nil {
		return prepared{}, err
	}
	res := ReceiveResult{Kind: ResultError, Sender: in.sender, ID: m.ID, Group: &m.Group,
		Err: fmt.Errorf("group %x: %s: %w", m.Group[:], in.sender, ErrNotMember)}
	return c.groupVerdict(bs, in, op, RepeatEffect{}, frame, res)
}

// receiveRoster records a roster change from its author (the sender) and
// acknowledges it; a change already recorded is acknowledged again.
func (c *Client) receiveRoster(ctx context.Context, bs *batchState, gs GroupStore, in *incoming, op opening, r wire.Roster) (prepared, error) {
	ack, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: r.ID})
	if err != nil {
		return prepared{}, err
	}
	g, _, err := lookupGroup(ctx, gs, r.Group)
	if err != nil {
		return prepared{}, err
	}
	change := RosterChange{ID: r.ID, Author: in.sender.String(), Generation: r.Generation, Name: r.Name, Ops: r.Changes, Members: r.Members}
	res := ReceiveResult{Kind: ResultGroupChanged, Sender: in.sender, ID: r.ID, Group: &r.Group}
	for _, have := range g.Changes {
		if have.ID == change.ID {
			res.Generation = g.Roster.Generation
			return c.groupVerdict(bs, in, op, RepeatEffect{}, ack, res)
		}
	}
	next, _ := MergeRoster(append(append([]RosterChange(nil), g.Changes...), change), 0)
	removed, err := parseAddresses(RemovedLanes(g.Roster, next))
	if err != nil {
		return prepared{}, err
	}
	res.Generation = next.Generation
	effect := RosterEffect{Group: r.Group, Change: change, Frame: op.plaintext, Removed: removed}
	return c.groupVerdict(bs, in, op, effect, ack, res)
}

// groupVerdict makes the Receive plan of a group frame: the session step
// that opened it, its effect and, when reply is set, that frame encrypted
// back on the advanced session (an ACK, or a not_a_member).
func (c *Client) groupVerdict(bs *batchState, in *incoming, op opening, effect FrameEffect, reply []byte, res ReceiveResult) (prepared, error) {
	ps, hs := in.ps, op.handshake
	next := peerState{pinned: ps.pinned, session: op.session, version: ps.version + 1, replaces: ps.replaces}
	if hs != nil && hs.Pin != nil {
		next.pinned = hs.Pin
	}
	var out *Outgoing
	if reply != nil {
		cand := next.session.Clone()
		env, err := c.seal(cand, in.sender, reply)
		if err != nil {
			return prepared{}, err
		}
		next.session = cand
		out = &Outgoing{Envelope: env, IsAck: true}
	}
	sw, err := sessionWrite(in.sender, ps.version, next.session)
	if err != nil {
		return prepared{}, err
	}
	*ps = next
	if hs != nil && hs.ConsumeOneTime != nil {
		bs.consumed[*hs.ConsumeOneTime] = true
	}
	if hs != nil && hs.Retire != nil {
		bs.retired[retiredKey{in.sender, hs.Retire.ID}] = true
	}
	res.handshake, res.converged = hs != nil, hs != nil
	return prepared{
		plan:   Receive{StagedRow: in.row.Row, Peer: in.sender, Session: sw, Handshake: hs, Effect: effect, Ack: out},
		result: res,
		ack:    out,
	}, nil
}

// derefPrepared returns *p, or the zero prepared (a held row) for nil.
func derefPrepared(p *prepared) prepared {
	if p == nil {
		return prepared{}
	}
	return *p
}
