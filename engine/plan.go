package engine

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Plan is one protocol transition, prepared in memory with all cryptographic
// work done, that a Store applies in one BEGIN IMMEDIATE transaction or not at
// all. The set is closed: adding a plan means the store must learn it.
type Plan interface {
	// Kind names the plan in failpoints, logs and the failpoint matrix.
	Kind() string
	plan()
}

// SessionWrite replaces the stored session with a peer. Version is the
// version the plan was prepared from (0: no session); the store refuses the
// plan with ErrConflict when the stored version differs, and stores
// Version+1.
type SessionWrite struct {
	Peer          Address
	Version       uint64
	ID            InitiationID
	AwaitingReply bool
	Record        []byte // Session.MarshalBinary
}

// PreKeyRecord is one private prekey to store.
type PreKeyRecord struct {
	Kind    PreKeyKind
	ID      uint32
	Created int64
	Expires int64
	Record  []byte
}

// PreKeyKind tells the stored prekey kinds apart.
type PreKeyKind uint8

// Prekey kinds.
const (
	PreKeySigned  PreKeyKind = 1 // X25519 signed prekey
	PreKeyKEM     PreKeyKind = 2 // ML-KEM-768 signed prekey
	PreKeyOneTime PreKeyKind = 3 // X25519 one-time prekey
)

// Bootstrap creates a profile's identity and first prekeys.
type Bootstrap struct {
	Self     Address
	RelayURL string
	Identity []byte // Identity.MarshalBinary
	PreKeys  []PreKeyRecord
}

// CreateAccount stores the account this device belongs to (issue 33): its
// key on the device that made it, and the device list this device holds.
// It is refused (ErrConflict) when the profile has an account already.
type CreateAccount struct {
	Key  []byte // AccountKey.MarshalBinary; nil on a device that does not hold it
	List []byte // wire.EncodeDeviceList
	// LinkedBy is the number of the device that linked this one, as its
	// link package named it (wire.LinkPackageData.Linker): the device
	// whose group states it takes. 0 when not named (a package of version
	// 1 or 2, or a device not linked): device 1 is taken.
	LinkedBy uint32
}

// PublishPreKeys stores new prekeys (a rotation or a one-time batch), deletes
// expired signed prekeys and the retired initiations old enough that no
// prekey they could name is still held, and records which one-time prekeys
// the relay has.
type PublishPreKeys struct {
	Add           []PreKeyRecord
	DeleteSigned  []uint32  // expired signed X25519 prekey IDs
	DeleteKEM     []uint32  // expired ML-KEM prekey IDs
	RetiredBefore time.Time // delete retired initiations retired before this
	NextPreKeyID  uint32    // the next unused prekey ID (0: unchanged)
	PublishedUpTo uint32    // highest one-time prekey ID the relay has (0: unchanged)
	// KeepOneTime, when set, deletes the oldest one-time prekeys (lowest
	// IDs) until at most that many are left.
	KeepOneTime int
}

// Outgoing is one envelope a plan produced; after the commit the engine hands
// it to the relay. Owner names the pending message it carries (zero for an
// acknowledgement, which is never stored as pending).
type Outgoing struct {
	Envelope wire.Envelope
	Owner    wire.LogicalID
	IsAck    bool
}

// Send stores a new application message as pending outbound, with its history
// entry, the session advanced by its encryption and, for a new session, the
// pinned identity.
type Send struct {
	Recipient Address
	ID        wire.LogicalID
	Frame     []byte // encoded application frame
	Body      []byte
	At        time.Time
	Session   SessionWrite
	Pin       *IdentityKey // first use of this peer's identity
	Out       Outgoing
}

// Hold stores a new application message as pending outbound without
// encrypting it: the store-first send (Enqueue), whose pump encrypts it and
// hands it off later; or a send whose peer has no session and whose bundle
// could not be fetched (the relay was out of reach), or whose earlier
// messages wait the same way and must not be overtaken. It writes the frame
// and the history entry; no envelope, no session. With ClearDraft the
// draft to Recipient is forgotten in the same transaction: after a crash the
// text is the stored message or the draft, never both, never neither.
type Hold struct {
	Recipient  Address
	ID         wire.LogicalID
	Frame      []byte // encoded application frame
	Body       []byte
	At         time.Time
	ClearDraft bool
	// Action, for an action of this device, is applied here in the same
	// transaction (action.go).
	Action *ActionApply
}

