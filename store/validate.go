package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// validate checks that a plan holds together before any transaction starts:
// every envelope has its owner, every session write names the plan's peer
// and carries a record, every address is well formed, every time is set. A
// failure matches engine.ErrConflict (engine.ErrInvalidAddress for an
// address) and touches nothing.
func validate(p engine.Plan) error {
	var err error
	switch p := p.(type) {
	case nil:
		return fmt.Errorf("store: apply: %w", invalid("no plan"))
	case engine.Bootstrap:
		err = validateBootstrap(p)
	case engine.CreateAccount:
		err = validateCreateAccount(p)
	case engine.UpdateDeviceList:
		err = validateUpdateDeviceList(p)
	case engine.PublishPreKeys:
		err = validatePublish(p)
	case engine.GroupSend:
		err = validateGroupSend(p)
		if p.Action != nil {
			err = errors.Join(err, checkActionApply(*p.Action, p.Sender, engine.DirectionOut, p.ID), checkActionGroup(p.Action, &p.Group))
		}
	case engine.RosterUpdate:
		err = validateRosterUpdate(p)
	case engine.Send:
		err = validateSend(p)
	case engine.Hold:
		err = validateHold(p)
		if p.Action != nil {
			err = errors.Join(err, checkActionApply(*p.Action, p.Recipient, engine.DirectionOut, p.ID), checkActionGroup(p.Action, nil))
		}
	case engine.PersonSend:
		err = validatePersonSend(p)
		if p.Action != nil {
			err = errors.Join(err, checkActionApply(*p.Action, p.Conversation, engine.DirectionOut, p.ID), checkActionGroup(p.Action, nil))
		}
	case engine.HoldPeerDeviceList:
		err = validateHoldPeerDeviceList(p)
	case engine.Retry:
		err = validateRetry(p)
	case engine.Stage:
		err = validateStage(p)
	case engine.Receive:
		err = validateReceive(p)
	case engine.CollisionRetire:
		err = errors.Join(checkAddress("peer", p.Peer), checkRow(p.StagedRow), checkAnnounce(p.Announce, &p.Peer))
	case engine.DropStaged:
		err = errors.Join(checkRow(p.StagedRow), checkTime("at", p.At), checkAnnounce(p.Announce, nil))
		if p.Retire != nil {
			err = errors.Join(err, checkAddress("peer", p.Peer))
		}
		if p.Reason == "" {
			err = errors.Join(err, invalid("no reason"))
		}
	case engine.Finalize:
		err = errors.Join(validateFinalize(p), checkDecisionLanes(p.Tell, p.Sender, p.ID))
		if p.DecidedOn != nil && len(p.Tell) > 0 {
			err = errors.Join(err, invalid("a decision made elsewhere told again"))
		}
	case engine.ChainAck:
		err = errors.Join(checkAddress("peer", p.Peer), checkSession(p.Session, p.Peer), checkAck(&p.Ack, p.Peer), checkChainAckIDs(p.IDs))
	case engine.NeedChainAsk:
		err = errors.Join(checkAddress("peer", p.Peer), checkSession(p.Session, p.Peer), checkAck(&p.Request, p.Peer))
	case engine.AckAgain:
		err = errors.Join(checkAddress("sender", p.Sender), checkTime("at", p.At),
			checkSession(p.Session, p.Sender), checkAck(&p.Ack, p.Sender))
		if p.Outcome != engine.OutcomeCommitted && p.Outcome != engine.OutcomeDiscarded {
			err = errors.Join(err, invalid("outcome %d", p.Outcome))
		}
	case engine.Abandon:
		err = checkAddress("recipient", p.Recipient)
	case engine.MarkTaken:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At))
		if p.N < 1 {
			err = errors.Join(err, invalid("attempt %d", p.N))
		}
	case engine.AcceptIdentity:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At), checkVersion(p.SessionVersion))
		if p.Identity == (engine.IdentityKey{}) {
			err = errors.Join(err, invalid("no identity"))
		}
		if (p.Retire != nil) != (p.SessionVersion > 0) {
			err = errors.Join(err, invalid("a removed session's initiation is retired with it, and only then"))
		}
	case engine.Prune:
		err = checkTime("before", p.Before)
	case engine.ResetSession:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At))
		if p.StagedRow != 0 {
			err = errors.Join(err, checkRow(p.StagedRow))
		}
		if p.SessionVersion == 0 {
			err = errors.Join(err, invalid("no session to reset"))
		}
		if len(p.Retire) == 0 {
			err = errors.Join(err, invalid("nothing retired"))
		}
	case engine.PinRelay:
		if p.URL == "" || p.ID == ([32]byte{}) {
			err = invalid("no relay URL or ID")
		}
	case engine.SetRelay:
		if p.Relay.URL == "" {
			err = invalid("no relay URL")
		}
	case engine.SetContact:
		err = errors.Join(checkAddress("peer", p.Peer), engine.CheckContactName(p.Name))
	case engine.SetDraft:
		err = errors.Join(checkAddress("peer", p.Peer), engine.CheckDraft(p.Text))
	case engine.MarkPresented:
	case engine.AcceptRequest:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At))
		if p.Count < 0 {
			err = errors.Join(err, invalid("count %d", p.Count))
		}
		for _, a := range p.Rosters {
			if a.Effect != nil {
				err = errors.Join(err, checkRosterFrame(a.Effect.Frame, a.ID), checkForward(*a.Effect, p.Peer))
			}
		}
		for _, w := range p.Sessions {
			if w.Peer != p.Peer {
				err = errors.Join(err, invalid("session step with %s in an accept of %s", w.Peer, p.Peer))
			}
			err = errors.Join(err, checkSession(w, p.Peer))
		}
	case engine.RejectRequest:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At))
	case engine.ImportBlock:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At))
	case engine.ImportStart:
		err = validateImportStart(p)
	case engine.ImportRecords:
		err = validateImportRecords(p)
	case engine.LinkCut:
		err = validateLinkCut(p)
	case engine.GroupStateSend:
		err = validateGroupStateSend(p)
	case engine.SweepRequests:
		err = checkTime("before", p.Before)
	case engine.MarkBlockTold:
		err = checkAddress("peer", p.Peer)
	case engine.UploadBegin:
		err = validateUploadBegin(p)
	case engine.UploadEnd:
	case engine.ClearQuarantine:
		if p.Through < 0 {
			err = invalid("quarantine row %d", p.Through)
		}
	case engine.Unblock:
		err = errors.Join(checkAddress("peer", p.Peer), checkTime("at", p.At))
	default:
		return fmt.Errorf("store: apply %T: %w", p, invalid("unknown plan"))
	}
	if err != nil {
		return fmt.Errorf("store: apply %s: %w", p.Kind(), err)
	}
	return nil
}

