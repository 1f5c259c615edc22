package engine

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// StrandedLane reports whether this device's lane of a group message it sent
// at generation gen can never be answered, given the roster it has merged:
// this device's person is not in the merged roster (a concurrent change removed it)
// and the message names a generation past the merged one. The generation the
// message names existed only in this device's view, through a change the
// merge no longer counts (its author was removed before it), so a member
// holds the message waiting for that generation, and no later change can
// make it one whose roster has this device: that would take an admin adding
// it back. Such a lane is abandoned rather than left pending for ever. A
// message naming a generation the merged roster reaches is left to its
// member, who accepts it or answers not_a_member.
func StrandedLane(merged Roster, self string, gen uint64) bool {
	return !merged.HasUser(userOf(self)) && gen > merged.Generation
}

// abandonStrandedLanes ends, as abandoned, the pending lanes of this
// device's own messages to group g (messages and actions alike) and of its
// chain announcements that StrandedLane says can never be answered. It
// runs, under the send mutex, after a page of receives brought roster
// changes to g.
func (c *Client) abandonStrandedLanes(ctx context.Context, g GroupInfo) error {
	self := c.self.String()
	if g.Roster.HasUser(c.self.User) {
		return nil
	}
	var plans []Plan
	for after := int64(0); ; {
		page, err := c.store.PendingOutbound(ctx, PageQuery{After: after, Limit: maxPendingPage})
		if err != nil {
			return err
		}
		for _, o := range page {
			after = o.Seq
			if o.Group == nil || *o.Group != g.ID {
				continue
			}
			if gen, ok := laneGeneration(o.Frame); ok && StrandedLane(g.Roster, self, gen) {
				plans = append(plans, Abandon{Recipient: o.Recipient, ID: o.ID, At: c.cfg.Now()})
			}
		}
		if len(page) < maxPendingPage {
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

// maxPendingPage is the page size abandonStrandedLanes reads the pending
// sent messages in.
const maxPendingPage = 500

// laneGeneration is the generation a pending group lane's frame names: a
// group message's (a message or an action) or a chain announcement's. A
// roster change's lane is not this rule's.
func laneGeneration(frame []byte) (uint64, bool) {
	switch kind, _ := wire.PeekFrameKind(frame); kind {
	case wire.FrameGroupMessage:
		m, err := wire.DecodeGroupMessage(frame)
		return m.Generation, err == nil
	case wire.FrameChainAnnounce:
		a, err := wire.DecodeChainAnnounce(frame)
		return a.Generation, err == nil
	}
	return 0, false
}