// Retry stores the session advanced by encrypting a pending message again.
type Retry struct {
	Recipient Address
	ID        wire.LogicalID
	Session   SessionWrite
	Pin       *IdentityKey
	Out       Outgoing
	At        time.Time // when it was encrypted (the attempt log's time); zero: the transaction's
}

// Stage writes complete envelopes, as received, to the durable staging area before
// any parsing; only after its commit may the relay's leases be released.
type Stage struct {
	Envelopes []StagedInput
	At        time.Time
}

// StagedInput is one envelope to stage with the relay row that leased it.
type StagedInput struct {
	RelayRow uint64
	Envelope []byte
}

// Handshake is what accepting an incoming initiation adds to a receive.
type Handshake struct {
	Pin            *IdentityKey       // first use of this peer's identity
	ConsumeOneTime *uint32            // the one-time prekey the initiation used
	Retire         *RetiredInitiation // the replaced session's initiation
}

// FrameEffect is what a received frame does beyond the session step.
type FrameEffect interface{ effect() }

// DeliverEffect stores a new application message as pending inbound.
type DeliverEffect struct {
	ID     wire.LogicalID
	Frame  []byte
	Digest [32]byte
	At     time.Time
}

// CommitEffect stores a new application message as committed at once,
// never pending: its finalized record and its history entry, in the
// transaction that receives it. The loop uses it under CommitOnArrival for
// what that policy would commit right after anyway (not a file, not a
// request), saving a transaction and the pending record's insert and
// delete. The Receive's session already carries the ACK's encryption step.
type CommitEffect struct {
	ID      wire.LogicalID
	Digest  [32]byte
	Arrived time.Time // when the envelope was staged: the history entry's time
	At      time.Time // when it was committed
	// Content is the message's content type, which its finalized record
	// keeps (zero for a sent copy, whose record keeps none).
	Content wire.ContentType
	// ActionBody, for a committed action (one to one or a group's), is
	// its action body (at most wire.MaxDecisionActionSize), which the
	// finalized record keeps for the catch-up of a sibling linked since
	// and an answer to a sibling's discard.
	ActionBody []byte
	Body       []byte // the history body
	// Group, for a group message: the entry goes to the group's history.
	Group *wire.GroupID
	// Action, for an action, is applied in the same transaction.
	Action *ActionApply
	// WithKept, for a message (a text or a reply, of a group or one to
	// one) committed as it arrives, are the kept action decisions
	// waiting for it that now apply, taken back and applied in the same
	// transaction (Finalize.WithKept).
	WithKept []KeptTakeBack
	// SentTo, for a sent copy (person.go), is the conversation the
	// message this person sent from another device belongs to: the
	// history entry is an own message there (SentCopied), not a received
	// one.
	SentTo *Address
	// Tell, for a one-to-one message from another person, are the lanes
	// that tell this person's other devices of the commit, as a
	// Finalize's Tell (decision.go): stored in the receive's transaction.
	Tell []PersonLane
}

// AckEffect clears the pending outbound message (recipient = the peer, ID).
type AckEffect struct {
	ID wire.LogicalID
	// At is when the ACK was received here: the lane it ends records it
	// (a decision lane's end decides whether a catch-up tells it again,
	// catchUpLanes). Zero: the transaction's time.
	At time.Time
}

// RepeatEffect records nothing: the frame repeats a message that is pending
// or finalized. When it was finalized, Ack carries the acknowledgement sent
// again, with its session step.
type RepeatEffect struct{}

func (DeliverEffect) effect() {}
func (CommitEffect) effect()  {}
func (AckEffect) effect()     {}
func (RepeatEffect) effect()  {}

