package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// The store-first send: Enqueue commits what a person typed as pending in
// one transaction and returns, with no network in the way; the pump encrypts
// what was stored and never sent, and hands it to the relay, one peer's
// messages in the order they were stored. A bundle for a peer with no
// session is fetched before sendMu is taken, and the hand-off happens after
// it is released, so a slow relay never holds up receive processing.

const (
	// pumpPage is how many unsent messages the pump reads at a time.
	pumpPage = 256
	// pumpPeerTimeout bounds the network calls of one peer's pass (its
	// bundle fetch, its hand-off): a relay that never answers holds that
	// peer's messages, pending, not the pump.
	pumpPeerTimeout = 30 * time.Second
	// pumpRetryAfter is the wait before the pump runs again after a pass
	// that failed on a transient error (the store, say).
	pumpRetryAfter = 2 * time.Second
)

// Enqueue stores messages as pending, each with its history entry, in one
// transaction, and returns their IDs; nothing goes to the network here. A
// request with ClearDraft forgets the draft to its peer in that same
// transaction. The loop's pump (Run) hands the messages to the relay; a
// caller without a loop calls Pump. Writing to a device with an open request
// accepts it first (a transaction of its own, before). A result's Err is set
// for a message refused before anything was stored (to the own device, one
// that cannot be encoded, or a text, reply or edit too large for its sent
// copy to this person's other devices, ErrCopyTooLarge: its open request,
// if any, is not accepted either); the error is set when the transaction
// failed, in which case nothing was stored.
func (c *Client) Enqueue(ctx context.Context, reqs []SendRequest) ([]SendResult, error) {
	results := make([]SendResult, len(reqs))
	var plans []Plan
	accepted := make(map[Address]bool)
	now := c.cfg.Now()
	// sendMu is held from reading the lists the lanes follow to storing
	// them, as a list's hold holds it (takePeerList): a list stored
	// meanwhile comes wholly before (the lanes follow it) or after (its
	// transaction ends and adds lanes of these messages). Nothing under
	// it touches the network.
	c.sendMu.Lock()
	locked := true
	defer func() {
		if locked {
			c.sendMu.Unlock()
		}
	}()
	for i, r := range reqs {
		if r.id != nil {
			results[i].ID = *r.id
		} else if _, err := c.cfg.Random.Read(results[i].ID[:]); err != nil {
			return nil, fmt.Errorf("send: logical id: %w", err)
		}
		if r.Peer == c.self {
			results[i].Err = fmt.Errorf("send: %w: cannot send to the own device", ErrInvalidAddress)
			continue
		}
		f, err := r.encode(results[i].ID)
		if err != nil {
			results[i].Err = fmt.Errorf("send to %s: %w", r.Peer, err)
			continue
		}
		if !r.file {
			// A text too large for its copy to this person's other
			// devices is refused before anything, the acceptance of an
			// open request too (personLanes checks it again).
			if err := copyFits(r.Body, r.action); err != nil {
				own, oerr := c.ownOtherDevices(ctx)
				if oerr != nil {
					return nil, fmt.Errorf("send to %s: %w", r.Peer, oerr)
				}
				if len(own) > 0 {
					results[i].Err = fmt.Errorf("send to %s: %w", r.Peer, err)
					continue
				}
			}
		}
		if !accepted[r.Peer] {
			accepted[r.Peer] = true
			// Accepting writes sessions (adopted rosters' ACKs): under
			// sendMu, as every session write.
			if err := c.acceptIfRequested(ctx, r.Peer); err != nil {
				return nil, fmt.Errorf("send to %s: %w", r.Peer, err)
			}
		}
		body := r.Body // what the history keeps: a file's name, size and type, not its key
		if r.file {
			if m, ok := FileOf(wire.ContentFile, r.Body); ok {
				body = fileHistoryBody(m)
			}
		}
		if !r.file {
			// A text message or an action to a person with several
			// devices, or from a person with several, goes on a lane per
			// device (person.go); this person's other devices get a sent
			// copy (an action's: actioncopy.go).
			lanes, conv, err := c.personLanes(ctx, r.Peer, results[i].ID, f, body, r.action)
			if errors.Is(err, ErrCopyTooLarge) {
				// This request alone, before anything is stored.
				results[i].Err = fmt.Errorf("send to %s: %w", r.Peer, err)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("send to %s: %w", r.Peer, err)
			}
			if lanes != nil {
				ps := PersonSend{Conversation: conv, ID: results[i].ID, Body: body, At: now, Lanes: lanes}
				if r.action != nil {
					// Its own entry is in the person's conversation, where
					// its target is too, unless the target was kept under
					// the device address named (below).
					ps.Action = applyOf(conv, c.self, results[i].ID, DirectionOut, *r.action, r.target, now)
					if r.Peer != conv {
						// The target was found under the device address
						// named (a message kept there before the list was
						// held): the apply goes where it is.
						ps.Action.TargetPeer = r.Peer
					}
				}
				if r.ClearDraft {
					ps.ClearDraft = &r.Peer
				}
				plans = append(plans, ps)
				continue
			}
		}
		plans = append(plans, Hold{Recipient: r.Peer, ID: results[i].ID, Frame: f, Body: body, At: now, ClearDraft: r.ClearDraft,
			Action: c.ownApply(r, results[i].ID, now)})
	}
	if len(plans) == 0 {
		return results, nil
	}
	if err := c.fail("pairwise-hold", "before-plan"); err != nil {
		return nil, err
	}
	receipts, err := c.applyAll(ctx, plans)
	c.sendMu.Unlock()
	locked = false
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for j, p := range plans {
		switch p := p.(type) {
		case Hold:
			c.emit(Event{Kind: EventStored, At: now, Peer: p.Recipient, ID: p.ID, marker: receipts[j].Marker})
			c.listSentTo(p.Recipient.User)
		case PersonSend:
			for _, l := range p.Lanes {
				c.emit(Event{Kind: EventStored, At: now, Peer: l.Recipient, ID: p.ID, marker: receipts[j].Marker})
			}
			c.listSentTo(p.Conversation.User)
		}
	}
	c.wantPump()
	return results, nil
}

