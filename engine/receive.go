package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// Receiving. Staged envelopes come in through stage (durable before the
// relay's leases are released) and leave through processStaged, which
// prepares one plan per row (prepare.go) and applies a page of them in one
// transaction; only after that commit do the session copies become live,
// the ACKs and recovery requests go out and the events are emitted. Both
// are unexported: only the loop (Sync) runs them, in that order, so that no
// caller can run the receive steps out of order (tests reach them through
// export_test.go).

// stage writes leased envelopes, complete and unparsed, to the durable
// staging area. Only after it returns may their leases be released at the
// relay.
func (c *Client) stage(ctx context.Context, leased []Leased) ([]int64, error) {
	if len(leased) == 0 {
		return nil, nil
	}
	in := make([]StagedInput, len(leased))
	for i, l := range leased {
		in[i] = StagedInput{RelayRow: l.Row, Envelope: l.Envelope}
	}
	if err := c.fail("stage", "before-apply"); err != nil {
		return nil, err
	}
	r, err := c.store.Apply(ctx, Stage{Envelopes: in, At: c.cfg.Now()})
	if err != nil {
		return nil, fmt.Errorf("stage %d envelopes: %w", len(leased), err)
	}
	return r.Rows, nil
}

// processStaged processes the durable staging area in arrival order, in
// bounded pages, each page applied in one transaction (group commit) with every
// receive all-or-nothing on its own. A receive that fails rolls back
// entirely; its row is then quarantined (with the durable retirement, for a
// collision) so that it does not block later rows. It returns one result per
// processed row. After the commit it hands off the ACKs of repeated finalized
// messages and emits the events. With commit, each new delivery that
// CommitOnArrival would commit is committed in the transaction that
// receives it (CommitEffect).
func (c *Client) processStaged(ctx context.Context, commit bool) ([]ReceiveResult, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	var results []ReceiveResult
	var after int64
	holds := newHoldState()
	for {
		rows, err := c.store.Staged(ctx, after, c.cfg.BatchSize)
		if err != nil {
			return results, fmt.Errorf("read inbox: %w", err)
		}
		if len(rows) == 0 {
			return results, c.forwardRosterChanges(ctx, results)
		}
		after = rows[len(rows)-1].Row
		before := holds.clone()
		rs, err := c.processRows(ctx, rows, commit, holds)
		var late *afterApplyError
		if errors.As(err, &late) {
			// The page committed; what failed came after (an ACK hand-off
			// cancelled, a failpoint): report what was done.
			return append(results, rs...), late.err
		}
		if err != nil && len(rows) > 1 {
			// The batch as a whole failed: nothing of it applied. Prepare
			// each row again, alone, from durable state.
			rs, holds = nil, before
			for _, row := range rows {
				one, err := c.processRows(ctx, []StagedEnvelope{row}, commit, holds)
				rs = append(rs, one...)
				if err != nil {
					return append(results, rs...), err
				}
			}
		} else if err != nil {
			return results, err
		}
		results = append(results, rs...)
	}
}

// transient reports whether a failure to process a staged row is this
// device's own (the store, a cancellation, a closed client, an injected
// failure): the row then stays staged and is processed again. Any other
// failure, whatever the envelope made the engine do, is a verdict on the
// row: no input may stop the rows after it (SPEC 6, "No input stops the
// receive loop").
func transient(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrClosed) || errors.Is(err, ErrStorage) || errors.Is(err, ErrStorageFull) ||
		errors.Is(err, ErrProfileOpen) || errors.Is(err, ErrInjected)
}

// processRows prepares a page of staged rows and applies their plans in one
// transaction; only then does it report them (finishRows). A row whose
// preparation fails for a reason that is not transient is dropped to
// quarantine with that reason, and the page is prepared again without it;
// a single row whose plan the store refuses for such a reason likewise,
// but for a sent copy the store found under a taken ID (ErrCopyIDTaken):
// that row is prepared again as a refused copy, acknowledged with nothing
// stored, as the engine's own check refuses one, so that its sibling's
// lane ends.
func (c *Client) processRows(ctx context.Context, rows []StagedEnvelope, commit bool, holds *holdState) ([]ReceiveResult, error) {
	dropped := make(map[int64]error)
	taken := make(map[int64]bool)
	for attempt := 0; ; attempt++ {
		pageHolds := holds.clone()
		preps, work, err := c.preparePage(ctx, rows, commit, pageHolds, dropped, taken)
		if err != nil {
			return nil, err
		}
		if len(preps) == 0 {
			*holds = *pageHolds
			return nil, nil
		}
		plans := make([]Plan, len(preps))
		for i, p := range preps {
			plans[i] = p.plan
		}
		receipts, err := c.applyWork(ctx, work, plans)
		if err != nil {
			c.refundRecoveries(preps)
			if len(rows) == 1 && !transient(err) && dropped[rows[0].Row] == nil && attempt < 2 {
				if errors.Is(err, ErrCopyIDTaken) && !taken[rows[0].Row] {
					taken[rows[0].Row] = true
					continue
				}
				dropped[rows[0].Row] = fmt.Errorf("store refused its receive: %w", err)
				continue
			}
			return nil, fmt.Errorf("apply %d receives: %w", len(plans), err)
		}
		*holds = *pageHolds
		return c.finishRows(ctx, preps, plans, receipts)
	}
}

