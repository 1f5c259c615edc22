package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Decisions are the person's (issue 33). A device that commits or
// discards a message from another person, one-to-one or in a group, tells
// this person's other active
// devices, on lanes of their own (frame kind 15, 16 or 18, in the Finalize
// plan's transaction, or the receive's for a commit on arrival); a
// sibling linked since is told of the decisions made since its linking
// when this device stores the list naming it (catchUpLanes). A device that hears a decision keeps it (DecisionEffect)
// and, once the message is pending here (at once, or when it comes),
// finalizes its own copy the same way without asking, in the ordinary
// Finalize plan, which acknowledges the sender and forgets the kept
// decision in one transaction. Two decisions on one message merge by
// MergeDecision: commit beats discard.

// MaxKeptDecisions bounds the decisions kept for messages not here yet:
// a message that never comes (its sender abandoned it, sent it to this
// device only, or it was pruned here) leaves its decision behind, and a
// person's devices decide at the pace a person reads, so a few hundred
// cover any real backlog. At the bound the oldest kept decision is
// forgotten for the new one: that older message's copy, if it ever comes,
// waits for the person, as before decisions were shared.
const MaxKeptDecisions = 1024

// MaxDecisionAge is how long a decision is surely kept for a message that
// has not come: past it the sender has long stopped retrying (or the
// message went to another device only), so the decision is forgotten when
// the next one is kept (until then it still applies).
const MaxDecisionAge = 30 * 24 * time.Hour

// MaxCatchUpDecisions bounds the decisions a device tells a sibling
// linked since when it stores the list naming it (catchUpLanes), newest
// first. They are the decisions made between the link and this device's
// learning of it (normally one connection; the relay's stale-list answer
// and a sibling's refused frames bring it sooner), when a person decides
// at reading pace: 256 cover that many times over, and the sibling keeps
// what it cannot apply yet within MaxKeptDecisions (1024), which the
// catch-ups of a few devices must not fill alone.
const MaxCatchUpDecisions = 256

// MadeDecision is a received message finalized on this device, as a
// sibling's catch-up reads it (Store.Decisions).
type MadeDecision struct {
	Sender  Address
	ID      wire.LogicalID
	Outcome Outcome
	At      time.Time
	// Told is when the last of the lanes that told this person's other
	// devices of the decision was acknowledged (or ended by a removal);
	// the far future while one is pending or was abandoned; zero when it
	// has none recorded (none told, or told before migration 0029). A
	// decision made before a sibling's link whose lanes were still open at
	// the link may not have reached the device that linked it when that
	// device cut the link's archive: the catch-up tells it too.
	Told time.Time
	// Group names a group message's group (nil for a one-to-one message,
	// and for a group message finalized before its record named it).
	Group *wire.GroupID
	// Body is a commit's history body (the conversation's entry, or the
	// group's); InHistory is false for a commit with no entry found (a
	// group message finalized before its record named its group).
	Body      []byte
	InHistory bool
	// Content and ActionBody, for a committed action (one to one, or a
	// group's) whose record keeps its action body (since migration 0028):
	// the catch-up and an answer carry the action (frame kind 18), so
	// that a discard there is taken back and applied.
	Content    wire.ContentType
	ActionBody []byte
	// DecidedOn names the device whose decision this one applied (the
	// commit was that device's): nil for a decision made here.
	DecidedOn *Address
	// Contradicted: a sibling's discard of this commit, made here, was
	// heard here (DecisionEffect.Contradicts, migration 0032). The
	// sibling may have told a device this device's list did not name
	// yet; the catch-up of a sibling linked since tells such a commit
	// whenever it was made and whatever its lanes' times say.
	Contradicted bool
}

// catchUpLanes returns the decision lanes that tell each device next
// names active and held did not (a sibling linked since) of the messages,
// one-to-one and of groups, this device decided at or after that
// sibling's linking time (and floor): a decision made while this device's
// list did not name the sibling told it nothing, so a discard there would
// stand against a commit here, or the sibling would ask about a message
// decided already. A decision made before the linking time is told too
// when its lanes to this person's other devices were not all
// acknowledged by then (MadeDecision.Told): the device that linked the
// sibling may have cut the link's archive before it heard the decision,
// so the archive carried the message pending, or as that device had
// decided it; not when floor is set (this device cut the archive itself,
// which holds every decision made here before the cut). A linked device holds every group its person was in at
// its link (the link's archive carries them whatever the history chosen,
// linkhistory.go; without the archive, the linking key holder's group states,
// groupstate.go), so a group commit goes with its body as a one-to-one
// one does; a sibling that does not hold the message keeps the decision
// within its bounds until it is forgotten. A commit made here that a
// sibling's discard heard here contradicted (MadeDecision.Contradicted) is
// told whenever it was made (within MaxDecisionAge): that sibling may have
// told the new one its discard before this device held the list naming
// it, and the times above come from two devices' clocks (the linking
// time is the linker's, the lanes' ends this device's), so a clock
// running behind here would leave it out, and the new device would hold
// the discard against this commit for good. At most MaxCatchUpDecisions,
// newest first. Left out: every record of a message this person's own
// devices sent (sent copies, decision frames and their group messages:
// no device tells one, Store.Decisions), commits whose entry is not found (a group message finalized
// before its record named its group), and decisions this device applied
// from another (that device tells its own).
func (c *Client) catchUpLanes(ctx context.Context, held, next wire.DeviceList, floor time.Time) ([]PersonLane, error) {
	type sibling struct {
		addr  Address
		since time.Time
		// told: a decision made before since is told too when its lanes
		// were still open at since (MadeDecision.Told); not when since
		// is this device's own cut (floor): its archive carried them.
		told bool
	}
	known := make(map[uint32]bool, len(held.Entries))
	for _, e := range held.Entries {
		known[e.Number] = true
	}
	var sibs []sibling
	var oldest time.Time
	for _, e := range next.Entries {
		if known[e.Number] || e.State != wire.DeviceActive || e.Number == c.self.Device || next.User != c.self.User {
			continue
		}
		since, told := time.Unix(e.Linked, 0), floor.IsZero()
		if since.Before(floor) {
			since = floor
		}
		sibs = append(sibs, sibling{Address{User: next.User, Device: e.Number}, since, told})
		if len(sibs) == 1 || since.Before(oldest) {
			oldest = since
		}
	}
	if len(sibs) == 0 {
		return nil, nil
	}
	made, err := c.store.Decisions(ctx, oldest, MaxCatchUpDecisions)
	if err != nil {
		return nil, fmt.Errorf("catch up a sibling's decisions: %w", err)
	}
	var lanes []PersonLane
	for _, s := range sibs {
		for _, d := range made {
			early := d.At.Before(s.since) && !d.Contradicted && (!s.told || d.Told.Before(s.since))
			if early || d.DecidedOn != nil || d.Outcome == OutcomeCommitted && !d.InHistory {
				continue
			}
			l, err := c.madeLanes(ctx, s.addr, d)
			if err != nil {
				return nil, err
			}
			lanes = append(lanes, l...)
		}
	}
	return lanes, nil
}

