package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Finalizing. A pending received message ends as a finalized record,
// committed or discarded by the user (or by the commit policy), in one
// transaction with its history entry; only then does its ACK go out. Prune
// deletes finalized records once the retention policy says so.

// FinalizeRequest names one pending received message to commit or discard.
type FinalizeRequest struct {
	Sender  Address
	ID      wire.LogicalID
	Outcome Outcome
	Reason  DiscardReason // for a discard; DiscardRejected when unset
	// fetched is set by FetchFile alone: a file is committed once it was
	// downloaded, verified and saved (ErrFileNotFetched otherwise).
	fetched bool
	// decidedOn is set when another device of this person decided
	// (decision.go): this device tells no one in turn.
	decidedOn *Address
	// held is set for a discard the engine makes by itself in the hold
	// pass (settleActions: the hold is full, the target was deleted or
	// never came). It rests on this device's state, not on the person's
	// choice, so no other device of the person is told.
	held bool
	// own is set for a sibling's own group action the hold pass commits
	// (settleActions): committed on every device of the person as it
	// applies there, it is nobody's decision to tell.
	own bool
}

// FinalizeResult reports one finalized message: whether its ACK was handed
// off, or Err when it was not finalized.
type FinalizeResult struct {
	AckSent bool
	Err     error
	// Already is set when the message had been finalized with the asked
	// outcome before: nothing changed but its ACK, sent again (AckSent
	// says whether it went). Asking for the other outcome is refused with
	// ErrAlreadyCommitted or ErrAlreadyDiscarded.
	Already bool
	// Action is what a committed action did; Discarded the reason an
	// action asked to be committed was discarded instead (DecideAction).
	Action    *AppliedAction
	Discarded DiscardReason
}

// Commit finalizes a pending received message as committed: it becomes a
// finalized record and enters the history in one transaction, so the
// application's effect happens once. Then the ACK goes out on the existing
// session only; ackSent is false when that failed (the sender's next retry
// triggers a new ACK). Committing a message committed before sends its ACK
// again and changes nothing else (FinalizeBatch says so in Already); one
// discarded before is refused with ErrAlreadyDiscarded.
func (c *Client) Commit(ctx context.Context, sender Address, id wire.LogicalID) (bool, error) {
	return c.finalizeOne(ctx, FinalizeRequest{Sender: sender, ID: id, Outcome: OutcomeCommitted})
}

// Discard finalizes a pending received message as discarded: the body is
// deleted, the reason stays local, and the ACK goes out as for a commit.
// As for Commit, a second discard sends the ACK again, and a message
// committed before is refused with ErrAlreadyCommitted.
func (c *Client) Discard(ctx context.Context, sender Address, id wire.LogicalID, reason DiscardReason) (bool, error) {
	return c.finalizeOne(ctx, FinalizeRequest{Sender: sender, ID: id, Outcome: OutcomeDiscarded, Reason: reason})
}

func (c *Client) finalizeOne(ctx context.Context, r FinalizeRequest) (bool, error) {
	res, err := c.FinalizeBatch(ctx, []FinalizeRequest{r})
	if err != nil {
		return false, err
	}
	return res[0].AckSent, res[0].Err
}

// FinalizeBatch commits or discards several pending received messages in one
// transaction, each on its own, then hands off their ACKs in order. A
// message finalized before with the asked outcome is acknowledged again
// (Already, an ack-again plan in the same transaction); with the other
// outcome it is refused (ErrAlreadyCommitted, ErrAlreadyDiscarded).
//
// A finalization that told this person's other devices (decision.go)
// stored lanes to them: a running loop's pump hands them off; without one,
// they are pumped here, after the ACKs.
func (c *Client) FinalizeBatch(ctx context.Context, reqs []FinalizeRequest) ([]FinalizeResult, error) {
	res, err := c.finalizeBatch(ctx, reqs, nil, true)
	if err == nil {
		if perr := c.pumpStoredLanes(ctx); perr != nil && ctx.Err() == nil {
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "pump", Err: perr})
		}
	}
	return res, err
}

