package engine

import (
	"context"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Store is the durable state of one profile. It speaks in transitions: Apply
// commits one plan in one transaction, ApplyBatch several independent plans in
// one transaction (group commit), each plan all-or-nothing with its own
// receipt; the rest are read models in bounded pages. Implementations map
// their driver's errors to this package's errors.
type Store interface {
	// Apply validates p, then applies it in one BEGIN IMMEDIATE transaction.
	Apply(ctx context.Context, p Plan) (Receipt, error)
	// ApplyBatch applies plans in order in one transaction. If any plan
	// fails, nothing is applied and the error names the failing plan's index
	// (*BatchError); the caller prepares the rest again from durable state.
	ApplyBatch(ctx context.Context, plans []Plan) ([]Receipt, error)

	// Profile returns what the engine needs at open.
	Profile(ctx context.Context) (Profile, error)
	// Peer returns the pinned identity and the session with a peer.
	Peer(ctx context.Context, peer Address) (PeerState, error)
	// Retired reports whether an initiation with peer was retired.
	Retired(ctx context.Context, peer Address, id InitiationID) (bool, error)
	// OneTimePreKey returns a one-time prekey record, or ErrUnknownPreKey.
	OneTimePreKey(ctx context.Context, id uint32) ([]byte, error)
	// OneTimePreKeys pages the one-time prekeys held with IDs above after.
	OneTimePreKeys(ctx context.Context, after uint32, limit int) ([]PreKeyRecord, error)

	// Outbound returns a pending sent message, or ErrNotPending.
	Outbound(ctx context.Context, recipient Address, id wire.LogicalID) (OutboundMessage, error)
	// Inbound returns a pending received message, or ErrNotPending.
	Inbound(ctx context.Context, sender Address, id wire.LogicalID) (InboundMessage, error)
	// Finalized returns the finalized record of a received message, or
	// ErrNotPending when there is none.
	Finalized(ctx context.Context, sender Address, id wire.LogicalID) (FinalizedRecord, error)
	// Attempts returns the envelopes that carried the message id sent to
	// peer (its send, then each retry), oldest first.
	Attempts(ctx context.Context, peer Address, id wire.LogicalID) ([]Attempt, error)

	// PendingOutbound pages pending sent messages in send order.
	PendingOutbound(ctx context.Context, q PageQuery) ([]OutboundMessage, error)
	// Unsent pages the pending messages never encrypted (stored by Hold,
	// no attempt yet) in send order, as PendingOutbound does: what the
	// pump hands off.
	Unsent(ctx context.Context, q PageQuery) ([]OutboundMessage, error)
	// CountOutbound counts pending sent messages (to Peer, when set).
	CountOutbound(ctx context.Context, peer *Address) (int, error)
	// PendingInbound pages pending received messages in arrival order,
	// leaving out a sibling's sent action copy waiting for its target
	// (the hold's pass decides it, actioncopy.go).
	PendingInbound(ctx context.Context, q PageQuery) ([]InboundMessage, error)
	// CountInbound counts pending received messages: all of them, such a
	// waiting copy left out; from Peer, when set, every one (the caps'
	// count).
	CountInbound(ctx context.Context, peer *Address) (int, error)
	// Accepted reports whether peer is one this device accepted: a
	// contact, or a peer it has written to.
	Accepted(ctx context.Context, peer Address) (bool, error)
	// CountInboundStrangers counts the pending received messages from
	// peers that are not accepted.
	CountInboundStrangers(ctx context.Context) (int, error)
	// History pages a conversation, newest first, before sequence Before
	// (0: from the newest).
	History(ctx context.Context, peer Address, before int64, limit int) ([]HistoryEntry, error)
	// PeerAccount returns the device list held for a peer person and the
	// address of their conversation (person.go), ok false when none is.
	PeerAccount(ctx context.Context, user string) (PeerAccount, bool, error)
	// PeerAccountUsers returns up to limit people this device holds a
	// device list for, by name.
	PeerAccountUsers(ctx context.Context, limit int) ([]string, error)
	// PinnedDevices returns up to limit devices of user whose identity
	// this device pinned, by address.
	PinnedDevices(ctx context.Context, user string, limit int) ([]Address, error)
	// PendingToPerson returns up to limit pending sent messages to
	// devices of user, oldest first (person.go: lanes added for devices a
	// newer list names).
	PendingToPerson(ctx context.Context, user string, limit int) ([]OutboundMessage, error)
	// PersonLanes returns the lanes of an own message to a person, by
	// recipient: none for a message sent to one device (a Hold).
	PersonLanes(ctx context.Context, conversation Address, id wire.LogicalID) ([]LaneStatus, error)
	// KeptDecisions returns up to limit decisions other devices of this
	// person told about messages not finalized here (decision.go).
	KeptDecisions(ctx context.Context, limit int) ([]KeptDecision, error)
	// Decisions returns up to limit received messages finalized here at
	// or after since, and those finalized before it (by at most
	// MaxDecisionAge) whose decision lanes ended at or after since or are
	// not all ended (MadeDecision.Told), or that a sibling's discard
	// contradicted (MadeDecision.Contradicted), newest first: the decisions a
	// sibling linked since is told of (decision.go, catch-up). Discards the engine made by its
	// rules for actions (DiscardReason.ByEngine) are left out, and so is
	// every record of what this person's own devices sent (sent copies,
	// decision frames, their group messages and files), before the limit:
	// no device tells a decision on its own account's message (tellLanes)
	// and a sibling keeps none (ErrDecisionOwnMessage).
	Decisions(ctx context.Context, since time.Time, limit int) ([]MadeDecision, error)
	// MadeDecision returns the finalized record of the received message
	// id from sender as Decisions reads one (its body, the device it was
	// decided on), and false when there is none.
	MadeDecision(ctx context.Context, sender Address, id wire.LogicalID) (MadeDecision, bool, error)
	// ToldOf reports whether this device stored a decision lane to
	// sibling naming message id from sender, pending or acknowledged (since
	// migration 0029, which records the message a decision lane names).
	ToldOf(ctx context.Context, sibling, sender Address, id wire.LogicalID) (bool, error)
	// KeptActions returns the kept decisions that carry a one-to-one
	// action from sender waiting for its target, message target from that
	// sender, to be taken back (DecisionEffect.KeepAction), at most
	// MaxKeptDecisions.
	KeptActions(ctx context.Context, sender Address, target wire.LogicalID) ([]KeptAction, error)
	// KeptGroupActions returns the kept decisions that carry an action
	// in group g, of any member, waiting for its target, the group message
	// target (of any author), to be taken back (DecisionEffect.KeepAction
	// with a Group, since migration 0030), at most MaxKeptDecisions.
	KeptGroupActions(ctx context.Context, g wire.GroupID, target wire.LogicalID) ([]KeptAction, error)
	// DueDecisions returns up to limit kept decisions whose message is
	// pending here, oldest first, and whether any decision is kept at all.
	DueDecisions(ctx context.Context, limit int) ([]KeptDecision, bool, error)
	// HistoryEntry returns the entry of message id exchanged with peer in
	// direction dir, and whether there is one.
	HistoryEntry(ctx context.Context, peer Address, dir Direction, id wire.LogicalID) (HistoryEntry, bool, error)
	// Conversations lists the peers with history or pending messages.
	Conversations(ctx context.Context) ([]Conversation, error)
	// ConversationsByPerson lists them as Conversations does, with the
	// devices of a person whose device list is held folded into one
	// conversation (Conversation.Devices).
	ConversationsByPerson(ctx context.Context) ([]Conversation, error)
	// Contacts returns the names given to devices (SetContact).
	Contacts(ctx context.Context) (map[Address]string, error)
	// Staged pages the durable staging area in arrival order after row After. A row
	// that fails to unseal comes back with Err set, for quarantine.
	Staged(ctx context.Context, after int64, limit int) ([]StagedEnvelope, error)
	// Uploads lists the upload records of one recipient key (Upload.To;
	// every record for "").
	Uploads(ctx context.Context, to string) ([]Upload, error)
	// Quarantined pages the quarantine in row order after row After.
	Quarantined(ctx context.Context, after int64, limit int) ([]QuarantinedRow, error)

	// Seen answers, in one lookup, whether a received logical message is
	// pending or finalized.
	Seen(ctx context.Context, sender Address, id wire.LogicalID) (SeenMessage, error)
	// SentCopiesFrom returns up to limit sent copies that device (another
	// device of this person) sent here, finalized at or after since and
	// still standing as copies (not adopted), newest first; then, apart
	// from that limit, up to limit more of its edited copies whose first
	// body is not held, each with an Err wrapping ErrAdoptFirstBody.
	SentCopiesFrom(ctx context.Context, device Address, since time.Time, limit int) ([]SentCopyRecord, error)

	GroupStore
	ChainStore
	RequestStore
	DraftStore
	ActionStore
	ArchiveStore

	// Close releases the profile lock.
	Close() error
}

// BatchError reports which plan of a batch failed; nothing of the batch was
// applied.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return e.Err.Error() }

// Unwrap returns the failing plan's error.
func (e *BatchError) Unwrap() error { return e.Err }

// Profile is the part of a profile the engine loads at open.
type Profile struct {
	Self          Address
	Relay         RelaySettings
	Identity      []byte         // Identity record
	SignedPreKeys []PreKeyRecord // signed X25519 and ML-KEM prekeys held
	NextPreKeyID  uint32
	OneTimeCount  int // one-time prekeys held
	// OneTimePublished is the highest one-time prekey ID published.
	OneTimePublished uint32
	// MarkerWritten and MarkerPresented are the presentation marker: a
	// visible transition raises Written; MarkPresented raises Presented.
	MarkerWritten   uint64
	MarkerPresented uint64
	// AccountKey is the account key record (AccountKey.MarshalBinary),
	// nil on a device that does not hold it; DeviceList is the encoded
	// device list this device holds, nil before the profile has an
	// account (EnsureAccount).
	AccountKey []byte
	DeviceList []byte
	// LinkedBy is the device that linked this one when its link package
	// named it (CreateAccount.LinkedBy); 0 otherwise.
	LinkedBy uint32
}

// PeerState is the pinned identity and the current session with a peer.
type PeerState struct {
	Pinned         *IdentityKey
	Session        []byte // Session record; nil when there is none
	SessionVersion uint64
	// Replaces is the peer's initiation that the next own initiation names
	// as replaced (set by a session reset); zero for none.
	Replaces InitiationID
	// PastChains is the record of the session's past receiving chains
	// (Receive.PastChains); nil when there is none. A record of another
	// session than the current one is ignored.
	PastChains []byte
	// RefusedOneTime lists the peer's one-time prekeys that an initiation
	// of this device used and the peer refused (a recovery request about
	// it reset the session): a relay that hands one out again is not
	// believed, and the next initiation uses the signed prekeys alone.
	RefusedOneTime []uint32
}

// PageQuery selects a page of pending messages: after sequence After, at
// most Limit, optionally only with Peer. PendingInbound leaves out the
// messages of open requests unless Requests is set (with Peer).
type PageQuery struct {
	After    int64
	Limit    int
	Peer     *Address
	Requests bool
	// Person widens Peer to its person's conversation, as History reads
	// it: the messages with every device of Peer's user when a device
	// list is held for them, with Peer alone when none is (a device with
	// no held list is a conversation of its own).
	Person bool
}

// OutboundMessage is a pending sent message.
type OutboundMessage struct {
	Seq       int64
	Recipient Address
	ID        wire.LogicalID
	CreatedAt time.Time
	Frame     []byte
	Body      []byte
	// Group is the group of a group lane (nil for a one-to-one message).
	Group *wire.GroupID
	// Content is what Body holds (wire.ContentFile: a file manifest).
	Content wire.ContentType
}

// InboundMessage is a pending received message.
type InboundMessage struct {
	Seq        int64
	Sender     Address
	ID         wire.LogicalID
	ReceivedAt time.Time
	Digest     [32]byte
	Body       []byte
	// Group is the group of a group message (nil for a one-to-one one).
	Group *wire.GroupID
	// Content is what Body holds (wire.ContentFile: a file manifest, which
	// only a fetch commits).
	Content wire.ContentType
	// Roster is the signed roster frame of a roster change that waits in
	// its sender's request (nil for a message): accepting the sender
	// applies it.
	Roster []byte
	// CopyTo is set for a sent copy of an action (frame kind 17) that
	// waits for its target: the conversation it names (actioncopy.go).
	CopyTo string
}

// FinalizedRecord is the terminal record of a received message.
type FinalizedRecord struct {
	Sender  Address
	ID      wire.LogicalID
	Outcome Outcome
	Reason  DiscardReason
	At      time.Time
	Digest  [32]byte
}

// Direction tells received history entries from sent ones.
type Direction uint8

// Directions.
const (
	DirectionIn  Direction = 1
	DirectionOut Direction = 2
)

// String returns "in" or "out".
func (d Direction) String() string {
	if d == DirectionIn {
		return "in"
	}
	return "out"
}

// SentState is the state of a sent message in the history.
type SentState uint8

// Sent message states. Relay acceptance is not durable: it is an event the
// engine reports and the UI shows until the ACK arrives.
const (
	SentPending      SentState = 1
	SentAcknowledged SentState = 2
	SentAbandoned    SentState = 3
	// SentCopied: sent by this person from another of their devices (a
	// sent copy); that device follows its lanes.
	SentCopied SentState = 4
)

// String returns "pending", "acknowledged", "abandoned" or "copied".
func (s SentState) String() string {
	switch s {
	case SentAcknowledged:
		return "acknowledged"
	case SentAbandoned:
		return "abandoned"
	case SentCopied:
		return "copied"
	}
	return "pending"
}

// HistoryEntry is one message of a conversation.
type HistoryEntry struct {
	Seq       int64
	Peer      Address
	Direction Direction
	ID        wire.LogicalID
	At        time.Time
	Body      []byte
	State     SentState // for DirectionOut
	// DecidedOn names the device of this person whose commit committed
	// this received message here (decision.go); nil when this device did.
	DecidedOn *Address
	// ReplyTo is the message a reply quotes; Edits the number of the
	// latest edit applied (0: never edited); Deleted a tombstone (Body
	// empty); Reactions one per person (action.go).
	ReplyTo   *wire.LogicalID
	Edits     uint32
	Deleted   bool
	Reactions []Reaction
	// Imported is set on an entry that came by import, from a linked
	// device's history or a restored backup (restore.go); nil for one
	// written here.
	Imported *Imported
}

// Imported says how a history entry came by import: when the import that
// brought it started (the moment its profile was made) and whether it was
// another device's history at link time (Link) or a restored backup.
type Imported struct {
	At   time.Time // zero when the import's record is gone
	Link bool
}

// Attempt is one envelope that carried a sent message: its send (N 1) or a
// retry, the envelope's ID and type, and the session initiation it was
// encrypted on.
type Attempt struct {
	N          int
	At         time.Time
	Envelope   wire.EnvelopeID
	Type       wire.EnvelopeType
	Initiation InitiationID
	// TakenAt is when the relay reported the envelope taken by the
	// recipient's device; zero when it never did.
	TakenAt time.Time
}

// Conversation summarizes one peer: a device, or a person whose device
// list is held (ConversationsByPerson).
type Conversation struct {
	Peer       Address
	PendingIn  int
	PendingOut int
	LastAt     time.Time
	// Devices are the devices' own conversations that a person's one
	// folds, each with its counts, in address order: set for a person
	// whose device list is held (the first device's Peer need not be
	// the person's Peer), nil for a device of its own.
	Devices []Conversation
}

// Person reports whether c is a person's conversation folding their
// devices' (ConversationsByPerson).
func (c Conversation) Person() bool { return c.Devices != nil }

// StagedEnvelope is one row of the durable staging area.
type StagedEnvelope struct {
	Row        int64
	RelayRow   uint64
	ReceivedAt time.Time
	Envelope   []byte
	Err        error // the row failed to unseal
}