// Receive is the processing of one staged envelope: the session step, the
// frame's effect, for a PreKeyMessage the handshake, and the deletion of that
// exact inbox row. For a repeat of a finalized message, Ack is the ACK sent
// again and Session already includes its encryption step.
type Receive struct {
	StagedRow int64
	Peer      Address
	Session   SessionWrite
	Handshake *Handshake
	Effect    FrameEffect
	Ack       *Outgoing
	// PastChains, when set, replaces the record of the session's past
	// receiving chains: the message turned the peer's ratchet, and the chain
	// it left is remembered so that a redelivered copy from it is known as
	// a duplicate. Kept apart from the session record, whose layout is
	// frozen.
	PastChains []byte
	// Request, for a DeliverEffect from a peer not accepted, opens or joins
	// that peer's message request (request.go).
	Request *RequestStage
	// Chain, for a chain message opened or a chain announcement taken,
	// stores the received chain as this receive leaves it.
	Chain *ReceivedChainWrite
}

// CollisionRetire is the one durable effect of a receive that lost to the own
// initiation: the incoming initiation is retired, the one-time prekey it
// used (ConsumeOneTime, when it used one) is deleted, and its inbox row
// consumed. Announce, when set, makes the winning session known to the loser.
type CollisionRetire struct {
	StagedRow      int64
	Peer           Address
	Retired        RetiredInitiation
	ConsumeOneTime *uint32
	Announce       *Announcement
}

// Announcement is an ACK of no message (the zero logical ID), encrypted on
// the own session, which still awaits its first reply: it carries that
// session's initiation to a peer that keeps retrying on an initiation that
// lost. Without it, a winner with nothing pending for the peer would never
// send on its session, and the loser's retries would stay stale forever. The
// loser replaces its session on receipt and reports an ACK that cleared
// nothing.
type Announcement struct {
	Session SessionWrite
	Ack     Outgoing
}

// DropStaged removes a staged envelope that can never be processed
// (malformed, forged, stale, for an unknown session...) and keeps a sealed
// copy with the reason in quarantine. A corrupt row that cannot even be
// unsealed is quarantined the same way.
type DropStaged struct {
	StagedRow int64
	Reason    string
	At        time.Time
	Announce  *Announcement // for a stale initiation; see Announcement
	// Recovery, when set, is a recovery request to the envelope's sender,
	// handed off after the commit (nothing of it is stored): the envelope
	// came from a peer whose session with this device cannot work.
	Recovery *Outgoing
	// ConsumeOneTime and Retire, for an initiation that lost for good: the
	// one-time prekey it used is deleted, and it is retired (see
	// Client.abandonedInitiation).
	ConsumeOneTime *uint32
	Retire         *RetiredInitiation
	// Peer is the sender, when Retire is set.
	Peer Address
}

// ResetSession is what a valid recovery request from a peer does when it
// names the own current session: that session is removed and its initiation
// retired, the peer's current initiation (which the next initiation will
// name as the one it replaces) is retired too, and the request's staged row
// is consumed. Pending messages stay; the next retry sets up a fresh session
// from a new bundle and resends them with their logical IDs. A reset this
// device asks for itself (Client.ResetSession) has no staged row (0).
type ResetSession struct {
	StagedRow      int64
	Peer           Address
	SessionVersion uint64 // the session removed
	Retire         []RetiredInitiation
	Replaces       InitiationID // the peer's current initiation; zero when it has none
	// RefusedOneTime is the peer's one-time prekey that the refused
	// initiation used (none or one), never to be used with the peer again
	// (PeerState.RefusedOneTime).
	RefusedOneTime []uint32
	At             time.Time
}

