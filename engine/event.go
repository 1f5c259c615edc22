package engine

import (
	"time"

	"github.com/parley-chat/parley/wire"
)

// EventKind names what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventReceived carries one receive result (delivery, repeat,
	// acknowledgement or a failure by name), and one result of each pass
	// a round runs after a receive batch: an action that waited, applied
	// or discarded (ResultApplied, ResultActionDiscarded), and a kept
	// decision applied or refused (ResultDecided, ResultError).
	EventReceived EventKind = iota + 1
	// EventSent: the relay accepted the envelope of a message (send or retry).
	EventSent
	// EventNotSent: a message was stored but its hand-off failed.
	EventNotSent
	// EventFinalized: a received message was committed or discarded.
	EventFinalized
	// EventAbandoned: a pending sent message was abandoned.
	EventAbandoned
	// EventIdentityAccepted: a changed identity was accepted.
	EventIdentityAccepted
	// EventResync: the lists must be re-read (after a crash between a
	// commit and its event, or when events were dropped).
	EventResync
	// EventSyncFailed: a round of the receive loop failed at step Op
	// (receive, stage, acknowledge, process, commit, maintain, pump) or an
	// automatic retry to Peer failed (Op "retry"); Err says why. Run reports
	// a failure once, and again only when it changes.
	EventSyncFailed
	// EventQuarantineEvicted: keeping a failed envelope pushed Count of the
	// oldest quarantined ones out (the quarantine is bounded, so that a
	// flood of junk cannot fill the disk).
	EventQuarantineEvicted
	// EventSessionReset: the session with Peer was forgotten on this
	// device's own request (Client.ResetSession); the next message starts
	// a new one.
	EventSessionReset
	// EventTaken: the relay reported the latest envelope of pending sent
	// message ID taken by Peer's device; it is on that device, not yet
	// acknowledged.
	EventTaken
	// EventRequest: a message from Peer, a device this profile has not
	// accepted, opened a message request (Config.Requests); nothing went
	// back to Peer.
	EventRequest
	// EventRequestBound: a message from Peer was dropped because a bound
	// on requests bit: Op "requests" (MaxRequests, Count open) or "bytes"
	// (MaxRequestBytes).
	EventRequestBound
	// EventRequestsSwept: the maintenance deleted Count requests older than
	// RequestLifetime.
	EventRequestsSwept
	// EventRequestAccepted: Peer's request was accepted; its Count
	// messages are now pending deliveries (the lists of pending messages
	// changed).
	EventRequestAccepted
	// EventStored: message ID to Peer was stored as pending by the
	// store-first send (Client.Enqueue); the pump hands it to the relay
	// (EventSent or EventNotSent follow).
	EventStored
)

// Event reports one committed change. Events are emitted only after their
// transaction committed, from what it returned.
type Event struct {
	Kind    EventKind
	At      time.Time
	Peer    Address
	ID      wire.LogicalID
	Result  *ReceiveResult // EventReceived
	Outcome Outcome        // EventFinalized
	AckSent bool           // EventFinalized
	Err     error          // EventNotSent, EventResync, EventSyncFailed
	Op      string         // EventSyncFailed
	Count   int            // EventQuarantineEvicted and the request events

	marker uint64 // presentation marker of the commit this event reports
	// report is set on an event that reports again what events emitted
	// before announced (emitResults): it raises no marker.
	report bool
}

// emit delivers an event without ever blocking the engine: when the buffer is
// full the event is dropped and the next one that fits is a resync.
func (c *Client) emit(e Event) {
	c.eventMu.Lock()
	defer c.eventMu.Unlock()
	if c.lost {
		select {
		case c.events <- Event{Kind: EventResync, At: e.At, Err: ErrStateResyncRequired}:
			c.lost = false
		default:
			return
		}
	}
	select {
	case c.events <- e:
		// An event names the marker its commit wrote; one that does not
		// (a single visible commit under the send mutex) was emitted right
		// after it, so the marker now is its own.
		m := e.marker
		if m == 0 && !e.report {
			m = c.marker
		}
		if m > c.emitted {
			c.emitted = m
		}
	default:
		c.lost = true
	}
}

// noteMarker records the presentation marker a visible commit wrote.
func (c *Client) noteMarker(m uint64) {
	if m == 0 {
		return
	}
	c.eventMu.Lock()
	if m > c.marker {
		c.marker = m
	}
	c.eventMu.Unlock()
}

// ResultKind is the kind of a receive result.
type ResultKind uint8

