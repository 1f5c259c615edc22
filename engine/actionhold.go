package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/wire"
)

// The actions that wait. A received reaction, edit or delete whose target
// is not committed here stays a pending message: not acknowledged, so its
// sender's lane stays open and its retries are absorbed as repeats. After
// every batch of a round, settleActions looks at each of them again: one
// whose target is now committed is committed and applied (under
// CommitOnArrival; otherwise the person commits it), one DecideAction
// discards is discarded with its reason, and its ACK ends the sender's
// lane. A person's commit of one still waiting is refused (ErrTargetPending).

// waitsAsAction reports whether a pending message of content type c is an
// action that settleActions finalizes (a reply is committed as any text).
func waitsAsAction(c wire.ContentType) bool { return wire.IsAction(c) && c != wire.ContentReply }

// heldActionsPage is how many waiting actions one pass reads at a time.
const heldActionsPage = 256

// finalizingAction decides a commit of an action (nil for anything else):
// the ActionApply to apply with it; or the commit refused (res.Err,
// ErrTargetPending) while the target waits; or the commit turned into a
// discard with the rule's reason (r's outcome and reason changed,
// res.Discarded set).
func (c *Client) finalizingAction(ctx context.Context, m *InboundMessage, r *FinalizeRequest, res *FinalizeResult) (*ActionApply, error) {
	if r.Outcome != OutcomeCommitted || !wire.IsAction(m.Content) {
		return nil, nil
	}
	act, v, err := c.receivedAction(ctx, m, c.cfg.Now())
	switch {
	case err != nil:
		return nil, err
	case v.Hold:
		res.Err = fmt.Errorf("commit %s %x from %s: %w", ActionName(m.Content), r.ID[:], r.Sender, ErrTargetPending)
		return nil, nil
	case v.Reason != DiscardNone:
		r.Outcome, r.Reason = OutcomeDiscarded, v.Reason
		res.Discarded = v.Reason
		return nil, nil
	}
	res.Action = appliedOf(act)
	return act, nil
}

// settleActions looks at every waiting action once (see above) and
// finalizes what the rules and the policy allow, returning one result per
// action finalized: ResultApplied or ResultActionDiscarded.
func (c *Client) settleActions(ctx context.Context) ([]ReceiveResult, error) {
	var held []InboundMessage
	for after := int64(0); ; {
		page, err := c.store.HeldActions(ctx, after, heldActionsPage)
		if err != nil {
			return nil, err
		}
		held = append(held, page...)
		if len(page) < heldActionsPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if len(held) == 0 {
		return nil, nil
	}
	commit := c.Policy().Commit == CommitOnArrival
	now := c.cfg.Now()
	waiting := make(map[Address][]int) // per sender, the actions that wait, oldest first
	var reqs []FinalizeRequest
	known := make(map[inboundKey]*InboundMessage)
	deleted := make(map[actionTargetKey]bool) // by the deletes this pass commits
	copies := make(map[copyIDKey]bool)        // the own entries its sent copies make
	for i := range held {
		m := &held[i]
		act, v, err := c.receivedAction(ctx, m, now)
		if err != nil {
			return nil, err
		}
		// A sibling's own group action is committed whatever the policy,
		// as on arrival (frame.go), while the account's list vouches for
		// its device; nobody is told.
		// A sibling's sent copy of an action is committed the same way
		// (heldCopyAction checked its sender).
		own := m.CopyTo != ""
		if act != nil && m.Group != nil {
			if own, err = c.ownSibling(ctx, m.Sender); err != nil {
				return nil, err
			}
		}
		switch {
		case v.Hold:
			waiting[m.Sender] = append(waiting[m.Sender], i)
		case v.Reason != DiscardNone:
			reqs = append(reqs, FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: OutcomeDiscarded, Reason: v.Reason, held: true})
		case act != nil && act.Content != wire.ContentReply && deleted[act.targetKey()]:
			// A delete earlier in this pass takes the target: the
			// action would apply over its tombstone.
			reqs = append(reqs, FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: OutcomeDiscarded, Reason: DiscardTargetDeleted, held: true})
		case act != nil && m.CopyTo != "" && copies[copyIDKey{act.Peer, DirectionOut, m.ID}]:
			// Another sibling's copy of this ID commits earlier in this
			// pass: this one claims no authorship (ErrCopyIDTaken).
			reqs = append(reqs, FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: OutcomeDiscarded, Reason: DiscardNotAuthor, held: true})
		case act != nil && (commit || own):
			if m.CopyTo != "" {
				copies[copyIDKey{act.Peer, DirectionOut, m.ID}] = true
			}
			reqs = append(reqs, FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: OutcomeCommitted, own: own})
			if act.Content == wire.ContentDelete {
				deleted[act.targetKey()] = true
			}
		default:
			continue
		}
		known[inboundKey{m.Sender, m.ID}] = m
	}
	for _, idx := range waiting {
		// The oldest go first: a sender over the bound loses what it
		// sent longest ago, which the newest cannot have been waiting for.
		for _, i := range idx[:max(0, len(idx)-MaxHeldActionsPerSender)] {
			m := &held[i]
			reqs = append(reqs, FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: OutcomeDiscarded, Reason: DiscardHoldFull, held: true})
			known[inboundKey{m.Sender, m.ID}] = m
		}
	}
	var out []ReceiveResult
	for len(reqs) > 0 {
		n := min(len(reqs), c.cfg.BatchSize)
		res, err := c.finalizeBatch(ctx, reqs[:n], known, false)
		for j, r := range res {
			q := reqs[j]
			if r.Err != nil {
				continue
			}
			m := known[inboundKey{q.Sender, q.ID}]
			rr := ReceiveResult{Kind: ResultApplied, Sender: q.Sender, ID: q.ID, Content: m.Content, Group: m.Group, Action: r.Action}
			if m.CopyTo != "" {
				if to, err := ParseAddress(m.CopyTo); err == nil {
					rr.CopyTo = &to // a sibling's sent copy: of that conversation
				}
			}
			if q.Outcome == OutcomeDiscarded || r.Discarded != DiscardNone {
				rr.Kind, rr.Reason, rr.Action = ResultActionDiscarded, max(q.Reason, r.Discarded), nil
			}
			out = append(out, rr)
		}
		if err != nil {
			return out, err
		}
		reqs = reqs[n:]
	}
	slices.SortStableFunc(out, func(a, b ReceiveResult) int {
		return int(known[inboundKey{a.Sender, a.ID}].Seq - known[inboundKey{b.Sender, b.ID}].Seq)
	})
	return out, nil
}

// ownSibling reports whether sender is another device of this person that
// the account's list names active with the identity this device pinned
// for it: a sibling whose group messages are this person's own.
func (c *Client) ownSibling(ctx context.Context, sender Address) (bool, error) {
	if sender.User != c.self.User || sender == c.self {
		return false, nil
	}
	ps, err := c.store.Peer(ctx, sender)
	if err != nil {
		return false, err
	}
	v, err := c.vouchSender(ctx, sender, ps.Pinned)
	return v == VouchListed, err
}