// Finalize turns a pending inbound message into a finalized record: a commit
// (appended to the history in the same transaction) or a discard (body
// deleted, reason kept locally). When a session exists, the ACK's session
// step (Session) commits with it and the ACK is handed off afterwards.
type Finalize struct {
	Sender  Address
	ID      wire.LogicalID
	Digest  [32]byte
	Outcome Outcome
	Reason  DiscardReason
	Body    []byte // history body, for a commit
	At      time.Time
	// Arrived is when the message arrived on this device: the time of its
	// history entry, which the conversation is ordered by (At when zero).
	// The finalized record keeps it (a take-back judges an action's
	// window from it).
	Arrived time.Time
	// Content is the message's content type, which the finalized record
	// keeps, so that a sibling's commit of an action takes back only a
	// discard of that kind of action.
	Content wire.ContentType
	// ActionBody, for a commit of an action (one to one or a group's), is
	// its action body (at most wire.MaxDecisionActionSize), which the
	// finalized record keeps for the catch-up of a sibling linked since
	// and an answer to a sibling's discard.
	ActionBody []byte
	Session    *SessionWrite
	Ack        *Outgoing
	// Group, for a group message: a commit goes to the group's history,
	// never to the conversation with the sender.
	Group *wire.GroupID
	// Action, for a commit of an action, is applied in the same
	// transaction (action.go).
	Action *ActionApply
	// Tell are the lanes that tell this person's other devices of the
	// decision (decision.go): pending in the same transaction.
	Tell []PersonLane
	// DecidedOn, when another device of this person decided, names it:
	// a commit's history entry says so, and the kept decision goes.
	DecidedOn *Address
	// WithKept, for a commit of a message (a text or a reply, of a group
	// or one to one), are the kept action decisions waiting for it (a
	// sibling's commit of an action this device discarded while its
	// target was pending or absent here, or discarded:
	// DecisionEffect.KeepAction; one to one, an action of this message's
	// sender) that now apply by the action rules (a group's, in a group)
	// onto the entry this commit writes: each is taken back and applied,
	// its kept decision forgotten, in the same transaction, as a
	// take-back's WithTarget is. At most MaxKeptDecisions.
	WithKept []KeptTakeBack
	// KeepAction, for a discard of an action (not a reply) because its
	// target is discarded here (DiscardTargetDiscarded), whose target a
	// sibling's decision can take back, is the action as it arrived
	// (Sender, ID, Content, Target, Body: the pending message's, Group).
	// A sibling's commit kept for the message (heard before it arrived)
	// is not forgotten then but kept with this action, as a kind-18
	// decision heard after the discard is (DecisionEffect.KeepAction):
	// the target's take-back takes it back. Nothing is kept when no
	// commit is kept for the message, unless On is set: a sibling's own
	// group action (On is that sibling, its sender), which the person
	// authored and no decision will ever judge, is kept as that
	// sibling's commit with its action, heard or not (within
	// MaxKeptDecisions); or the person's commit made on this device
	// that the rules turned into this discard (On is this device, of
	// another person than the sender; the store checks it is its own
	// address), kept as this device's commit, so that the target's
	// take-back applies it as a decision made here.
	KeepAction *KeptAction
	// SentTo, for a commit of a sibling's sent copy of an action that
	// waited for its target (actioncopy.go), is the conversation it
	// names: the entry is an own message there (SentCopied), as a
	// CommitEffect's SentTo.
	SentTo *Address
}

// AckAgain acknowledges again a received message finalized before, when a
// person commits or discards it a second time with the same outcome: the
// ACK's session step, on condition that the message is still finalized
// with Outcome (ErrNotPending otherwise). Nothing else changes; the ACK is
// handed off after the commit.
type AckAgain struct {
	Sender  Address
	ID      wire.LogicalID
	Outcome Outcome
	Session SessionWrite
	Ack     Outgoing
	At      time.Time
}

// Abandon removes a pending outbound message locally. It is not a recall.
type Abandon struct {
	Recipient Address
	ID        wire.LogicalID
	At        time.Time
}

// MarkTaken records that the relay reported attempt N of message ID to Peer
// taken by the recipient's device (the message is on that device, not yet
// acknowledged). The store refuses it with ErrNotPending when the attempt
// is not logged or was marked already.
type MarkTaken struct {
	Peer Address
	ID   wire.LogicalID
	N    int
	At   time.Time
}

// AcceptIdentity pins a changed identity for a peer and removes the session
// with it, retiring that session's initiation; pending messages and
// processed IDs stay.
type AcceptIdentity struct {
	Peer           Address
	Identity       IdentityKey
	SessionVersion uint64 // the session removed (0: none)
	// Retire is the removed session's initiation (nil with no session): a
	// replay of its PreKeyMessage is stale once the old identity is pinned
	// again, as after a reset.
	Retire *RetiredInitiation
	// Replaces is the initiation the next own one names as the session it
	// replaces (zero: none): the removed session's, so that a device that
	// still holds it (the identity did not change after all) replaces it
	// at once, and with no session whatever was recorded before.
	Replaces InitiationID
	At       time.Time
}