// preparePage prepares one plan per row of a page (none for a held row),
// with the drops the hold bounds add. A row in dropped is dropped with its
// reason; a row whose preparation fails for a reason that is not transient
// joins dropped and the page is prepared again from the start, so that
// nothing the failed row began is in the batch. A sent copy of a row in
// taken is refused (ErrCopyIDTaken) whatever the engine's check finds.
func (c *Client) preparePage(ctx context.Context, rows []StagedEnvelope, commit bool, holds *holdState, dropped map[int64]error, taken map[int64]bool) ([]prepared, map[Address]*peerState, error) {
restart:
	for {
		bs := newBatchState()
		bs.commit, bs.takenRows = commit, taken
		h := holds.clone()
		preps := make([]prepared, 0, len(rows))
		for _, row := range rows {
			if why, ok := dropped[row.Row]; ok {
				_, sender, _ := c.openEnvelope(row)
				preps = append(preps, dropRow(row, c.cfg.Now(), sender, wire.LogicalID{}, why))
				continue
			}
			p, err := c.prepareReceive(ctx, bs, row)
			if err != nil {
				for peer := range bs.work {
					c.forget(peer)
				}
				c.refundRecoveries(preps)
				if transient(err) {
					// Not a verdict on the envelope: stop here; the row
					// stays staged.
					return nil, nil, err
				}
				dropped[row.Row] = err
				continue restart
			}
			if p.plan == nil {
				if p.held != nil {
					for _, d := range h.add(*p.held) {
						preps = append(preps, dropHeld(d, c.cfg.Now()))
					}
				}
				continue // held: the row stays staged
			}
			preps = append(preps, p)
		}
		acks, err := c.chainAckPlans(bs)
		if err == nil {
			var needs []prepared
			needs, err = c.needChainPlans(bs)
			acks = append(acks, needs...)
		}
		if err != nil {
			for peer := range bs.work {
				c.forget(peer)
			}
			c.refundRecoveries(preps)
			return nil, nil, err
		}
		*holds = *h
		return append(preps, acks...), bs.work, nil
	}
}

// refundRecoveries gives back the slots of the recovery requests of a page
// that did not commit, so that each failure is answered when its row is
// processed again.
func (c *Client) refundRecoveries(preps []prepared) {
	for _, p := range preps {
		c.refundRecovery(p.ticket)
	}
}

