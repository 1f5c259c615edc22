package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Actions: a reply, a reaction, an edit and a delete for everyone are each
// a message of its own (its own logical ID, pending until acknowledged,
// retried, deduplicated) whose body names another message, its target
// (wire.Action). Applying one is part of the plan that commits it: a
// received action's Finalize or CommitEffect, an own action's Hold, each
// carrying an ActionApply that the store applies in the same transaction.
// A reply is a text message with a quote: it is never held, and its quote
// is resolved when the conversation is read. The other actions wait for
// their target (actionhold.go) and follow DecideAction's rules.

const (
	// ActionWindow is how long after its target an edit or a delete for
	// everyone is accepted, as Signal allows (24 hours): measured on the
	// sending device from the target's sent time, and on a receiving
	// device between the arrivals of the target and of the action, so
	// that neither clock is trusted by the other.
	ActionWindow = 24 * time.Hour
	// ActionHold is how long an action waits for a target that has not
	// arrived: a sender retries a pending message for days, not weeks;
	// past it the action is discarded (target_missing) and its sender's
	// lane ends.
	ActionHold = 7 * 24 * time.Hour
	// MaxHeldActionsPerSender bounds the actions one sender has waiting for
	// their targets. Each stays a pending message (counted by the pending
	// caps too) that is read again after every round; past the bound the
	// oldest are discarded (hold_full), so a peer that sends actions for
	// messages that never come costs a bounded amount of work per round.
	MaxHeldActionsPerSender = 64
)

// Errors of actions.
var (
	// ErrTargetPending means a commit of an action whose target is not
	// committed yet: the action waits (it is applied once the target is).
	ErrTargetPending = errors.New("the action's target is not committed yet")
	// ErrTargetNotFound means an action of this device names a message
	// that is not in the conversation.
	ErrTargetNotFound = errors.New("no such message in the conversation")
	// ErrReactionNumbers means this device has used every reaction number
	// for one message (2^32 - 1 reactions to it).
	ErrReactionNumbers = errors.New("no reaction number left for the message")
)

// ActionRefusedError is an action of this device that the rules refuse,
// with the reason a receiver would give.
type ActionRefusedError struct{ Reason DiscardReason }

func (e *ActionRefusedError) Error() string { return "action refused: " + e.Reason.String() }

// ActionTarget is what a device knows of an action's target in one
// conversation: its history entry (Found, with its direction, time and
// state) or, for a received message not in the history, whether it is
// pending or was discarded.
type ActionTarget struct {
	Found     bool
	Direction Direction
	At        time.Time // the entry's time: sent here, or arrived here
	Action    wire.ContentType
	Edits     uint32
	Deleted   bool
	Pending   bool // received and pending, not finalized
	Discarded bool // received and discarded
	// Copied: a message another device of its person sent. For this
	// device's action, a sent copy (SentCopied) or a message of the
	// history imported when this device was linked; for a received one,
	// a message of the sender's person that the sender did not send
	// (peerActionTarget). Its author is that other device: only it edits
	// or deletes the message, as in a group.
	Copied bool
	// SentBy is the device the entry names as the one that sent it, the
	// one device that edits or deletes it here: for a sent copy's entry
	// (SentCopied) the sibling whose copy made it, for a received entry
	// the peer's device that sent it (or, imported, the one the archive
	// named). Zero for this device's own sent entries and where it is not
	// known (received entries stored before entries named it, imports of
	// archives that did not carry it).
	SentBy Address
}

// ActionVerdict is DecideAction's answer: apply (the zero value), hold
// until the target is committed, or discard with Reason.
type ActionVerdict struct {
	Hold   bool
	Reason DiscardReason
}