// finalizeBatch is FinalizeBatch with the pending records the caller knows
// already (the deliveries of this round): those are not read back. The
// plan still checks the stored digest, so a record finalized meanwhile
// fails its plan as it would have. again says whether a message finalized
// before is acknowledged again (a person asked) or not pending (the
// commit policy and a file's fetch, which never finalize twice).
func (c *Client) finalizeBatch(ctx context.Context, reqs []FinalizeRequest, known map[inboundKey]*InboundMessage, again bool) ([]FinalizeResult, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	results := make([]FinalizeResult, len(reqs))
	work := make(map[Address]*peerState)
	var plans []Plan
	var planOf []int
	seen := make(map[inboundKey]bool)
	copies := make(map[copyIDKey]bool)  // the own entries the batch's sent copies make
	var declined []inboundKey           // discarded files, whose partial downloads go
	inRequest := make(map[Address]bool) // senders with an open request
	var kbs *batchState                 // the kept action decisions the batch's commits apply (keptForCommit)
	own, err := c.ownOtherDevices(ctx)
	if err != nil {
		return nil, err
	}
	for i, r := range reqs {
		key := inboundKey{r.Sender, r.ID}
		if seen[key] {
			results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, ErrNotPending)
			continue
		}
		m := known[key]
		if m == nil {
			// A delivery of this round (known) is never a request's.
			open, known := inRequest[r.Sender]
			if !known {
				var err error
				if open, err = c.requestOpen(ctx, r.Sender); err != nil {
					return nil, err
				}
				inRequest[r.Sender] = open
			}
			if open {
				results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, ErrRequestPending)
				continue
			}
			stored, err := c.store.Inbound(ctx, r.Sender, r.ID)
			if errors.Is(err, ErrNotPending) && again {
				seen[key] = true
				p, err := c.finalizeAgain(ctx, work, r, &results[i])
				if err != nil {
					return nil, err
				}
				if p != nil {
					plans = append(plans, *p)
					planOf = append(planOf, i)
				}
				continue
			}
			if err != nil {
				results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, err)
				continue
			}
			m = &stored
		}
		if (again || r.decidedOn != nil) && m.CopyTo != "" {
			// A sibling's sent copy waiting for its target is the hold's:
			// neither a person nor a sibling's decision decides it (only
			// a hostile or buggy sibling sends one, and this device kept
			// it before such decisions were refused on hearing).
			results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, ErrHeldCopy)
			continue
		}
		if (again || r.decidedOn != nil) && m.Group != nil && waitsAsAction(m.Content) {
			// A sibling's own group action pending here waits for its
			// target: the person made it on that device, and the hold
			// commits it once the target is committed here (or the rules
			// discard it). A discard here would leave this device apart
			// from the one that sent it, for good.
			sib, err := c.ownSibling(ctx, r.Sender)
			if err != nil {
				return nil, err
			}
			if sib {
				results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, ErrHeldCopy)
				continue
			}
		}
		if r.Outcome == OutcomeCommitted && m.Content == wire.ContentFile && !r.fetched {
			results[i].Err = fmt.Errorf("commit %x from %s: %w", r.ID[:], r.Sender, ErrFileNotFetched)
			continue
		}
		asked := r.Outcome
		act, err := c.finalizingAction(ctx, m, &r, &results[i])
		if err != nil {
			return nil, err
		}
		if results[i].Err != nil {
			continue
		}
		if act != nil && m.CopyTo != "" {
			// Two siblings' copies of one ID in one batch: the first
			// makes the own entry; the second finds it only here, not
			// stored yet, and claims no authorship (ErrCopyIDTaken).
			// The hold's pass refuses such a pair before it asks
			// (settleActions) and runs before the kept decisions in a
			// round, so this is a second line for those callers, ahead
			// of the store's guard, which would fail the whole batch.
			k := copyIDKey{act.Peer, DirectionOut, r.ID}
			if copies[k] {
				r.Outcome, r.Reason, r.held, results[i].Discarded, act = OutcomeDiscarded, DiscardNotAuthor, true, DiscardNotAuthor, nil
			}
			copies[k] = true
		}
		seen[key] = true
		ps, err := c.working(ctx, work, r.Sender)
		if err != nil {
			return nil, err
		}
		p := Finalize{Sender: r.Sender, ID: r.ID, Digest: m.Digest, Outcome: r.Outcome, At: c.cfg.Now(), Arrived: m.ReceivedAt, Content: m.Content, Group: m.Group}
		if r.Outcome == OutcomeCommitted {
			p.Body = m.Body
			if f, ok := FileOf(m.Content, m.Body); ok {
				p.Body = fileHistoryBody(f) // as StoredFrame.HistoryBody: never a file's key
			}
			if act != nil {
				p.Body, p.Action = actionHistoryBody(wire.Action{Content: act.Content, Text: act.Text}), act
				// Kept for a catch-up and an answer (one to one or in a
				// group), which send neither a sibling's own message nor a
				// decision applied from another device.
				if m.CopyTo == "" && !r.own && r.decidedOn == nil && len(m.Body) <= wire.MaxDecisionActionSize {
					p.ActionBody = m.Body
				}
			}
			if m.CopyTo == "" && (m.Content == wire.ContentText || m.Content == 0 || m.Content == wire.ContentReply) {
				// A message some kept action decisions may wait for (its
				// target pending or absent, or discarded, when a
				// sibling's commit of the action came; one to one, its
				// sender's actions): those that apply now are taken back
				// with this commit.
				if kbs == nil {
					kbs = newBatchState()
				}
				if m.Group != nil {
					p.WithKept, err = c.keptForCommit(ctx, kbs, *m.Group, r.Sender, r.ID, m.ReceivedAt, p.At)
				} else {
					p.WithKept, err = c.keptForPeerCommit(ctx, kbs, r.Sender, r.ID, m.ReceivedAt, p.At)
				}
				if err != nil {
					return nil, err
				}
			}
			if m.CopyTo != "" {
				// A sibling's sent copy of an action: an own entry of the
				// conversation it names (actioncopy.go).
				to, err := ParseAddress(m.CopyTo)
				if err != nil {
					return nil, fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, err)
				}
				p.SentTo = &to
			}
		} else {
			p.Reason = r.Reason
			if p.Reason == DiscardNone {
				p.Reason = DiscardRejected
			}
			if m.Content == wire.ContentFile {
				declined = append(declined, key)
			}
			if p.Reason == DiscardTargetDiscarded {
				if p.KeepAction, err = c.keptActionOf(ctx, m); err != nil {
					return nil, err
				}
				if k := p.KeepAction; k != nil && k.On == (Address{}) && asked == OutcomeCommitted && r.decidedOn == nil && !r.held && !r.own {
					// The person's commit made here, which the rules
					// turned into a discard because its target is
					// discarded here: a sibling's commit of the target
					// can take that back, so the commit is kept with its
					// action as this device's, and the target's take-back
					// judges it again and applies it (as a sibling's
					// commit heard before the action is kept).
					k.On = c.self
				}
			}
		}
		if p.Session, p.Ack, err = c.prepareAck(ps, r.Sender, r.ID); err != nil {
			return nil, err
		}
		// A discard the engine made by its rules rests on this device's
		// state. The hold's pass tells no sibling of it. A commit the
		// rules turned into a discard (its target deleted here, its
		// window passed here) tells the siblings what the person chose,
		// a commit, without a body: each judges the action by its own
		// rules, and none asks the person again. One turned so because
		// its target is discarded here, kept with its action (above),
		// tells the commit with its action.
		tell := r.Outcome
		if r.Outcome == OutcomeDiscarded && r.Reason.ByEngine() {
			tell = asked
		}
		if p.DecidedOn = r.decidedOn; r.decidedOn == nil && !r.held && !r.own && !(tell == OutcomeDiscarded && r.Reason.ByEngine()) {
			var body []byte // the committed text travels with its decision
			var content wire.ContentType
			switch {
			case r.Outcome == OutcomeCommitted && m.Content == wire.ContentText && act == nil:
				body = append([]byte{}, m.Body...)
			case r.Outcome == OutcomeCommitted && act != nil && m.CopyTo == "":
				// An action, one-to-one or a group's, travels with its
				// decision (kind 18), as its content frame carried it.
				body, content = append([]byte{}, m.Body...), m.Content
			case p.KeepAction != nil && p.KeepAction.On == c.self:
				// The person's commit kept here for its discarded
				// target (above) travels with its action too: a sibling
				// whose copy is discarded for the same target keeps it
				// so, and applies it when the target is taken back there.
				body, content = append([]byte{}, m.Body...), m.Content
			}
			if p.Tell, err = c.tellLanes(ctx, own, r.Sender, r.ID, tell, content, body); err != nil {
				return nil, err
			}
			if r.Outcome == OutcomeCommitted && c.decisionsKept.Load() {
				// A sibling's discard may be kept for this message, told
				// to a device linked since that this device's list does
				// not name: the round brings the own list up to date
				// (learnOwnList), whose catch-up overrules it there.
				c.ownListDue.Store(true)
			}
		}
		plans = append(plans, p)
		planOf = append(planOf, i)
	}
	if len(plans) == 0 {
		return results, nil
	}
	receipts, err := c.applyWork(ctx, work, plans)
	if err != nil {
		return nil, fmt.Errorf("finalize: %w", err)
	}
	for _, p := range plans {
		if f, ok := p.(Finalize); ok && f.KeepAction != nil {
			// A commit kept with its action, perhaps with none heard
			// (made here, or a sibling's own group action): the next
			// pass reads the kept decisions again (mayKeepDecisions).
			c.decisionsDue.Store(true)
			break
		}
	}
	for _, p := range plans {
		if f, ok := p.(Finalize); ok && len(f.Tell) > 0 {
			c.wantLanesPumped()
			break
		}
	}
	for _, k := range declined {
		_ = c.DropPartial(k.peer, k.id) // best effort: a leftover is ciphertext whose key is gone
	}
	acks := make([]*Outgoing, len(plans))
	for k, p := range plans {
		switch p := p.(type) {
		case Finalize:
			acks[k] = p.Ack
		case AckAgain:
			acks[k] = &p.Ack
		}
	}
	// The finalizations are durable: a cancelled hand-off leaves the rest
	// of the ACKs unsent (ackSent false), never the commits unreported.
	sent, ackErr := c.sendAcks(ctx, plans[0].Kind(), acks)
	for k, p := range plans {
		i := planOf[k]
		results[i].AckSent = sent[k]
		if f, ok := p.(Finalize); ok {
			c.emit(Event{Kind: EventFinalized, At: c.cfg.Now(), Peer: f.Sender, ID: f.ID, Outcome: f.Outcome, AckSent: sent[k], marker: receipts[k].Marker})
		}
	}
	if ackErr != nil {
		return results, ackErr
	}
	return results, nil
}