// invalid is a plan that does not hold together: the engine prepared it
// from a state the store cannot have.
func invalid(format string, args ...any) error {
	return fmt.Errorf("invalid plan: "+format+": %w", append(args, engine.ErrConflict)...)
}

func checkAddress(what string, a engine.Address) error {
	if a.IsZero() {
		return fmt.Errorf("%s: %w: empty", what, engine.ErrInvalidAddress)
	}
	b, err := engine.ParseAddress(a.String())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if b != a {
		return fmt.Errorf("%s: %w %q", what, engine.ErrInvalidAddress, a.String())
	}
	return nil
}

func checkRow(row int64) error {
	if row <= 0 {
		return invalid("inbox row %d", row)
	}
	return nil
}

// checkTime refuses the zero time, whose Unix nanoseconds are undefined.
func checkTime(what string, at interface{ IsZero() bool }) error {
	if at.IsZero() {
		return invalid("%s: no time", what)
	}
	return nil
}

func checkVersion(v uint64) error {
	if v >= math.MaxInt64 {
		return invalid("session version %d", v)
	}
	return nil
}

func checkSession(w engine.SessionWrite, peer engine.Address) error {
	var err error
	if w.Peer != peer {
		err = invalid("session write for %s in a plan for %s", w.Peer, peer)
	}
	if len(w.Record) == 0 {
		err = errors.Join(err, invalid("session write for %s without a record", w.Peer))
	}
	return errors.Join(err, checkVersion(w.Version))
}

// checkOutgoing checks that a message's envelope carries it to its recipient.
func checkOutgoing(o engine.Outgoing, id wire.LogicalID, to engine.Address) error {
	switch {
	case o.IsAck:
		return invalid("the envelope of message %x is an ACK", id[:])
	case o.Owner != id:
		return invalid("envelope owned by %x in the plan of message %x", o.Owner[:], id[:])
	case o.Envelope.Recipient != to.String():
		return invalid("envelope for %q in the plan of a message to %s", o.Envelope.Recipient, to)
	}
	return nil
}

