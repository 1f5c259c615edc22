package engine

import (
	"context"
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

// envelopeStatusSupported reports whether the relay of the current
// connection reports envelope status.
func (c *Client) envelopeStatusSupported() bool {
	n, ok := c.relay.(EnvelopeNews)
	if !ok {
		return false
	}
	fs, known := n.RelayFeatures()
	return known && fs.Has(wire.FeatureEnvelopeStatus)
}

// noteHandedOff remembers the peer of each message envelope the relay
// accepted, so that a status about it finds its peer's schedule, and brings
// a peer whose envelope the relay did not accept (it was down, did not know
// the recipient yet, had the mailbox full) within the policy's short
// backoff: nothing waits in a mailbox then, so the long waits that envelope
// status sets for one that does never apply to it.
func (c *Client) noteHandedOff(envs []wire.Envelope, errs []error) {
	_, news := c.relay.(EnvelopeNews)
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
		if !news {
			continue
		}
		if len(c.envelopes) >= maxTrackedEnvelopes {
			clear(c.envelopes)
		}
		c.envelopes[env.ID] = peer
		// A new envelope: nothing is known of it yet.
		if rs := c.retries[peer]; rs != nil {
			rs.fate = FateUnreported
		}
	}
}

// noteEnvelopeStatuses drains what the relay said of sent envelopes and
// moves the schedules of their peers: a taken envelope waits
// TakenRetryAfter for its acknowledgement (and is recorded in the attempt
// log, so that the message shows as on the device), a lost one is due at
// once.
func (c *Client) noteEnvelopeStatuses(ctx context.Context, now time.Time) {
	n, ok := c.relay.(EnvelopeNews)
	if !ok {
		return
	}
	sts := n.EnvelopeStatuses()
	if len(sts) == 0 {
		return
	}
	var taken []takenEnvelope
	c.loopMu.Lock()
	for _, st := range sts {
		peer, ok := c.envelopes[st.EnvelopeID]
		if !ok {
			continue
		}
		rs := c.retryFor(peer)
		switch st.State {
		case wire.EnvelopeTaken:
			rs.fate = FateTaken
			rs.at = now.Add(DecideRetryWait(true, FateTaken, rs.backoff, c.policy))
			taken = append(taken, takenEnvelope{peer, st.EnvelopeID})
		case wire.EnvelopeExpired:
			rs.fate = FateExpired
			rs.at = now
		}
	}
	c.loopMu.Unlock()
	for _, t := range taken {
		if ctx.Err() != nil {
			return
		}
		c.recordTaken(ctx, t.peer, t.env)
	}
}

type takenEnvelope struct {
	peer Address
	env  wire.EnvelopeID
}

// recordTaken finds, through the attempt log, the pending message to peer
// whose latest attempt is env, and records it taken. A status for an older
// attempt, or for a message no longer pending, records nothing: the
// message's place is then what its latest envelope says.
func (c *Client) recordTaken(ctx context.Context, peer Address, env wire.EnvelopeID) {
	for after := int64(0); ; {
		page, err := c.store.PendingOutbound(ctx, PageQuery{After: after, Limit: c.cfg.BatchSize})
		if err != nil || len(page) == 0 {
			return
		}
		for _, m := range page {
			if m.Recipient != peer {
				continue
			}
			as, err := c.store.Attempts(ctx, peer, m.ID)
			if err != nil || len(as) == 0 || as[len(as)-1].Envelope != env {
				continue
			}
			last := as[len(as)-1]
			rs, err := c.applyAll(ctx, []Plan{MarkTaken{Peer: peer, ID: m.ID, N: last.N, At: c.cfg.Now()}})
			if err == nil {
				c.emit(Event{Kind: EventTaken, At: c.cfg.Now(), Peer: peer, ID: m.ID, marker: rs[0].Marker})
			}
			return
		}
		after = page[len(page)-1].Seq
	}
}
