package engine

import (
	"context"
	"fmt"
	"github.com/parley-chat/parley/engine/session"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Preparing. Each staged row becomes one plan, prepared in memory on copies
// of the state with every cryptographic step done first. prepareReceive
// opens the envelope and hands it, by its type, to prepareRecovery
// (recovery.go), preparePreKey (initiation.go) or prepareRatchet; an
// envelope that a session step opened goes on to prepareFrame. Each returns
// one verdict value. A verdict on the envelope (malformed, forged, stale,
// collision...) is a plan with an error result; only a failure to prepare
// at all (storage, cancellation) is an error.

// batchState is what the plans prepared so far in one batch changed, beyond
// peer state: later plans of the batch must see it.
type batchState struct {
	work      map[Address]*peerState
	delivered map[inboundKey][32]byte
	retired   map[retiredKey]bool
	consumed  map[uint32]bool
	caps      *capState     // pending messages counted against the caps
	requests  *requestState // open requests counted against their bounds
	// groups is the number of groups kept (-1 until read) and newGroups
	// the groups this batch starts, against MaxGroupsPerProfile.
	groups, newGroups int
	// groupsSeen are the groups the batch read, as its plans leave them.
	groupsSeen map[wire.GroupID]*batchGroup
	// siblings are the devices the batch forwards roster changes to,
	// read once (rosterforward.go).
	siblings siblingCache
	// commit: the batch commits what CommitOnArrival would right after it
	// (CommitEffect), in its own transaction.
	commit bool
	// chains are the received chains the batch read or changed, as its
	// plans leave them (chainrecv.go).
	chains map[chainKey]*session.ReceiverChain
	// deleted are the targets a delete for everyone prepared in this batch
	// applies: an action after it in the batch waits for the hold's pass,
	// which finds the tombstone and discards it (target_deleted).
	deleted map[actionTargetKey]bool
	// takenBack are the messages a sibling's decision takes back in this
	// batch (decision.go), with the arrival each had here
	// (SeenMessage.arrivedAt, where the take-back writes its entry): an action's decision after
	// it in the batch finds its target there, as a later batch finds it
	// committed.
	takenBack map[inboundKey]time.Time
	// groupTakenBack are the group messages (a text, a reply) a sibling's
	// decision takes back in this batch, by (group, author, ID), with the
	// arrival where the take-back writes each entry: a group action's
	// decision after it in the batch finds its target committed there
	// (takeBackGroupAction), as a later batch finds it in the history.
	groupTakenBack map[actionTargetKey]time.Time
	// keptActions are the action decisions kept in this batch with their
	// action, by the target they wait for (sender, target ID);
	// keptApplied the kept action decisions a take-back in this batch
	// applies (decision.go, keptWithTarget).
	keptActions map[inboundKey][]KeptAction
	keptApplied map[inboundKey]bool
	// keptGroupActions are the group action decisions kept in this batch
	// with their action, by the target they wait for (group and target
	// ID: actionTargetKey without its author, decision.go,
	// keptGroupWithTarget).
	keptGroupActions map[actionTargetKey][]KeptAction
	// answered are the siblings' discards this batch answered with the
	// own commit (decision.go, answerLanes), by sibling and message.
	answered map[answerKey]bool
	// acks are the chain messages the batch decided, by sender device, to
	// acknowledge after its rows (chainack.go); ackOrder their senders in
	// first-seen order.
	acks     map[Address]*deferredAcks
	ackOrder []Address
	// needs are the chain messages the batch held for want of their
	// chain, by (sender, chain), with the position of the first;
	// needOrder in first-seen order (chainneed.go).
	needs     map[needKey]uint32
	needOrder []needKey
	// own are this person's other active devices, read once per batch
	// (ownRead) for the decisions an arrival commit tells (decision.go).
	own     []Address
	ownRead bool
	// copyIDs are the own entries the sent copies this batch commits
	// make (copyIDKey): a second copy under one of those IDs, from another
	// sibling, is refused as copyIDTaken refuses one under a stored ID.
	copyIDs map[copyIDKey]bool
	// takenRows are the staged rows whose sent copy the store refused
	// under a taken ID (ErrCopyIDTaken, processRows): prepared again, the
	// copy is refused so.
	takenRows map[int64]bool
}

type inboundKey struct {
	peer Address
	id   wire.LogicalID
}

type retiredKey struct {
	peer Address
	id   InitiationID
}

func newBatchState() *batchState {
	return &batchState{work: make(map[Address]*peerState), delivered: make(map[inboundKey][32]byte),
		retired: make(map[retiredKey]bool), consumed: make(map[uint32]bool), caps: newCapState(), requests: newRequestState(),
		groups: -1, groupsSeen: make(map[wire.GroupID]*batchGroup), deleted: make(map[actionTargetKey]bool), takenBack: make(map[inboundKey]time.Time),
		groupTakenBack: make(map[actionTargetKey]time.Time), keptActions: make(map[inboundKey][]KeptAction), keptApplied: make(map[inboundKey]bool),
		keptGroupActions: make(map[actionTargetKey][]KeptAction),
		answered:         make(map[answerKey]bool), chains: make(map[chainKey]*session.ReceiverChain), acks: make(map[Address]*deferredAcks), needs: make(map[needKey]uint32), copyIDs: make(map[copyIDKey]bool)}
}

// prepared is one staged row's plan and the result it reports once
// committed. A row held for a roster it waits on has no plan: it stays
// staged, counted in held.
type prepared struct {
	plan     Plan
	result   ReceiveResult
	ack      *Outgoing
	recovery *Outgoing      // a recovery request to the sender
	ticket   recoveryTicket // its slot in the limits, refunded if it does not go out
	held     *heldRow
}

// incoming is one staged envelope opened far enough to be prepared: decoded,
// its sender parsed and its recipient checked, with the sender's working
// state.
type incoming struct {
	row    StagedEnvelope
	env    wire.Envelope
	sender Address
	ps     *peerState
	now    time.Time // the clock when the row's preparation began
}

// opening is what preparing an encrypted envelope decided: either the row's
// verdict, when the envelope goes no further (a drop, a recovery request, a
// collision), or the session step that opened it, whose frame decides the
// rest.
type opening struct {
	verdict   *prepared
	session   *session.Session // the candidate session, stepped past the message
	handshake *Handshake       // for an accepted initiation
	plaintext []byte
	left      *session.PastChain // the receiving chain the message turned away from
	chain     *chainOpened       // a chain message's chain, or an announcement's, to write
}

// final is the opening of an envelope that goes no further.
func final(p prepared) opening { return opening{verdict: &p} }

// finalOr is final for a verdict that could fail to be made.
func finalOr(p prepared, err error) (opening, error) {
	if err != nil {
		return opening{}, err
	}
	return final(p), nil
}

// prepareReceive turns one staged row into a plan.
func (c *Client) prepareReceive(ctx context.Context, bs *batchState, row StagedEnvelope) (prepared, error) {
	now := c.cfg.Now()
	env, sender, verdict := c.openEnvelope(row)
	if verdict != nil {
		return dropRow(row, now, sender, wire.LogicalID{}, verdict), nil
	}
	if blocked, err := c.blockedIn(ctx, bs, sender); err != nil {
		return prepared{}, err
	} else if blocked {
		// Dropped unopened: no session step, no recovery request.
		return dropRow(row, now, sender, wire.LogicalID{}, fmt.Errorf("%s: %w", sender, ErrBlocked)), nil
	}
	ps, err := c.working(ctx, bs.work, sender)
	if err != nil {
		return prepared{}, err
	}
	if err := c.fail("receive", "before-crypto"); err != nil {
		return prepared{}, err
	}
	in := &incoming{row: row, env: env, sender: sender, ps: ps, now: now}
	var op opening
	switch env.Type {
	case wire.EnvelopeRecovery:
		return c.prepareRecovery(bs, in), nil
	case wire.EnvelopePreKey:
		op, err = c.preparePreKey(ctx, bs, in)
	case wire.EnvelopeRatchet:
		op, err = c.prepareRatchet(in)
	case wire.EnvelopeChain:
		op, err = c.prepareChain(ctx, bs, in)
	default:
		return in.drop(wire.LogicalID{}, wire.ErrMalformed), nil
	}
	if err != nil {
		return prepared{}, err
	}
	if op.verdict != nil {
		return *op.verdict, nil
	}
	if err := c.fail("receive", "after-crypto"); err != nil {
		return prepared{}, err
	}
	return c.prepareFrame(ctx, bs, in, op)
}

// openEnvelope decodes a staged row's envelope and checks that it is meant
// for this device. A non-nil verdict drops the row; the sender is known once
// it parsed.
func (c *Client) openEnvelope(row StagedEnvelope) (wire.Envelope, Address, error) {
	if row.Err != nil {
		return wire.Envelope{}, Address{}, row.Err
	}
	env, err := wire.DecodeEnvelope(row.Envelope)
	if err != nil {
		return wire.Envelope{}, Address{}, fmt.Errorf("envelope: %w", err)
	}
	sender, err := ParseAddress(env.Sender)
	if err != nil {
		return wire.Envelope{}, Address{}, fmt.Errorf("envelope sender: %w", err)
	}
	if env.Recipient != c.self.String() {
		return wire.Envelope{}, sender, fmt.Errorf("envelope for %q: %w", env.Recipient, wire.ErrMalformed)
	}
	return env, sender, nil
}

// dropRow is the verdict that drops a staged row for what its envelope is:
// the row is deleted with the reason recorded, and the result reports the
// error.
func dropRow(row StagedEnvelope, now time.Time, sender Address, id wire.LogicalID, verdict error) prepared {
	return prepared{
		plan:   DropStaged{StagedRow: row.Row, Reason: ErrorName(verdict), At: now},
		result: ReceiveResult{Kind: ResultError, Sender: sender, ID: id, Err: verdict},
	}
}

// hold is the verdict that keeps a row staged, unopened for good and
// unanswered, until what it waits for (a group, a generation) arrives; the
// holds are bounded (holds.go).
func (in *incoming) hold() prepared {
	return prepared{held: &heldRow{row: in.row.Row, sender: in.sender}}
}

// drop is dropRow for an opened envelope.
func (in *incoming) drop(id wire.LogicalID, verdict error) prepared {
	return dropRow(in.row, in.now, in.sender, id, verdict)
}

// askRecovery is the verdict that drops the envelope (as plan says, or
// plainly when plan is nil) and, within the limits, answers it with a
// recovery request: it came from a peer whose session with this device
// cannot work (see recovery.go).
func (c *Client) askRecovery(in *incoming, kind wire.RecoveryKind, ref [32]byte, verdict error, plan *DropStaged) (prepared, error) {
	out, ticket, err := c.requestRecovery(in.ps, in.sender, kind, ref)
	if err != nil {
		return prepared{}, err
	}
	p := in.drop(wire.LogicalID{}, verdict)
	d := p.plan.(DropStaged)
	if plan != nil {
		d = *plan
	}
	if out != nil {
		d.Recovery = out
		p.recovery, p.ticket = out, ticket
	}
	p.plan = d
	return p, nil
}

// prepareRatchet opens a ratchet message on a copy of the current session;
// session.DecideRatchet says what the outcome means.
func (c *Client) prepareRatchet(in *incoming) (opening, error) {
	rm, err := wire.DecodeRatchetMessage(in.env.Payload)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, err)), nil
	}
	key := rm.Header.RatchetKey
	dec := session.RatchetDecisionInput{Key: key, N: rm.Header.MessageNumber}
	var cand *session.Session
	var plaintext []byte
	s := in.ps.session
	if s != nil {
		past := in.ps.past
		dec.Session, dec.Receiving, dec.Skipped = true, s.ReceivingKey(), s.HasSkipped
		dec.Past = func(k [32]byte) (uint32, bool) { return past.Lookup(s.ID, k) }
		cand = s.Clone()
		plaintext, dec.Err = cand.Decrypt(c.cfg.Random, in.env.Type, in.env.ID, rm)
	}
	switch session.DecideRatchet(dec) {
	case session.DecideNoSession:
		return finalOr(c.askRecovery(in, wire.RecoveryChain, key, fmt.Errorf("%s: %w", in.sender, ErrNoSession), nil))
	case session.DecideOpened:
		op := opening{session: cand, plaintext: plaintext}
		if left, ok := session.LeftChain(s, cand, rm.Header.PreviousChainLength); ok {
			op.left = &left
		}
		return op, nil
	case session.DecideDuplicate:
		// A copy of a message opened on a chain the session has left.
		return final(in.drop(wire.LogicalID{}, fmt.Errorf("%w (a past chain's message %d)", ErrDuplicateMessage, rm.Header.MessageNumber))), nil
	case session.DecideDiverged:
		return finalOr(c.askRecovery(in, wire.RecoveryChain, key, dec.Err, nil))
	default:
		return final(in.drop(wire.LogicalID{}, dec.Err)), nil
	}
}