// checkAck checks an acknowledgement's envelope: never a pending message's.
func checkAck(o *engine.Outgoing, to engine.Address) error {
	switch {
	case !o.IsAck:
		return invalid("ACK envelope not marked as an ACK")
	case o.Owner != (wire.LogicalID{}):
		return invalid("ACK envelope owned by message %x", o.Owner[:])
	case o.Envelope.Recipient != to.String():
		return invalid("ACK envelope for %q in a plan for %s", o.Envelope.Recipient, to)
	}
	return nil
}

// checkFrame checks that frame is an application or group message frame of message id
// (with body, when body is not nil).
func checkFrame(frame []byte, id wire.LogicalID, body []byte) error {
	f, err := engine.DecodeStoredFrame(frame)
	switch {
	case err != nil:
		return invalid("frame of message %x: %v", id[:], err)
	case f.Roster:
		return invalid("frame of message %x is not an application or group message frame", id[:])
	case f.ID != id:
		return invalid("frame of message %x carries %x", id[:], f.ID[:])
	case body != nil && !bytes.Equal(f.HistoryBody(), body):
		return invalid("frame of message %x carries another body", id[:])
	}
	return nil
}

// isRosterFrame reports whether frame is a signed roster change.
func isRosterFrame(frame []byte) bool {
	kind, err := wire.PeekFrameKind(frame)
	return err == nil && kind == wire.FrameSignedRoster
}

// checkRosterFrame checks a signed roster frame of change id.
func checkRosterFrame(frame []byte, id wire.LogicalID) error {
	r, err := wire.DecodeSignedRoster(frame)
	switch {
	case err != nil:
		return invalid("roster frame: %v", err)
	case r.ID != id:
		return invalid("roster frame of change %x carries %x", id[:], r.ID[:])
	}
	return nil
}

func checkPreKeys(recs []engine.PreKeyRecord) error {
	var err error
	for _, r := range recs {
		switch r.Kind {
		case engine.PreKeySigned, engine.PreKeyKEM, engine.PreKeyOneTime:
		default:
			err = errors.Join(err, invalid("prekey %d of kind %d", r.ID, r.Kind))
		}
		if len(r.Record) == 0 {
			err = errors.Join(err, invalid("prekey %d without a record", r.ID))
		}
	}
	return err
}

func validateBootstrap(p engine.Bootstrap) error {
	err := errors.Join(checkAddress("self", p.Self), checkPreKeys(p.PreKeys))
	if len(p.Identity) == 0 {
		err = errors.Join(err, invalid("no identity record"))
	}
	return err
}

func validatePublish(p engine.PublishPreKeys) error {
	err := checkPreKeys(p.Add)
	if p.NextPreKeyID != 0 {
		for _, r := range p.Add {
			if r.ID >= p.NextPreKeyID {
				err = errors.Join(err, invalid("new prekey %d at or above the next prekey ID %d", r.ID, p.NextPreKeyID))
			}
		}
	}
	return err
}

func validateSend(p engine.Send) error {
	body := p.Body
	if body == nil {
		body = []byte{}
	}
	return errors.Join(
		checkAddress("recipient", p.Recipient),
		checkTime("at", p.At),
		checkFrame(p.Frame, p.ID, body),
		checkSession(p.Session, p.Recipient),
		checkOutgoing(p.Out, p.ID, p.Recipient),
	)
}

func validateHold(p engine.Hold) error {
	body := p.Body
	if body == nil {
		body = []byte{}
	}
	return errors.Join(
		checkAddress("recipient", p.Recipient),
		checkTime("at", p.At),
		checkFrame(p.Frame, p.ID, body),
	)
}

func validateRetry(p engine.Retry) error {
	return errors.Join(
		checkAddress("recipient", p.Recipient),
		checkSession(p.Session, p.Recipient),
		checkOutgoing(p.Out, p.ID, p.Recipient),
	)
}

func validateStage(p engine.Stage) error {
	err := checkTime("at", p.At)
	if len(p.Envelopes) > StagingQuota {
		err = errors.Join(err, fmt.Errorf("stage %d envelopes, quota %d: %w", len(p.Envelopes), StagingQuota, engine.ErrStagingFull))
	}
	for i, e := range p.Envelopes {
		if len(e.Envelope) == 0 {
			err = errors.Join(err, invalid("envelope %d is empty", i))
		}
	}
	return err
}