// Receive result kinds.
const (
	ResultDelivery ResultKind = iota + 1
	ResultAlreadyCommitted
	ResultAlreadyDiscarded
	ResultAcknowledgement
	ResultError
	// ResultSessionReset: a valid recovery request from Sender named the
	// own session with it; the session is gone and the pending messages go
	// out again on a fresh one.
	ResultSessionReset
	// ResultGroupChanged: a roster change of Group arrived; the merged
	// roster is at Generation.
	ResultGroupChanged
	// ResultNotAMember: Sender's roster of Group does not hold this device;
	// the lane of message ID to Sender ended.
	ResultNotAMember
	// ResultRequest: a message from Sender, a device not accepted, opened
	// or joined a message request; it is not a delivery until accepted.
	ResultRequest
	// ResultApplied: an action from Sender that waited for its target
	// (Action says what it did) was committed and applied.
	ResultApplied
	// ResultActionDiscarded: an action from Sender was discarded by the
	// engine with Reason (its target discarded, missing, deleted; not its
	// author's; past its window; over the hold's bound).
	ResultActionDiscarded
	// ResultChainAnnounced: Sender announced its chain for Group at
	// Generation; it is kept here and acknowledged.
	ResultChainAnnounced
	// ResultSentCopy: another device of this person (Sender) sent message
	// ID to CopyTo's conversation; the copy is in the history here as sent
	// by this person, and acknowledged.
	ResultSentCopy
	// ResultDecisionHeard: another device of this person (Sender) told
	// its decision (Decided) about a message; it is kept until the
	// message is pending here, and acknowledged.
	ResultDecisionHeard
	// ResultDecided: a message pending here from Sender was finalized as
	// another device of this person decided (Decided.On), without asking.
	ResultDecided
	// ResultNeedChain: Sender, a member of Group at Generation, asked for
	// this device's chain (frame kind 9); ID is the announcement lane
	// sent it again, when the request was answered (chainneed.go).
	ResultNeedChain
	// ResultGroupState: device 1 of this person (Sender) sent Group's
	// state to this device (groupstate.go); it is held here now (stored,
	// or held already), and acknowledged.
	ResultGroupState
)

// String returns the snake_case name used on the command line.
func (k ResultKind) String() string {
	switch k {
	case ResultDelivery:
		return "delivery"
	case ResultAlreadyCommitted:
		return "already_committed"
	case ResultAlreadyDiscarded:
		return "already_discarded"
	case ResultAcknowledgement:
		return "acknowledgement"
	case ResultSessionReset:
		return "session_reset"
	case ResultGroupChanged:
		return "group_changed"
	case ResultApplied:
		return "applied"
	case ResultActionDiscarded:
		return "action_discarded"
	case ResultNotAMember:
		return "not_a_member"
	case ResultRequest:
		return "request"
	case ResultChainAnnounced:
		return "chain_announced"
	case ResultSentCopy:
		return "sent_copy"
	case ResultDecisionHeard:
		return "decision"
	case ResultDecided:
		return "decided"
	case ResultNeedChain:
		return "need_chain"
	case ResultGroupState:
		return "group_state"
	}
	return "error"
}

// ReceiveResult is the outcome of processing one staged envelope.
type ReceiveResult struct {
	Kind    ResultKind
	Sender  Address
	ID      wire.LogicalID
	Body    []byte // ResultDelivery
	Cleared bool   // ResultAcknowledgement: a pending message was removed
	// Acked, on a cumulative acknowledgement (frame kind 10), lists the
	// messages whose pending lanes it removed; ID is then the first it
	// named. Each also has an EventReceived of its own, with that ID.
	Acked   []wire.LogicalID
	AckSent bool  // ResultAlreadyCommitted, ResultAlreadyDiscarded
	Err     error // ResultError; on a ResultDecisionHeard, why its carried action was not taken (ErrDecisionMismatch)
	// RecoveryRequested is set on a ResultError when the envelope came from
	// a peer whose session with this device cannot work and a recovery
	// request went back to it.
	RecoveryRequested bool
	// Group is set for a group delivery, a roster change and a
	// not_a_member; Generation for a roster change (the merged roster's).
	Group      *wire.GroupID
	Generation uint64
	// Content is what Body holds on a delivery (wire.ContentFile: a file
	// manifest, see FileOf).
	Content wire.ContentType
	// Action is set on an action committed and applied in the round (on
	// arrival, or ResultApplied, or a ResultDecisionHeard that took an
	// action back); Reason on ResultActionDiscarded.
	Action *AppliedAction
	Reason DiscardReason
	// CopyTo is the conversation of a ResultSentCopy, and of the
	// ResultApplied or ResultActionDiscarded that settled a sibling's
	// sent copy of an action after it waited.
	CopyTo *Address
	// Decided is the decision of a ResultDecisionHeard or ResultDecided.
	Decided *KeptDecision
	// DecidedElsewhere, on a ResultDelivery, says another device of this
	// person decided the message before it came here (its decision was
	// kept when the delivery's page was stored): a ResultDecided for it
	// follows in the same Sync. An interface rings no bell for it. A
	// delivery committed on arrival is not marked.
	DecidedElsewhere bool
	// TakenBack, on a ResultDecisionHeard, says the decision was a commit
	// of a message discarded here, which it carried and this device took
	// back into its history (commit beats discard); for an action (frame
	// kind 18), Action says what it applied.
	TakenBack bool

	// For the loop's schedules: the session with Sender converged (an
	// announcement, or a session replaced by the peer's initiation), and
	// the envelope set up a session (it may have used a one-time prekey).
	converged, handshake bool
	// fresh is the pending record a new delivery stored (with its digest
	// and arrival), so that a commit in the same round need not read it
	// back; nil otherwise.
	fresh *InboundMessage
	// opened is set on a ResultRequest that opened a new request.
	opened bool
	// committed is set on a delivery committed in the transaction that
	// received it (CommitEffect): it is never pending.
	committed bool
	// ackDeferred is set on a chain message whose acknowledgement goes in
	// the page's cumulative ACK (chainack.go).
	ackDeferred bool
	// needAnnounce is set on a ResultNeedChain answered by sending
	// announcement ID after the commit (answerNeedChains).
	needAnnounce bool
}