// wantPump marks the pump wanted and wakes it (never blocks).
func (c *Client) wantPump() {
	c.loopMu.Lock()
	c.pumpWanted = true
	c.loopMu.Unlock()
	select {
	case c.pumpKick <- struct{}{}:
	default:
	}
}

// Pump encrypts the pending messages that were stored and never sent
// (Enqueue, or a send held while the relay was out of reach) and hands them
// to the relay, oldest first, each peer's in the order they were stored. It
// returns one result per message it tried: Err nil when the relay accepted
// the envelope, a *MessageNotSentError when the message stays pending (the
// relay out of reach, a bundle that could not be had, a full sending
// window: the pump or a retry sends it later). The error is set when the
// store failed or ctx ended.
func (c *Client) Pump(ctx context.Context) ([]SendResult, error) {
	c.pumpMu.Lock()
	defer c.pumpMu.Unlock()
	var out []SendResult
	for id, lanes := range c.flushChains(ctx) {
		for peer, err := range lanes {
			r := SendResult{ID: id, Peer: peer}
			if err != nil {
				r.Err = &MessageNotSentError{ID: id, Err: err}
			}
			out = append(out, r)
		}
	}
	done := make(map[Address]bool) // peers this pass served or found held
	var after int64
	for {
		page, err := c.store.Unsent(ctx, PageQuery{After: after, Limit: pumpPage})
		if err != nil {
			return out, fmt.Errorf("pump: %w", err)
		}
		if len(page) == 0 {
			return out, nil
		}
		after = page[len(page)-1].Seq
		for _, m := range page {
			if done[m.Recipient] {
				continue
			}
			done[m.Recipient] = true
			res, err := c.pumpPeer(ctx, m.Recipient)
			out = append(out, res...)
			if err != nil {
				return out, err
			}
		}
	}
}