// checkAnnounce checks an Announcement: a session step with its ACK, to the
// plan's peer when the plan names one.
func checkAnnounce(a *engine.Announcement, peer *engine.Address) error {
	if a == nil {
		return nil
	}
	to := a.Session.Peer
	if peer != nil && to != *peer {
		return invalid("announcement to %s in a plan for %s", to, *peer)
	}
	return errors.Join(checkSession(a.Session, to), checkAck(&a.Ack, to))
}

func validateReceive(p engine.Receive) error {
	err := errors.Join(checkAddress("peer", p.Peer), checkRow(p.StagedRow), checkSession(p.Session, p.Peer))
	if c := p.Chain; c != nil && (c.Sender != p.Peer || len(c.Record) == 0) {
		err = errors.Join(err, invalid("received chain of %s in a receive from %s", c.Sender, p.Peer))
	}
	switch e := p.Effect.(type) {
	case engine.DeliverEffect:
		if p.Request != nil && isRosterFrame(e.Frame) {
			// A roster change from a device not accepted waits in its
			// sender's request.
			err = errors.Join(err, checkTime("at", e.At), checkRosterFrame(e.Frame, e.ID))
		} else {
			err = errors.Join(err, checkTime("at", e.At), checkFrame(e.Frame, e.ID, nil))
		}
		if r := p.Request; r != nil {
			err = errors.Join(err, checkTime("request at", r.At))
			if r.Bytes < 0 || len(r.Preview) > 4*engine.MaxRequestPreview {
				err = errors.Join(err, invalid("request of %d bytes, preview of %d", r.Bytes, len(r.Preview)))
			}
		}
	case engine.CommitEffect:
		// Its ACK commits with it, but for a session whose sending window is
		// full (engine.SendWindow): then the ACK is owed, and the sender's
		// retry gets it, as after a crash between a commit and its ACK.
		err = errors.Join(err, checkTime("arrived", e.Arrived), checkTime("at", e.At),
			checkWithKept(e.WithKept, engine.OutcomeCommitted, e.Content, e.Group, e.SentTo, e.Action, p.Peer, e.ID))
		if e.Action != nil && e.SentTo == nil {
			err = errors.Join(err, checkActionApply(*e.Action, p.Peer, engine.DirectionIn, e.ID), checkActionGroup(e.Action, e.Group))
		}
		err = errors.Join(err, checkDecisionLanes(e.Tell, p.Peer, e.ID), checkKeptActionBody(e.ActionBody, e.Action, e.Group, e.SentTo),
			checkRecordedContent(e.Content, e.Action, e.SentTo))
		if len(e.Tell) > 0 && e.SentTo != nil {
			err = errors.Join(err, invalid("decision lanes for a sent copy %x", e.ID[:]))
		}
		if e.SentTo != nil {
			err = errors.Join(err, checkAddress("sent to", *e.SentTo))
			if e.Group != nil || p.Peer.User != "" && e.SentTo.User == p.Peer.User {
				err = errors.Join(err, invalid("sent copy %x with a group, or to its own person", e.ID[:]))
			}
			if e.Action != nil {
				err = errors.Join(err, checkCopyAction(e.Action, p.Peer, *e.SentTo, e.ID))
			}
		}
	case engine.DecisionEffect:
		err = errors.Join(err, checkTime("at", e.At), checkAddress("decided sender", e.Sender))
		if e.Outcome != engine.OutcomeCommitted && e.Outcome != engine.OutcomeDiscarded {
			err = errors.Join(err, invalid("decision outcome %d", e.Outcome))
		}
		if e.TakeBack != nil && (e.Outcome != engine.OutcomeCommitted || e.Keep || len(e.TakeBack) > wire.MaxDecisionBodySize) {
			err = errors.Join(err, invalid("decision %x restores a body it may not (a discard, kept, or over the bound)", e.ID[:]))
		}
		err = errors.Join(err, checkTakenBackAction(e))
		if k := e.KeepAction; k != nil {
			a, aerr := wire.DecodeAction(k.Content, k.Body)
			if !e.Keep || e.TakeBack != nil || e.Outcome != engine.OutcomeCommitted || !wire.IsAction(k.Content) || k.Content == wire.ContentReply ||
				len(k.Body) > wire.MaxDecisionActionSize || aerr != nil || a.Target != k.Target {
				err = errors.Join(err, invalid("decision %x keeps an action it may not (not kept, not a commit, or its body another action)", e.ID[:]))
			}
		}
		if len(e.WithTarget) > 0 && (e.TakeBack == nil || len(e.WithTarget) > engine.MaxKeptDecisions) {
			err = errors.Join(err, invalid("decision %x applies kept actions without taking back their target", e.ID[:]))
		}
		for _, k := range e.WithTarget {
			w := k.Effect
			err = errors.Join(err, checkAddress("kept decision's device", k.On), checkAddress("kept action's sender", w.Sender))
			// One to one, the action's sender wrote its target; in a
			// group, the target's author is the take-back's sender
			// (another member, for a reaction), and a group's action
			// waits only for a group message (a reply's take-back names
			// its group; a text's, the store checks by its record).
			waits := w.Action != nil && w.Action.Target == e.Message && w.Action.Content != wire.ContentReply
			switch {
			case !waits:
			case w.Action.Group == nil:
				waits = w.Sender == e.Sender && (e.Action == nil || e.Action.Group == nil)
			default:
				waits = w.Action.TargetAuthor == e.Sender && (e.Action == nil || e.Action.Group != nil && *e.Action.Group == *w.Action.Group)
			}
			if !waits || w.Outcome != engine.OutcomeCommitted || w.Keep || w.KeepAction != nil || len(w.WithTarget) > 0 {
				err = errors.Join(err, invalid("decision %x applies a kept action %x that does not wait for the message it takes back", e.ID[:], w.Message[:]))
			} else {
				err = errors.Join(err, checkTakenBackAction(w))
			}
		}
		err = errors.Join(err, checkAnswer(e, p.Peer))
	case engine.AckEffect, engine.RepeatEffect, engine.NotAMemberEffect:
	case engine.ChainAcksEffect:
		if len(e.IDs) == 0 {
			err = errors.Join(err, invalid("cumulative acknowledgement of no ID"))
		} else {
			err = errors.Join(err, checkChainAckIDs(e.IDs))
		}
	case engine.RosterEffect:
		err = errors.Join(err, checkRosterFrame(e.Frame, e.Change.ID), checkForward(e, p.Peer))
	case engine.GroupStateEffect:
		err = errors.Join(err, validateGroupStateEffect(e))
	case engine.NeedChainEffect:
		a, aerr := wire.DecodeChainAnnounce(e.Announce.Frame)
		switch {
		case aerr != nil:
			err = errors.Join(err, invalid("chain announcement: %v", aerr))
		case a.ID != e.Announce.ID || a.Chain != e.Chain || a.Group != e.Group:
			err = errors.Join(err, invalid("chain announcement %x is not of the effect's chain", e.Announce.ID[:]))
		case e.Announce.Recipient != p.Peer:
			err = errors.Join(err, invalid("chain announcement to %s answers %s", e.Announce.Recipient, p.Peer))
		}
	default:
		err = errors.Join(err, invalid("frame effect %T", p.Effect))
	}
	if _, ok := p.Effect.(engine.DeliverEffect); p.Request != nil && (!ok || p.Ack != nil) {
		err = errors.Join(err, invalid("a request with a %T", p.Effect))
	}
	if p.Ack != nil {
		// An ACK sent again answers the repeat of a finalized message; its
		// session step is in p.Session.
		switch p.Effect.(type) {
		case engine.RepeatEffect, engine.RosterEffect, engine.CommitEffect, engine.DecisionEffect, engine.GroupStateEffect:
		default:
			err = errors.Join(err, invalid("ACK with a %T", p.Effect))
		}
		err = errors.Join(err, checkAck(p.Ack, p.Peer))
	}
	return err
}