// madeLanes returns the lane that tells sibling to of decision d made
// here, as the catch-up and an answer send it: a commit with the body it
// came with, a committed action (one to one or a group's) kept with its
// record (migration 0028) with its action, as a live decision's.
func (c *Client) madeLanes(ctx context.Context, to Address, d MadeDecision) ([]PersonLane, error) {
	content, body := wire.ContentType(0), d.Body
	if d.ActionBody != nil && wire.IsAction(d.Content) {
		content, body = d.Content, d.ActionBody
	}
	return c.tellLanes(ctx, []Address{to}, d.Sender, d.ID, d.Outcome, content, body)
}

// answerKey names a sibling's discard of one message (batchState.answered).
type answerKey struct {
	sibling Address
	msg     inboundKey
}

// answerLanes returns the lanes that answer sibling's discard of message
// id from sender with this device's commit of it (DecisionEffect.Answer):
// only a commit this device made itself (one applied from another device
// is that device's to answer, which hears the discard too) whose entry it
// holds, to the discarding sibling and to every other active device of
// this person's list held here, each only if this device never told it of
// that commit (a decision lane to it naming the message, live, caught up
// or answered since migration 0029): one told hears the commit on that
// lane, and takes its discard back then; so a device is answered once per
// message however many discards it sends. The discarding sibling may have
// told a device this device told nothing: one it linked itself after the
// commit, whose link archive carries no record of a committed action (a
// reaction, an edit or a delete is no entry of its own there) and whose
// catch-up from here leaves out what was decided before the cut; that
// device would hold the sibling's discard against this commit for good
// (people-in-groups adversary, seed 1796668991363755344). None otherwise.
// mine reports whether the commit is one this device made itself (with
// its entry): the discard contradicts it, and its record is marked so
// (DecisionEffect.Contradicts) for the catch-up of a device this
// device's list does not name yet.
func (c *Client) answerLanes(ctx context.Context, bs *batchState, sibling, sender Address, id wire.LogicalID) (lanes []PersonLane, mine bool, err error) {
	if sibling.User != c.self.User || sibling == c.self || sender.User == c.self.User {
		return nil, false, nil
	}
	d, ok, err := c.store.MadeDecision(ctx, sender, id)
	if err != nil {
		return nil, false, fmt.Errorf("answer %s's discard of %x: %w", sibling, id[:], err)
	}
	if !ok || d.Outcome != OutcomeCommitted || d.DecidedOn != nil || !d.InHistory {
		return nil, false, nil
	}
	to := []Address{sibling}
	own, err := c.ownOtherDevices(ctx)
	if err != nil {
		return nil, true, err
	}
	for _, o := range own {
		if o != sibling {
			to = append(to, o)
		}
	}
	for _, o := range to {
		k := answerKey{o, inboundKey{sender, id}}
		if bs.answered[k] {
			continue
		}
		told, err := c.store.ToldOf(ctx, o, sender, id)
		if err != nil {
			return nil, true, err
		}
		if told {
			continue
		}
		l, err := c.madeLanes(ctx, o, d)
		if err != nil {
			return nil, true, err
		}
		bs.answered[k] = true
		lanes = append(lanes, l...)
	}
	return lanes, true, nil
}

// MergeDecision is the rule for two decisions on one message, from two
// devices of one person deciding at once: commit beats discard (a message
// a person committed anywhere is one they wanted; a discard elsewhere of
// the same message is overridden). Outcomes other than these two are
// taken as discards.
func MergeDecision(a, b Outcome) Outcome {
	if a == OutcomeCommitted || b == OutcomeCommitted {
		return OutcomeCommitted
	}
	return OutcomeDiscarded
}

// DecisionVerdict is what a decision heard from another device does here.
type DecisionVerdict uint8

// Decision verdicts (DecideHeardDecision).
const (
	// DecisionKeep: the message is not here yet, or pending: the decision
	// is kept and applied when the message is pending (at once if it is).
	DecisionKeep DecisionVerdict = iota + 1
	// DecisionSettled: the message was finalized here as the decision
	// says, or committed here against a discard (commit beats discard):
	// nothing changes.
	DecisionSettled
	// DecisionOverruled: discarded here, committed there. Commit beats
	// discard, but this device no longer holds the body: nothing changes
	// here (the history of the device that committed holds it).
	DecisionOverruled
)

// DecideHeardDecision says what a decision (outcome) from another device
// of this person does to the message as this device holds it (seen):
//
//  1. neither pending nor finalized here, or pending: keep it;
//  2. finalized here with the same outcome: settled;
//  3. committed here, discarded there: settled (commit beats discard);
//  4. discarded here, committed there: overruled, unchanged here.
func DecideHeardDecision(seen SeenMessage, outcome Outcome) DecisionVerdict {
	switch {
	case !seen.Finalized:
		return DecisionKeep
	case seen.Outcome == outcome, seen.Outcome == OutcomeCommitted:
		return DecisionSettled
	}
	return DecisionOverruled
}

// DecisionEffect records a decision another device of this person (the
// Receive's peer) made about message Message from Sender: kept
// (merged by MergeDecision with one kept before) until the message is
// pending here (within MaxKeptDecisions and MaxDecisionAge). The decision frame's own
// ID is finalized (committed, no history), so a repeat is acknowledged
// again and kept no second time.
type DecisionEffect struct {
	ID      wire.LogicalID
	Digest  [32]byte
	At      time.Time
	Sender  Address
	Message wire.LogicalID
	Outcome Outcome
	Keep    bool // false: only the frame's record (settled, overruled)
	// TakeBack, when not nil, is the committed body of a message that
	// was discarded here (by the person: rejected or other) and committed
	// on the deciding device (overruled, and the decision carried the
	// body, whose digest is the one recorded here): the finalized record
	// turns committed and the history gains the message, decided on that
	// device, in the decision's transaction.
	TakeBack []byte
	// Action, with TakeBack, is the committed action a kind-18 decision
	// carried (a reply, a reaction, an edit or a delete received one to
	// one or in a group, Action.Group, and discarded here): TakeBack is
	// then its history body
	// (actionHistoryBody) and ActionBody the action body whose digest is
	// the one recorded here; the store applies Action (its ID and Peer
	// are Message and Sender) with the take-back, in one transaction.
	Action     *ActionApply
	ActionBody []byte
	// KeepAction, with Keep, is the committed action (one to one, or a
	// group's: KeptAction.Group) a kind-18 decision carried for an action
	// discarded here because its target was (target_discarded), heard
	// while that target is not taken back: the store keeps it with the
	// decision (migrations 0028 and 0030), and the take-back of the target
	// takes it back too (WithTarget).
	KeepAction *KeptAction
	// WithTarget, with TakeBack, are the kept action decisions whose
	// target this take-back writes and that now apply by the action
	// rules: each is taken back and applied, and its kept decision
	// forgotten, in the same transaction.
	WithTarget []KeptTakeBack
	// Answer, for a sibling's discard of a message this device committed
	// itself, are the lanes that tell that sibling of the commit (its
	// decision frame, with the body, as a catch-up's): the sibling may
	// have been linked after this device told its siblings, and hold the
	// message from elsewhere (the archive of a device that had not heard
	// the commit yet, or a lane its sender added), so that nothing else
	// would overrule its discard. Stored in the decision's transaction.
	Answer []PersonLane
	// Contradicts, for a sibling's discard of a message this device
	// committed itself (answerLanes), marks the commit's finalized record
	// (MadeDecision.Contradicted, migration 0032) in the decision's
	// transaction, whether or not it is answered: the sibling may have
	// told a device linked since that this device's list does not name
	// yet, which the catch-up then tells of the commit (catchUpLanes).
	Contradicts bool
}

