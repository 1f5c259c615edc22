package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The receive loop. The ordering at the heart of the protocol lives here and
// nowhere else: lease what the relay holds, stage it durably, release
// exactly those leases, then process the staged rows. Sync does one round;
// Run repeats it, and applies the commit and retry policies (policy.go).

// Loop defaults.
const (
	// DefaultPollInterval is how often Run looks at a relay that does not
	// signal (one that is not a RelayLink, or not connected yet).
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultMaintainEvery is how often a round checks whether prekey
	// maintenance is due, besides after every new connection.
	DefaultMaintainEvery = 10 * time.Minute
	// maxFailureBackoff bounds the wait after a failed round.
	maxFailureBackoff = 5 * time.Second
	// stageChunkBytes bounds the envelope bytes one step of a round stages
	// before it releases and processes them.
	stageChunkBytes = 4 << 20
	// poolTopUpEvery bounds how often the relay's word that the one-time
	// pool runs low makes a round top it up.
	poolTopUpEvery = 30 * time.Second
)

// SyncError is a round that failed at one step: receive, stage, release,
// process, commit, maintain, or pump (handing off the group lanes the round
// stored, when no loop runs). What the round did before it is in the
// SyncResult returned with it.
type SyncError struct {
	Op  string
	Err error
}

func (e *SyncError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the step's error.
func (e *SyncError) Unwrap() error { return e.Err }

// ReleaseOnly reports whether the round did everything but release its
// leases (tell the relay that it staged what it leased): every envelope was
// staged and processed, and the relay delivers those rows again, which a
// later round absorbs as duplicates. A cancelled release is not one (the round stopped).
func (e *SyncError) ReleaseOnly() bool { return e.Op == "release" && !isCancel(e.Err) }

// SyncResult is what one round did.
type SyncResult struct {
	// Received has one result per staged envelope processed, in order.
	Received []ReceiveResult
	// Committed counts the deliveries the commit policy committed.
	Committed int
	// Maintained is true when prekey maintenance ran.
	Maintained bool
}

// Sync does one full round: the rows staged before (by a process that
// stopped) are processed first; then, until the relay has nothing more, it
// leases what the relay delivered, stages it durably, releases exactly
// those leases and processes the staged rows, each page in one transaction;
// the commit policy commits each processed batch as soon as it is done.
// Then prekey maintenance runs when it is due (never while the relay is known to be down). Events go
// out as each transition commits.
//
// A failure is a *SyncError naming the step; the result still holds what
// the round did. A lease that could not be released does not stop the
// round: the row is staged, and its redelivery is absorbed by the dedup.
func (c *Client) Sync(ctx context.Context) (SyncResult, error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	var out SyncResult
	// settle hands one processed batch to the policies at once, so that a
	// commit (and its ACK) does not wait for the relay to run dry.
	settle := func(res []ReceiveResult) error {
		out.Received = append(out.Received, res...)
		c.noteReceived(res)
		c.resendAfterReset(ctx, res)
		c.answerNeedChains(ctx, res)
		n, err := c.commitByPolicy(ctx, res)
		out.Committed += n
		if err != nil {
			return &SyncError{Op: "commit", Err: err}
		}
		// The actions that waited for what this batch committed
		// (actionhold.go).
		settled, err := c.settleActions(ctx)
		out.Received = append(out.Received, settled...)
		c.emitResults(settled)
		if err != nil {
			return &SyncError{Op: "commit", Err: err}
		}
		// What another device of this person decided (decision.go).
		decided, err := c.applyKeptDecisions(ctx, res)
		out.Received = append(out.Received, decided...)
		c.emitResults(decided)
		if err != nil {
			return &SyncError{Op: "commit", Err: err}
		}
		return nil
	}
	commit := c.Policy().Commit == CommitOnArrival
	c.checkListsBeforeAcks(ctx, nil)
	res, err := c.processStaged(ctx, commit)
	if err != nil {
		out.Received = append(out.Received, res...)
		return out, &SyncError{Op: "process", Err: err}
	}
	if err := settle(res); err != nil {
		return out, err
	}
	var releaseErr error
	for {
		all, err := c.relay.Receive(ctx)
		if err != nil {
			return out, &SyncError{Op: "receive", Err: err}
		}
		if len(all) == 0 {
			break
		}
		// In pieces of at most stageChunkBytes: a flood of large junk then
		// never has more than that staged at once, and the profile stays
		// small.
		for len(all) > 0 {
			n, size := 0, 0
			for n < len(all) && (n == 0 || size+len(all[n].Envelope) <= stageChunkBytes) {
				size += len(all[n].Envelope)
				n++
			}
			leased := all[:n]
			all = all[n:]
			if _, err := c.stage(ctx, leased); err != nil {
				return out, &SyncError{Op: "stage", Err: err}
			}
			rows := make([]uint64, len(leased))
			for i, l := range leased {
				rows[i] = l.Row
			}
			if err := c.relay.Release(ctx, rows); err != nil && releaseErr == nil {
				if isCancel(err) {
					return out, &SyncError{Op: "release", Err: err}
				}
				releaseErr = &SyncError{Op: "release", Err: err}
			}
			envs := make([][]byte, len(leased))
			for i, l := range leased {
				envs[i] = l.Envelope
			}
			c.checkListsBeforeAcks(ctx, envs)
			res, err := c.processStaged(ctx, commit)
			if err != nil {
				out.Received = append(out.Received, res...)
				return out, &SyncError{Op: "process", Err: err}
			}
			if err := settle(res); err != nil {
				return out, err
			}
		}
	}
	ran, err := c.refreshOnSchedule(ctx)
	out.Maintained = ran
	if err != nil {
		return out, &SyncError{Op: "maintain", Err: err}
	}
	c.publishDeviceListOnConnect(ctx)
	c.refreshPeerListsOnConnect(ctx)
	c.checkSentLists(ctx)
	c.learnSenderLists(ctx, out.Received)
	c.learnGroupLists(ctx)
	c.learnOwnList(ctx, out.Received)
	if err := c.pumpStoredLanes(ctx); err != nil {
		return out, &SyncError{Op: "pump", Err: err}
	}
	return out, releaseErr
}

// emitResults emits one EventReceived for each result of a pass that runs
// after a receive batch (the hold's pass, the kept decisions), as the
// batch's own rows are: a running loop (Run) never reads Sync's results,
// so this is how a view learns of them. Each commit they report had its
// EventFinalized already, with its marker: these raise none.
func (c *Client) emitResults(res []ReceiveResult) {
	for i := range res {
		r := res[i]
		c.emit(Event{Kind: EventReceived, At: c.cfg.Now(), Peer: r.Sender, ID: r.ID, Result: &r, report: true})
	}
}

// SyncNow asks a running loop for a round at once (a demo control that
// released held delivery, say). It never blocks.
func (c *Client) SyncNow() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// SyncUntilIdle runs rounds until none brought anything for idle (the
// relay's signal wakes it early), handing each round's result to each. It
// is the command line's "sync --wait".
func (c *Client) SyncUntilIdle(ctx context.Context, idle time.Duration, each func(SyncResult)) error {
	quiet := time.Now()
	for {
		res, err := c.Sync(ctx)
		if each != nil {
			each(res)
		}
		if err != nil {
			return err
		}
		if len(res.Received) > 0 {
			quiet = time.Now()
		}
		left := idle - time.Since(quiet)
		if left <= 0 {
			return nil
		}
		if !c.waitForRelay(ctx, left) {
			return nil
		}
	}
}

// waitForRelay waits up to d for the relay's signal (or the poll interval
// when it gives none); false when d ran out or ctx ended.
func (c *Client) waitForRelay(ctx context.Context, d time.Duration) bool {
	wake := c.relay.Wake()
	if wake == nil {
		d = min(d, c.cfg.PollInterval)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-c.kick:
		return true
	case <-t.C:
		return wake == nil
	case <-ctx.Done():
		return false
	}
}

// Run repeats Sync until ctx ends or the client is closed (Close waits for
// it): at every relay signal, at every SyncNow and otherwise on a timer.
// With Policy.AutoRetry it retries peers as the policy says. A failed round
// is reported once as an EventSyncFailed (again only when the failure
// changes; never for a relay out of reach, which is the connection's state)
// and the next round waits a doubling backoff; every event the
// transitions commit goes out on Events as usual.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.loops.Add(1)
	c.mu.Unlock()
	defer c.loops.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.lifetime, cancel)
	defer stop()

	var lastFailure string
	failures := 0
	c.loopMu.Lock()
	if c.policy.Commit == CommitOnArrival {
		c.commitPending = true
	}
	c.loopMu.Unlock()
	// The pump hands off what is stored on a goroutine of its own, so that
	// a relay slow to take an envelope never holds up receiving; it starts
	// with what an earlier process stored and never sent.
	var pump sync.WaitGroup
	pump.Add(1)
	go func() {
		defer pump.Done()
		c.pumpLoop(ctx)
	}()
	defer pump.Wait()
	defer cancel()
	c.wantPump()
	for {
		c.notePumpEpoch()
		_, err := c.Sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := c.idleWait()
		if err != nil {
			failures++
			// A relay out of reach is the connection's state, which the
			// caller shows already (and the next connection cures); an
			// event for it would say the same in a louder voice.
			if name := failureName(err); name != lastFailure && !errors.Is(err, ErrRelayUnreachable) {
				lastFailure = name
				c.emitSyncFailed(err)
			}
			wait = min(100*time.Millisecond<<min(failures, 6), maxFailureBackoff)
		} else {
			failures, lastFailure = 0, ""
		}
		if next, ok := c.retryByPolicy(ctx); ok {
			wait = min(wait, max(time.Until(next), 0))
		}
		if ctx.Err() != nil {
			return nil
		}
		c.sleepForRelay(ctx, wait)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// idleWait is how long Run sleeps when nothing is due: until the relay
// signals (bounded by the maintenance check), or the poll interval for a
// relay that does not signal.
func (c *Client) idleWait() time.Duration {
	if c.relay.Wake() != nil {
		return c.cfg.MaintainEvery
	}
	return c.cfg.PollInterval
}

// sleepForRelay waits d, or less when the relay signals or SyncNow is
// called.
func (c *Client) sleepForRelay(ctx context.Context, d time.Duration) {
	wake := c.relay.Wake()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wake:
	case <-c.kick:
	case <-t.C:
	case <-ctx.Done():
	}
}