// checkForward checks the devices a received roster change is forwarded to
// (engine.RosterEffect.Forward): each a valid address of one person, named
// once, and neither the device it came from nor the change's author (that
// it is not this device, and that the account's list names
// each active is checked against the list held, forwardRoster).
func checkForward(e engine.RosterEffect, from engine.Address) error {
	var err error
	seen := make(map[engine.Address]bool, len(e.Forward))
	for _, to := range e.Forward {
		err = errors.Join(err, checkAddress("forwarded roster change recipient", to))
		switch {
		case to == from:
			err = errors.Join(err, invalid("roster change %x forwarded back to %s, which sent it", e.Change.ID[:], to))
		case to.String() == e.Change.Author:
			err = errors.Join(err, invalid("roster change %x forwarded to %s, its author", e.Change.ID[:], to))
		case seen[to]:
			err = errors.Join(err, invalid("roster change %x forwarded to %s twice", e.Change.ID[:], to))
		case to.User != e.Forward[0].User:
			err = errors.Join(err, invalid("roster change %x forwarded to %s and %s, devices of two people", e.Change.ID[:], e.Forward[0], to))
		}
		seen[to] = true
	}
	return err
}

// checkDecisionLanes checks lanes that tell this person's other devices
// of a decision on message id from sender: each an own lane carrying a
// decision frame about that message, to a device of another person than
// the sender.
func checkDecisionLanes(lanes []engine.PersonLane, sender engine.Address, id wire.LogicalID) error {
	var err error
	for _, l := range lanes {
		f, ferr := engine.DecodeStoredFrame(l.Frame)
		switch {
		case ferr != nil || f.Decision == nil:
			err = errors.Join(err, invalid("decision lane to %s without a decision frame", l.Recipient))
		case !l.Own || f.Decision.Message != id || f.Decision.Sender != sender.String() || l.Recipient.User == sender.User:
			err = errors.Join(err, invalid("decision lane to %s names another message", l.Recipient))
		}
	}
	return err
}