func (DecisionEffect) effect() {}

// KeptAction is a sibling's committed action kept with its decision
// until its target is taken back here (DecisionEffect.KeepAction).
type KeptAction struct {
	Sender  Address        // the action's sender
	ID      wire.LogicalID // the action's ID
	On      Address        // the device that committed it
	Content wire.ContentType
	Target  wire.LogicalID
	Body    []byte // the action body, as the content frame carried it
	// Group names a group's action (nil one to one): its target is the
	// group message of that ID, whoever wrote it (a reaction may be to
	// another member's message).
	Group *wire.GroupID
}

// KeptTakeBack is a kept action decision a take-back of its target applies
// (DecisionEffect.WithTarget): Effect takes the action back as a kind-18
// decision does (Sender, Message, Outcome, TakeBack, Action, ActionBody),
// decided on On.
type KeptTakeBack struct {
	On     Address
	Effect DecisionEffect
}

// KeptDecision is a decision kept for a message.
type KeptDecision struct {
	Sender  Address
	ID      wire.LogicalID
	Outcome Outcome
	On      Address
}

// tellLanes returns the decision lanes of a finalization of message id
// from sender (one-to-one or a group's: the pair names the message, as it
// keys the pending and finalized records): one per other active device of
// this person, none for a message of this person's own devices. The
// caller tells nothing of a message finalized because another device
// decided. body, when not nil, is the committed text the
// decision carries (kind 16), so that a device that discarded the message
// meanwhile takes it back; a body over wire.MaxDecisionBodySize goes
// without it. content, when an action's (wire.IsAction), makes body the
// committed action's body (one to one or a group's), carried by a
// kind-18 decision up to
// wire.MaxDecisionActionSize.
func (c *Client) tellLanes(ctx context.Context, own []Address, sender Address, id wire.LogicalID, outcome Outcome, content wire.ContentType, body []byte) ([]PersonLane, error) {
	if len(own) == 0 || sender.User == c.self.User {
		return nil, nil
	}
	if !wire.IsAction(content) {
		content = 0
	}
	o := wire.DecisionCommitted
	if outcome == OutcomeDiscarded {
		o, body = wire.DecisionDiscarded, nil
	}
	if content == 0 && len(body) > wire.MaxDecisionBodySize || content != 0 && len(body) > wire.MaxDecisionActionSize {
		body = nil
	}
	if body == nil {
		content = 0
	}
	lanes := make([]PersonLane, 0, len(own))
	for _, d := range own {
		var fid wire.LogicalID
		if _, err := c.cfg.Random.Read(fid[:]); err != nil {
			return nil, fmt.Errorf("decision: logical id: %w", err)
		}
		f, err := wire.EncodeDecision(wire.Decision{ID: fid, Sender: sender.String(), Message: id, Outcome: o, Content: content, Body: body})
		if err != nil {
			return nil, err
		}
		lanes = append(lanes, PersonLane{Recipient: d, Frame: f, Own: true})
	}
	return lanes, nil
}

// arrivalTell returns the decision lanes of a message (one-to-one or a
// group's) from sender committed as it arrives (CommitEffect under CommitOnArrival), as
// tellLanes does for a Commit; this person's other devices are read once
// per batch.
func (c *Client) arrivalTell(ctx context.Context, bs *batchState, sender Address, id wire.LogicalID, content wire.ContentType, body []byte) ([]PersonLane, error) {
	if !bs.ownRead {
		own, err := c.ownOtherDevices(ctx)
		if err != nil {
			return nil, err
		}
		bs.own, bs.ownRead = own, true
	}
	if body != nil {
		body = append([]byte{}, body...)
	}
	return c.tellLanes(ctx, bs.own, sender, id, OutcomeCommitted, content, body)
}