// pumpPeer encrypts peer's unsent messages, in store order, on the session
// with peer in one transaction and hands them off. Only reading them again,
// the encryption and its commit run under sendMu; the bundle fetch and the
// hand-off are bounded by pumpPeerTimeout, so that a relay that never
// answers holds up one peer for that long, not the pump for ever.
func (c *Client) pumpPeer(ctx context.Context, peer Address) ([]SendResult, error) {
	notSent := func(ms []OutboundMessage, cause error) []SendResult {
		out := make([]SendResult, len(ms))
		for i, m := range ms {
			out[i] = SendResult{ID: m.ID, Err: &MessageNotSentError{ID: m.ID, Err: cause}, Peer: peer}
			c.emit(Event{Kind: EventNotSent, At: c.cfg.Now(), Peer: peer, ID: m.ID, Err: cause})
		}
		return out
	}
	unsent := func() ([]OutboundMessage, error) {
		return c.store.Unsent(ctx, PageQuery{Peer: &peer, Limit: pumpPage})
	}
	if l := c.link(); !l.Up && l.Err != nil {
		// Known down: encrypting now would spend session steps on
		// envelopes that cannot leave, and a later pump would skip them.
		msgs, err := unsent()
		if err != nil {
			return nil, err
		}
		return notSent(msgs, l.Err), nil
	}
	nctx, cancel := context.WithTimeout(ctx, pumpPeerTimeout)
	defer cancel()
	pre := c.takePrefetched(peer)
	has, err := c.hasSession(ctx, peer)
	if err != nil {
		return nil, err
	}
	if !has && pre == nil {
		b, key, err := c.fetchBundle(nctx, peer)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if transient(err) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if err != nil {
			// Out of reach, too slow, or refused (an unregistered peer, a
			// bad bundle): the messages wait; other peers' go on.
			msgs, rerr := unsent()
			if rerr != nil {
				return nil, rerr
			}
			return notSent(msgs, err), nil
		}
		pre = &fetchedBundle{bundle: b, key: key}
	}

	c.sendMu.Lock()
	// Read again under the lock: a retry may have sent some meanwhile,
	// and an abandon removed them.
	msgs, err := unsent()
	var (
		plans    []Plan
		envs     []wire.Envelope
		ids      []wire.LogicalID
		work     map[Address]*peerState
		stopped  error
		receipts []Receipt
	)
	if err == nil && len(msgs) > 0 {
		plans, envs, ids, work, stopped, err = c.sealUnsent(ctx, peer, msgs, pre)
	}
	if err == nil && len(plans) > 0 {
		receipts, err = c.applyWork(ctx, work, plans)
	}
	c.sendMu.Unlock()
	if err != nil {
		var held *heldError
		if errors.As(err, &held) {
			return notSent(msgs, held.cause), nil
		}
		if !transient(err) {
			// A changed identity, say: this peer's messages wait for the
			// person, and the other peers' go on.
			return notSent(msgs, err), nil
		}
		return nil, fmt.Errorf("pump to %s: %w", peer, err)
	}
	if len(plans) == 0 {
		return nil, nil
	}
	if err := c.fail("pump", "after-swap"); err != nil {
		return nil, err
	}
	c.noteSent([]Address{peer})
	errs := c.handOffMessages(nctx, "pump", envs, ids)
	out := make([]SendResult, 0, len(msgs))
	for k, id := range ids {
		if errs[k] != nil {
			out = append(out, SendResult{ID: id, Err: &MessageNotSentError{ID: id, Err: errs[k]}, Peer: peer})
			c.emit(Event{Kind: EventNotSent, At: c.cfg.Now(), Peer: peer, ID: id, Err: errs[k], marker: receipts[k].Marker})
			continue
		}
		out = append(out, SendResult{ID: id, Peer: peer})
		c.emit(Event{Kind: EventSent, At: c.cfg.Now(), Peer: peer, ID: id, marker: receipts[k].Marker})
	}
	if stopped != nil {
		out = append(out, notSent(msgs[len(ids):], stopped)...)
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, nil
}

// pumpFor runs the pump's pass for each of peers (pumpPeer) and returns,
// in their order, why message id stays pending to each: nil when the relay
// accepted its envelope. Callers hold pumpMu, taken before id was stored,
// so that no other pass of the pump took it first; a retry may have (it
// holds sendMu, not pumpMu), and then, as for a message beyond the pass's
// page, the pass does not report it and it counts as pending
// (ErrQueuedBehind).
func (c *Client) pumpFor(ctx context.Context, id wire.LogicalID, peers []Address) []error {
	out := make([]error, len(peers))
	for i, peer := range peers {
		res, err := c.pumpPeer(ctx, peer)
		cause := err
		if cause == nil {
			cause = fmt.Errorf("%s: %w", peer, ErrQueuedBehind)
		}
		for _, r := range res {
			if r.ID == id {
				cause = r.Err
				break
			}
		}
		out[i] = cause
	}
	return out
}

// fetchedBundle is a bundle fetched and verified before sendMu was taken.
type fetchedBundle struct {
	bundle wire.Bundle
	key    IdentityKey
}

// heldError is a peer the pump cannot encrypt for yet (why: cause).
type heldError struct{ cause error }

func (e *heldError) Error() string { return e.cause.Error() }

// sealUnsent prepares the Retry plans that encrypt msgs on the session with
// peer (started from pre when there is none), stopping where the sending
// window fills (stopped says why the rest wait). Callers hold sendMu.
func (c *Client) sealUnsent(ctx context.Context, peer Address, msgs []OutboundMessage, pre *fetchedBundle) (plans []Plan, envs []wire.Envelope, ids []wire.LogicalID, work map[Address]*peerState, stopped, err error) {
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	pin, err := c.ensureSessionFrom(ctx, &ps, peer, pre)
	if errors.Is(err, ErrRelayUnreachable) || windowHeld(err) {
		return nil, nil, nil, nil, nil, &heldError{err}
	}
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	for _, m := range msgs {
		if len(plans) > 0 && !canSend(ps.session) {
			stopped = fmt.Errorf("%s: %d messages since the peer was last heard on this chain: %w", peer, SendWindow, ErrSendWindow)
			c.noteWindow(peer, true)
			break
		}
		if err := c.fail("pump", "before-crypto"); err != nil {
			return nil, nil, nil, nil, nil, err
		}
		cand := ps.session.Clone()
		env, err := c.seal(cand, peer, m.Frame)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		sw, err := sessionWrite(peer, ps.version, cand)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		ps.session, ps.version = cand, ps.version+1
		if pin != nil {
			ps.pinned = pin
		}
		plans = append(plans, Retry{Recipient: peer, ID: m.ID, Session: sw, Pin: pin, Out: Outgoing{Envelope: env, Owner: m.ID}, At: c.cfg.Now()})
		pin = nil
		envs = append(envs, env)
		ids = append(ids, m.ID)
	}
	return plans, envs, ids, map[Address]*peerState{peer: &ps}, stopped, nil
}

// pumpLoop runs the pump on its own goroutine for Run, whenever it is
// wanted (after an Enqueue, at the start, after every new connection:
// notePumpEpoch), until ctx ends; so a hand-off that waits on the relay
// never holds up receiving. A pass that failed on a transient error is
// tried again after pumpRetryAfter.
func (c *Client) pumpLoop(ctx context.Context) {
	c.loopMu.Lock()
	c.pumpLoops++
	c.loopMu.Unlock()
	defer func() {
		c.loopMu.Lock()
		c.pumpLoops--
		c.loopMu.Unlock()
	}()
	for {
		c.loopMu.Lock()
		due := c.pumpWanted
		c.pumpWanted = false
		c.loopMu.Unlock()
		if due {
			if _, err := c.Pump(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "pump", Err: err})
				t := time.NewTimer(pumpRetryAfter)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
				c.wantPump()
			}
			continue
		}
		select {
		case <-c.pumpKick:
		case <-ctx.Done():
			return
		}
	}
}

