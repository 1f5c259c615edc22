package engine

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// A roster change from a device this one has not accepted waits in its
// sender's message request (rosterRequest): a group a stranger makes, or
// names an accepted person an admin of, vouches for nobody and is told
// nothing. Accepting the sender applies what waited, in the transaction of
// the accept: each change is merged as if it arrived then, and acknowledged.

// RosterAdoption is one roster change that waited in an accepted request:
// its pending row is deleted, and Effect, when set, applied. Ack says
// whether the accept acknowledges it (its ACK is in AcceptRequest.Acks).
type RosterAdoption struct {
	ID     wire.LogicalID
	Effect *RosterEffect
	Ack    bool
}

// adoptions is what accepting a request does with the roster changes that
// waited in it: a decision per change, and the ACKs with their session
// steps, in order.
type adoptions struct {
	rosters  []RosterAdoption
	acks     []*Outgoing
	sessions []SessionWrite
}

// prepareAdoptions reads the roster changes waiting in peer's request and
// decides each, as receiveRoster would for an accepted sender, on copies of
// the groups as the earlier ones leave them; the ACKs are encrypted on the
// working state in work.
func (c *Client) prepareAdoptions(ctx context.Context, work map[Address]*peerState, peer Address) (adoptions, error) {
	var ad adoptions
	gs := c.store
	var waiting []InboundMessage
	for after := int64(0); ; {
		page, err := c.store.PendingInbound(ctx, PageQuery{After: after, Limit: 500, Peer: &peer, Requests: true})
		if err != nil {
			return ad, err
		}
		for _, m := range page {
			after = m.Seq
			if m.Roster != nil {
				waiting = append(waiting, m)
			}
		}
		if len(page) < 500 {
			break
		}
	}
	groups := make(map[wire.GroupID]GroupInfo)
	known := make(map[wire.GroupID]bool)
	bs := newBatchState()
	for _, m := range waiting {
		sr, err := wire.DecodeSignedRoster(m.Roster)
		if err != nil {
			ad.rosters = append(ad.rosters, RosterAdoption{ID: m.ID})
			continue
		}
		g, ok := groups[sr.Group]
		if !ok {
			if g, known[sr.Group], err = lookupGroup(ctx, gs, sr.Group); err != nil {
				return ad, err
			}
		}
		ch := changeOf(sr)
		counts := !known[sr.Group] || forwardCounts(g, ch)
		a, next, err := c.adoptRoster(ctx, bs, gs, sr.Group, g, known[sr.Group], ch, m.Roster)
		if err != nil {
			return ad, err
		}
		if a.Effect != nil {
			groups[sr.Group], known[sr.Group] = next, true
			if err := c.rosterForwards(ctx, &bs.siblings, a.Effect, peer, counts); err != nil {
				return ad, err
			}
		}
		if a.Ack {
			ps, err := c.working(ctx, work, peer)
			if err != nil {
				return ad, err
			}
			sw, ack, err := c.prepareAck(ps, peer, sr.ID)
			if err != nil {
				return ad, err
			}
			if ack != nil {
				ad.acks, ad.sessions = append(ad.acks, ack), append(ad.sessions, *sw)
			}
		}
		ad.rosters = append(ad.rosters, a)
	}
	return ad, nil
}

// adoptRoster decides one waiting change on group gid (g, when known: kept
// here) and returns the group as the change leaves it.
func (c *Client) adoptRoster(ctx context.Context, bs *batchState, gs GroupStore, gid wire.GroupID, g GroupInfo, known bool, ch RosterChange, frame []byte) (RosterAdoption, GroupInfo, error) {
	a := RosterAdoption{ID: ch.ID}
	if !known {
		if !startsHere(ch, c.self) {
			// It waits on a change not here yet; its author sends it again.
			return a, g, nil
		}
		if _, counted := StartRoster(ch, []RosterChange{ch}); len(counted) == 0 {
			return a, g, nil
		}
		if full, err := c.groupsFull(ctx, bs, gs); err != nil || full {
			return a, g, err
		}
		bs.newGroups++
		start := GroupStart{Change: ch.ID}
		a.Effect = &RosterEffect{Group: gid, Change: ch, Frame: frame, Start: &start}
		a.Ack = true
		next := GroupInfo{ID: gid, Start: start, Changes: []RosterChange{ch}}
		next.Roster, _ = MergeRoster(start, next.Changes, 0)
		return a, next, nil
	}
	for _, have := range g.Changes {
		if have.ID == ch.ID {
			a.Ack = true
			return a, g, nil
		}
	}
	if startBelow(g, ch.Generation) {
		a.Ack = true
		return a, g, nil
	}
	if err := changeAdmitted(g, ch); err != nil {
		return a, g, nil
	}
	all := append(append([]RosterChange(nil), g.Changes...), ch)
	next, _ := MergeRoster(g.Start, all, 0)
	lists, err := c.groupLists(ctx, g.Roster)
	if err != nil {
		return a, g, err
	}
	removed, err := parseAddresses(RemovedLanes(g.Roster, next, lists))
	if err != nil {
		return a, g, nil
	}
	a.Effect = &RosterEffect{Group: gid, Change: ch, Frame: frame, Removed: removed, Compact: compaction(g.Start, all, next),
		Left: !next.HasUser(c.self.User)}
	a.Ack = true
	g.Changes, g.Roster = all, next
	if a.Effect.Compact != nil {
		g.Start = *a.Effect.Compact
	}
	return a, g, nil
}

// adoptionsAck hands off the ACKs of adopted changes after the accept
// committed.
func (c *Client) adoptionsAck(ctx context.Context, acks []*Outgoing) error {
	if len(acks) == 0 {
		return nil
	}
	if _, err := c.sendAcks(ctx, "request-accept", acks); err != nil {
		return fmt.Errorf("acknowledge adopted roster changes: %w", err)
	}
	return nil
}