func validateFinalize(p engine.Finalize) error {
	err := errors.Join(checkAddress("sender", p.Sender), checkTime("at", p.At))
	if p.ActionBody != nil && p.Outcome != engine.OutcomeCommitted {
		err = errors.Join(err, invalid("a discard keeps an action body"))
	}
	err = errors.Join(err, checkKeptActionBody(p.ActionBody, p.Action, p.Group, p.SentTo), checkRecordedContent(p.Content, p.Action, p.SentTo))
	switch p.Outcome {
	case engine.OutcomeCommitted:
		if p.Reason != engine.DiscardNone {
			err = errors.Join(err, invalid("commit with discard reason %d", p.Reason))
		}
	case engine.OutcomeDiscarded:
		if p.Reason < engine.DiscardRejected || p.Reason > engine.DiscardHoldFull {
			err = errors.Join(err, invalid("discard reason %d", p.Reason))
		}
		if len(p.Body) != 0 {
			err = errors.Join(err, invalid("discard with a body"))
		}
	default:
		err = errors.Join(err, invalid("outcome %d", p.Outcome))
	}
	switch {
	case p.SentTo != nil:
		// A sibling's sent copy of an action that waited: committed with
		// its action, as an own entry of another person's conversation.
		err = errors.Join(err, checkAddress("sent to", *p.SentTo), checkCopyAction(p.Action, p.Sender, *p.SentTo, p.ID))
		if p.Outcome != engine.OutcomeCommitted || p.Group != nil || len(p.Tell) > 0 || p.DecidedOn != nil {
			err = errors.Join(err, invalid("sent copy %x finalized other than as a commit of its own", p.ID[:]))
		}
	case p.Action != nil:
		err = errors.Join(err, checkActionApply(*p.Action, p.Sender, engine.DirectionIn, p.ID), checkActionGroup(p.Action, p.Group))
		if p.Outcome != engine.OutcomeCommitted {
			err = errors.Join(err, invalid("an action applied by a discard"))
		}
	}
	err = errors.Join(err, checkWithKept(p.WithKept, p.Outcome, p.Content, p.Group, p.SentTo, p.Action, p.Sender, p.ID))
	if k := p.KeepAction; k != nil {
		a, aerr := wire.DecodeAction(k.Content, k.Body)
		sameGroup := (k.Group == nil) == (p.Group == nil) && (k.Group == nil || *k.Group == *p.Group)
		if p.Outcome != engine.OutcomeDiscarded || p.Reason != engine.DiscardTargetDiscarded || k.Sender != p.Sender || k.ID != p.ID ||
			!wire.IsAction(k.Content) || k.Content == wire.ContentReply || k.Content != p.Content || !sameGroup ||
			len(k.Body) > wire.MaxDecisionActionSize || aerr != nil || a.Target != k.Target || sha256.Sum256(k.Body) != p.Digest {
			err = errors.Join(err, invalid("discard of %x keeps an action it may not (not discarded for its target, or another message's)", p.ID[:]))
		}
		switch {
		case k.On == (engine.Address{}):
		case k.On == p.Sender && k.Group != nil:
			// A sibling's own group action: the device that sent it
			// committed it.
		case k.On.User != p.Sender.User && p.DecidedOn == nil && checkAddress("kept on", k.On) == nil:
			// The person's commit made here, which the rules turned into
			// this discard: kept as this device's (the store checks that
			// On is this device's address).
		default:
			// Kept as a commit with none heard only for a sibling's own
			// group action, or for the person's commit made here.
			err = errors.Join(err, invalid("discard of %x keeps a commit of another device than its sender's or this one's", p.ID[:]))
		}
	}
	// The ACK's session step commits with it, and only with it.
	switch {
	case (p.Session == nil) != (p.Ack == nil):
		err = errors.Join(err, invalid("ACK and its session step do not come together"))
	case p.Session != nil:
		err = errors.Join(err, checkSession(*p.Session, p.Sender), checkAck(p.Ack, p.Sender))
	}
	return err
}