// wantLanesPumped wants the pump for group lanes that receive processing
// stored (a roster change forwarded to a member a concurrent change added,
// a restatement): Run's pump hands them off; without it, the Sync that
// stored them does (pumpStoredLanes).
func (c *Client) wantLanesPumped() {
	c.loopMu.Lock()
	c.lanesStored = true
	c.loopMu.Unlock()
	c.wantPump()
}

// pumpStoredLanes runs the pump at the end of a Sync that stored group
// lanes when no loop's pump runs (a command-line sync): they would wait
// for the next command that pumps otherwise. With a loop, its pump has
// been woken already and Sync does not wait on the network.
func (c *Client) pumpStoredLanes(ctx context.Context) error {
	c.loopMu.Lock()
	due := c.lanesStored && c.pumpLoops == 0
	c.lanesStored = false
	c.loopMu.Unlock()
	if !due {
		return nil
	}
	_, err := c.Pump(ctx)
	return err
}

// notePumpEpoch wants the pump after every new relay connection: what
// waited for the relay goes then.
func (c *Client) notePumpEpoch() {
	l := c.link()
	c.loopMu.Lock()
	changed := l.Epoch != c.pumpEpoch
	c.pumpEpoch = l.Epoch
	c.loopMu.Unlock()
	if changed {
		c.wantPump()
	}
}

