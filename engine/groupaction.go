package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Actions in groups. A reply, a reaction, an edit or a delete for everyone
// in a group is a group message of the action's content type: stored with
// a pending lane per member in one transaction (the group send's plan,
// which applies it here), each lane sent, retried and acknowledged like any
// group message's. A member that receives it decides it by the rules of
// DecideAction and applies it in the plan that commits it, held while its
// target has not arrived (actionhold.go).
//
// The target is a group message, named by (group, author, logical ID). An
// edit or a delete names the sender's own message: its author is the
// action's sender, and an entry with that ID by someone else makes it
// not_author. A reaction or a reply names any member's message: the
// earliest entry with that ID in the group's history, so that a member who
// later sends a message under a victim's ID does not take the reactions
// meant for the original.

// groupTarget returns what group g knows of action a's target, decided for
// actor (the action's author): the target's author, and an ActionTarget
// whose Direction is DirectionIn when actor wrote the target and
// DirectionOut otherwise (DecideAction's byPeer, set, then checks the
// author). A target not in the history is Pending or Discarded when its
// author's pending or finalized message says so (for a reaction, any
// member's: the roster's entry and every device the list held for its
// person names, active or revoked, since any of them sends to the group;
// or a former member's whose record of that ID the group keeps:
// groupTargetAuthors).
func (c *Client) groupTarget(ctx context.Context, g wire.GroupID, actor Address, a wire.Action) (ActionTarget, Address, error) {
	var author Address // any, for a reaction or a reply
	if a.Content == wire.ContentEdit || a.Content == wire.ContentDelete {
		author = actor
	}
	t, found, err := c.store.GroupActionTarget(ctx, g, author, a.Target)
	if err != nil {
		return ActionTarget{}, Address{}, err
	}
	if !t.Found && author != (Address{}) {
		// Someone else's message under that ID: not the actor's to edit.
		other, by, err := c.store.GroupActionTarget(ctx, g, Address{}, a.Target)
		if err != nil {
			return ActionTarget{}, Address{}, err
		}
		if other.Found {
			t, found = other, by
		}
	}
	if t.Found {
		t.Direction = DirectionOut
		if found == actor {
			t.Direction = DirectionIn
		}
		return t, found, nil
	}
	senders := []Address{author}
	if author == (Address{}) {
		if senders, err = c.groupTargetAuthors(ctx, g, a.Target); err != nil {
			return ActionTarget{}, Address{}, err
		}
	}
	for _, s := range senders {
		if s == c.self {
			continue
		}
		seen, err := c.store.Seen(ctx, s, a.Target)
		if err != nil {
			return ActionTarget{}, Address{}, err
		}
		t.Pending = t.Pending || seen.Pending
		if seen.Finalized && seen.Outcome == OutcomeDiscarded {
			t.Discarded = true
		}
	}
	return t, author, nil
}

