package engine

import (
	"context"
	"time"

	"github.com/parley-chat/parley/wire"
)

// GroupLane is one member's lane of a group send or a roster change: the
// frame pending to that member with, optionally, the session step and the
// envelope that carry it. The engine stores every lane without them (the
// store-first group send): the pump encrypts each lane later, as it does a
// held message.
type GroupLane struct {
	Recipient Address
	Session   *SessionWrite
	Pin       *IdentityKey
	Out       *Outgoing
}

// GroupSend stores a group message in the group's history and pending on
// every lane (with a lane's session step and envelope when it has them), in
// one transaction: the whole fan-out or none of it.
type GroupSend struct {
	Sender Address // this device, the history entry's sender
	Group  wire.GroupID
	ID     wire.LogicalID
	Frame  []byte // encoded group message frame, the same on every lane
	Body   []byte
	At     time.Time
	Lanes  []GroupLane
	// Action, for an action (groupaction.go), is applied here in the same
	// transaction.
	Action *ActionApply
	// Chain, when the message goes by this device's sender chain to some
	// lanes (their Out an envelope of type 4, with no session step), is
	// the chain advanced past it; Announce are the announcements of that
	// chain to the members that were never sent it.
	Chain    *OwnChainWrite
	Announce []ChainAnnouncement
}

// RosterUpdate records a roster change (made here, or the creation) in the
// group's change log and makes it pending on every lane that must receive
// it; the pending lanes of members it removes end as removed. A creation
// sets the group's start (Start); Compact, when set, replaces the changes at
// and below its snapshot's generation by the snapshot.
type RosterUpdate struct {
	Group   wire.GroupID
	Change  RosterChange
	Frame   []byte // encoded signed roster frame
	At      time.Time
	Lanes   []GroupLane
	Removed []Address
	Start   *GroupStart
	Compact *GroupStart
	// Left is set when the change leaves this device out of the merged
	// roster (it left, or was removed): the group's sender chains, its
	// own and those its members announced here, are deleted with it, so
	// that nothing kept here opens a later chain message of the group.
	Left bool
}

// RosterEffect records a roster change received from a peer; like a repeat
// of a finalized message it is acknowledged at once (Receive.Ack). Start is
// set when the change adds this device to a group it did not keep: the
// group begins here, from that change. Compact is as in RosterUpdate.
type RosterEffect struct {
	Group  wire.GroupID
	Change RosterChange
	Frame  []byte
	// Removed lanes: members the merged roster no longer holds, whose
	// pending lanes end as removed.
	Removed []Address
	Start   *GroupStart
	Compact *GroupStart
	// Left: as RosterUpdate's.
	Left bool
	// Forward are the other devices of this person that the change's
	// frame goes to, on a pending lane of its group, in the same
	// transaction (rosterForwards): set on the device that holds the
	// account key (the one that links new devices) for a change another
	// device made, so that a device it linked after the link's archive
	// was cut merges every change it merged since. The store refuses a
	// recipient the account's list does not name active, and stores no
	// second lane to a device that has one of the change.
	Forward []Address
	// ForwardAt is when the forward's lanes are stored (this device's
	// clock, as for any lane it sends); a forward still pending
	// MaxGroupHold later is abandoned at its retry (forwardLaneExpired).
	ForwardAt time.Time
}

// NotAMemberEffect ends this device's lane of message ID to the peer: the
// peer's roster does not hold this device.
type NotAMemberEffect struct {
	Group wire.GroupID
	ID    wire.LogicalID
}

func (RosterEffect) effect()     {}
func (NotAMemberEffect) effect() {}

func (GroupSend) plan()    {}
func (RosterUpdate) plan() {}

// Kind implements Plan.
func (GroupSend) Kind() string { return "group-send" }

// Kind implements Plan.
func (RosterUpdate) Kind() string { return "roster-change" }

// GroupInfo is a group as this device knows it: its start, the changes in
// its log and the roster they merge to.
type GroupInfo struct {
	ID      wire.GroupID
	Name    string
	Roster  Roster
	Start   GroupStart
	Changes []RosterChange
}

// Lane is one member's lane of a sent group message.
type Lane struct {
	Recipient Address
	State     LaneState
}

// GroupEntry is one message of a group's history.
type GroupEntry struct {
	Seq    int64
	Sender Address
	ID     wire.LogicalID
	At     time.Time
	Body   []byte
	// Own: this person's message, sent here or, Sibling, from another
	// device of this person (the account's list vouched for it). A
	// sibling's message is that device's to edit or delete (an edit's
	// author is the device that sends it, groupaction.go), and its lanes
	// are that device's: none are kept here.
	Own     bool
	Sibling bool
	Lanes   []Lane // own messages sent here only
	// ReplyTo, Edits, Deleted and Reactions are as in HistoryEntry. The
	// entries of reactions, edits and deletes are not in the history.
	ReplyTo   *wire.LogicalID
	Edits     uint32
	Deleted   bool
	Reactions []Reaction
	Imported  *Imported // as in HistoryEntry
	// DecidedOn names the device of this person whose commit committed
	// this received message here (decision.go); nil when this device did.
	DecidedOn *Address
}