// finalizeAgain answers a commit or discard of a message that is no longer
// pending: finalized before with the asked outcome, it is acknowledged
// again (res.Already, and the AckAgain plan of the ACK's session step,
// none when there is no session); with the other outcome it is refused;
// unknown, it is not pending.
func (c *Client) finalizeAgain(ctx context.Context, work map[Address]*peerState, r FinalizeRequest, res *FinalizeResult) (*Plan, error) {
	f, err := c.store.Finalized(ctx, r.Sender, r.ID)
	switch {
	case errors.Is(err, ErrNotPending):
		res.Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, ErrNotPending)
		return nil, nil
	case err != nil:
		res.Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, err)
		return nil, nil
	case f.Outcome != r.Outcome:
		refused := ErrAlreadyCommitted
		if f.Outcome == OutcomeDiscarded {
			refused = ErrAlreadyDiscarded
		}
		res.Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, refused)
		return nil, nil
	}
	res.Already = true
	ps, err := c.working(ctx, work, r.Sender)
	if err != nil {
		return nil, err
	}
	sw, ack, err := c.prepareAck(ps, r.Sender, r.ID)
	if err != nil || sw == nil {
		return nil, err
	}
	var p Plan = AckAgain{Sender: r.Sender, ID: r.ID, Outcome: f.Outcome, Session: *sw, Ack: *ack, At: c.cfg.Now()}
	return &p, nil
}

// Prune deletes finalized records older than olderThan. A retry of a pruned
// message by its sender would be delivered again.
func (c *Client) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	r, err := c.store.Apply(ctx, Prune{Before: c.cfg.Now().Add(-olderThan)})
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	return r.Pruned, nil
}