// groupTargetAuthors returns who may have written group g's message id
// that a reaction or a reply names, for the engine to read their pending
// or finalized message of that ID, this device left out: the roster's
// members and every device the list held for each member's person names
// (active or revoked: any of them sends to the group), and the senders of the group's finalized records of that ID
// (GroupRecordSenders), so that the discarded message of a member who
// left or was removed since is found too.
func (c *Client) groupTargetAuthors(ctx context.Context, g wire.GroupID, id wire.LogicalID) ([]Address, error) {
	info, err := c.store.Group(ctx, g)
	if err != nil {
		return nil, err
	}
	var out []Address
	seen := make(map[Address]bool)
	add := func(p Address) {
		if p != c.self && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, m := range info.Roster.Members {
		p, err := ParseAddress(m.Address)
		if err != nil {
			continue
		}
		add(p)
		held, ok, err := c.store.PeerAccount(ctx, p.User)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for _, e := range held.List.Entries {
			add(Address{User: held.List.User, Device: e.Number})
		}
	}
	recs, err := c.store.GroupRecordSenders(ctx, g, id, groupRecordSendersPage)
	if err != nil {
		return nil, err
	}
	for _, p := range recs {
		add(p)
	}
	return out, nil
}

// groupRecordSendersPage bounds the senders of one group message ID's
// finalized records read for a reaction's or a reply's target: IDs are
// random, so more than one is a collision a member made on purpose.
const groupRecordSendersPage = 16

// groupApplyOf makes the ActionApply of action a (ID id) in group g, made
// by author, whose target t was written by targetAuthor.
func (c *Client) groupApplyOf(g wire.GroupID, author Address, id wire.LogicalID, a wire.Action, targetAuthor Address, at time.Time) *ActionApply {
	dir, tdir := DirectionIn, DirectionIn
	if author == c.self {
		dir = DirectionOut
	}
	if targetAuthor == c.self {
		tdir = DirectionOut
	}
	return &ActionApply{Peer: author, ID: id, Dir: dir, Content: a.Content, Target: a.Target, TargetDir: tdir,
		Reactor: author, Emoji: a.Emoji, Remove: a.Remove, Order: a.Order, Edit: a.Edit, Text: a.Text, At: at,
		Group: &g, TargetAuthor: targetAuthor}
}

// actInGroup is Act for a group: checked here as a receiver would (a
// target this device knows, the rules of DecideAction with this device as
// the actor), then stored with a pending lane per member and applied here
// in the same transaction, for the pump to send.
func (c *Client) actInGroup(ctx context.Context, g wire.GroupID, a wire.Action) (wire.LogicalID, error) {
	res, err := c.enqueueGroupAction(ctx, g, a)
	return res.ID, err
}

// EnqueueGroupAction is Act for an action in group r.Group, returning as
// EnqueueGroup does: the action's ID and every lane in Unsent (stored,
// none handed off yet; the pump sends them).
func (c *Client) EnqueueGroupAction(ctx context.Context, r ActionRequest) (GroupSendResult, error) {
	if r.Group == nil {
		return GroupSendResult{}, fmt.Errorf("%s: %w", ActionName(r.Content), ErrUnknownGroup)
	}
	a := wire.Action{Content: r.Content, Target: r.Target, Text: r.Text, Emoji: r.Emoji, Remove: r.Remove}
	if len(a.Text) == 0 {
		a.Text = nil
	}
	return c.enqueueGroupAction(ctx, *r.Group, a)
}

func (c *Client) enqueueGroupAction(ctx context.Context, g wire.GroupID, a wire.Action) (GroupSendResult, error) {
	var targetAuthor Address
	if a.Content != wire.ContentReply {
		t, author, err := c.groupTarget(ctx, g, c.self, a)
		if err != nil {
			return GroupSendResult{}, fmt.Errorf("%s: %w", ActionName(a.Content), err)
		}
		if !t.Found {
			return GroupSendResult{}, fmt.Errorf("%s %x: %w", ActionName(a.Content), a.Target[:], ErrTargetNotFound)
		}
		now := c.cfg.Now()
		if v := DecideAction(t, a.Content, true, now, now); v.Hold || v.Reason != DiscardNone {
			return GroupSendResult{}, fmt.Errorf("%s %x: %w", ActionName(a.Content), a.Target[:], &ActionRefusedError{Reason: v.Reason})
		}
		switch a.Content {
		case wire.ContentEdit:
			a.Edit = t.Edits + 1
		case wire.ContentReaction:
			last, found, err := c.store.GroupReactionNumber(ctx, g, author, a.Target, c.self)
			if err != nil {
				return GroupSendResult{}, fmt.Errorf("reaction: %w", err)
			}
			if a.Order, err = nextReaction(last, found); err != nil {
				return GroupSendResult{}, err
			}
		}
		targetAuthor = author
	}
	body, err := wire.EncodeAction(a)
	if err != nil {
		return GroupSendResult{}, fmt.Errorf("%s: %w", ActionName(a.Content), err)
	}
	mid, lanes, err := c.storeGroupWith(ctx, g, nil, a.Content, body, func(id wire.LogicalID, at time.Time) *ActionApply {
		return c.groupApplyOf(g, c.self, id, a, targetAuthor, at)
	})
	if err != nil {
		return GroupSendResult{}, err
	}
	c.wantPump()
	return GroupSendResult{ID: mid, Unsent: lanes}, nil
}

// receivedGroupAction is receivedAction for a group message m carrying
// action a.
func (c *Client) receivedGroupAction(ctx context.Context, m *InboundMessage, a wire.Action, now time.Time) (*ActionApply, ActionVerdict, error) {
	var t ActionTarget
	var targetAuthor Address
	if a.Content != wire.ContentReply {
		var err error
		if t, targetAuthor, err = c.groupTarget(ctx, *m.Group, m.Sender, a); err != nil {
			return nil, ActionVerdict{}, err
		}
	}
	v := DecideAction(t, a.Content, true, m.ReceivedAt, now)
	if v.Hold || v.Reason != DiscardNone {
		return nil, v, nil
	}
	return c.groupApplyOf(*m.Group, m.Sender, m.ID, a, targetAuthor, now), v, nil
}

// GroupMessageVersions returns the previous bodies of an edited group
// message, kept on this device only.
func (c *Client) GroupMessageVersions(ctx context.Context, g wire.GroupID, author Address, id wire.LogicalID) ([]MessageVersion, error) {
	return c.store.GroupMessageVersions(ctx, g, author, id)
}