// actionBodyIs reports whether body, the action body a decision carries,
// decodes under a's content type to the action a applies (its target,
// reaction, edit number and text), so that the digest the take-back
// checks covers what it applies.
func actionBodyIs(body []byte, a *engine.ActionApply) bool {
	w, err := wire.DecodeAction(a.Content, body)
	if err != nil {
		return false
	}
	return w.Target == a.Target && w.Emoji == a.Emoji && w.Remove == a.Remove && w.Order == a.Order &&
		w.Edit == a.Edit && bytes.Equal(w.Text, a.Text)
}

// checkWithKept checks the kept action decisions a commit applies with
// it (engine.Finalize.WithKept, engine.CommitEffect.WithKept): only a
// commit (outcome) of a received text or reply (content; 0, a pending
// record from before its content type was recorded, is a text) (sender's
// message id), of a group or one to one, takes any, at most
// engine.MaxKeptDecisions, and
// each is a committed take-back of an action (not a reply) whose target
// is this message, by the take-back rules: in a group, an action in the
// same group on this message by its author; one to one, an action of
// this message's sender on its received entry (no group, no target
// author).
func checkWithKept(kept []engine.KeptTakeBack, outcome engine.Outcome, content wire.ContentType, group *wire.GroupID, sentTo *engine.Address, action *engine.ActionApply, sender engine.Address, id wire.LogicalID) error {
	if len(kept) == 0 {
		return nil
	}
	var err error
	if content != wire.ContentText && content != wire.ContentReply && content != 0 {
		err = errors.Join(err, invalid("commit of %x, content type %d, applies kept actions (only a text's or a reply's does)", id[:], content))
	}
	if outcome != engine.OutcomeCommitted || sentTo != nil || len(kept) > engine.MaxKeptDecisions ||
		action != nil && action.Content != wire.ContentReply {
		err = errors.Join(err, invalid("commit of %x applies kept actions it may not (not a commit of a received message, or over the bound)", id[:]))
	}
	for _, k := range kept {
		w := k.Effect
		err = errors.Join(err, checkAddress("kept decision's device", k.On), checkAddress("kept action's sender", w.Sender))
		a := w.Action
		waits := a != nil && a.Target == id && a.Content != wire.ContentReply && w.Outcome == engine.OutcomeCommitted &&
			!w.Keep && w.KeepAction == nil && len(w.WithTarget) == 0
		switch {
		case !waits:
		case group != nil:
			waits = a.Group != nil && *a.Group == *group && a.TargetAuthor == sender
		default:
			// One to one: the action's sender wrote its target, a
			// received entry (KeptActions finds them by sender).
			waits = a.Group == nil && w.Sender == sender && a.TargetDir == engine.DirectionIn
		}
		if !waits {
			err = errors.Join(err, invalid("commit of %x applies a kept action %x that does not wait for it", id[:], w.Message[:]))
			continue
		}
		err = errors.Join(err, checkTakenBackAction(w))
	}
	return err
}

