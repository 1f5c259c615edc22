package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// StrandedLane reports whether this device's lane of a group message it sent
// at generation gen can never be answered, given the roster it has merged:
// this device is not in the merged roster (a concurrent change removed it)
// and the message names a generation past the merged one. The generation the
// message names existed only in this device's view, through a change the
// merge no longer counts (its author was removed before it), so a member
// holds the message waiting for that generation, and no later change can
// make it one whose roster has this device: that would take an admin adding
// it back. Such a lane is abandoned rather than left pending for ever. A
// message naming a generation the merged roster reaches is left to its
// member, who accepts it or answers not_a_member.
func StrandedLane(merged Roster, self string, gen uint64) bool {
	return !merged.Has(self) && gen > merged.Generation
}

// abandonStrandedLanes ends, as abandoned, the pending lanes of this
// device's own messages to group g, and of its chain announcements, that
// StrandedLane says can never be answered. It runs, under the send mutex, after a page of receives brought
// roster changes to g.
func (c *Client) abandonStrandedLanes(ctx context.Context, gs GroupStore, g GroupInfo) error {
	self := c.self.String()
	if g.Roster.Has(self) {
		return nil
	}
	var plans []Plan
	for after := int64(0); ; {
		page, err := gs.GroupHistory(ctx, g.ID, after, maxHistoryPage)
		if err != nil {
			return err
		}
		for _, e := range page {
			after = e.Seq
			if !e.Own {
				continue
			}
			for _, l := range e.Lanes {
				if l.State.Ended() {
					continue
				}
				stranded, err := c.laneStranded(ctx, g.Roster, l.Recipient, e.ID)
				if err != nil {
					return err
				}
				if stranded {
					plans = append(plans, Abandon{Recipient: l.Recipient, ID: e.ID, At: c.cfg.Now()})
				}
			}
		}
		if len(page) < maxHistoryPage {
			break
		}
	}
	// The announcements of this device's sender chains are lanes of the
	// group with no history entry: one naming a generation that exists
	// only in this device's view is as stranded as a message naming it.
	for after := int64(0); ; {
		page, err := c.store.PendingOutbound(ctx, PageQuery{After: after, Limit: maxHistoryPage})
		if err != nil {
			return err
		}
		for _, o := range page {
			after = o.Seq
			if o.Group == nil || *o.Group != g.ID {
				continue
			}
			if kind, _ := wire.PeekFrameKind(o.Frame); kind != wire.FrameChainAnnounce {
				continue
			}
			a, err := wire.DecodeChainAnnounce(o.Frame)
			if err == nil && StrandedLane(g.Roster, self, a.Generation) {
				plans = append(plans, Abandon{Recipient: o.Recipient, ID: o.ID, At: c.cfg.Now()})
			}
		}
		if len(page) < maxHistoryPage {
			break
		}
	}
	if len(plans) == 0 {
		return nil
	}
	if _, err := c.applyAll(ctx, plans); err != nil {
		return fmt.Errorf("abandon stranded lanes of group %x: %w", g.ID[:], err)
	}
	for _, p := range plans {
		a := p.(Abandon)
		c.emit(Event{Kind: EventAbandoned, At: a.At, Peer: a.Recipient, ID: a.ID})
	}
	return nil
}

// maxHistoryPage is the page size abandonStrandedLanes reads a group's
// history in.
const maxHistoryPage = 500

// laneStranded reads the generation a pending lane's frame names and applies
// StrandedLane to it. A lane no longer pending is not stranded.
func (c *Client) laneStranded(ctx context.Context, merged Roster, peer Address, id wire.LogicalID) (bool, error) {
	out, err := c.store.Outbound(ctx, peer, id)
	if errors.Is(err, ErrNotPending) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m, err := wire.DecodeGroupMessage(out.Frame)
	if err != nil {
		return false, nil // not a group message frame: not this rule's
	}
	return StrandedLane(merged, c.self.String(), m.Generation), nil
}
