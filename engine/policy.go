package engine

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/parley-chat/parley/wire"
)

// The loop's policies: what Run does on its own between rounds. The commit
// policy commits what a round delivered (commitByPolicy); automatic retry
// keeps a schedule per peer (retryState), moved by what the rounds receive
// and send (noteReceived, noteSent, noteConverged) and acted on by
// retryByPolicy.

// CommitPolicy says when the engine commits received messages on its own.
type CommitPolicy uint8

// Commit policies.
const (
	// CommitManual: only what the user commits or discards (the demo's
	// default).
	CommitManual CommitPolicy = iota
	// CommitOnRead: what the interface showed the user; the interface calls
	// Commit, the engine itself commits nothing (parley tui's default).
	CommitOnRead
	// CommitOnArrival: every delivery, in the round that delivered it.
	CommitOnArrival
)

var commitPolicyNames = [...]string{CommitManual: "manual", CommitOnRead: "on-read", CommitOnArrival: "auto"}

// String returns "manual", "on-read" or "auto".
func (p CommitPolicy) String() string {
	if int(p) < len(commitPolicyNames) {
		return commitPolicyNames[p]
	}
	return fmt.Sprintf("commit policy %d", uint8(p))
}

// ParseCommitPolicy reads "manual", "on-read" or "auto".
func ParseCommitPolicy(s string) (CommitPolicy, error) {
	for p, n := range commitPolicyNames {
		if n == s {
			return CommitPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("commit policy %q: want manual, on-read or auto", s)
}

// Policy is what the engine's loop does on its own.
type Policy struct {
	// Commit is the commit policy.
	Commit CommitPolicy
	// AutoRetry makes Run retry the peers with pending sent messages: at
	// once after a reconnection, after a convergence (a collision resolved,
	// an identity accepted) and otherwise with a backoff that doubles from
	// RetryMin to RetryMax, with jitter, and starts again from RetryMin
	// when an ACK clears something. With a relay that reports envelope
	// status the backoff gives way to the envelope's fate
	// (DecideRetryWait): a message is not resent on a short timer while
	// its envelope waits in a mailbox.
	AutoRetry bool
	// RetryMin and RetryMax bound the backoff (defaults 2s and 5m).
	RetryMin, RetryMax time.Duration
}

// The automatic retries' backoff bounds when a Policy gives none.
const (
	DefaultRetryMin = 2 * time.Second
	DefaultRetryMax = 5 * time.Minute
)

// withDefaults returns p with zero bounds set to their defaults.
func (p Policy) withDefaults() Policy {
	if p.RetryMin <= 0 {
		p.RetryMin = DefaultRetryMin
	}
	if p.RetryMax < p.RetryMin {
		p.RetryMax = max(DefaultRetryMax, p.RetryMin)
	}
	return p
}

// retryState is the automatic-retry schedule of one peer. Schedules run on
// the wall clock (time.Now), not on Config.Now, which stamps what is
// stored: a test that fixes the stored times still sees retries happen.
type retryState struct {
	at      time.Time
	backoff time.Duration
	blocked bool         // identity changed: nothing goes out until it is accepted
	fate    EnvelopeFate // what the relay said of the latest envelope
	// windowed is set when the peer's messages wait for the sending
	// window (window.go): anything heard from the peer may have turned
	// the chain, and makes them due at once.
	windowed bool
	// refused is the wait after a retry the relay did not accept (it was
	// down, refused the recipient as unknown, had its mailbox full):
	// nothing waits in a mailbox then, so the long waits of envelope
	// status do not apply; it doubles from RetryMin to RetryMax and is
	// reset when the relay accepts an envelope to the peer.
	refused time.Duration
}

// Policy returns the loop's current policy.
func (c *Client) Policy() Policy {
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	return c.policy
}

// SetPolicy changes the loop's policy. Switching the commit policy to
// CommitOnArrival commits what is pending at the next round.
func (c *Client) SetPolicy(p Policy) {
	p = p.withDefaults()
	c.loopMu.Lock()
	if p.Commit == CommitOnArrival && c.policy.Commit != CommitOnArrival {
		c.commitPending = true
	}
	c.policy = p
	c.loopMu.Unlock()
	c.SyncNow()
}

// NextRetry reports when Run retries peer next; zero when nothing is
// scheduled (no automatic retry, or nothing pending).
func (c *Client) NextRetry(peer Address) time.Time {
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	if r := c.retries[peer]; r != nil && !r.blocked && c.policy.AutoRetry {
		return r.at
	}
	return time.Time{}
}

// commitByPolicy commits the deliveries of a round under CommitOnArrival
// (and, once after the policy was switched on, everything pending).
func (c *Client) commitByPolicy(ctx context.Context, received []ReceiveResult) (int, error) {
	c.loopMu.Lock()
	policy, all := c.policy.Commit, c.commitPending
	c.commitPending = false
	c.loopMu.Unlock()
	done := 0
	for _, r := range received {
		if r.committed {
			done++ // committed as it arrived (CommitEffect)
		}
	}
	if policy != CommitOnArrival {
		return done, nil
	}
	var reqs []FinalizeRequest
	var known map[inboundKey]*InboundMessage
	if all {
		for after := int64(0); ; {
			page, err := c.store.PendingInbound(ctx, PageQuery{After: after, Limit: c.cfg.BatchSize})
			if err != nil {
				return done, err
			}
			if len(page) == 0 {
				break
			}
			for _, m := range page {
				if m.Content == wire.ContentFile || waitsAsAction(m.Content) {
					continue // a file is committed by its fetch, never by policy; an action by settleActions
				}
				reqs = append(reqs, FinalizeRequest{Sender: m.Sender, ID: m.ID, Outcome: OutcomeCommitted})
			}
			after = page[len(page)-1].Seq
		}
	} else {
		known = make(map[inboundKey]*InboundMessage)
		for _, r := range received {
			if r.Kind == ResultDelivery && r.Content != wire.ContentFile && !waitsAsAction(r.Content) && !r.committed {
				reqs = append(reqs, FinalizeRequest{Sender: r.Sender, ID: r.ID, Outcome: OutcomeCommitted})
				if r.fresh != nil {
					known[inboundKey{r.Sender, r.ID}] = r.fresh
				}
			}
		}
	}
	for len(reqs) > 0 {
		n := min(len(reqs), c.cfg.BatchSize)
		res, err := c.finalizeBatch(ctx, reqs[:n], known, false)
		if known != nil && (errors.Is(err, ErrNotPending) || errors.Is(err, ErrConflict)) {
			// A message of this round was finalized meanwhile (by the
			// person, between the round and this commit): read them all
			// back, so that only that one is refused.
			res, err = c.finalizeBatch(ctx, reqs[:n], nil, false)
		}
		for _, r := range res {
			if r.Err == nil {
				done++
			}
		}
		if err != nil {
			return done, err
		}
		reqs = reqs[n:]
	}
	return done, nil
}

// noteReceived updates the retry schedule from what a round received: an
// ACK that cleared something restarts the peer's backoff, and a session
// that converged (an announcement, a replaced session) makes the peer's
// pending messages due at once. A handshake that may have used a one-time
// prekey brings the maintenance check forward.
func (c *Client) noteReceived(res []ReceiveResult) {
	if len(res) == 0 {
		return
	}
	now := time.Now()
	status := c.envelopeStatusSupported()
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	type message struct {
		peer Address
		id   wire.LogicalID
	}
	var acked map[message]bool
	for _, r := range res {
		switch {
		case r.Kind == ResultAcknowledgement && r.Cleared:
			if len(c.taken) > 0 {
				if acked == nil {
					acked = make(map[message]bool)
				}
				acked[message{r.Sender, r.ID}] = true
				for _, id := range r.Acked {
					acked[message{r.Sender, id}] = true
				}
			}
			rs := c.retryFor(r.Sender)
			rs.backoff = 0
			if status {
				// What is still pending may wait in the mailbox: not a
				// short timer, but the one its envelope's fate calls for.
				rs.at = now.Add(DecideRetryWait(true, rs.fate, 0, c.policy))
			} else {
				rs.at = now.Add(c.policy.RetryMin)
			}
		case r.converged:
			c.retryFor(r.Sender).at = now
		}
		if rs := c.retries[r.Sender]; rs != nil && rs.windowed {
			// The peer wrote: the sending chain may have turned.
			rs.at, rs.windowed = now, false
		}
		if r.handshake {
			c.nextMaintain = now
		}
	}
	if acked != nil {
		// An acknowledged message needs no record of its stay on the
		// device: its taken envelopes are not recorded.
		c.taken = slices.DeleteFunc(c.taken, func(t takenEnvelope) bool { return acked[message{t.peer, t.id}] })
	}
}

// noteSent schedules an automatic retry for peers that now have a pending
// message (a send), and wakes the loop so that it counts them in.
func (c *Client) noteSent(peers []Address) {
	status := c.envelopeStatusSupported()
	c.loopMu.Lock()
	auto := c.policy.AutoRetry
	now := time.Now()
	for _, peer := range peers {
		if rs := c.retries[peer]; rs == nil {
			rs = c.retryFor(peer)
			rs.backoff = DecideRetryWait(status, FateUnreported, 0, c.policy)
			rs.at = now.Add(rs.backoff)
			if !status {
				rs.backoff = 0 // as before: the first retry waits RetryMin
			}
		}
	}
	c.loopMu.Unlock()
	if auto {
		c.SyncNow()
	}
}

// noteConverged makes peer's pending messages due for an automatic retry
// at once and lifts a block on it.
func (c *Client) noteConverged(peer Address) {
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	rs := c.retryFor(peer)
	rs.at, rs.backoff, rs.blocked = time.Now(), 0, false
}

// retryFor returns peer's schedule; callers hold loopMu.
func (c *Client) retryFor(peer Address) *retryState {
	rs := c.retries[peer]
	if rs == nil {
		rs = &retryState{}
		c.retries[peer] = rs
	}
	return rs
}

// retryByPolicy records the taken envelopes that are due, retries the
// peers that are due under Policy.AutoRetry and returns when the loop next
// has either to do (false when nothing is scheduled).
func (c *Client) retryByPolicy(ctx context.Context) (time.Time, bool) {
	takenAt, taken := c.noteEnvelopeStatuses(ctx, time.Now())
	next, ok := c.retryDue(ctx)
	if taken && (!ok || takenAt.Before(next)) {
		return takenAt, true
	}
	return next, ok
}

// retryDue retries the peers that are due under Policy.AutoRetry and
// returns the earliest next retry (false when none is scheduled).
func (c *Client) retryDue(ctx context.Context) (time.Time, bool) {
	c.loopMu.Lock()
	p := c.policy
	epoch := c.retryEpoch
	c.loopMu.Unlock()
	if !p.AutoRetry {
		return time.Time{}, false
	}
	l := c.link()
	if !l.Up {
		return time.Time{}, false
	}
	convs, err := c.store.Conversations(ctx)
	if err != nil {
		return time.Time{}, false
	}
	now := time.Now()
	status := c.envelopeStatusSupported()
	var due []Address
	var next time.Time
	c.loopMu.Lock()
	reconnected := l.Epoch != epoch
	c.retryEpoch = l.Epoch
	for _, cv := range convs {
		rs := c.retries[cv.Peer]
		if cv.PendingOut == 0 {
			delete(c.retries, cv.Peer)
			continue
		}
		if rs == nil {
			rs = c.retryFor(cv.Peer)
			rs.at = now.Add(p.RetryMin)
		}
		if rs.blocked {
			continue
		}
		if reconnected && epoch != 0 {
			rs.at, rs.backoff = now, 0
		}
		if !now.Before(rs.at) {
			// The envelope this retry sends is new: nothing is heard of it
			// yet, whatever was said of the one before.
			rs.backoff = DecideRetryWait(status, FateUnreported, rs.backoff, p)
			rs.fate = FateUnreported
			if status {
				rs.at = now.Add(rs.backoff)
			} else {
				// Jitter: the upper half of the interval, so that devices
				// cut off together do not come back together.
				rs.at = now.Add(rs.backoff/2 + mrand.N(rs.backoff/2+1))
			}
			due = append(due, cv.Peer)
		}
		if next.IsZero() || rs.at.Before(next) {
			next = rs.at
		}
	}
	c.loopMu.Unlock()
	for _, peer := range due {
		if ctx.Err() != nil {
			break
		}
		if _, err := c.Retry(ctx, peer); err != nil {
			var notSent *MessageNotSentError
			if !errors.As(err, &notSent) {
				// A hand-off failure was reported per message; anything
				// else (a changed identity, no bundle) is reported here.
				c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "retry", Peer: peer, Err: err})
			}
			if errors.Is(err, ErrIdentityChanged) {
				c.loopMu.Lock()
				c.retryFor(peer).blocked = true
				c.loopMu.Unlock()
			}
			if windowHeld(err) {
				c.loopMu.Lock()
				c.retryFor(peer).windowed = true
				c.loopMu.Unlock()
			}
		}
	}
	if len(due) > 0 {
		// A refused hand-off brought its peer's retry forward.
		c.loopMu.Lock()
		for _, peer := range due {
			if rs := c.retries[peer]; rs != nil && rs.at.Before(next) {
				next = rs.at
			}
		}
		c.loopMu.Unlock()
	}
	return next, !next.IsZero()
}
