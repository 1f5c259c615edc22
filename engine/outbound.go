package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/engine/session"
	"slices"

	"github.com/parley-chat/parley/wire"
)

// SendRequest is one message to send.
type SendRequest struct {
	Peer Address
	Body []byte
	// file and id are set by SendFile alone: Body is a file manifest
	// (sent as a content frame) and its logical ID was chosen and recorded
	// before the upload, so that a resumed send cannot make it twice.
	file bool
	id   *wire.LogicalID
	// action and target are set by Act alone: Body is the action's
	// history body, the frame a content frame of the action, and target
	// what was known of its target (action.go).
	action *wire.Action
	target ActionTarget
	// ClearDraft forgets the draft to Peer in the transaction that stores
	// the message (Enqueue): the composer's text is then the stored message
	// or the draft, never both.
	ClearDraft bool
}

// encode encodes the request's frame under id: a text message's frame
// here, a file manifest's by the file code.
func (r SendRequest) encode(id wire.LogicalID) ([]byte, error) {
	if r.file {
		return encodeManifestFrame(id, r.Body)
	}
	if r.action != nil {
		return encodeActionFrame(id, *r.action)
	}
	return encodeTextFrame(id, r.Body)
}

// encodeTextFrame encodes a text message's frame: an application frame.
func encodeTextFrame(id wire.LogicalID, body []byte) ([]byte, error) {
	return wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: body})
}

// SendResult is the outcome of one message of a batch: its logical ID, and
// Err when it was not stored (any error but *MessageNotSentError) or stored
// but not handed off (*MessageNotSentError: it stays pending).
type SendResult struct {
	ID  wire.LogicalID
	Err error
	// Peer is the message's recipient (set by Pump).
	Peer Address
}

// Send sends one message: it makes the logical ID, encodes the frame,
// fetches a bundle if there is no session (outside any transaction), stores
// the frame as pending with the advanced session in one transaction and hands
// the envelope to the relay after the commit. A failed hand-off returns
// *MessageNotSentError: the message stays pending and a retry sends it. So
// does a bundle fetch that could not reach the relay: the message is stored
// pending, not yet encrypted (Hold), and a retry starts the session. Any
// other error means nothing was stored.
func (c *Client) Send(ctx context.Context, peer Address, body []byte) (wire.LogicalID, error) {
	res, err := c.SendBatch(ctx, []SendRequest{{Peer: peer, Body: body}})
	if err != nil {
		return wire.LogicalID{}, err
	}
	return res[0].ID, res[0].Err
}