// DecideAction applies the rules of an action, in order:
//
//  1. A reply is always applied: it is a message, its quote resolves when
//     read.
//  2. A target that is itself a reaction, an edit or a delete is no target:
//     discard (target_missing).
//  3. A target not in the history: discarded → discard (target_discarded);
//     pending or unknown → hold, until ActionHold after the action arrived
//     (then target_missing).
//  4. A deleted target: discard (target_deleted).
//  5. An edit or a delete of a message its sender did not write: discard
//     (not_author). byPeer says the action came from the peer (its target
//     must be a received message), else it is this device's (a sent one).
//     Either way not one another device of the person wrote (Copied).
//  6. An edit or a delete more than ActionWindow after the target: discard
//     (window_passed).
//  7. Otherwise apply. An edit older than the applied one (by the author's
//     edit number) is applied as a previous version only.
func DecideAction(t ActionTarget, content wire.ContentType, byPeer bool, arrived, now time.Time) ActionVerdict {
	switch {
	case content == wire.ContentReply:
		return ActionVerdict{}
	case t.Found && t.Action != 0 && t.Action != wire.ContentReply:
		return ActionVerdict{Reason: DiscardTargetMissing}
	case !t.Found && t.Discarded:
		return ActionVerdict{Reason: DiscardTargetDiscarded}
	case !t.Found && now.Sub(arrived) > ActionHold:
		return ActionVerdict{Reason: DiscardTargetMissing}
	case !t.Found:
		return ActionVerdict{Hold: true}
	case t.Deleted:
		return ActionVerdict{Reason: DiscardTargetDeleted}
	}
	if content == wire.ContentEdit || content == wire.ContentDelete {
		own := DirectionOut
		if byPeer {
			own = DirectionIn
		}
		if t.Direction != own || t.Copied {
			return ActionVerdict{Reason: DiscardNotAuthor}
		}
		if arrived.Sub(t.At) > ActionWindow {
			return ActionVerdict{Reason: DiscardWindowPassed}
		}
	}
	return ActionVerdict{}
}

// ActionApply is what committing an action does, in the transaction that
// commits it (Hold for an own action, Finalize or CommitEffect for a
// received one). The action's own history entry is (Peer, Dir, ID), kept
// where the store keeps Peer's messages (a received one in its person's
// conversation); its target's (TargetPeer, or Peer when that is zero,
// TargetDir, Target). The store applies it on condition: an edit only
// over an older one, nothing over a tombstone.
type ActionApply struct {
	Peer      Address
	ID        wire.LogicalID
	Dir       Direction
	Content   wire.ContentType
	Target    wire.LogicalID
	TargetDir Direction // for everything but a reply
	// TargetPeer is the address the target's entry is kept under when it
	// is not Peer: a received action of one device of a person whose
	// target is in the person's conversation (peerActionTarget). Always
	// Peer's person.
	TargetPeer Address
	// Reactor is the reaction's author (a reaction); Emoji empty with
	// Remove takes it back. Order is its number among the reactor's
	// reactions to the target: it applies by ReactionApplies.
	Reactor Address
	Emoji   string
	Remove  bool
	Order   uint32
	// Edit and Text are an edit's number and text.
	Edit uint32
	Text []byte
	At   time.Time
	// Group is set for an action in a group: its own entry is the group's
	// (Group, Peer = its author, ID), its target's (Group, TargetAuthor,
	// Target); Dir and TargetDir say only whether each was written here.
	Group        *wire.GroupID
	TargetAuthor Address
}

// actionTargetKey names an action's target in one conversation or group.
type actionTargetKey struct {
	group wire.GroupID
	peer  Address
	dir   Direction
	id    wire.LogicalID
}

// targetKey is the key of a's target.
func (a *ActionApply) targetKey() actionTargetKey {
	if a.Group != nil {
		return actionTargetKey{group: *a.Group, peer: a.TargetAuthor, id: a.Target}
	}
	return actionTargetKey{peer: a.TargetAt(), dir: a.TargetDir, id: a.Target}
}

// TargetAt is the address a's target entry is kept under: TargetPeer, or
// Peer when that is zero.
func (a *ActionApply) TargetAt() Address {
	if a.TargetPeer != (Address{}) {
		return a.TargetPeer
	}
	return a.Peer
}

// targetDirection is the direction in which an action's target is looked
// up: either (0, the earliest entry with the ID), so that an edit of a
// message its sender did not write is found, and refused as not its
// author's, rather than waiting for a message that will never come.
func targetDirection(wire.ContentType, bool) Direction { return 0 }

// actionHistoryBody is what the history keeps of an action message: a
// reply's text; nothing for the others, whose entries are not shown.
func actionHistoryBody(a wire.Action) []byte {
	if a.Content == wire.ContentReply {
		return append([]byte{}, a.Text...)
	}
	return []byte{}
}

// applyOf makes the ActionApply of action a, made by author in the
// conversation with peer, whose target is t.
func applyOf(peer, author Address, id wire.LogicalID, dir Direction, a wire.Action, t ActionTarget, at time.Time) *ActionApply {
	return &ActionApply{Peer: peer, ID: id, Dir: dir, Content: a.Content, Target: a.Target, TargetDir: t.Direction,
		Reactor: author, Emoji: a.Emoji, Remove: a.Remove, Order: a.Order, Edit: a.Edit, Text: a.Text, At: at}
}

