package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Sent copies of actions (frame kind 17). A one-to-one action of this
// person (a reply, a reaction, an edit, a delete) goes, besides its lanes
// to every device of the peer, on one lane to each other active device of
// this person's account, in the same PersonSend as the action: a
// wire.SentActionCopy naming the conversation and carrying the action.
// The sibling that receives it commits it on arrival, as a sibling's group
// action: this person's own, nobody's decision, nothing told. It becomes
// an own entry of the conversation (SentCopied: a reply shows as an own
// reply with its quote) and applies to its target, as the action of the
// device that sent it (the reactor of a reaction, the author of an edit).
//
// The sibling checks the copy as its own device's word only:
//
//   - its sender is an active device of this account's list with the
//     identity its session holds (checkOwnDevice), else the copy is
//     dropped with ErrNotOwnDevice and nothing is stored;
//   - it names another person's conversation (ErrCopyConversation);
//   - an edit or a delete applies only to a message that very device sent,
//     as this device holds it: an own entry committed from that device's
//     sent copy (the entry names it, ActionTarget.SentBy), never a
//     message of the peer, of this device, or of a third device of the
//     person (not_author);
//   - a reaction or a reply may name any message of the conversation.
//
// A target not here yet waits as a received action waits for its target
// (DecideAction, ActionHold, MaxHeldActionsPerSender): the copy stays a
// pending message of its sender, unacknowledged, and the hold's pass
// commits it once its target is here, whatever the policy.

// ErrCopyConversation means a sent copy names a conversation of this
// person's own account: a copy is of a message to another person.
var ErrCopyConversation = errors.New("a sent copy names a conversation with this person's own account")

// ErrCopyIDTaken means a sibling's sent copy (frame kind 14 or 17) uses
// the ID of an own entry of the conversation that is not that copy: a
// message of this device, or another device's copy, stored or committed
// earlier in the same batch. The copy is
// acknowledged and nothing of it is stored (no entry, no finalized record
// that would make its sender the entry's author, no action applied).
var ErrCopyIDTaken = errors.New("a sent copy reuses the ID of another own message of the conversation")

// ErrHeldCopy means a person asked to commit or discard a sibling's sent
// copy of an action that waits for its target, or a sibling's own group
// action that waits for its target, or a kept decision of a sibling named
// one: it is no decision of theirs; the hold's pass commits or discards
// it (and the lists of pending messages leave a sent copy out).
var ErrHeldCopy = errors.New("a sibling's own action waiting for its target is decided by the hold, not by a person")

// copyIDTaken reports whether the conversation a sent copy to to names
// (to's, or the person's conversation held for to's user) has an own
// entry with ID id, stored or made by a copy committed earlier in this
// batch (claimed, nil outside a receive). The caller has ruled out a
// repeat of the copy itself (classify), so any entry found is another
// message's.
func (c *Client) copyIDTaken(ctx context.Context, claimed map[copyIDKey]bool, to Address, id wire.LogicalID) (bool, error) {
	places := []Address{to}
	held, ok, err := c.store.PeerAccount(ctx, to.User)
	if err != nil {
		return false, err
	}
	if ok && held.Conversation != to {
		places = append(places, held.Conversation)
	}
	for _, p := range places {
		if claimed[copyIDKey{p, DirectionOut, id}] {
			return true, nil
		}
	}
	for _, p := range places {
		t, err := c.store.ActionTarget(ctx, p, id, DirectionOut)
		if err != nil || t.Found {
			return t.Found, err
		}
	}
	return false, nil
}

// copyIDKey names one own entry a sent copy makes: the conversation it
// is kept in, its direction (DirectionOut) and its ID. The engine's
// checks read what is stored; a batch (a receive's page, a pass of the
// hold) also remembers the entries its own copies make, so that two
// copies of one ID from two siblings in one batch do not both commit: the
// second would find no stored entry, and its finalized record would make
// its sender the author of the first one's message.
type copyIDKey struct {
	conv Address
	dir  Direction
	id   wire.LogicalID
}