// prepareDecision receives a decision from another device of this person:
// its frame is finalized and acknowledged, and the decision kept when
// DecideHeardDecision says so. Only a device of this account may send one.
func (c *Client) prepareDecision(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	d, err := wire.DecodeDecision(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	if err := c.checkOwnDevice(ctx, in, op); errors.Is(err, ErrNotOwnDevice) {
		return in.drop(d.ID, fmt.Errorf("decision: %w", err)), nil
	} else if err != nil {
		return prepared{}, err
	}
	sender, err := ParseAddress(d.Sender)
	if err != nil {
		return in.drop(d.ID, err), nil
	}
	dg := digest(op.plaintext)
	key := inboundKey{in.sender, d.ID}
	effect, kind, err := c.classify(ctx, bs, key, dg)
	if errors.Is(err, ErrLogicalMessageConflict) {
		return in.drop(d.ID, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	step := in.step(op, d.ID, nil, wire.ContentText)
	step.effect, step.res.Kind = effect, ResultDecisionHeard
	outcome := OutcomeCommitted
	if d.Outcome == wire.DecisionDiscarded {
		outcome = OutcomeDiscarded
	}
	step.res.Decided = &KeptDecision{Sender: sender, ID: d.Message, Outcome: outcome, On: in.sender}
	switch _, repeat := effect.(RepeatEffect); {
	case kind == ResultDelivery && repeat:
	case kind == ResultDelivery && sender.User == c.self.User:
		// A message of this person's own account (a sibling's sent
		// copy, its group message): nobody's decision, which no device
		// tells (tellLanes). Acknowledged, so that the lane ends, and
		// recorded, so that a repeat is acknowledged again, but never
		// kept: kept, it would decide a copy the hold's pass commits.
		if step.ack, err = c.ackOnNext(&step.next, in.sender, d.ID); err != nil {
			return prepared{}, err
		}
		step.effect = DecisionEffect{ID: d.ID, Digest: dg, At: in.now, Sender: sender, Message: d.Message, Outcome: outcome}
		step.res.Err = fmt.Errorf("decision %x on %x from %s: %w", d.ID[:], d.Message[:], sender, ErrDecisionOwnMessage)
		bs.delivered[key] = dg
	case kind == ResultDelivery:
		seen, err := c.store.Seen(ctx, sender, d.Message)
		if err != nil {
			return prepared{}, err
		}
		if !seen.Pending && !seen.Finalized {
			// Held here from another device of the sender's person (an
			// adopted resend, adoption.go): the decision is that one's.
			if sender, seen, err = c.heldFromPerson(ctx, bs, sender, d.Message); err != nil {
				return prepared{}, err
			}
			step.res.Decided.Sender = sender
		}
		if step.ack, err = c.ackOnNext(&step.next, in.sender, d.ID); err != nil {
			return prepared{}, err
		}
		verdict := DecideHeardDecision(seen, outcome)
		var answer []PersonLane
		contradicts := false
		if verdict == DecisionSettled && seen.Outcome == OutcomeCommitted && outcome == OutcomeDiscarded {
			// A sibling discarded what this device committed: it may
			// have told a device linked since that this device's list
			// does not name, which only this commit can overrule. The
			// round brings the own list up to date (learnOwnList), and
			// a list naming such a device catches it up. The sibling
			// itself may be one this device never told: answered.
			c.ownListDue.Store(true)
			if answer, contradicts, err = c.answerLanes(ctx, bs, in.sender, sender, d.Message); err != nil {
				return prepared{}, err
			}
		}
		e := DecisionEffect{ID: d.ID, Digest: dg, At: in.now, Sender: sender, Message: d.Message, Outcome: outcome,
			Keep: verdict == DecisionKeep, Answer: answer, Contradicts: contradicts}
		switch {
		case d.Content != 0:
			// A committed action (kind 18).
			if err := c.takeBackAction(ctx, bs, &e, seen, verdict, d, in.sender, in.now); errors.Is(err, ErrDecisionMismatch) {
				// Still the sibling's commit of that ID (the sender may
				// have sent each device another body under it): heard
				// as a commit without its action (kind 15), so that
				// the sibling's lane ends; the result says why nothing
				// was taken back. It decides no copy pending here
				// either: that copy is another body, which the
				// person has not seen decided anywhere, so it stays
				// theirs to decide.
				e.Keep = false
				step.res.Err = err
			} else if err != nil {
				return prepared{}, err
			}
			step.res.TakenBack = e.TakeBack != nil
			step.res.Action = appliedOf(e.Action)
		case verdict == DecisionOverruled && seen.TakeBack && d.Body != nil && digest(d.Body) == seen.Digest:
			// Commit beats discard, and the body came with it (the one
			// this device discarded: its digest is recorded): the
			// message is this person's again, here too.
			e.TakeBack = d.Body
			step.res.TakenBack = true
			if !seen.InGroup {
				// A one-to-one message: a one-to-one action after it
				// in the batch may target it (a group's may not).
				bs.takenBack[inboundKey{sender, d.Message}] = seen.arrivedAt()
				if err := c.keptWithTarget(ctx, bs, &e, sender, d.Message, in.now); err != nil {
					return prepared{}, err
				}
			} else if seen.Group != nil {
				// A group's text: a group action after it in the batch
				// may target it, and so may one kept for it.
				bs.groupTakenBack[actionTargetKey{group: *seen.Group, peer: sender, id: d.Message}] = seen.arrivedAt()
				if err := c.keptGroupWithTarget(ctx, bs, &e, *seen.Group, d.Message, in.now); err != nil {
					return prepared{}, err
				}
			}
		}
		step.effect = e
		bs.delivered[key] = dg
		c.decisionsDue.Store(true)
	default:
		if step.ack, err = c.ackOnNext(&step.next, in.sender, d.ID); err != nil {
			return prepared{}, err
		}
	}
	return in.receive(bs, op, step)
}

// ErrDecisionOwnMessage means a sibling's decision names a message of this
// person's own account (a sibling's sent copy, an own device's group
// message): no device tells one (tellLanes), so the decision is
// acknowledged and recorded but never kept, and its ResultDecisionHeard
// carries this error (ReceiveResult.Err).
var ErrDecisionOwnMessage = errors.New("the decision names a message of this person's own account")

// ErrKeptDecisionRefused means the finalization a kept decision asked for
// was refused by its plan (the store found the pending message changed, or
// the plan invalid): the other kept decisions of the pass apply, this one
// stays kept, and its ResultError names the cause.
var ErrKeptDecisionRefused = errors.New("a kept decision's finalization was refused")

// ErrDecisionMismatch means a sibling's decision carried an action that is
// not the message it names as this device holds it (another digest: not
// what the sender sent under that ID, or a sender that sent each device
// another body under it): the decision is heard as a commit without its
// action (kind 15), nothing is taken back, and its ResultDecisionHeard
// carries this error (ReceiveResult.Err).
var ErrDecisionMismatch = errors.New("the decision's action is not the message it names")

// ErrDecisionKindMismatch is an ErrDecisionMismatch (errors.Is matches
// both) whose action's content type is not the one this device recorded
// for the message it names (finalized since migration 0028): a message
// whose bytes also decode as that action is not taken back as it.
var ErrDecisionKindMismatch = fmt.Errorf("%w: its content type is not the recorded one", ErrDecisionMismatch)

// takeBackAction decides a commit's decision that carries the committed
// action d (kind 18) against the message as this device holds it (seen,
// judged verdict; a group's action is takeBackGroupAction's): a discard
// the person made here
// (SeenMessage.TakeBackAction: also an action the engine discarded because
// the person discarded its target, target_discarded, a discard the commit
// overrules) is taken back, and the action applied by the usual rules, in
// the decision's transaction (e.TakeBack, e.Action), when the action's
// digest is the one recorded here and DecideAction applies it. The rules
// judge the times this device recorded, never the decision's arrival: the
// action arrived when its finalized record says (since migration 0028; a
// record from before counts its discard's time, the latest it can have
// arrived: SeenMessage.arrivedAt), and a target taken back earlier in the
// batch has its own arrival, where its take-back writes it. A decision
// whose content type is not the one recorded for the message is not
// taken (ErrDecisionKindMismatch). An action
// the rules discard here (not its author, its target deleted or
// discarded, its window passed) stays discarded. One whose target is not
// committed here stays discarded too: the decision cannot wait for it
// (a discard is not held; see docs/protocol.md). A pending or unseen
// action keeps the decision (e.Keep), and the ordinary Finalize applies it
// when its target allows. An action whose digest is not the one recorded
// here, pending or finalized, is not taken (ErrDecisionMismatch: the
// decision counts as a commit without it); an entry a link or a restore
// imported records none, and is not compared.
func (c *Client) takeBackAction(ctx context.Context, bs *batchState, e *DecisionEffect, seen SeenMessage, verdict DecisionVerdict, d wire.Decision, on Address, now time.Time) error {
	if (seen.Pending || seen.Finalized) && !seen.Imported && digest(d.Body) != seen.Digest {
		return fmt.Errorf("decision %x on %x from %s: %w", d.ID[:], d.Message[:], e.Sender, ErrDecisionMismatch)
	}
	if seen.Finalized && seen.Content != 0 && seen.Content != d.Content {
		// The same bytes, another kind: a plain message (or another
		// kind of action) whose bytes also decode as this action.
		return fmt.Errorf("decision %x on %x from %s: content type %d, recorded %d: %w", d.ID[:], d.Message[:], e.Sender, d.Content, seen.Content, ErrDecisionKindMismatch)
	}
	if verdict != DecisionOverruled || !seen.TakeBackAction {
		return nil
	}
	if seen.InGroup {
		return c.takeBackGroupAction(ctx, bs, e, seen, d, on, now)
	}
	m := &InboundMessage{Sender: e.Sender, ID: e.Message, ReceivedAt: seen.arrivedAt(), Body: d.Body, Content: d.Content}
	act, v, err := c.receivedAction(ctx, m, now)
	if err != nil {
		return err
	}
	a, _ := wire.DecodeAction(d.Content, d.Body) // receivedAction decoded it
	if (v.Hold || v.Reason == DiscardTargetDiscarded) && a.Content != wire.ContentReply {
		if at, ok := bs.takenBack[inboundKey{e.Sender, a.Target}]; ok {
			// Its target, from the same sender, is taken back earlier in
			// this batch: committed by this person, received, written at
			// the time of its discard here.
			if act, err = c.takenBackTarget(ctx, e, a, at, seen.arrivedAt(), now); err != nil {
				return err
			}
			v = ActionVerdict{}
		}
	}
	if (v.Reason == DiscardTargetDiscarded || v.Hold) && a.Content != wire.ContentReply && !e.Keep {
		// Its target is discarded here and not taken back (yet): the
		// decision is kept with its action, and the target's take-back
		// takes it back by the rules then (keptWithTarget). Only when a
		// decision can take that target back: a text (kind 16) or a
		// reply (kind 18) of the action's sender device; a file, or a
		// target of another device, never is, and the row would linger.
		// Its target pending or absent here (v.Hold): kept too, and the
		// target's commit from that sender, whichever way it comes (the
		// person's Finalize, a kept decision applied after a batch, a
		// commit on arrival: keptForPeerCommit; a take-back:
		// keptWithTarget), applies it by the rules then. A target that
		// never comes from that sender (say, an own message a sibling
		// sent, not here yet) leaves the row to age out
		// (MaxDecisionAge), as any kept decision does.
		if !v.Hold {
			ts, err := c.store.Seen(ctx, e.Sender, a.Target)
			if err != nil {
				return err
			}
			if !ts.Finalized || !ts.TakeBack && !(ts.TakeBackAction && ts.Content == wire.ContentReply) {
				return nil
			}
		} else if t, err := c.store.Inbound(ctx, e.Sender, a.Target); err == nil && t.Content == wire.ContentFile {
			// A pending file: its commit, by its fetch, applies no kept
			// action (only a text's or a reply's does), and the row
			// would linger.
			return nil
		} else if err != nil && !errors.Is(err, ErrNotPending) {
			return err
		}
		k := KeptAction{Sender: e.Sender, ID: e.Message, On: on, Content: d.Content, Target: a.Target, Body: d.Body}
		e.Keep, e.KeepAction = true, &k
		key := inboundKey{e.Sender, a.Target}
		bs.keptActions[key] = append(bs.keptActions[key], k)
		return nil
	}
	if act == nil || v.Hold || v.Reason != DiscardNone {
		return nil
	}
	if act.Content != wire.ContentReply {
		if bs.deleted[act.targetKey()] {
			return nil // deleted earlier in this batch: not over the tombstone
		}
		if act.Content == wire.ContentDelete {
			bs.deleted[act.targetKey()] = true
		}
	}
	e.TakeBack, e.Action, e.ActionBody = actionHistoryBody(a), act, d.Body
	if act.Content == wire.ContentReply {
		// A reply is a message: an action after it in the batch may
		// target it (the others are no target, target_missing).
		bs.takenBack[inboundKey{e.Sender, e.Message}] = seen.arrivedAt()
		return c.keptWithTarget(ctx, bs, e, e.Sender, e.Message, now)
	}
	return nil
}

// takeBackGroupAction is takeBackAction for a group's action discarded
// here (seen.TakeBackAction, in the group seen.Group names: by the person,
// or by the engine because its target was discarded, target_discarded):
// judged by the group's action rules (receivedGroupAction) at its
// arrival here, it is taken back and applied in the decision's
// transaction only when they apply it now, its target committed in that
// group's history here, or taken back earlier in this batch
// (bs.groupTakenBack: written at its arrival, where its take-back puts
// it). A target absent, pending or discarded here and not taken back
// before it (held or target_discarded), a window passed, another author's
// message: the action stays discarded, as does one whose target a delete
// earlier in the batch removes. An action discarded because its target
// was (target_discarded), whose target a decision can take back (a group
// text or reply discarded by the person), keeps the decision with its
// action (e.KeepAction, naming the group): the target's take-back, when
// its decision comes, takes it back by these rules then
// (keptGroupWithTarget), so a decision heard before its target's is not
// lost. A taken-back reply takes back the actions kept for it too.
func (c *Client) takeBackGroupAction(ctx context.Context, bs *batchState, e *DecisionEffect, seen SeenMessage, d wire.Decision, on Address, now time.Time) error {
	if seen.Group == nil {
		return nil // a record of unknown kind: the store would refuse it too
	}
	g := *seen.Group
	m := &InboundMessage{Sender: e.Sender, ID: e.Message, ReceivedAt: seen.arrivedAt(), Body: d.Body, Content: d.Content, Group: &g}
	act, v, err := c.receivedAction(ctx, m, now)
	if err != nil {
		return err
	}
	a, _ := wire.DecodeAction(d.Content, d.Body) // receivedAction decoded it
	if (v.Hold || v.Reason == DiscardTargetDiscarded) && a.Content != wire.ContentReply {
		if author, at, ok := bs.groupTakenBackTarget(g, e.Sender, a); ok {
			// Its target is taken back earlier in this batch: committed
			// in the group's history, received at its arrival here.
			t := ActionTarget{Found: true, Direction: DirectionOut, At: at}
			if author == e.Sender {
				t.Direction = DirectionIn
			}
			if v = DecideAction(t, a.Content, true, m.ReceivedAt, now); v.Hold || v.Reason != DiscardNone {
				return nil
			}
			act = c.groupApplyOf(g, e.Sender, e.Message, a, author, now)
		}
	}
	if (v.Reason == DiscardTargetDiscarded || v.Hold) && a.Content != wire.ContentReply && !e.Keep {
		// Its target is discarded here and not taken back (yet): the
		// decision is kept with its action, and the target's take-back
		// takes it back by the group's rules then (keptGroupWithTarget).
		// Only when a decision can take that target back (a group text
		// or reply the person discarded): else the row would linger.
		// Its target pending or absent here (v.Hold): kept too, and the
		// target's commit, whichever way it comes (the person's
		// Finalize, a kept decision applied after a batch: keptForCommit;
		// a take-back: keptGroupWithTarget), applies it by the group's
		// rules then. A target that never comes leaves the row to age
		// out (MaxDecisionAge), as any kept decision does.
		if !v.Hold {
			if ok, err := c.groupTargetTakeBackable(ctx, g, e.Sender, a); err != nil || !ok {
				return err
			}
		}
		k := KeptAction{Sender: e.Sender, ID: e.Message, On: on, Content: d.Content, Target: a.Target, Body: d.Body, Group: &g}
		e.Keep, e.KeepAction = true, &k
		key := actionTargetKey{group: g, id: a.Target}
		bs.keptGroupActions[key] = append(bs.keptGroupActions[key], k)
		return nil
	}
	if act == nil || v.Hold || v.Reason != DiscardNone {
		return nil
	}
	if act.Content == wire.ContentReply {
		// A reply is a message: a group action after it in the batch
		// may target it, and so may one kept for it.
		bs.groupTakenBack[actionTargetKey{group: g, peer: e.Sender, id: e.Message}] = seen.arrivedAt()
		e.TakeBack, e.Action, e.ActionBody = actionHistoryBody(a), act, d.Body
		return c.keptGroupWithTarget(ctx, bs, e, g, e.Message, now)
	}
	if bs.deleted[act.targetKey()] {
		return nil // deleted earlier in this batch: not over the tombstone
	}
	if act.Content == wire.ContentDelete {
		bs.deleted[act.targetKey()] = true
	}
	e.TakeBack, e.Action, e.ActionBody = actionHistoryBody(a), act, d.Body
	return nil
}

// groupTakenBackTarget finds the target of action a, which actor sent in
// group g, among the group messages this batch takes back
// (groupTakenBack): for an edit or a delete the actor's own message, for a
// reaction any member's (the earliest to arrive, as the history's
// earliest entry). It returns the target's author and arrival.
func (bs *batchState) groupTakenBackTarget(g wire.GroupID, actor Address, a wire.Action) (Address, time.Time, bool) {
	if a.Content == wire.ContentEdit || a.Content == wire.ContentDelete {
		at, ok := bs.groupTakenBack[actionTargetKey{group: g, peer: actor, id: a.Target}]
		return actor, at, ok
	}
	var author Address
	var first time.Time
	found := false
	for k, at := range bs.groupTakenBack {
		if k.group == g && k.id == a.Target && (!found || at.Before(first) || at.Equal(first) && k.peer.String() < author.String()) {
			author, first, found = k.peer, at, true
		}
	}
	return author, first, found
}

// groupTargetTakeBackable reports whether the target of action a, which
// actor sent in group g and this device discarded as target_discarded, is
// a group message a sibling's decision can take back here: discarded by
// the person, a text (kind 16) or a reply (kind 18), in g. For an edit or
// a delete the actor's own message; for a reaction any member's, or a
// former member's (the records of that ID, as groupTarget reads them:
// groupTargetAuthors, not the roster alone).
func (c *Client) groupTargetTakeBackable(ctx context.Context, g wire.GroupID, actor Address, a wire.Action) (bool, error) {
	authors := []Address{actor}
	if a.Content == wire.ContentReaction {
		var err error
		if authors, err = c.groupTargetAuthors(ctx, g, a.Target); err != nil {
			return false, err
		}
	}
	for _, s := range authors {
		ts, err := c.store.Seen(ctx, s, a.Target)
		if err != nil {
			return false, err
		}
		if ts.Finalized && ts.Outcome == OutcomeDiscarded && ts.InGroup && ts.Group != nil && *ts.Group == g &&
			(ts.TakeBack || ts.TakeBackAction && ts.Content == wire.ContentReply) {
			return true, nil
		}
	}
	return false, nil
}

// keptActionOf is Finalize.KeepAction for m, a pending action discarded
// because its target is discarded here: the action as it arrived, when a
// sibling's decision can take its target back (as takeBackAction and
// takeBackGroupAction keep a kind-18 decision heard after the discard);
// nil for a reply, a sibling's sent copy, a body over
// wire.MaxDecisionActionSize or a target no decision takes back. The
// store keeps it with a sibling's commit kept for m, heard before m
// arrived, which would otherwise be forgotten with m's discard while its
// target's take-back, later, found nothing to take back with it. A
// sibling's own group action (m's sender a device of this person's
// account the list vouches for) names that sibling (On): the store keeps
// it as the sibling's commit even with none heard, for no decision about
// the person's own message ever comes. finalizeBatch names this device
// (On) when the discard is the person's own commit made here, turned so
// by the rules.
func (c *Client) keptActionOf(ctx context.Context, m *InboundMessage) (*KeptAction, error) {
	if !waitsAsAction(m.Content) || m.CopyTo != "" || len(m.Body) > wire.MaxDecisionActionSize {
		return nil, nil
	}
	a, err := wire.DecodeAction(m.Content, m.Body)
	if err != nil {
		return nil, nil
	}
	if m.Group != nil {
		if ok, err := c.groupTargetTakeBackable(ctx, *m.Group, m.Sender, a); err != nil || !ok {
			return nil, err
		}
	} else {
		ts, err := c.store.Seen(ctx, m.Sender, a.Target)
		if err != nil {
			return nil, err
		}
		if !ts.Finalized || !ts.TakeBack && !(ts.TakeBackAction && ts.Content == wire.ContentReply) {
			return nil, nil
		}
	}
	k := &KeptAction{Sender: m.Sender, ID: m.ID, Content: m.Content, Target: a.Target, Body: append([]byte{}, m.Body...)}
	if m.Group != nil {
		g := *m.Group
		k.Group = &g
		// A sibling's own group action: the person authored it, and no
		// decision about it ever comes. It is kept as that sibling's
		// commit with its action (On), heard or not, so that its
		// target's take-back applies it by the group's rules.
		own, err := c.ownSibling(ctx, m.Sender)
		if err != nil {
			return nil, err
		}
		if own {
			k.On = m.Sender
		}
	}
	return k, nil
}

// keptGroupWithTarget is keptWithTarget in group g: it adds to e, which
// takes back the group message target (bs.groupTakenBack names it now, by
// its author), the kept decisions of group actions that wait for that
// target, of any member (kept in an earlier batch, KeptGroupActions, or
// earlier in this one) and now apply by the group's rules
// (takeBackGroupAction, the target found where its take-back writes it):
// each is taken back with it (e.WithTarget). One that still does not
// apply stays kept.
func (c *Client) keptGroupWithTarget(ctx context.Context, bs *batchState, e *DecisionEffect, g wire.GroupID, target wire.LogicalID, now time.Time) error {
	kept, err := c.store.KeptGroupActions(ctx, g, target)
	if err != nil {
		return err
	}
	kept = append(kept, bs.keptGroupActions[actionTargetKey{group: g, id: target}]...)
	return c.takeBackKept(ctx, bs, e, kept, now)
}

// keptForCommit returns the kept group action decisions that the commit
// of group g's message id from sender (a text or a reply, arrived at
// arrived here, pending until now) lets apply by the group's action rules
// (Finalize.WithKept): each judged as its kind-18 decision would be
// (takeBackGroupAction), the target found where the commit writes it:
// kept in an earlier batch (KeptGroupActions) or earlier in this one
// (bs.keptGroupActions). bs is the batch's: a kept decision applies once
// in it, and the commit names its message committed there
// (bs.groupTakenBack), kept decisions or not, so that a group action's
// decision after it in the batch finds its target. One that does not
// apply stays kept.
func (c *Client) keptForCommit(ctx context.Context, bs *batchState, g wire.GroupID, sender Address, id wire.LogicalID, arrived, now time.Time) ([]KeptTakeBack, error) {
	// Committed in this batch: a group action's decision after it in the
	// batch finds its target there (takeBackGroupAction), kept or not.
	bs.groupTakenBack[actionTargetKey{group: g, peer: sender, id: id}] = arrived
	kept, err := c.store.KeptGroupActions(ctx, g, id)
	if err != nil {
		return nil, err
	}
	kept = append(kept, bs.keptGroupActions[actionTargetKey{group: g, id: id}]...)
	if len(kept) == 0 {
		return nil, nil
	}
	e := DecisionEffect{At: now, Sender: sender, Message: id, Outcome: OutcomeCommitted}
	if err := c.takeBackKept(ctx, bs, &e, kept, now); err != nil {
		return nil, err
	}
	return e.WithTarget, nil
}

// keptForPeerCommit is keptForCommit one to one: the kept action
// decisions of sender's one-to-one actions that wait for its message id
// (a text or a reply, arrived at arrived here, pending until now; kept
// while it was pending or absent: in an earlier batch, KeptActions, or
// earlier in this one, bs.keptActions) and that its commit lets apply by
// the action rules (Finalize.WithKept, CommitEffect.WithKept): each
// judged as its kind-18 decision would be (takeBackAction), the target
// found where the commit writes it (bs.takenBack names it, kept
// decisions or not, so that an action's decision after it in the batch
// finds its target too). bs is the batch's: a kept decision applies
// once in it. One that does not apply stays kept.
func (c *Client) keptForPeerCommit(ctx context.Context, bs *batchState, sender Address, id wire.LogicalID, arrived, now time.Time) ([]KeptTakeBack, error) {
	// Committed in this batch: an action's decision after it in the
	// batch finds its target there (takeBackAction), kept or not.
	key := inboundKey{sender, id}
	bs.takenBack[key] = arrived
	var kept []KeptAction
	if c.mayKeepDecisions() {
		var err error
		if kept, err = c.store.KeptActions(ctx, sender, id); err != nil {
			return nil, err
		}
	}
	kept = append(kept, bs.keptActions[key]...)
	if len(kept) == 0 {
		return nil, nil
	}
	e := DecisionEffect{At: now, Sender: sender, Message: id, Outcome: OutcomeCommitted}
	if err := c.takeBackKept(ctx, bs, &e, kept, now); err != nil {
		return nil, err
	}
	return e.WithTarget, nil
}

// mayKeepDecisions reports whether a kept decision may be stored here:
// false only once the kept decisions were read and none found
// (applyKeptDecisions), no decision heard since (decisionsDue, set as
// one is prepared, before its receive applies, and by finalizeBatch after
// a discard kept a commit with its action), so that a one-to-one commit
// reads no kept actions then (keptForPeerCommit). Sound because every
// kept decision row comes from a decision heard in a receive, which
// applyKeptDecisions, after it in the same round under syncMu, reads,
// or from a Finalize's KeepAction, which sets decisionsDue once applied
// (cleared by applyKeptDecisions before its read, never after).
func (c *Client) mayKeepDecisions() bool {
	return c.decisionsDue.Load() || c.decisionsKept.Load() || !c.decisionsChecked.Load()
}

// keptWithTarget adds to e, which takes back message target from sender
// (bs.takenBack names it now), the kept action decisions that wait for
// that target (kept in an earlier batch, KeptActions, or earlier in this
// one) and now apply: each is judged as its kind-18 decision would be
// (takeBackAction, the target found where its take-back writes it) and,
// when it applies, taken back with it (e.WithTarget). One that still does
// not apply stays kept.
func (c *Client) keptWithTarget(ctx context.Context, bs *batchState, e *DecisionEffect, sender Address, target wire.LogicalID, now time.Time) error {
	key := inboundKey{sender, target}
	kept, err := c.store.KeptActions(ctx, sender, target)
	if err != nil {
		return err
	}
	kept = append(kept, bs.keptActions[key]...)
	return c.takeBackKept(ctx, bs, e, kept, now)
}

// keptWithTargetBound is how many kept action decisions one take-back
// applies with its target (DecisionEffect.WithTarget): MaxKeptDecisions,
// as many as the store's validator accepts; a test lowers it.
var keptWithTargetBound = MaxKeptDecisions

// takeBackKept adds to e the kept action decisions of kept that its
// take-back lets apply (keptWithTarget, keptGroupWithTarget), each judged
// as its kind-18 decision would be, and not applied before in this batch:
// the oldest first (the store's, then this batch's), at most
// keptWithTargetBound in all, so that the store never refuses the
// target's take-back for their number. Those over the bound are not
// applied: they stay kept, their target committed, until they are
// forgotten (MaxDecisionAge, or evicted at MaxKeptDecisions).
func (c *Client) takeBackKept(ctx context.Context, bs *batchState, e *DecisionEffect, kept []KeptAction, now time.Time) error {
	for _, k := range kept {
		if len(e.WithTarget) >= keptWithTargetBound {
			return nil
		}
		ak := inboundKey{k.Sender, k.ID}
		if bs.keptApplied[ak] {
			continue
		}
		seen, err := c.store.Seen(ctx, k.Sender, k.ID)
		if err != nil {
			return err
		}
		d := wire.Decision{Sender: k.Sender.String(), Message: k.ID, Outcome: wire.DecisionCommitted, Content: k.Content, Body: k.Body}
		ke := DecisionEffect{At: e.At, Sender: k.Sender, Message: k.ID, Outcome: OutcomeCommitted, Keep: true} // Keep: never kept again here
		if err := c.takeBackAction(ctx, bs, &ke, seen, DecideHeardDecision(seen, OutcomeCommitted), d, k.On, now); errors.Is(err, ErrDecisionMismatch) {
			continue
		} else if err != nil {
			return err
		}
		if ke.TakeBack == nil {
			continue
		}
		ke.Keep = false
		bs.keptApplied[ak] = true
		e.WithTarget = append(e.WithTarget, KeptTakeBack{On: k.On, Effect: ke})
	}
	return nil
}

// takenBackTarget is the ActionApply of action a (the message e takes
// back, arrived by arrived) whose target this batch takes back before it:
// the target's entry is written, received at targetAt, in the
// conversation of e.Sender's person (where the take-back puts it). nil
// when DecideAction does not apply it there.
//
// The entry names e.Sender as the device that sent it (SentBy), as the
// take-back writes it: the action reached here because no entry of the
// target was found (it was held or its target discarded), so the row is
// the take-back's, sent by e.Sender, and the action is that device's own
// (peerActionTarget's rule for an entry naming its device).
func (c *Client) takenBackTarget(ctx context.Context, e *DecisionEffect, a wire.Action, targetAt, arrived, now time.Time) (*ActionApply, error) {
	t := ActionTarget{Found: true, Direction: DirectionIn, At: targetAt, SentBy: e.Sender}
	if v := DecideAction(t, a.Content, true, arrived, now); v.Hold || v.Reason != DiscardNone {
		return nil, nil
	}
	apply := applyOf(e.Sender, e.Sender, e.Message, DirectionIn, a, t, now)
	held, ok, err := c.store.PeerAccount(ctx, e.Sender.User)
	if err != nil {
		return nil, err
	}
	if ok && held.Conversation != e.Sender {
		apply.TargetPeer = held.Conversation
	}
	return apply, nil
}

// keptFor returns which deliveries of a committed page another device of
// this person decided already (a kept decision names them), for the
// page's results to say so. It reads the kept decisions only while some
// may be kept; a failed read marks none (what it costs is a bell).
func (c *Client) keptFor(ctx context.Context, preps []prepared) map[inboundKey]bool {
	if !c.decisionsKept.Load() && !c.decisionsDue.Load() && c.decisionsChecked.Load() {
		return nil
	}
	delivered := false
	for _, p := range preps {
		delivered = delivered || p.result.Kind == ResultDelivery
	}
	if !delivered {
		return nil
	}
	kept, err := c.store.KeptDecisions(ctx, MaxKeptDecisions)
	if err != nil || len(kept) == 0 {
		return nil
	}
	out := make(map[inboundKey]bool, len(kept))
	for _, k := range kept {
		out[inboundKey{k.Sender, k.ID}] = true
	}
	return out
}

// applyKeptDecisions finalizes every pending message a kept decision
// names, as the decision says, without asking (the Finalize plan forgets
// the decision and acknowledges the sender in one transaction), and
// reports each as a ResultDecided. It runs after a receive batch when
// decisions may be due: one was heard, or messages arrived while some are
// kept. A request whose plan the store refuses is refused alone
// (finalizeEach, ErrKeptDecisionRefused as a ResultError) while the
// others apply: no decision a sibling sends fails the round. A refused
// decision is reported once and left out of the passes after it in this
// process (refusedDecisions), so that it costs no later round a failed
// batch and a transaction of its own; it is forgotten there once no
// longer due (applied by the person, aged out). A decision whose message
// was finalized meanwhile (ErrNotPending: the person decided it) is not
// reported.
func (c *Client) applyKeptDecisions(ctx context.Context, res []ReceiveResult) ([]ReceiveResult, error) {
	due := c.decisionsDue.Load() || !c.decisionsChecked.Load()
	for _, r := range res {
		due = due || r.Kind == ResultDelivery && c.decisionsKept.Load()
	}
	if !due {
		return nil, nil
	}
	c.decisionsDue.Store(false)
	kept, held, err := c.store.DueDecisions(ctx, MaxKeptDecisions)
	if err != nil {
		return nil, err
	}
	c.decisionsChecked.Store(true)
	c.decisionsKept.Store(held)
	stillDue := make(map[inboundKey]bool, len(kept))
	for _, k := range kept {
		stillDue[inboundKey{k.Sender, k.ID}] = true
	}
	for k := range c.refusedDecisions {
		if !stillDue[k] {
			delete(c.refusedDecisions, k)
		}
	}
	reqs := make([]FinalizeRequest, 0, len(kept))
	var out []ReceiveResult
	for _, k := range kept {
		if c.refusedDecisions[inboundKey{k.Sender, k.ID}] {
			continue // refused already in this process, and reported
		}
		on := k.On
		reqs = append(reqs, FinalizeRequest{Sender: k.Sender, ID: k.ID, Outcome: k.Outcome, Reason: DiscardOther, decidedOn: &on})
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	results, err := c.finalizeBatch(ctx, reqs, nil, false)
	if err != nil && results == nil && planRefused(err) {
		// One request's plan refused fails the batch's transaction
		// whole: each is finalized alone, so that a decision the plan
		// refuses (a hostile or buggy sibling's, a pending row the store
		// holds otherwise) stops neither the others nor the loop.
		results, err = c.finalizeEach(ctx, reqs)
	}
	for i, r := range results {
		if errors.Is(r.Err, ErrKeptDecisionRefused) {
			k := reqs[i]
			if c.refusedDecisions == nil {
				c.refusedDecisions = make(map[inboundKey]bool)
			}
			c.refusedDecisions[inboundKey{k.Sender, k.ID}] = true
			out = append(out, ReceiveResult{Kind: ResultError, Sender: k.Sender, ID: k.ID, Err: r.Err})
		}
		if r.Err != nil {
			continue
		}
		k := reqs[i]
		out = append(out, ReceiveResult{Kind: ResultDecided, Sender: k.Sender, ID: k.ID,
			Decided: &KeptDecision{Sender: k.Sender, ID: k.ID, Outcome: k.Outcome, On: *k.decidedOn}, AckSent: r.AckSent})
	}
	return out, err
}

// finalizeEach finalizes each kept decision's request alone (as
// applyKeptDecisions asks, after the batch's plan was refused): a request
// whose own plan is refused gets ErrKeptDecisionRefused, naming the cause,
// and changes nothing; any other failure stops the pass.
func (c *Client) finalizeEach(ctx context.Context, reqs []FinalizeRequest) ([]FinalizeResult, error) {
	results := make([]FinalizeResult, len(reqs))
	for i, q := range reqs {
		res, err := c.finalizeBatch(ctx, reqs[i:i+1], nil, false)
		switch {
		case err != nil && res == nil && errors.Is(err, ErrNotPending):
			// Finalized meanwhile (the person decided it): nothing to
			// apply, and nothing refused to report.
			results[i].Err = err
		case err != nil && res == nil && planRefused(err):
			results[i].Err = fmt.Errorf("apply %s's decision on %x from %s: %w: %w", *q.decidedOn, q.ID[:], q.Sender, ErrKeptDecisionRefused, err)
		case err != nil && res != nil:
			// Finalized, its ACK's hand-off cancelled: durable, so
			// reported with those before it.
			results[i] = res[0]
			return results[:i+1], err
		case err != nil:
			return results[:i], err // those before it are finalized, and reported
		default:
			results[i] = res[0]
		}
	}
	return results, nil
}

// planRefused reports whether a finalization failed because the store
// refused its plan (ErrConflict: invalid, or the state changed underneath;
// ErrCopyIDTaken; ErrNotPending), not because it could not run.
func planRefused(err error) bool {
	return !isCancel(err) && (errors.Is(err, ErrConflict) || errors.Is(err, ErrCopyIDTaken) || errors.Is(err, ErrNotPending))
}