// ReactionApplies is the rule that orders one reactor's reactions to one
// message: a reaction (or its removal) of number order changes what the
// message shows only over no earlier reaction of that reactor (stored
// false) or over one of a smaller number. Otherwise it is a reaction the
// reactor already replaced, delivered late: it is committed (finalized and
// acknowledged once, like any action) and changes nothing. A reaction of
// version 1 is number 0, so it applies only where its reactor has none.
func ReactionApplies(order, storedOrder uint32, stored bool) bool {
	return !stored || order > storedOrder
}

// nextReaction is the number of this device's next reaction to a target
// whose latest one of this device was number last (found false for none).
func nextReaction(last uint32, found bool) (uint32, error) {
	if !found {
		return 1, nil
	}
	if last == ^uint32(0) {
		return 0, fmt.Errorf("reaction number past %d: %w", last, ErrReactionNumbers)
	}
	return last + 1, nil
}

// ActionRequest is one action of this device, in the conversation with
// Peer: a reply (Text, quoting Target), a reaction (Emoji, or Remove), an
// edit (Text) or a delete for everyone.
type ActionRequest struct {
	Peer Address
	// Group, when set, makes it an action in that group (Peer unused):
	// sent on the group's store-first path, one lane per member.
	Group   *wire.GroupID
	Content wire.ContentType
	Target  wire.LogicalID
	Text    []byte
	Emoji   string
	Remove  bool
}

// Act stores an action of this device as a pending message to its peer and
// applies it here in the same transaction (Enqueue's Hold), then the loop's
// pump (or the caller's Pump) sends it like any message. An edit or a
// delete names a message this device sent, within ActionWindow of it; a
// reaction any message of the conversation; a reply any ID (its quote is
// resolved where it can be). Refused with nothing stored: an unknown
// target (ErrTargetNotFound), a rule of DecideAction (*ActionRefusedError),
// a reaction wire.CheckEmoji refuses, a reply's or an edit's text over
// wire.MaxSentActionTextSize from a person with other devices
// (ErrCopyTooLarge: its copy to them would not fit).
func (c *Client) Act(ctx context.Context, r ActionRequest) (wire.LogicalID, error) {
	a := wire.Action{Content: r.Content, Target: r.Target, Text: r.Text, Emoji: r.Emoji, Remove: r.Remove}
	if len(a.Text) == 0 {
		a.Text = nil
	}
	if r.Group != nil {
		return c.actInGroup(ctx, *r.Group, a)
	}
	var t ActionTarget
	if r.Content != wire.ContentReply {
		var err error
		if t, err = c.store.ActionTarget(ctx, r.Peer, r.Target, targetDirection(r.Content, false)); err != nil {
			return wire.LogicalID{}, fmt.Errorf("%s: %w", ActionName(r.Content), err)
		}
		if !t.Found {
			return wire.LogicalID{}, fmt.Errorf("%s %x: %w", ActionName(r.Content), r.Target[:], ErrTargetNotFound)
		}
		now := c.cfg.Now()
		if v := DecideAction(t, r.Content, false, now, now); v.Hold || v.Reason != DiscardNone {
			return wire.LogicalID{}, fmt.Errorf("%s %x: %w", ActionName(r.Content), r.Target[:], &ActionRefusedError{Reason: v.Reason})
		}
		switch r.Content {
		case wire.ContentEdit:
			a.Edit = t.Edits + 1
		case wire.ContentReaction:
			last, found, err := c.store.ReactionNumber(ctx, r.Peer, t.Direction, r.Target, c.self)
			if err != nil {
				return wire.LogicalID{}, fmt.Errorf("reaction: %w", err)
			}
			if a.Order, err = nextReaction(last, found); err != nil {
				return wire.LogicalID{}, err
			}
		}
	}
	if _, err := wire.EncodeAction(a); err != nil {
		return wire.LogicalID{}, fmt.Errorf("%s: %w", ActionName(r.Content), err)
	}
	res, err := c.Enqueue(ctx, []SendRequest{{Peer: r.Peer, Body: actionHistoryBody(a), action: &a, target: t}})
	if err != nil {
		return wire.LogicalID{}, err
	}
	return res[0].ID, res[0].Err
}

