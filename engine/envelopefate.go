package engine

import (
	"context"
	"errors"
	"time"

	"github.com/parley-chat/parley/wire"
)

// What the relay says of the envelopes this device sent (EnvelopeNews), and
// the retry rule that follows from it: with a relay that reports envelope
// status, a message waiting in a mailbox is not resent on a short timer.

// Fallback timers of the retry policy with a relay that reports envelope
// status. A status is best effort (a device offline when it was pushed
// never hears it), so each fate has a timer after which the loop resends
// anyway.
const (
	// UnreportedRetryMin is the first wait for an envelope never reported
	// taken; it doubles up to UnreportedRetryMax.
	UnreportedRetryMin = time.Hour
	// UnreportedRetryMax bounds the wait for an envelope never reported
	// taken.
	UnreportedRetryMax = 24 * time.Hour
	// TakenRetryAfter is the wait for an envelope the recipient's device
	// took but has not acknowledged.
	TakenRetryAfter = 10 * time.Minute
	// ReportRetryFloor is the shortest time between a message's hand-off
	// and the resend that a report of its envelope brings forward: after
	// any report a message goes again at most six times an hour, so a relay
	// that answers every envelope "expired" gets a trickle, not a storm of
	// encryptions, transactions and submits.
	ReportRetryFloor = 10 * time.Minute
	// maxTrackedEnvelopes bounds the envelopes whose peer the loop
	// remembers, so that a long session does not grow it without end.
	maxTrackedEnvelopes = 4096
)

// EnvelopeFate is what the relay last said of the latest envelope sent to a
// peer.
type EnvelopeFate uint8

// Envelope fates.
const (
	// FateUnreported: nothing heard yet; the envelope may still wait in
	// the recipient's mailbox.
	FateUnreported EnvelopeFate = iota
	// FateTaken: the recipient's device took the envelope (it is on the
	// device) but no acknowledgement came back yet.
	FateTaken
	// FateExpired: the relay dropped the envelope unread; it is lost.
	FateExpired
)

// DecideRetryWait returns how long after an automatic retry (or a send) the
// next one waits, given the wait used last time (prev, zero at first).
// Without envelope status it is today's backoff: doubling from RetryMin
// to RetryMax (the caller adds jitter). With it, a lost envelope is resent
// at once, a taken one after TakenRetryAfter, and one never reported taken
// after a wait that doubles from UnreportedRetryMin to UnreportedRetryMax.
// Reconnections and convergences make a peer due at once in either case;
// they are not decided here.
func DecideRetryWait(statusSupported bool, fate EnvelopeFate, prev time.Duration, p Policy) time.Duration {
	p = p.withDefaults()
	switch {
	case !statusSupported:
		return min(max(prev*2, p.RetryMin), p.RetryMax)
	case fate == FateExpired:
		return 0
	case fate == FateTaken:
		return TakenRetryAfter
	default:
		return min(max(prev*2, UnreportedRetryMin), UnreportedRetryMax)
	}
}

// DecideExpiredRetry says when a message whose envelope the relay reports
// expired goes again, given when that envelope was handed off (sent), now
// and the envelope lifetime the relay announced (zero when it announced
// none). An envelope younger than the announced lifetime cannot have
// expired: the report is not believed (false) and changes nothing. A
// believed one makes the message due at once, but never sooner than
// ReportRetryFloor after the hand-off.
func DecideExpiredRetry(sent, now time.Time, lifetime time.Duration) (time.Time, bool) {
	if lifetime > 0 && now.Sub(sent) < lifetime {
		return time.Time{}, false
	}
	if floor := sent.Add(ReportRetryFloor); now.Before(floor) {
		return floor, true
	}
	return now, true
}

// envelopeStatusSupported reports whether the relay of the current
// connection reports envelope status.
func (c *Client) envelopeStatusSupported() bool {
	fs, known := c.relay.RelayFeatures()
	return known && fs.Has(wire.FeatureEnvelopeStatus)
}

// envelopeLifetime returns the envelope lifetime the relay of the current
// connection announced; zero when it announced none.
func (c *Client) envelopeLifetime() time.Duration {
	if d, known := c.relay.EnvelopeLifetime(); known {
		return d
	}
	return 0
}

// noteHandedOff remembers the peer of each message envelope the relay
// accepted, so that a status about it finds its peer's schedule, and brings
// a peer whose envelope the relay did not accept (it was down, did not know
// the recipient yet, had the mailbox full) within the policy's short
// backoff: nothing waits in a mailbox then, so the long waits that envelope
// status sets for one that does never apply to it.
func (c *Client) noteHandedOff(envs []wire.Envelope, ids []wire.LogicalID, errs []error) {
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	now := time.Now()
	for i, env := range envs {
		peer, err := ParseAddress(env.Recipient)
		if err != nil {
			continue
		}
		if errs[i] != nil {
			rs := c.retryFor(peer)
			rs.refused = min(max(rs.refused*2, c.policy.RetryMin), c.policy.RetryMax)
			if at := now.Add(rs.refused); rs.at.IsZero() || at.Before(rs.at) {
				rs.at = at
			}
			continue
		}
		if rs := c.retries[peer]; rs != nil {
			rs.refused = 0
		}
		if len(c.envelopes) >= maxTrackedEnvelopes {
			clear(c.envelopes)
		}
		c.envelopes[env.ID] = sentEnvelope{peer: peer, id: ids[i], at: now}
		// A new envelope: nothing is known of it yet.
		if rs := c.retries[peer]; rs != nil {
			rs.fate = FateUnreported
		}
	}
}