// checkTakenBackAction checks the action a take-back applies (a kind-18
// decision's, or a kept one's: DecisionEffect.Action): the message it
// takes back, decoded from the action body it carries.
func checkTakenBackAction(e engine.DecisionEffect) error {
	if e.Action == nil {
		if e.ActionBody != nil {
			return invalid("decision %x carries an action body and no action", e.ID[:])
		}
		return nil
	}
	a := e.Action
	if e.TakeBack == nil || e.ActionBody == nil || len(e.ActionBody) > wire.MaxDecisionActionSize || a.ID != e.Message || a.Peer != e.Sender ||
		a.Dir != engine.DirectionIn || !wire.IsAction(a.Content) {
		return invalid("decision %x applies an action that is not the message it takes back", e.ID[:])
	}
	if a.Group != nil {
		// A group's action: its sender's own, its target named by its
		// author (for an edit or a delete, the sender: no member edits
		// or deletes another's message), in the group (the store checks
		// it is the record's); only a reply, a message, takes back the
		// kept actions that wait for it.
		if a.Reactor != e.Sender || a.TargetPeer != (engine.Address{}) || a.Content != wire.ContentReply && a.TargetAuthor == (engine.Address{}) ||
			e.KeepAction != nil || a.Content != wire.ContentReply && len(e.WithTarget) > 0 {
			return invalid("decision %x applies a group action that is not its sender's in the group", e.ID[:])
		}
		if (a.Content == wire.ContentEdit || a.Content == wire.ContentDelete) && a.TargetAuthor != e.Sender {
			return invalid("decision %x applies a group %s of %s's message by %s", e.ID[:], engine.ActionName(a.Content), a.TargetAuthor, e.Sender)
		}
	} else if a.TargetAuthor != (engine.Address{}) {
		return invalid("decision %x applies a one-to-one action with a target's author", e.ID[:])
	}
	if !actionBodyIs(e.ActionBody, a) {
		return invalid("decision %x applies an action its action body does not say", e.ID[:])
	}
	return nil
}

// checkRecordedContent checks the content type a commit's finalized
// record keeps (0028) against the action it applies: the action's own
// type (zero allowed for a sent copy, whose record keeps none), so that
// a kind-18 take-back never reads a record as another kind than it was.
func checkRecordedContent(content wire.ContentType, a *engine.ActionApply, sentTo *engine.Address) error {
	if a == nil || content == a.Content || sentTo != nil && content == 0 {
		return nil
	}
	return invalid("a finalized record keeps content type %d for an action of type %d", content, a.Content)
}

// checkKeptActionBody checks the action body a commit's finalized record
// keeps for the catch-up and an answer (0028): only a received action's
// (not a sent copy), one to one or in the record's group, within
// wire.MaxDecisionActionSize, decoding to the action the commit applies.
func checkKeptActionBody(body []byte, a *engine.ActionApply, group *wire.GroupID, sentTo *engine.Address) error {
	if body == nil {
		return nil
	}
	if a == nil || sentTo != nil || len(body) > wire.MaxDecisionActionSize || !actionBodyIs(body, a) ||
		(a.Group == nil) != (group == nil) || group != nil && *a.Group != *group {
		return invalid("a finalized record keeps an action body that is not its action's")
	}
	return nil
}

// checkAnswer checks the lanes that answer a sibling's discard with this
// device's commit (DecisionEffect.Answer): each a decision lane to a
// device of the person the discard came from (the discarding sibling, and
// the others this device never told), at most one per device and no more
// than an account's devices, committing the message it discarded.
//
// Contradicts (the discard contradicts a commit this device made itself:
// its record is marked, 0032) goes with a discard settled here only, from
// a device of another user than the message's sender, of another
// person's message. checkAnswer does not know this device: the store
// checks, as it applies the plan, that the peer is a device of this
// person other than this one (tx.decision), and marks only a commit's
// record.
func checkAnswer(e engine.DecisionEffect, peer engine.Address) error {
	if e.Contradicts && (e.Outcome != engine.OutcomeDiscarded || e.Keep || e.TakeBack != nil || e.Action != nil || e.KeepAction != nil ||
		e.Sender.User == peer.User) {
		return invalid("decision %x marks a commit contradicted though it is no discard settled here of a message of another user than its device's", e.ID[:])
	}
	if len(e.Answer) == 0 {
		return nil
	}
	if e.Outcome != engine.OutcomeDiscarded || e.Keep || e.TakeBack != nil || len(e.Answer) > engine.MaxDevicesPerAccount {
		return invalid("decision %x answered though it is no discard settled here, or to more devices than an account has", e.ID[:])
	}
	var err error
	to := make(map[engine.Address]bool, len(e.Answer))
	for _, l := range e.Answer {
		f, ferr := engine.DecodeStoredFrame(l.Frame)
		if ferr != nil || f.Decision == nil || !l.Own || l.Recipient.User != peer.User || to[l.Recipient] || f.Decision.Outcome != wire.DecisionCommitted ||
			f.Decision.Sender != e.Sender.String() || f.Decision.Message != e.Message {
			err = errors.Join(err, invalid("answer to %s's discard of %x is not its commit, once, to a device of that person", peer, e.Message[:]))
		}
		to[l.Recipient] = true
	}
	return err
}
