package engine

import (
	"context"
	"errors"
	"fmt"
)

// Receiving. Staged envelopes come in through Stage (durable before the
// relay's leases are acknowledged) and leave through ProcessStaged, which
// prepares one plan per row (prepare.go) and applies a page of them in one
// transaction; only after that commit do the session copies become live,
// the ACKs and recovery requests go out and the events are emitted.

// Stage writes leased envelopes, complete and unparsed, to the durable staging area.
// Only after it returns may their leases be acknowledged to the relay.
func (c *Client) Stage(ctx context.Context, leased []Leased) ([]int64, error) {
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

// ProcessStaged processes the durable staging area in arrival order, in bounded
// pages, each page applied in one transaction (group commit) with every
// receive all-or-nothing on its own. A receive that fails rolls back
// entirely; its row is then quarantined (with the durable retirement, for a
// collision) so that it does not block later rows. It returns one result per
// processed row. After the commit it hands off the ACKs of repeated finalized
// messages and emits the events.
func (c *Client) ProcessStaged(ctx context.Context) ([]ReceiveResult, error) {
	return c.processStaged(ctx, false)
}

// processStaged is ProcessStaged; with commit, each new delivery that
// CommitOnArrival would commit is committed in the transaction that
// receives it (CommitEffect).
func (c *Client) processStaged(ctx context.Context, commit bool) ([]ReceiveResult, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	var results []ReceiveResult
	var after int64
	for {
		rows, err := c.store.Staged(ctx, after, c.cfg.BatchSize)
		if err != nil {
			return results, fmt.Errorf("read inbox: %w", err)
		}
		if len(rows) == 0 {
			return results, c.forwardRosterChanges(ctx, results)
		}
		after = rows[len(rows)-1].Row
		rs, err := c.processRows(ctx, rows, commit)
		var late *afterCommitError
		if errors.As(err, &late) {
			// The page committed; what failed came after (an ACK hand-off
			// cancelled, a failpoint): report what was done.
			return append(results, rs...), late.err
		}
		if err != nil && len(rows) > 1 {
			// The batch as a whole failed: nothing of it applied. Prepare
			// each row again, alone, from durable state.
			rs = nil
			for _, row := range rows {
				one, err := c.processRows(ctx, []StagedEnvelope{row}, commit)
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

// processRows prepares a page of staged rows and applies their plans in one
// transaction; only then does it report them (finishRows).
func (c *Client) processRows(ctx context.Context, rows []StagedEnvelope, commit bool) ([]ReceiveResult, error) {
	bs := newBatchState()
	bs.commit = commit
	preps := make([]prepared, 0, len(rows))
	for _, row := range rows {
		p, err := c.prepareReceive(ctx, bs, row)
		if err != nil {
			// Not a verdict on the envelope (storage, cancellation): stop
			// here; the row stays staged.
			for peer := range bs.work {
				c.forget(peer)
			}
			c.refundRecoveries(preps)
			return nil, err
		}
		if p.plan == nil {
			continue // held (a group frame naming a generation not seen yet): the row stays staged
		}
		preps = append(preps, p)
	}
	if len(preps) == 0 {
		return nil, nil
	}
	plans := make([]Plan, len(preps))
	for i, p := range preps {
		plans[i] = p.plan
	}
	receipts, err := c.commitWork(ctx, bs.work, plans)
	if err != nil {
		c.refundRecoveries(preps)
		return nil, fmt.Errorf("apply %d receives: %w", len(plans), err)
	}
	return c.finishRows(ctx, preps, plans, receipts)
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
// failure here is an *afterCommitError.
func (c *Client) finishRows(ctx context.Context, preps []prepared, plans []Plan, receipts []Receipt) ([]ReceiveResult, error) {
	for _, p := range preps {
		if p.result.Kind == ResultSessionReset {
			c.noteReset(p.result.Sender)
		}
	}
	if err := c.fail(plans[0].Kind(), "after-swap"); err != nil {
		return nil, &afterCommitError{err}
	}
	evicted := 0
	for _, r := range receipts {
		evicted += r.Evicted
	}
	if evicted > 0 {
		c.emit(Event{Kind: EventQuarantineEvicted, At: c.cfg.Now(), Count: evicted})
	}
	sent, asked, handErr := c.handOffReplies(ctx, plans[0].Kind(), preps)
	results := make([]ReceiveResult, len(preps))
	for i, p := range preps {
		res := p.result
		if res.Kind == ResultAcknowledgement {
			res.Cleared = receipts[i].Cleared
		}
		if p.ack != nil {
			res.AckSent = sent[i]
		}
		if p.recovery != nil && asked != nil {
			res.RecoveryRequested = asked[i]
		}
		results[i] = res
		if err := c.fail(plans[i].Kind(), "before-event"); err != nil {
			return results[:i+1], &afterCommitError{err}
		}
		r := res
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
		return results, &afterCommitError{handErr}
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

// afterCommitError is a failure after a page of receives committed: the
// page must not be prepared again.
type afterCommitError struct{ err error }

func (e *afterCommitError) Error() string { return e.err.Error() }
func (e *afterCommitError) Unwrap() error { return e.err }