// RelaySettings is how a profile reaches its relay.
type RelaySettings struct {
	// URL is the relay's ws:// or wss:// URL.
	URL string
	// ID is the relay's ID, pinned at the first successful authentication
	// (trust on first use); zero until then. A relay that presents another
	// ID is refused until the user accepts it.
	ID [32]byte
	// CA holds PEM certificates of a private certificate authority that
	// signs the relay's TLS certificate; empty: the system's roots.
	CA []byte
}

// SetRelay replaces the profile's relay settings.
type SetRelay struct{ Relay RelaySettings }

// PinRelay pins the relay ID a first authentication met, on condition: the
// profile's relay URL is still URL and no other ID is pinned (the settings
// may have changed since the connection was made); otherwise ErrConflict
// and nothing changes.
type PinRelay struct {
	URL string
	ID  [32]byte
}

// Prune deletes finalized records older than Before.
type Prune struct{ Before time.Time }

// SetContact names a device for this profile's owner (Name "" removes the
// name). The name never leaves the profile.
type SetContact struct {
	Peer Address
	Name string
}

// MarkPresented records that every event up to Seq reached the presentation.
type MarkPresented struct{ Seq uint64 }

func (Bootstrap) plan()       {}
func (CreateAccount) plan()   {}
func (PublishPreKeys) plan()  {}
func (Send) plan()            {}
func (Hold) plan()            {}
func (Retry) plan()           {}
func (Stage) plan()           {}
func (Receive) plan()         {}
func (CollisionRetire) plan() {}
func (DropStaged) plan()      {}
func (Finalize) plan()        {}
func (AckAgain) plan()        {}
func (Abandon) plan()         {}
func (AcceptIdentity) plan()  {}
func (Prune) plan()           {}
func (SetRelay) plan()        {}
func (SetContact) plan()      {}
func (ResetSession) plan()    {}
func (PinRelay) plan()        {}
func (MarkPresented) plan()   {}

// Kind implements Plan.
func (Bootstrap) Kind() string { return "bootstrap" }

// Kind implements Plan.
func (CreateAccount) Kind() string { return "account-create" }

// Kind implements Plan.
func (PublishPreKeys) Kind() string { return "prekey-publish" }

// Kind implements Plan.
func (Send) Kind() string { return "pairwise-send" }

func (MarkTaken) plan() {}

// Kind implements Plan.
func (MarkTaken) Kind() string { return "mark-taken" }

// Kind implements Plan.
func (Hold) Kind() string { return "pairwise-hold" }

// Kind implements Plan.
func (Retry) Kind() string { return "retry" }

// Kind implements Plan.
func (Stage) Kind() string { return "stage" }

// Kind names a receive by what it does: a handshake, an acknowledgement, a
// repeat or a plain pairwise receive.
func (p Receive) Kind() string {
	switch {
	case p.Request != nil:
		return "request-stage"
	case isCommit(p.Effect):
		return "receive-commit"
	case p.Handshake != nil:
		return "handshake-receive"
	case isAck(p.Effect):
		return "ack-receive"
	case isChainAcks(p.Effect):
		return "chain-acks-receive"
	case isNeedChain(p.Effect):
		return "need-chain-receive"
	case isRepeat(p.Effect):
		return "repeat-receive"
	}
	return "pairwise-receive"
}

func isAck(e FrameEffect) bool { _, ok := e.(AckEffect); return ok }
func isChainAcks(e FrameEffect) bool {
	_, ok := e.(ChainAcksEffect)
	return ok
}
func isNeedChain(e FrameEffect) bool {
	_, ok := e.(NeedChainEffect)
	return ok
}
func isCommit(e FrameEffect) bool { _, ok := e.(CommitEffect); return ok }
func isRepeat(e FrameEffect) bool { _, ok := e.(RepeatEffect); return ok }

// Kind implements Plan.
func (CollisionRetire) Kind() string { return "collision-retire" }

// Kind implements Plan: "recovery-request" when the drop carries one.
func (p DropStaged) Kind() string {
	if p.Recovery != nil {
		return "recovery-request"
	}
	return "quarantine"
}

// Kind implements Plan.
func (ResetSession) Kind() string { return "session-reset" }

// Kind implements Plan.
func (p Finalize) Kind() string {
	if p.Outcome == OutcomeDiscarded {
		return "discard"
	}
	return "commit"
}

// Kind implements Plan.
func (AckAgain) Kind() string { return "ack-again" }