// SendBatch sends several messages with one durable transaction (group
// commit); each message is prepared and reported on its own, and the
// envelopes are handed off in request order after the commit, pipelined when
// the relay supports it. A message whose hand-off failed stays pending for a
// retry. The returned error is set only when the transaction failed, in which
// case nothing was stored.
//
// SendBatch writes to the device each request names and to no other:
// the lanes to the rest of a person's devices, and the copies to this
// person's own, are Enqueue's (the path of the TUI and parley send).
// parley bench's one-to-one run, between people of one device each, uses
// it to measure the send path without the loop's hand-off.
func (c *Client) SendBatch(ctx context.Context, reqs []SendRequest) ([]SendResult, error) {
	results := make([]SendResult, len(reqs))
	frames := make([][]byte, len(reqs))
	for i, r := range reqs {
		if r.id != nil {
			results[i].ID = *r.id
		} else if _, err := c.cfg.Random.Read(results[i].ID[:]); err != nil {
			return nil, fmt.Errorf("send: logical id: %w", err)
		}
		f, err := r.encode(results[i].ID)
		if err != nil {
			results[i].Err = fmt.Errorf("send to %s: %w", r.Peer, err)
			continue
		}
		frames[i] = f
	}

	// Messages stored earlier and never sent go first: the pump hands
	// them off before this batch is prepared (and prepareSend holds a
	// message behind any that are still waiting).
	waitCause := make(map[Address]error) // why a peer's earlier messages still wait
	for _, r := range reqs {
		if waiting, err := c.hasUnsent(ctx, r.Peer); err != nil {
			return nil, err
		} else if waiting {
			pumped, err := c.Pump(ctx)
			if err != nil {
				return nil, err
			}
			for _, p := range pumped {
				var notSent *MessageNotSentError
				if errors.As(p.Err, &notSent) && waitCause[p.Peer] == nil {
					waitCause[p.Peer] = notSent.Err
				}
			}
			break
		}
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	// Writing to a device with an open request accepts it first.
	accepted := make(map[Address]bool)
	for i, r := range reqs {
		if results[i].Err == nil && !accepted[r.Peer] {
			accepted[r.Peer] = true
			if err := c.acceptIfRequested(ctx, r.Peer); err != nil {
				return nil, fmt.Errorf("send to %s: %w", r.Peer, err)
			}
		}
	}
	work := make(map[Address]*peerState)
	held := make(map[Address]error) // peers whose messages this batch holds, and why
	for peer, cause := range waitCause {
		held[peer] = cause // behind messages the pump could not send
	}
	var plans []Plan
	var planOf []int // request index of each plan
	for i, r := range reqs {
		if results[i].Err != nil {
			continue
		}
		body := r.Body // what the history keeps
		if r.file {
			if m, ok := FileOf(wire.ContentFile, r.Body); ok {
				body = fileHistoryBody(m)
			}
		}
		p, err := c.prepareSend(ctx, work, held, r.Peer, results[i].ID, frames[i], body)
		if err != nil {
			results[i].Err = err
			continue
		}
		plans = append(plans, p)
		planOf = append(planOf, i)
	}
	if len(plans) == 0 {
		return results, nil
	}
	receipts, err := c.applyWork(ctx, work, plans)
	if err != nil {
		return nil, err
	}
	if err := c.fail("pairwise-send", "after-swap"); err != nil {
		return nil, err
	}
	var envs []wire.Envelope
	var ids []wire.LogicalID
	for _, p := range plans {
		if sp, ok := p.(Send); ok {
			envs = append(envs, sp.Out.Envelope)
			ids = append(ids, sp.ID)
		}
	}
	peers := make([]Address, 0, len(work))
	for peer := range work {
		peers = append(peers, peer)
	}
	for peer := range held {
		if work[peer] == nil {
			peers = append(peers, peer)
		}
	}
	c.noteSent(peers)
	errs := c.handOffMessages(ctx, "pairwise-send", envs, ids)
	k := 0
	for j, p := range plans {
		i := planOf[j]
		var (
			peer    Address
			id      wire.LogicalID
			sendErr error
		)
		switch p := p.(type) {
		case Send:
			peer, id, sendErr = p.Recipient, p.ID, errs[k]
			k++
		case Hold:
			peer, id, sendErr = p.Recipient, p.ID, held[p.Recipient]
		}
		if sendErr != nil {
			results[i].Err = &MessageNotSentError{ID: id, Err: sendErr}
			c.emit(Event{Kind: EventNotSent, At: c.cfg.Now(), Peer: peer, ID: id, Err: sendErr, marker: receipts[j].Marker})
			continue
		}
		c.emit(Event{Kind: EventSent, At: c.cfg.Now(), Peer: peer, ID: id, marker: receipts[j].Marker})
	}
	return results, nil
}

// prepareSend builds the plan of one message on the working state: a Send,
// or a Hold when the peer has no session and its bundle could not be fetched
// because the relay was out of reach. Messages held earlier go first: with
// no session and messages pending, the peer is retried before this one is
// prepared, and this one is held too when they stay pending. The working
// state changes only when the plan is complete, so that a message that fails
// leaves nothing behind for the rest of the batch.
func (c *Client) prepareSend(ctx context.Context, work map[Address]*peerState, held map[Address]error, peer Address, id wire.LogicalID, frame, body []byte) (Plan, error) {
	if peer == c.self {
		return nil, fmt.Errorf("send: %w: cannot send to the own device", ErrInvalidAddress)
	}
	hold := func(cause error) (Plan, error) {
		if err := c.fail("pairwise-hold", "before-plan"); err != nil {
			return nil, err
		}
		held[peer] = cause
		return Hold{Recipient: peer, ID: id, Frame: frame, Body: body, At: c.cfg.Now()}, nil
	}
	if cause := held[peer]; cause != nil {
		return hold(cause)
	}
	if _, ok := work[peer]; !ok {
		if cause, err := c.sendHeldFirst(ctx, peer); err != nil {
			return nil, err
		} else if cause != nil {
			return hold(cause)
		}
		// Messages the store-first send stored and the pump has not sent
		// yet go first: this one waits behind them.
		if waiting, err := c.hasUnsent(ctx, peer); err != nil {
			return nil, err
		} else if waiting {
			return hold(fmt.Errorf("%s: %w", peer, ErrQueuedBehind))
		}
	}
	shared, err := c.working(ctx, work, peer)
	if err != nil {
		return nil, err
	}
	ps := *shared
	pin, err := c.ensureSession(ctx, &ps, peer)
	if errors.Is(err, ErrRelayUnreachable) || windowHeld(err) {
		return hold(err)
	}
	if err != nil {
		return nil, err
	}
	if err := c.fail("pairwise-send", "before-crypto"); err != nil {
		return nil, err
	}
	cand := ps.session.Clone()
	env, err := c.seal(cand, peer, frame)
	if err != nil {
		return nil, err
	}
	if err := c.fail("pairwise-send", "after-crypto"); err != nil {
		return nil, err
	}
	sw, err := sessionWrite(peer, ps.version, cand)
	if err != nil {
		return nil, err
	}
	ps.session, ps.version = cand, ps.version+1
	if pin != nil {
		ps.pinned = pin
	}
	*shared = ps
	return Send{Recipient: peer, ID: id, Frame: frame, Body: body, At: c.cfg.Now(), Session: sw, Pin: pin,
		Out: Outgoing{Envelope: env, Owner: id}}, nil
}

// sendHeldFirst retries the messages pending to a peer with no session (held
// by an earlier send, or waiting since a session reset), so that a new
// message never overtakes them. It returns why they stay pending (a cause
// for holding the new one behind them), or an error that refuses the send
// (a changed identity, an unregistered peer, a bad bundle). Callers hold
// sendMu.
func (c *Client) sendHeldFirst(ctx context.Context, peer Address) (cause, err error) {
	if has, err := c.hasSession(ctx, peer); err != nil || has {
		return nil, err
	}
	n, err := c.store.CountOutbound(ctx, &peer)
	if err != nil || n == 0 {
		return nil, err
	}
	_, err = c.retryLocked(ctx, peer)
	var notSent *MessageNotSentError
	if errors.As(err, &notSent) {
		return notSent.Err, nil
	}
	return nil, err
}

// ensureSession gives ps a session to send on, fetching and verifying a
// bundle when there is none (outside any transaction). It returns the
// identity to pin when this is the peer's first, and ErrSendWindow when the
// session it has may carry no further message yet (window.go).
func (c *Client) ensureSession(ctx context.Context, ps *peerState, peer Address) (*IdentityKey, error) {
	return c.ensureSessionFrom(ctx, ps, peer, nil)
}

// ensureSessionFrom is ensureSession with a bundle fetched before (pre, nil
// when none was: then it fetches one when it needs it).
func (c *Client) ensureSessionFrom(ctx context.Context, ps *peerState, peer Address, pre *fetchedBundle) (*IdentityKey, error) {
	if ps.session != nil {
		full := !canSend(ps.session)
		c.noteWindow(peer, full)
		if full {
			return nil, fmt.Errorf("%s: %d messages since the peer was last heard on this chain: %w", peer, SendWindow, ErrSendWindow)
		}
		return nil, nil
	}
	var (
		bundle wire.Bundle
		key    IdentityKey
		err    error
	)
	if pre != nil {
		bundle, key = pre.bundle, pre.key
	} else if bundle, key, err = c.fetchBundle(ctx, peer); err != nil {
		return nil, err
	}
	if ps.pinned != nil && !ps.pinned.Equal(key) {
		return nil, fmt.Errorf("%s: %w", peer, ErrIdentityChanged)
	}
	if otk := bundle.OneTimePreKey; otk != nil && slices.Contains(ps.refused, otk.ID) {
		// The peer refused this one-time prekey before: the relay hands
		// out a consumed one again (a replay, or a lost pool). The signed
		// prekeys alone still make a session the peer accepts.
		bundle.OneTimePreKey = nil
	}
	s, err := session.InitiateReplacing(c.cfg.Random, c.self.String(), c.id, bundle, c.cfg.Now(), ps.replaces)
	if err != nil {
		return nil, err
	}
	ps.session = s
	if ps.pinned == nil {
		return &key, nil
	}
	return nil, nil
}

// Retry encrypts the stored frames of the messages pending for peer fresh on
// the current session, one at a time in send order, and hands each off. It
// stops at the first hand-off failure with *MessageNotSentError. It returns
// the IDs handed off.
func (c *Client) Retry(ctx context.Context, peer Address) ([]wire.LogicalID, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.retryLocked(ctx, peer)
}

// retryLocked is Retry for callers that hold sendMu.
func (c *Client) retryLocked(ctx context.Context, peer Address) ([]wire.LogicalID, error) {
	var sent []wire.LogicalID
	var after int64
	if err := c.resetFullWindow(ctx, peer); err != nil {
		return nil, fmt.Errorf("retry %s: %w", peer, err)
	}
	for {
		page, err := c.store.PendingOutbound(ctx, PageQuery{After: after, Limit: 1, Peer: &peer})
		if err != nil {
			return sent, fmt.Errorf("retry %s: %w", peer, err)
		}
		if len(page) == 0 {
			return sent, nil
		}
		m := page[0]
		after = m.Seq
		if c.forwardLaneExpired(peer, m) {
			a := Abandon{Recipient: peer, ID: m.ID, At: c.cfg.Now()}
			if _, err := c.applyAll(ctx, []Plan{a}); err != nil {
				return sent, fmt.Errorf("abandon forwarded roster change %x to %s: %w", m.ID[:], peer, err)
			}
			c.emit(Event{Kind: EventAbandoned, At: a.At, Peer: peer, ID: m.ID})
			continue
		}
		if err := c.retryOne(ctx, peer, m); err != nil {
			return sent, err
		}
		// A group lane asks as any other: groups fan out to the
		// devices the lists held name, so it may go to a removed
		// device as well (TestRetriedGroupLaneToSiblingAsksForOwnList,
		// TestRetriedGroupLaneAsksForTheList).
		switch {
		case len(sent) > 0:
		case peer.User == c.self.User:
			// A lane to another device of this person (a sent copy, a
			// decision, a group message) that needs retrying may go to
			// a device removed since: the next round publishes the
			// account's list held, which adopts a later one the relay
			// holds (learnOwnList).
			c.ownListDue.Store(true)
		default:
			// A lane that needs retrying may go to a device its person
			// removed since the list held was fetched: the next round
			// asks the relay (checkSentLists), as after a send, so that
			// a long-lived connection ends it.
			c.listSentTo(peer.User)
		}
		sent = append(sent, m.ID)
	}
}

func (c *Client) retryOne(ctx context.Context, peer Address, m OutboundMessage) error {
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return err
	}
	pin, err := c.ensureSession(ctx, &ps, peer)
	if errors.Is(err, ErrRelayUnreachable) || windowHeld(err) {
		// A held message (or one whose session was reset) waits for a
		// bundle, or for the peer to turn the sending chain: still
		// pending, like any hand-off failure.
		c.emit(Event{Kind: EventNotSent, At: c.cfg.Now(), Peer: peer, ID: m.ID, Err: err})
		return &MessageNotSentError{ID: m.ID, Err: err}
	}
	if err != nil {
		return err
	}
	if err := c.fail("retry", "before-crypto"); err != nil {
		return err
	}
	cand := ps.session.Clone()
	env, err := c.seal(cand, peer, m.Frame)
	if err != nil {
		return err
	}
	if err := c.fail("retry", "after-crypto"); err != nil {
		return err
	}
	sw, err := sessionWrite(peer, ps.version, cand)
	if err != nil {
		return err
	}
	ps.session, ps.version = cand, ps.version+1
	if pin != nil {
		ps.pinned = pin
	}
	plan := Retry{Recipient: peer, ID: m.ID, Session: sw, Pin: pin, Out: Outgoing{Envelope: env, Owner: m.ID}, At: c.cfg.Now()}
	if _, err := c.applyWork(ctx, map[Address]*peerState{peer: &ps}, []Plan{plan}); err != nil {
		return fmt.Errorf("retry %x to %s: %w", m.ID[:], peer, err)
	}
	if err := c.fail("retry", "after-swap"); err != nil {
		return err
	}
	if err := c.handOffMessages(ctx, "retry", []wire.Envelope{env}, []wire.LogicalID{m.ID})[0]; err != nil {
		c.emit(Event{Kind: EventNotSent, At: c.cfg.Now(), Peer: peer, ID: m.ID, Err: err})
		return &MessageNotSentError{ID: m.ID, Err: err}
	}
	c.emit(Event{Kind: EventSent, At: c.cfg.Now(), Peer: peer, ID: m.ID})
	return nil
}

// Abandon gives up on a pending sent message: it is removed locally. It is
// not a recall; a copy already delivered stays delivered.
func (c *Client) Abandon(ctx context.Context, peer Address, id wire.LogicalID) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if _, err := c.applyAll(ctx, []Plan{Abandon{Recipient: peer, ID: id, At: c.cfg.Now()}}); err != nil {
		return fmt.Errorf("abandon %x to %s: %w", id[:], peer, err)
	}
	c.emit(Event{Kind: EventAbandoned, At: c.cfg.Now(), Peer: peer, ID: id})
	return nil
}