// encodeActionFrame encodes an action's content frame.
func encodeActionFrame(id wire.LogicalID, a wire.Action) ([]byte, error) {
	body, err := wire.EncodeAction(a)
	if err != nil {
		return nil, err
	}
	return wire.EncodeContentMessage(wire.ContentMessage{ID: id, Content: a.Content, Body: body})
}

// ownApply is what an own action request applies here when Enqueue stores
// it (nil for any other request).
func (c *Client) ownApply(r SendRequest, id wire.LogicalID, at time.Time) *ActionApply {
	if r.action == nil {
		return nil
	}
	return applyOf(r.Peer, c.self, id, DirectionOut, *r.action, r.target, at)
}

// receivedAction decides a received action: the ActionApply when it
// applies, or the verdict that holds or discards it. m is the pending
// message (or the delivery being prepared).
func (c *Client) receivedAction(ctx context.Context, m *InboundMessage, now time.Time) (*ActionApply, ActionVerdict, error) {
	a, err := wire.DecodeAction(m.Content, m.Body)
	if err != nil {
		// Checked on arrival; a stored one that does not decode is
		// unsupported content.
		return nil, ActionVerdict{Reason: DiscardUnsupported}, nil
	}
	if m.CopyTo != "" {
		return c.heldCopyAction(ctx, m, a, now)
	}
	if m.Group != nil {
		return c.receivedGroupAction(ctx, m, a, now)
	}
	var t ActionTarget
	at := m.Sender
	if a.Content != wire.ContentReply {
		if t, at, err = c.peerActionTarget(ctx, m.Sender, a.Content, a.Target, targetDirection(a.Content, true)); err != nil {
			return nil, ActionVerdict{}, err
		}
	}
	v := DecideAction(t, a.Content, true, m.ReceivedAt, now)
	if v.Hold || v.Reason != DiscardNone {
		return nil, v, nil
	}
	apply := applyOf(m.Sender, m.Sender, m.ID, DirectionIn, a, t, now)
	if at != m.Sender {
		apply.TargetPeer = at
	}
	return apply, v, nil
}

// peerActionTarget finds the target of an action sender sent, and the
// address its entry is kept under. A message to a person, or from any of
// their devices, is kept in the person's one conversation, and each
// device's lane carries the same ID, so when the device list held for
// sender's person names sender as active with the identity pinned for it,
// the target is looked for in that conversation first, then under
// sender's own address and each listed device's (where messages were
// kept before the list was held). Any other sender (no list held, or one
// that does not vouch for it) finds only what was exchanged with its own
// address: a device cannot reach a person's messages by claiming their
// name. Not found anywhere, it is pending if any place holds it pending,
// else discarded if any discarded it.
//
// Only the sending device edits or deletes a message. A received entry
// names the device that sent it (ActionTarget.SentBy: written on receipt,
// carried by a history archive's kind-11 record), so the target of an
// edit or a delete is marked Copied (DecideAction refuses it, not_author)
// unless the entry names sender: another device's record of the same ID
// (a group message, a copy) does not count, and a message of an imported
// history is edited by the device that sent it. An entry that names no
// device (received before entries named it, or imported from an archive
// that did not say) is edited by nobody when found in a place that may
// hold another device's messages (the person's conversation or another
// device's address, and any place once the list held names more than one
// device of the person: the sender's own address may be the
// conversation): no record tells which device wrote it, since a sibling
// that reuses its ID has a committed record of that ID too and the
// original's may be pruned. A person of one device edits such an entry
// as before (the one place, its own address).
func (c *Client) peerActionTarget(ctx context.Context, sender Address, content wire.ContentType, id wire.LogicalID, dir Direction) (ActionTarget, Address, error) {
	places := []Address{sender}
	held, ok, err := c.store.PeerAccount(ctx, sender.User)
	if err != nil {
		return ActionTarget{}, sender, err
	}
	several := ok && len(held.List.Entries) > 1
	if ok {
		ps, err := c.store.Peer(ctx, sender)
		if err != nil {
			return ActionTarget{}, sender, err
		}
		if listedWith(held.List, sender, ps.Pinned) {
			places = []Address{held.Conversation}
			for _, d := range append([]Address{sender}, ActiveAddresses(held.List)...) {
				if !slices.Contains(places, d) {
					places = append(places, d)
				}
			}
		}
	}
	var out ActionTarget
	for _, p := range places {
		t, err := c.store.ActionTarget(ctx, p, id, dir)
		if err != nil {
			return t, p, err
		}
		switch {
		case !t.Found || t.Direction != DirectionIn || content != wire.ContentEdit && content != wire.ContentDelete:
		case t.SentBy != (Address{}):
			// The entry names the device that sent it: that one alone.
			t.Copied = t.SentBy != sender
		case p != sender || several:
			// An entry naming nobody (stored before received entries
			// named their device, or imported from an archive that did
			// not say) in a place that may hold several devices'
			// messages: nobody's. A committed record of sender with
			// the ID proves nothing here: a sibling that reused the ID
			// of another device's message has one, and the entry kept
			// the earlier message (its record may be pruned).
			t.Copied = true
		}
		if t.Found {
			return t, p, nil
		}
		out.Pending = out.Pending || t.Pending
		out.Discarded = out.Discarded || t.Discarded
	}
	out.Discarded = out.Discarded && !out.Pending
	return out, sender, nil
}