// finishRows does what follows the commit of a page of receives: it records
// the session resets, hands off the ACKs and recovery requests the page
// produced, and emits one EventReceived per row with its result. Any
// failure here is an *afterApplyError.
func (c *Client) finishRows(ctx context.Context, preps []prepared, plans []Plan, receipts []Receipt) ([]ReceiveResult, error) {
	for _, p := range preps {
		if p.result.Kind == ResultSessionReset {
			c.noteReset(p.result.Sender)
		}
	}
	for _, p := range plans {
		// The cache may hold the peers a group state pinned with no pin:
		// they are read again (groupstate.go).
		if r, ok := p.(Receive); ok {
			if e, ok := r.Effect.(GroupStateEffect); ok {
				for _, pin := range e.Pins {
					if a, err := ParseAddress(pin.Address); err == nil {
						c.forget(a)
					}
				}
				for _, a := range e.PinsKept {
					c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "group-state", Peer: r.Peer,
						Err: fmt.Errorf("group %x: pin of %s: %w", e.Group.ID[:], a, ErrGroupStatePinKept)})
				}
			}
		}
	}
	for _, p := range plans {
		if r, ok := p.(Receive); ok {
			if e, ok := r.Effect.(CommitEffect); ok && len(e.Tell) > 0 {
				c.wantLanesPumped() // an arrival commit's decision lanes
				break
			}
			if e, ok := r.Effect.(RosterEffect); ok && len(e.Forward) > 0 {
				c.wantLanesPumped() // a roster change forwarded to siblings
				break
			}
			if e, ok := r.Effect.(DecisionEffect); ok && len(e.Answer) > 0 {
				c.wantLanesPumped() // a commit answering a sibling's discard
				break
			}
		}
	}
	if err := c.fail(plans[0].Kind(), "after-swap"); err != nil {
		return nil, &afterApplyError{err}
	}
	evicted := 0
	for _, r := range receipts {
		evicted += r.Evicted
		c.reportUnforwarded(r.Unforwarded)
	}
	if evicted > 0 {
		c.emit(Event{Kind: EventQuarantineEvicted, At: c.cfg.Now(), Count: evicted})
	}
	sent, asked, handErr := c.handOffReplies(ctx, plans[0].Kind(), preps)
	// The cumulative ACKs (ChainAck) answer rows of the page: whether each
	// went is its rows' AckSent. They are no rows and have no results.
	var chainSent map[inboundKey]bool
	for i, p := range preps {
		if ca, ok := p.plan.(ChainAck); ok {
			if chainSent == nil {
				chainSent = make(map[inboundKey]bool)
			}
			for _, id := range ca.IDs {
				chainSent[inboundKey{ca.Peer, id}] = sent[i]
			}
		}
	}
	decidedElsewhere := c.keptFor(ctx, preps)
	results := make([]ReceiveResult, 0, len(preps))
	for i, p := range preps {
		if _, ok := p.plan.(ChainAck); ok {
			continue
		}
		if _, ok := p.plan.(NeedChainAsk); ok {
			continue // no row of its own: it asks for the chain of a held one
		}
		res := p.result
		if res.Kind == ResultAcknowledgement {
			res.Cleared, res.Acked = receipts[i].Cleared, receipts[i].Acked
		}
		if p.ack != nil {
			res.AckSent = sent[i]
		}
		if res.ackDeferred {
			res.AckSent = chainSent[inboundKey{res.Sender, res.ID}]
		}
		if p.recovery != nil && asked != nil {
			res.RecoveryRequested = asked[i]
		}
		if res.Kind == ResultDelivery && !res.committed && decidedElsewhere[inboundKey{res.Sender, res.ID}] {
			res.DecidedElsewhere = true
		}
		results = append(results, res)
		if err := c.fail(plans[i].Kind(), "before-event"); err != nil {
			return results, &afterApplyError{err}
		}
		r := res
		if isChainAcks(receivePlanEffect(plans[i])) {
			// One event per lane it ended, as per-message ACKs give.
			for _, id := range res.Acked {
				one := res
				one.ID, one.Acked = id, nil
				c.emit(Event{Kind: EventReceived, At: c.cfg.Now(), Peer: res.Sender, ID: id, Result: &one, marker: receipts[i].Marker})
			}
			if len(res.Acked) == 0 {
				c.emit(Event{Kind: EventReceived, At: c.cfg.Now(), Peer: res.Sender, ID: res.ID, Result: &r, marker: receipts[i].Marker})
			}
			continue
		}
		if res.committed {
			// One receipt, two events: the delivery, then its commit (the
			// store raised the marker once for each).
			c.emit(Event{Kind: EventReceived, At: c.cfg.Now(), Peer: res.Sender, ID: res.ID, Result: &r, marker: receipts[i].Marker - 1})
			c.emit(Event{Kind: EventFinalized, At: c.cfg.Now(), Peer: res.Sender, ID: res.ID, Outcome: OutcomeCommitted, AckSent: res.AckSent, marker: receipts[i].Marker})
			continue
		}
		c.emit(Event{Kind: EventReceived, At: c.cfg.Now(), Peer: res.Sender, ID: res.ID, Result: &r, marker: receipts[i].Marker})
		if res.opened {
			c.emit(Event{Kind: EventRequest, At: c.cfg.Now(), Peer: res.Sender})
		}
	}
	if handErr != nil {
		return results, &afterApplyError{handErr}
	}
	return results, nil
}

// handOffReplies hands off what a committed page answers its senders with:
// the ACKs first, then, if they all went, the recovery requests. A request
// that did not go out gives its slot back. sent and asked say, per row,
// what went; asked is nil when the ACKs failed.
func (c *Client) handOffReplies(ctx context.Context, kind string, preps []prepared) (sent, asked []bool, err error) {
	acks := make([]*Outgoing, len(preps))
	for i, p := range preps {
		acks[i] = p.ack
	}
	// A cancelled hand-off leaves the rest of the ACKs unsent (the peer's
	// next retry brings them); the results and events still go out.
	sent, err = c.sendAcks(ctx, kind, acks)
	if err == nil {
		recs := make([]*Outgoing, len(preps))
		for i, p := range preps {
			recs[i] = p.recovery
		}
		asked, err = c.handOffOutgoing(ctx, kind, HandoffRecovery, recs)
	}
	for i, p := range preps {
		if p.recovery != nil && (asked == nil || !asked[i]) {
			c.refundRecovery(p.ticket)
		}
	}
	return sent, asked, err
}

// afterApplyError is a failure after a page of receives was applied: the
// page must not be prepared again.
type afterApplyError struct{ err error }

func (e *afterApplyError) Error() string { return e.err.Error() }
func (e *afterApplyError) Unwrap() error { return e.err }