// classify decides what an application frame with this key and digest is:
// new, a repeat of a pending one, of a committed or of a discarded one, or a
// conflict.
func (c *Client) classify(ctx context.Context, bs *batchState, key inboundKey, d [32]byte) (FrameEffect, ResultKind, error) {
	if prev, ok := bs.delivered[key]; ok {
		if prev != d {
			return nil, 0, ErrLogicalMessageConflict
		}
		return RepeatEffect{}, ResultDelivery, nil
	}
	seen, err := c.store.Seen(ctx, key.peer, key.id)
	switch {
	case err != nil:
		return nil, 0, err
	case seen.Digest != d && !seen.Imported && (seen.Pending || seen.Finalized && knownDigest(seen.Outcome, seen.Digest)):
		return nil, 0, ErrLogicalMessageConflict
	case seen.Pending:
		return RepeatEffect{}, ResultDelivery, nil
	case seen.Finalized && seen.Outcome == OutcomeDiscarded:
		return RepeatEffect{}, ResultAlreadyDiscarded, nil
	case seen.Finalized:
		return RepeatEffect{}, ResultAlreadyCommitted, nil
	}
	return DeliverEffect{}, ResultDelivery, nil
}

// knownDigest reports whether a finalized record's digest is the body's: a
// discard keeps it as a commit does (a tombstone that still says which body
// the ID carried), so a different body under a discarded ID is a conflict
// too. Only a discarded record with no digest (all zero) says nothing, and
// then a repeat is taken as the discarded message.
func knownDigest(o Outcome, d [32]byte) bool {
	return o != OutcomeDiscarded || d != [32]byte{}
}