// Kind implements Plan.
func (Abandon) Kind() string { return "abandon" }

// Kind implements Plan.
func (AcceptIdentity) Kind() string { return "identity-change" }

// Kind implements Plan.
func (Prune) Kind() string { return "prune" }

// Kind implements Plan.
func (SetRelay) Kind() string { return "relay-settings" }

// Kind implements Plan.
func (PinRelay) Kind() string { return "relay-pin" }

// Kind implements Plan.
func (SetContact) Kind() string { return "contact" }

// Kind implements Plan.
func (MarkPresented) Kind() string { return "presented" }

// Outcome is how a received message was finalized.
type Outcome uint8

// Outcomes.
const (
	OutcomeCommitted Outcome = 1
	OutcomeDiscarded Outcome = 2
)

// DiscardReason is the closed set of local reasons for a discard.
type DiscardReason uint8

// Discard reasons. They stay local: the sender's ACK does not say which.
const (
	DiscardNone        DiscardReason = 0
	DiscardRejected    DiscardReason = 1 // rejected by the user
	DiscardUnsupported DiscardReason = 2 // unsupported content
	DiscardPolicy      DiscardReason = 3
	DiscardOther       DiscardReason = 4
	// The reasons of an action the engine discards (action.go).
	DiscardTargetDiscarded DiscardReason = 5  // its target was discarded here
	DiscardTargetMissing   DiscardReason = 6  // its target never came within ActionHold, or is no message
	DiscardNotAuthor       DiscardReason = 7  // an edit or delete of another's message
	DiscardTargetDeleted   DiscardReason = 8  // its target was deleted for everyone
	DiscardWindowPassed    DiscardReason = 9  // an edit or delete past ActionWindow
	DiscardHoldFull        DiscardReason = 10 // over MaxHeldActionsPerSender
)

// ByEngine reports whether r is a discard the engine made by its rules for
// actions (target_discarded to hold_full): it rests on this device's
// state (what it holds, when things came here), not on the person's
// choice, so no sibling is told of it, live or in a catch-up.
func (r DiscardReason) ByEngine() bool {
	return r >= DiscardTargetDiscarded && r <= DiscardHoldFull
}

var discardReasonNames = [...]string{DiscardNone: "none", DiscardRejected: "rejected", DiscardUnsupported: "unsupported",
	DiscardPolicy: "policy", DiscardOther: "other", DiscardTargetDiscarded: "target_discarded", DiscardTargetMissing: "target_missing",
	DiscardNotAuthor: "not_author", DiscardTargetDeleted: "target_deleted", DiscardWindowPassed: "window_passed", DiscardHoldFull: "hold_full"}

// String returns the reason's snake_case name.
func (r DiscardReason) String() string {
	if int(r) < len(discardReasonNames) {
		return discardReasonNames[r]
	}
	return fmt.Sprintf("discard reason %d", uint8(r))
}

// Receipt is what a store returns for an applied plan; events are built from
// it, never from the plan alone.
type Receipt struct {
	// Seq is the sequence number assigned to a new pending message
	// (Send: outbound; Receive with DeliverEffect: inbound).
	Seq int64
	// Rows are the staging rows a Stage created, in input order.
	Rows []int64
	// Cleared is true when an AckEffect removed a pending message, or a
	// ChainAcksEffect at least one.
	Cleared bool
	// Acked are the messages whose pending lanes a ChainAcksEffect
	// removed, in the order it named them.
	Acked []wire.LogicalID
	// Pruned counts the records a Prune deleted.
	Pruned int64
	// Marker is the presentation sequence written with a visible transition.
	Marker uint64
	// Evicted counts the quarantined rows a DropStaged evicted to keep the
	// quarantine within its bounds.
	Evicted int
	// Unforwarded are the forwards of a RosterEffect the store did not
	// store because the change's ID is taken on that sibling's lanes by
	// another group's lane or a pending outbound row (a collision, or a
	// hostile change recorded first under a genuine change's ID).
	Unforwarded []Unforwarded
}

// Unforwarded is one forward of a roster change not stored: the change's
// ID is taken to sibling To (Receipt.Unforwarded).
type Unforwarded struct {
	To     Address
	Group  wire.GroupID
	Change wire.LogicalID
}