func failureName(err error) string {
	var se *SyncError
	if errors.As(err, &se) {
		return se.Op + "/" + ErrorName(se.Err) + "/" + se.Err.Error()
	}
	return ErrorName(err) + "/" + err.Error()
}

func (c *Client) emitSyncFailed(err error) {
	op := ""
	var se *SyncError
	if errors.As(err, &se) {
		op = se.Op
	}
	c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: op, Err: err})
}

// link reports the relay's connection.
func (c *Client) link() Link { return c.relay.Link() }

// refreshOnSchedule is the loop's schedule for RefreshPreKeysIfStale: it
// checks for stale prekeys after every new relay connection, after a
// handshake used a one-time prekey, and every MaintainEvery; never while
// the relay is known to be down.
func (c *Client) refreshOnSchedule(ctx context.Context) (bool, error) {
	l := c.link()
	if !l.Up {
		return false, nil
	}
	now := time.Now()
	c.loopMu.Lock()
	check := l.Epoch != c.maintainedEpoch || !now.Before(c.nextMaintain)
	// The relay said the one-time pool runs low: top up now, but at most
	// every poolTopUpEvery, so that a relay that keeps saying so (or a
	// publish that keeps failing) does not make every round publish.
	if !check && !now.Before(c.nextPoolTopUp) && c.relayPoolLow() {
		check = true
		c.nextPoolTopUp = now.Add(poolTopUpEvery)
	}
	c.loopMu.Unlock()
	if !check {
		return false, nil
	}
	ran, err := c.RefreshPreKeysIfStale(ctx)
	c.loopMu.Lock()
	if err != nil {
		// Try again in a minute, or at the next connection.
		c.nextMaintain = now.Add(time.Minute)
	} else {
		c.maintainedEpoch = l.Epoch
		c.nextMaintain = now.Add(c.cfg.MaintainEvery)
	}
	c.loopMu.Unlock()
	return ran, err
}

// RefreshPreKeysIfStale runs RefreshPreKeys when PreKeysStale says so, and reports
// whether it ran.
func (c *Client) RefreshPreKeysIfStale(ctx context.Context) (bool, error) {
	due, err := c.PreKeysStale(ctx)
	if err != nil || !due {
		return false, err
	}
	return true, c.RefreshPreKeys(ctx)
}