// SeenMessage is what a profile holds of one received logical message: a
// pending delivery, a finalized record, or nothing (both false).
type SeenMessage struct {
	Pending   bool
	Finalized bool
	Outcome   Outcome // when Finalized
	Digest    [32]byte
	// Imported: no pending or finalized record, but the message is in the
	// history of its sender's conversation, as an imported history (a
	// restore, a link) leaves it. It counts as committed; its digest is
	// not known, so a repeat is taken as that message (as a discard with
	// no digest is) and acknowledged again, never delivered a second time.
	Imported bool
	// TakeBack, for a discard, says a sibling's commit that carries the
	// body takes it back here: the person discarded it (not the engine),
	// its kind is known (finalized since migration 0025) and, for a group
	// message, its group is held. The store applies the same rule.
	TakeBack bool
	// TakeBackAction is TakeBack for a sibling's commit that carries an
	// action (frame kind 18): for a one-to-one action, also one the engine
	// discarded because the person discarded its target
	// (DiscardTargetDiscarded), which rested on that discard; for a group
	// action (Group) too, in a group held here.
	TakeBackAction bool
	// Reason and At, when Finalized: why it was discarded, and when it
	// was finalized here (a discard's time, where a take-back of a record
	// that keeps no arrival writes its history entry).
	Reason DiscardReason
	At     time.Time
	// InGroup, when Finalized: the record names a group (a group
	// message's, or one of unknown kind finalized before migration 0025).
	InGroup bool
	// Group, when Finalized and InGroup, is the group the record names
	// (nil for a record of unknown kind, finalized before migration 0025).
	Group *wire.GroupID
	// Content and Arrived, when Finalized: the message's content type and
	// when it arrived here, as its record keeps them (since migration
	// 0028; zero for a record that keeps none).
	Content wire.ContentType
	Arrived time.Time
}

// arrivedAt is when a finalized message arrived here, as best known: its
// recorded arrival, or, for a record that keeps none, its finalization
// (the latest it can have arrived). A take-back writes its entry there.
func (s SeenMessage) arrivedAt() time.Time {
	if !s.Arrived.IsZero() {
		return s.Arrived
	}
	return s.At
}