// CheckPeer refuses what Send refuses before it stores anything, for a
// caller that stores with Enqueue: with no session with peer, it fetches
// and verifies peer's bundle and compares its identity with the pinned one
// (ErrPeerNotRegistered, a bad bundle, ErrIdentityChanged). A relay out of
// reach is not a refusal: it returns nil, and the message is held like any
// other until the pump reaches the relay.
func (c *Client) CheckPeer(ctx context.Context, peer Address) error {
	if peer == c.self {
		return fmt.Errorf("send: %w: cannot send to the own device", ErrInvalidAddress)
	}
	// The person's device list, once per connection: a device they
	// linked is sent to, a list that breaks the rules refuses the send. A
	// relay that does not answer in time refuses nothing: the list held
	// (if any) decides the lanes, as the bundle below.
	_, _, err := c.RefreshPeerList(ctx, peer.User)
	if err != nil && !errors.Is(err, ErrRelayUnreachable) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ps, err := c.snapshot(ctx, peer)
	if err != nil || ps.session != nil {
		return err
	}
	b, key, err := c.fetchBundle(ctx, peer)
	switch {
	case errors.Is(err, ErrRelayUnreachable), errors.Is(err, context.DeadlineExceeded):
		return nil
	case err != nil:
		return err
	case ps.pinned != nil && !ps.pinned.Equal(key):
		return fmt.Errorf("%s: %w", peer, ErrIdentityChanged)
	}
	// The pump starts the session from this bundle: a one-time prekey the
	// relay handed out is not spent twice.
	c.mu.Lock()
	if c.prefetched == nil {
		c.prefetched = make(map[Address]*fetchedBundle)
	}
	if len(c.prefetched) < maxPrefetched {
		c.prefetched[peer] = &fetchedBundle{bundle: b, key: key}
	}
	c.mu.Unlock()
	return nil
}

// maxPrefetched bounds the bundles CheckPeer keeps for the pump.
const maxPrefetched = 64

// takePrefetched returns (and forgets) the bundle CheckPeer fetched for
// peer, nil when there is none.
func (c *Client) takePrefetched(peer Address) *fetchedBundle {
	c.mu.Lock()
	defer c.mu.Unlock()
	pre := c.prefetched[peer]
	delete(c.prefetched, peer)
	return pre
}

// ErrQueuedBehind means a message was stored pending behind earlier ones to
// the same peer that the pump has not handed off yet: it leaves after them.
var ErrQueuedBehind = errors.New("earlier messages to the peer are not handed off yet")

// hasUnsent reports whether messages to peer wait for the pump.
func (c *Client) hasUnsent(ctx context.Context, peer Address) (bool, error) {
	ms, err := c.store.Unsent(ctx, PageQuery{Peer: &peer, Limit: 1})
	return len(ms) > 0, err
}