// GroupStore is the read side of groups, a part of Store.
type GroupStore interface {
	// Groups lists the groups this profile keeps.
	Groups(ctx context.Context) ([]GroupInfo, error)
	// Group returns one group, or ErrUnknownGroup.
	Group(ctx context.Context, id wire.GroupID) (GroupInfo, error)
	// GroupHistory pages a group's history, oldest first, after sequence
	// after, at most limit.
	GroupHistory(ctx context.Context, id wire.GroupID, after int64, limit int) ([]GroupEntry, error)
	// LaneGroup returns the group of a pending lane (recipient, id), and
	// whether the lane is a group's.
	LaneGroup(ctx context.Context, recipient Address, id wire.LogicalID) (wire.GroupID, bool, error)
	// Lanes returns the lanes of a message or roster change sent here.
	Lanes(ctx context.Context, group wire.GroupID, id wire.LogicalID) ([]Lane, error)
}

// StoredFrame is what a pending frame (either direction) says once decoded:
// an application message, a group message (Group set) or a roster change
// (Roster set, no body).
type StoredFrame struct {
	ID     wire.LogicalID
	Body   []byte
	Group  *wire.GroupID
	Roster bool
	// Content is what Body holds: wire.ContentText, or wire.ContentFile
	// for a file manifest (a content frame or a group message of files).
	Content wire.ContentType
	// Chain is set for a chain announcement (kind 8), pending on its lane
	// like a roster change: Roster is set too, and it has no body.
	Chain bool
	// CopyTo, for a sent copy (kind 14, or kind 17 for an action, whose
	// Body is then the action body and Content its type) to another
	// device of this person, is the conversation the copied message
	// belongs to.
	CopyTo string
	// Decision is set for a decision (kind 15) told to another device of
	// this person; Roster is set too (it is no message of its own).
	Decision *wire.Decision
}

// HistoryBody is what the history keeps of the frame's message: its body,
// or for a file its name, size and type (the manifest's key does not
// outlive the transfer).
func (f StoredFrame) HistoryBody() []byte {
	if m, ok := FileOf(f.Content, f.Body); ok {
		return fileHistoryBody(m)
	}
	if wire.IsAction(f.Content) {
		a, _ := wire.DecodeAction(f.Content, f.Body)
		return actionHistoryBody(a)
	}
	return f.Body
}

// DecodeStoredFrame decodes a frame kept pending: an application frame, a
// group message or a roster change. Stores use it where they used
// wire.DecodeFrame, so that group lanes read like any pending message.
func DecodeStoredFrame(b []byte) (StoredFrame, error) {
	kind, err := wire.PeekFrameKind(b)
	if err != nil {
		return StoredFrame{}, err
	}
	switch kind {
	case wire.FrameGroupMessage:
		m, err := wire.DecodeGroupMessage(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: m.ID, Body: m.Body, Group: &m.Group, Content: m.Content}, nil
	case wire.FrameRoster:
		r, err := wire.DecodeRoster(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: r.ID, Body: []byte{}, Group: &r.Group, Roster: true}, nil
	case wire.FrameSignedRoster:
		r, err := wire.DecodeSignedRoster(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: r.ID, Body: []byte{}, Group: &r.Group, Roster: true}, nil
	case wire.FrameChainAnnounce:
		a, err := wire.DecodeChainAnnounce(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: a.ID, Body: []byte{}, Group: &a.Group, Roster: true, Chain: true}, nil
	case wire.FrameSentCopy:
		m, err := wire.DecodeSentCopy(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: m.ID, Body: m.Body, Content: wire.ContentText, CopyTo: m.To}, nil
	case wire.FrameSentActionCopy:
		m, err := wire.DecodeSentActionCopy(b)
		if err != nil {
			return StoredFrame{}, err
		}
		body, err := wire.EncodeAction(m.Action)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: m.ID, Body: body, Content: m.Action.Content, CopyTo: m.To}, nil
	case wire.FrameDecision, wire.FrameDecisionBody, wire.FrameDecisionAction:
		d, err := wire.DecodeDecision(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: d.ID, Body: []byte{}, Roster: true, Decision: &d}, nil
	case wire.FrameGroupState:
		s, err := wire.DecodeGroupState(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: s.ID, Body: []byte{}, Group: &s.Group.ID, Roster: true}, nil
	case wire.FrameContent:
		m, err := wire.DecodeContentMessage(b)
		if err != nil {
			return StoredFrame{}, err
		}
		return StoredFrame{ID: m.ID, Body: m.Body, Content: m.Content}, nil
	}
	f, err := wire.DecodeFrame(b)
	if err != nil {
		return StoredFrame{}, err
	}
	if f.Kind != wire.FrameApplication {
		return StoredFrame{}, wire.ErrMalformed
	}
	return StoredFrame{ID: f.ID, Body: f.Body, Content: wire.ContentText}, nil
}