// sentEnvelope is what the loop remembers of a message envelope it handed
// off: the peer it went to, the message it carried and when (the wall
// clock, as the schedules).
type sentEnvelope struct {
	peer Address
	id   wire.LogicalID
	at   time.Time
}

// takenRecordDelay is how long a taken envelope waits before it is recorded
// in the attempt log: a message acknowledged within it (most are) needs no
// record of its stay on the device, and no durable transaction of its own.
const takenRecordDelay = 500 * time.Millisecond

// noteEnvelopeStatuses drains what the relay said of sent envelopes and
// moves the schedules of their peers: a taken envelope waits
// TakenRetryAfter for its acknowledgement (and is recorded in the attempt
// log after takenRecordDelay, so that a message still pending shows as on
// the device), a lost one is due as DecideExpiredRetry says. It returns
// when the next taken envelope is due to be recorded (false when none
// waits).
func (c *Client) noteEnvelopeStatuses(ctx context.Context, now time.Time) (time.Time, bool) {
	sts := c.relay.EnvelopeStatuses()
	lifetime := c.envelopeLifetime()
	// A relay that passes statuses on without announcing them (the demo's)
	// gets them shown, not obeyed: the schedule keeps its plain backoff.
	obeyed := c.envelopeStatusSupported()
	c.loopMu.Lock()
	for _, st := range sts {
		sent, ok := c.envelopes[st.EnvelopeID]
		if !ok {
			continue
		}
		rs := c.retryFor(sent.peer)
		switch st.State {
		case wire.EnvelopeTaken:
			if obeyed {
				rs.fate = FateTaken
				rs.at = now.Add(DecideRetryWait(true, FateTaken, rs.backoff, c.policy))
			}
			if len(c.taken) < maxTrackedEnvelopes {
				c.taken = append(c.taken, takenEnvelope{sent, st.EnvelopeID, now.Add(takenRecordDelay)})
			}
		case wire.EnvelopeExpired:
			if !obeyed {
				continue
			}
			at, believed := DecideExpiredRetry(sent.at, now, lifetime)
			if !believed {
				continue // a relay that says so early is not heard
			}
			rs.fate = FateExpired
			if rs.at.IsZero() || at.Before(rs.at) {
				rs.at = at
			}
		}
	}
	k := 0
	for k < len(c.taken) && !now.Before(c.taken[k].due) {
		k++
	}
	due := append([]takenEnvelope(nil), c.taken[:k]...)
	c.taken = append(c.taken[:0], c.taken[k:]...)
	var next time.Time
	if len(c.taken) > 0 {
		next = c.taken[0].due
	}
	c.loopMu.Unlock()
	c.recordTaken(ctx, due)
	return next, !next.IsZero()
}

type takenEnvelope struct {
	sentEnvelope
	env wire.EnvelopeID
	due time.Time // when it is recorded
}

// recordTaken records in the attempt log, in one transaction, each taken
// envelope that is the latest attempt of a message still pending. A status
// for an older attempt, or for a message no longer pending, records
// nothing: the message's place is then what its latest envelope says.
func (c *Client) recordTaken(ctx context.Context, taken []takenEnvelope) {
	if len(taken) == 0 {
		return
	}
	var plans []Plan
	var marks []takenEnvelope
	seen := make(map[wire.EnvelopeID]bool, len(taken))
	for _, t := range taken {
		if ctx.Err() != nil {
			return
		}
		if seen[t.env] {
			continue
		}
		seen[t.env] = true
		if _, err := c.store.Outbound(ctx, t.peer, t.id); err != nil {
			continue // acknowledged meanwhile, or gone
		}
		as, err := c.store.Attempts(ctx, t.peer, t.id)
		if err != nil || len(as) == 0 {
			continue
		}
		if last := as[len(as)-1]; last.Envelope == t.env && last.TakenAt.IsZero() {
			plans = append(plans, MarkTaken{Peer: t.peer, ID: t.id, N: last.N, At: c.cfg.Now()})
			marks = append(marks, t)
		}
	}
	if len(plans) == 0 {
		return
	}
	rs, err := c.applyAll(ctx, plans)
	var refused *BatchError
	if err != nil && len(plans) > 1 && errors.As(err, &refused) {
		// One plan's refusal (a message acknowledged meanwhile) undoes
		// the batch: record the others one by one. A failure of the
		// transaction itself is not retried plan by plan.
		rs = make([]Receipt, len(plans))
		for i, p := range plans {
			r, err := c.applyAll(ctx, []Plan{p})
			if err != nil {
				marks[i].env = wire.EnvelopeID{}
				continue
			}
			rs[i] = r[0]
		}
	} else if err != nil {
		return
	}
	for i, t := range marks {
		if t.env != (wire.EnvelopeID{}) {
			c.emit(Event{Kind: EventTaken, At: c.cfg.Now(), Peer: t.peer, ID: t.id, marker: rs[i].Marker})
		}
	}
}