// claimCopyID records in claimed the own entry a sent copy to to with ID
// id makes in this batch: under to and under the person's conversation,
// as copyIDTaken looks for it.
func (c *Client) claimCopyID(ctx context.Context, claimed map[copyIDKey]bool, to Address, id wire.LogicalID) error {
	claimed[copyIDKey{to, DirectionOut, id}] = true
	held, ok, err := c.store.PeerAccount(ctx, to.User)
	if err == nil && ok {
		claimed[copyIDKey{held.Conversation, DirectionOut, id}] = true
	}
	return err
}

// refuseTakenCopy makes step the acknowledgement of a sent copy whose ID
// is taken (ErrCopyIDTaken), storing nothing.
func (c *Client) refuseTakenCopy(step *frameStep, sender, to Address, id wire.LogicalID) error {
	ack, err := c.ackOnNext(&step.next, sender, id)
	if err != nil {
		return err
	}
	step.ack, step.effect = ack, RepeatEffect{}
	step.res.Kind, step.res.Err = ResultError, fmt.Errorf("sent copy %x from %s to %s: %w", id[:], sender, to, ErrCopyIDTaken)
	return nil
}

// prepareSentActionCopy receives a sent copy of an action (above).
func (c *Client) prepareSentActionCopy(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	cp, err := wire.DecodeSentActionCopy(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	if err := c.checkOwnDevice(ctx, in, op); errors.Is(err, ErrNotOwnDevice) {
		return in.drop(cp.ID, fmt.Errorf("sent action copy: %w", err)), nil
	} else if err != nil {
		return prepared{}, err
	}
	to, err := ParseAddress(cp.To)
	if err != nil {
		return in.drop(cp.ID, err), nil
	}
	if to.User == c.self.User {
		return in.drop(cp.ID, fmt.Errorf("sent action copy to %s: %w", to, ErrCopyConversation)), nil
	}
	d := digest(op.plaintext)
	key := inboundKey{in.sender, cp.ID}
	effect, kind, err := c.classify(ctx, bs, key, d)
	if errors.Is(err, ErrLogicalMessageConflict) {
		return in.drop(cp.ID, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	step := in.step(op, cp.ID, nil, cp.Action.Content)
	step.effect, step.res.Kind = effect, kind
	switch _, repeat := effect.(RepeatEffect); {
	case kind == ResultDelivery && repeat:
		step.res.Kind = ResultSentCopy
	case kind == ResultDelivery:
		taken, err := c.copyIDTaken(ctx, bs.copyIDs, to, cp.ID)
		if err != nil {
			return prepared{}, err
		}
		if taken || bs.takenRows[in.row.Row] {
			if err := c.refuseTakenCopy(&step, in.sender, to, cp.ID); err != nil {
				return prepared{}, err
			}
			break
		}
		at := in.row.ReceivedAt
		if at.IsZero() {
			at = in.now
		}
		act, v, err := c.copiedAction(ctx, in.sender, cp.ID, to, cp.Action, at, in.now)
		if err != nil {
			return prepared{}, err
		}
		if act != nil && act.Content != wire.ContentReply && bs.deleted[act.targetKey()] {
			// Deleted earlier in this batch: the hold's pass discards it.
			v.Hold = true
		}
		bs.delivered[key] = d
		step.res.Kind, step.res.CopyTo = ResultSentCopy, &to
		if act == nil || v.Hold {
			// It waits for its target (or for the hold's pass to discard
			// it): a pending message of its sender, unacknowledged.
			if err := c.admitPending(ctx, bs.caps, in.sender); err != nil {
				return in.drop(cp.ID, err), nil
			}
			step.effect = DeliverEffect{ID: cp.ID, Frame: op.plaintext, Digest: d, At: at}
			break
		}
		if act.Content == wire.ContentDelete {
			bs.deleted[act.targetKey()] = true
		}
		if err := c.claimCopyID(ctx, bs.copyIDs, to, cp.ID); err != nil {
			return prepared{}, err
		}
		if step.ack, err = c.ackOnNext(&step.next, in.sender, cp.ID); err != nil {
			return prepared{}, err
		}
		step.effect = CommitEffect{ID: cp.ID, Digest: d, Arrived: at, At: in.now, Body: actionHistoryBody(cp.Action), SentTo: &to, Action: act}
		step.res.Action, step.res.Body = appliedOf(act), actionHistoryBody(cp.Action)
		step.res.committed = true
	default:
		if step.ack, err = c.ackOnNext(&step.next, in.sender, cp.ID); err != nil {
			return prepared{}, err
		}
	}
	return in.receive(bs, op, step)
}

// copiedAction decides a sent copy of action a, message id that sender
// (a sibling) sent to the conversation to, arrived at arrived: the
// ActionApply that makes it this person's own action in the conversation,
// or the verdict that holds or discards it.
func (c *Client) copiedAction(ctx context.Context, sender Address, id wire.LogicalID, to Address, a wire.Action, arrived, now time.Time) (*ActionApply, ActionVerdict, error) {
	conv := to
	held, ok, err := c.store.PeerAccount(ctx, to.User)
	if err != nil {
		return nil, ActionVerdict{}, err
	}
	places := []Address{to}
	if ok {
		conv = held.Conversation
		places = []Address{conv}
		for _, d := range append([]Address{to}, ActiveAddresses(held.List)...) {
			if !slices.Contains(places, d) {
				places = append(places, d)
			}
		}
	}
	var t ActionTarget
	at := conv
	if a.Content != wire.ContentReply {
		var out ActionTarget
		found := false
		for _, p := range places {
			got, err := c.store.ActionTarget(ctx, p, a.Target, 0)
			if err != nil {
				return nil, ActionVerdict{}, err
			}
			if got.Found {
				t, at, found = got, p, true
				break
			}
			out.Pending = out.Pending || got.Pending
			out.Discarded = out.Discarded || got.Discarded
		}
		if !found {
			out.Discarded = out.Discarded && !out.Pending
			t = out
		}
		if found && (a.Content == wire.ContentEdit || a.Content == wire.ContentDelete) {
			// The sending device's own authority: a message it sent, as
			// this device committed it from that device's sent copy, the
			// entry itself naming it (SentBy). Not a finalized record
			// of sender with the target's ID: that is keyed by (sender,
			// ID) alone, and a sibling that reuses the ID of another
			// device's message in another conversation, or in a group,
			// has one. A message of this device, of the peer or of a
			// third device is never the sender's.
			t.Copied = t.Direction != DirectionOut || t.SentBy != sender
		}
	}
	v := DecideAction(t, a.Content, false, arrived, now)
	if v.Hold || v.Reason != DiscardNone {
		return nil, v, nil
	}
	apply := applyOf(conv, sender, id, DirectionOut, a, t, now)
	if at != conv {
		apply.TargetPeer = at
	}
	return apply, v, nil
}

// heldCopyAction decides a sent action copy that waits (m, pending from a
// sibling): as on arrival, while the account's list still vouches for its
// sender; a sender no longer listed has its copy discarded (not_author).
func (c *Client) heldCopyAction(ctx context.Context, m *InboundMessage, a wire.Action, now time.Time) (*ActionApply, ActionVerdict, error) {
	own, err := c.ownSibling(ctx, m.Sender)
	if err != nil || !own {
		return nil, ActionVerdict{Reason: DiscardNotAuthor}, err
	}
	to, err := ParseAddress(m.CopyTo)
	if err != nil || to.User == c.self.User {
		return nil, ActionVerdict{Reason: DiscardUnsupported}, nil
	}
	if taken, err := c.copyIDTaken(ctx, nil, to, m.ID); err != nil || taken {
		// Its ID became another own message's while it waited: it
		// claims no authorship (ErrCopyIDTaken), discarded not_author.
		return nil, ActionVerdict{Reason: DiscardNotAuthor}, err
	}
	return c.copiedAction(ctx, m.Sender, m.ID, to, a, m.ReceivedAt, now)
}