// AppliedAction is an action as the conversation shows it: what it did to
// which message. Set on a ReceiveResult of an action committed in a round.
type AppliedAction struct {
	Content wire.ContentType
	Target  wire.LogicalID
	Emoji   string
	Remove  bool
	Text    []byte
}

func appliedOf(a *ActionApply) *AppliedAction {
	if a == nil {
		return nil
	}
	return &AppliedAction{Content: a.Content, Target: a.Target, Emoji: a.Emoji, Remove: a.Remove, Text: a.Text}
}

// Reaction is one person's reaction to a message.
type Reaction struct {
	From  Address
	Emoji string
}

// MessageVersion is a body an edit replaced: Edit 0 is the original.
type MessageVersion struct {
	Edit uint32
	At   time.Time
	Body []byte
}

// ActionStore is what the store keeps of actions.
type ActionStore interface {
	// ActionTarget returns what is known of message id in the
	// conversation with peer: its history entry in direction dir (either,
	// the earliest, for 0) or, received, whether it is pending or was
	// discarded.
	ActionTarget(ctx context.Context, peer Address, id wire.LogicalID, dir Direction) (ActionTarget, error)
	// HeldActions pages the pending received actions (reactions, edits,
	// deletes) in arrival order after sequence after.
	HeldActions(ctx context.Context, after int64, limit int) ([]InboundMessage, error)
	// MessageVersions returns the bodies edits replaced, oldest first.
	MessageVersions(ctx context.Context, peer Address, dir Direction, id wire.LogicalID) ([]MessageVersion, error)
	// GroupActionTarget returns what group g's history holds of message
	// id by author (by any sender, the earliest, for the zero address),
	// and the entry's author. Direction, Pending and Discarded are not
	// set: the engine tells them.
	GroupActionTarget(ctx context.Context, g wire.GroupID, author Address, id wire.LogicalID) (ActionTarget, Address, error)
	// GroupRecordSenders returns the senders of the finalized records of
	// group g's messages with logical ID id (whoever sent them, members
	// or not now), at most limit, in the order of their addresses.
	GroupRecordSenders(ctx context.Context, g wire.GroupID, id wire.LogicalID, limit int) ([]Address, error)
	// ReactionNumber returns the number of reactor's latest reaction (or
	// removal) to the entry (peer, dir, id), found false for none.
	ReactionNumber(ctx context.Context, peer Address, dir Direction, id wire.LogicalID, reactor Address) (uint32, bool, error)
	// GroupReactionNumber is ReactionNumber for group g's entry (author,
	// id).
	GroupReactionNumber(ctx context.Context, g wire.GroupID, author Address, id wire.LogicalID, reactor Address) (uint32, bool, error)
	// GroupMessageVersions returns the bodies edits of a group message
	// replaced, oldest first.
	GroupMessageVersions(ctx context.Context, g wire.GroupID, author Address, id wire.LogicalID) ([]MessageVersion, error)
}

// MessageVersions returns the previous bodies of an edited message, kept on
// this device only.
func (c *Client) MessageVersions(ctx context.Context, peer Address, dir Direction, id wire.LogicalID) ([]MessageVersion, error) {
	return c.store.MessageVersions(ctx, peer, dir, id)
}

// ActionName names an action's content type: reply, reaction, edit,
// delete ("" for anything else).
func ActionName(c wire.ContentType) string {
	switch c {
	case wire.ContentReply:
		return "reply"
	case wire.ContentReaction:
		return "reaction"
	case wire.ContentEdit:
		return "edit"
	case wire.ContentDelete:
		return "delete"
	}
	return ""
}
