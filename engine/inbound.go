package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

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

// batchState is what the plans prepared so far in one batch changed, beyond
// peer state: later plans of the batch must see it.
type batchState struct {
	work      map[Address]*peerState
	delivered map[inboundKey][32]byte
	retired   map[retiredKey]bool
	consumed  map[uint32]bool
}

type inboundKey struct {
	peer Address
	id   wire.LogicalID
}

type retiredKey struct {
	peer Address
	id   InitiationID
}

func newBatchState() *batchState {
	return &batchState{work: make(map[Address]*peerState), delivered: make(map[inboundKey][32]byte),
		retired: make(map[retiredKey]bool), consumed: make(map[uint32]bool)}
}

// prepared is one staged row's plan and the result it reports once committed.
type prepared struct {
	plan     Plan
	result   ReceiveResult
	ack      *Outgoing
	recovery *Outgoing      // a recovery request to the sender
	ticket   recoveryTicket // its slot in the limits, refunded if it does not go out
}

// ProcessStaged processes the durable staging area in arrival order, in bounded
// pages, each page applied in one transaction (group commit) with every
// receive all-or-nothing on its own. A receive that fails rolls back
// entirely; its row is then quarantined (with the durable retirement, for a
// collision) so that it does not block later rows. It returns one result per
// processed row. After the commit it hands off the ACKs of repeated finalized
// messages and emits the events.
func (c *Client) ProcessStaged(ctx context.Context) ([]ReceiveResult, error) {
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
			return results, nil
		}
		after = rows[len(rows)-1].Row
		rs, err := c.processRows(ctx, rows)
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
				one, err := c.processRows(ctx, []StagedEnvelope{row})
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

func (c *Client) processRows(ctx context.Context, rows []StagedEnvelope) ([]ReceiveResult, error) {
	bs := newBatchState()
	preps := make([]prepared, 0, len(rows))
	// Recovery requests not sent after all give their slots back, so that
	// the failure is answered when its row is processed again.
	refund := func(from int) {
		for _, p := range preps[from:] {
			c.refundRecovery(p.ticket)
		}
	}
	for _, row := range rows {
		p, err := c.prepareReceive(ctx, bs, row)
		if err != nil {
			// Not a verdict on the envelope (storage, cancellation): stop
			// here; the row stays staged.
			for peer := range bs.work {
				c.forget(peer)
			}
			refund(0)
			return nil, err
		}
		preps = append(preps, p)
	}
	plans := make([]Plan, len(preps))
	for i, p := range preps {
		plans[i] = p.plan
	}
	receipts, err := c.commitWork(ctx, bs.work, plans)
	if err != nil {
		refund(0)
		return nil, fmt.Errorf("apply %d receives: %w", len(plans), err)
	}
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
	acks := make([]*Outgoing, len(preps))
	for i, p := range preps {
		acks[i] = p.ack
	}
	// A cancelled hand-off leaves the rest of the ACKs unsent (the peer's
	// next retry brings them); the results and events still go out.
	sent, ackErr := c.sendAcks(ctx, plans[0].Kind(), acks)
	var asked []bool
	if ackErr == nil {
		recs := make([]*Outgoing, len(preps))
		for i, p := range preps {
			recs[i] = p.recovery
		}
		asked, ackErr = c.handOffOutgoing(ctx, plans[0].Kind(), HandoffRecovery, recs)
	}
	for i, p := range preps {
		if p.recovery != nil && (asked == nil || !asked[i]) {
			c.refundRecovery(p.ticket)
		}
	}
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
		c.emit(Event{Kind: EventReceived, At: c.cfg.Now(), Peer: res.Sender, ID: res.ID, Result: &r, marker: receipts[i].Marker})
	}
	if ackErr != nil {
		return results, &afterCommitError{ackErr}
	}
	return results, nil
}

// afterCommitError is a failure after a page of receives committed: the
// page must not be prepared again.
type afterCommitError struct{ err error }

func (e *afterCommitError) Error() string { return e.err.Error() }
func (e *afterCommitError) Unwrap() error { return e.err }

// prepareReceive turns one staged row into a plan. A verdict on the envelope
// (malformed, forged, stale, collision...) comes back as a plan with an error
// result; only a failure to prepare at all (storage, cancellation) is an error.
func (c *Client) prepareReceive(ctx context.Context, bs *batchState, row StagedEnvelope) (prepared, error) {
	now := c.cfg.Now()
	drop := func(sender Address, id wire.LogicalID, verdict error) (prepared, error) {
		return prepared{
			plan:   DropStaged{StagedRow: row.Row, Reason: ErrorName(verdict), At: now},
			result: ReceiveResult{Kind: ResultError, Sender: sender, ID: id, Err: verdict},
		}, nil
	}
	// ask drops the envelope (as plan says, or plainly when plan is nil)
	// and, within the limits, answers it with a recovery request: it came
	// from a peer whose session with this device cannot work (see
	// recovery.go).
	ask := func(ps *peerState, sender Address, kind wire.RecoveryKind, ref [32]byte, verdict error, plan *DropStaged) (prepared, error) {
		out, ticket, err := c.requestRecovery(ps, sender, kind, ref)
		if err != nil {
			return prepared{}, err
		}
		p, _ := drop(sender, wire.LogicalID{}, verdict)
		d := p.plan.(DropStaged)
		if plan != nil {
			d = *plan
		}
		if out != nil {
			d.Recovery = out
			p.recovery, p.ticket = out, ticket
		}
		p.plan = d
		return p, nil
	}
	if row.Err != nil {
		return drop(Address{}, wire.LogicalID{}, row.Err)
	}
	env, err := wire.DecodeEnvelope(row.Envelope)
	if err != nil {
		return drop(Address{}, wire.LogicalID{}, fmt.Errorf("envelope: %w", err))
	}
	sender, err := ParseAddress(env.Sender)
	if err != nil {
		return drop(Address{}, wire.LogicalID{}, fmt.Errorf("envelope sender: %w", err))
	}
	if env.Recipient != c.self.String() {
		return drop(sender, wire.LogicalID{}, fmt.Errorf("envelope for %q: %w", env.Recipient, wire.ErrMalformed))
	}
	ps, err := c.working(ctx, bs.work, sender)
	if err != nil {
		return prepared{}, err
	}
	if err := c.fail("receive", "before-crypto"); err != nil {
		return prepared{}, err
	}

	var cand *Session
	var hs *Handshake
	var plaintext []byte
	switch env.Type {
	case wire.EnvelopeRecovery:
		return c.prepareRecovery(bs, row, env, sender, ps), nil
	case wire.EnvelopePreKey:
		pm, err := wire.DecodePreKeyMessage(env.Payload)
		if err != nil {
			return drop(sender, wire.LogicalID{}, err)
		}
		h := &pm.Initiation
		incoming := IncomingInitiationID(c.self, c.id, sender, h)
		in := PreKeyDecisionInput{Pinned: ps.pinned, Identity: InitiationIdentity(h), ID: incoming, Replaces: InitiationID(h.Replaces)}
		if ps.session != nil {
			in.Current = &CurrentSession{ID: ps.session.ID, AwaitingReply: ps.session.Initiator && ps.session.AwaitingReply}
		}
		var retiredErr error
		in.Retired = func(id InitiationID) bool {
			if bs.retired[retiredKey{sender, id}] {
				return true
			}
			ok, err := c.store.Retired(ctx, sender, id)
			if err != nil {
				retiredErr = err
			}
			return ok
		}
		decision := DecidePreKeyMessage(in)
		if retiredErr != nil {
			return prepared{}, retiredErr
		}
		switch decision {
		case DecideIdentityChanged:
			return drop(sender, wire.LogicalID{}, fmt.Errorf("%s: %w", sender, ErrIdentityChanged))
		case DecideSuperseded, DecideStale:
			verdict := fmt.Errorf("%s: %w", sender, ErrStaleSessionInitiation)
			if decision == DecideSuperseded {
				verdict = fmt.Errorf("%s: superseded by the established session: %w", sender, ErrStaleSessionInitiation)
			}
			plan := DropStaged{StagedRow: row.Row, Reason: ErrorName(verdict), At: now}
			if err := c.abandonedInitiation(ctx, bs, sender, h, incoming, env, pm.Message, decision == DecideSuperseded, &plan); err != nil {
				return prepared{}, err
			}
			if decision == DecideStale {
				if plan.Announce, err = c.announce(ps, sender); err != nil {
					return prepared{}, err
				}
			}
			if plan.Announce == nil {
				// Nothing to announce: a peer that still sends on this
				// initiation abandoned it, or lost what replaced it.
				return ask(ps, sender, wire.RecoveryInitiation, incoming, verdict, &plan)
			}
			return prepared{plan: plan, result: ReceiveResult{Kind: ResultError, Sender: sender, Err: verdict}, ack: &plan.Announce.Ack}, nil
		case DecideDecryptCurrent:
			// The current session opens what it sent: a failure here is a
			// forgery or a copy, never a reason to start again.
			cand = ps.session.Clone()
			if plaintext, err = cand.Decrypt(c.cfg.Random, env.Type, env.ID, pm.Message); err != nil {
				return drop(sender, wire.LogicalID{}, err)
			}
		default:
			keys, err := c.responderKeys(ctx, bs, h)
			if err != nil {
				if errors.Is(err, ErrUnknownPreKey) || errors.Is(err, ErrExpiredSignedPreKey) {
					// A one-time prekey handed out twice, or a bundle
					// older than the prekeys held: the peer must start
					// again from a new bundle.
					return ask(ps, sender, wire.RecoveryInitiation, incoming, err, nil)
				}
				return prepared{}, err
			}
			// Prekeys this device holds that do not open the initiation or
			// its message: a forgery, not a reason to start again.
			cand, err = Respond(c.self, c.id, sender, h, keys, now)
			if err != nil {
				return drop(sender, wire.LogicalID{}, err)
			}
			if plaintext, err = cand.Decrypt(c.cfg.Random, env.Type, env.ID, pm.Message); err != nil {
				return drop(sender, wire.LogicalID{}, err)
			}
			if decision == DecideCollision {
				// Authenticated; the plaintext is dropped unread.
				bs.retired[retiredKey{sender, incoming}] = true
				ann, err := c.announce(ps, sender)
				if err != nil {
					return prepared{}, err
				}
				plan := CollisionRetire{StagedRow: row.Row, Peer: sender, Retired: RetiredInitiation{ID: incoming, SignedPreKeyID: h.SignedPreKeyID, RetiredAt: now.Unix()}, Announce: ann}
				if keys.OneTimePreKey != nil {
					id := keys.OneTimePreKey.ID
					plan.ConsumeOneTime = &id
					bs.consumed[id] = true
				}
				p := prepared{
					plan:   plan,
					result: ReceiveResult{Kind: ResultError, Sender: sender, Err: fmt.Errorf("%s: %w", sender, ErrSessionCollision)},
				}
				if ann != nil {
					p.ack = &ann.Ack
				}
				return p, nil
			}
			hs = &Handshake{}
			if ps.pinned == nil {
				k := cand.PeerIdentity
				hs.Pin = &k
			}
			if keys.OneTimePreKey != nil {
				id := keys.OneTimePreKey.ID
				hs.ConsumeOneTime = &id
			}
			if decision == DecideAcceptReplace || decision == DecideReplaceNamed {
				hs.Retire = &RetiredInitiation{ID: ps.session.ID, SignedPreKeyID: ps.session.SignedPreKeyID, RetiredAt: now.Unix()}
			}
		}
	case wire.EnvelopeRatchet:
		rm, err := wire.DecodeRatchetMessage(env.Payload)
		if err != nil {
			return drop(sender, wire.LogicalID{}, err)
		}
		if ps.session == nil {
			return ask(ps, sender, wire.RecoveryChain, rm.Header.RatchetKey, fmt.Errorf("%s: %w", sender, ErrNoSession), nil)
		}
		cand = ps.session.Clone()
		if plaintext, err = cand.Decrypt(c.cfg.Random, env.Type, env.ID, rm); err != nil {
			// On a chain the session knows (its receiving chain, or one
			// with skipped keys) the keys are certain: a failure is a
			// forgery. Only a chain it cannot place says the two sides
			// went apart.
			if asksRecovery(err) && !ps.session.knowsChain(rm.Header.RatchetKey) {
				return ask(ps, sender, wire.RecoveryChain, rm.Header.RatchetKey, err, nil)
			}
			return drop(sender, wire.LogicalID{}, err)
		}
	default:
		return drop(sender, wire.LogicalID{}, wire.ErrMalformed)
	}
	if err := c.fail("receive", "after-crypto"); err != nil {
		return prepared{}, err
	}
	frame, err := wire.DecodeFrame(plaintext)
	if err != nil {
		return drop(sender, wire.LogicalID{}, err)
	}

	// The session step is good; now what the frame does.
	version := ps.version
	next := peerState{pinned: ps.pinned, session: cand, version: version + 1, replaces: ps.replaces}
	if hs != nil && hs.Pin != nil {
		next.pinned = hs.Pin
	}
	var effect FrameEffect
	var ack *Outgoing
	// A session the peer set up, or an announcement of the session that
	// won, is where the own pending messages must now go.
	res := ReceiveResult{Sender: sender, ID: frame.ID, handshake: hs != nil, converged: hs != nil}
	switch frame.Kind {
	case wire.FrameAck:
		effect = AckEffect{ID: frame.ID}
		res.Kind = ResultAcknowledgement
		res.converged = res.converged || frame.ID == (wire.LogicalID{})
	default:
		d := digest(frame.Body)
		key := inboundKey{sender, frame.ID}
		effect, res.Kind, err = c.classify(ctx, bs, key, d)
		if err != nil {
			if errors.Is(err, ErrLogicalMessageConflict) {
				return drop(sender, frame.ID, err)
			}
			return prepared{}, err
		}
		switch res.Kind {
		case ResultDelivery:
			res.Body = frame.Body
			if _, ok := effect.(DeliverEffect); ok {
				// A message arrived when its envelope was staged on this
				// device; the conversation shows and orders it by that.
				at := row.ReceivedAt
				if at.IsZero() {
					at = now
				}
				effect = DeliverEffect{ID: frame.ID, Frame: plaintext, Digest: d, At: at}
				bs.delivered[key] = d
				res.fresh = &InboundMessage{Sender: sender, ID: frame.ID, ReceivedAt: at, Digest: d, Body: frame.Body}
			}
		case ResultAlreadyCommitted, ResultAlreadyDiscarded:
			// The ACK's encryption step commits with this receive.
			tmp := next
			if _, ack, err = c.prepareAck(&tmp, sender, frame.ID); err != nil {
				return prepared{}, err
			}
			next.session = tmp.session
		}
	}
	sw, err := sessionWrite(sender, version, next.session)
	if err != nil {
		return prepared{}, err
	}
	*ps = next
	// Later rows of the batch see what this one consumes and retires.
	if hs != nil && hs.ConsumeOneTime != nil {
		bs.consumed[*hs.ConsumeOneTime] = true
	}
	if hs != nil && hs.Retire != nil {
		bs.retired[retiredKey{sender, hs.Retire.ID}] = true
	}
	return prepared{
		plan:   Receive{StagedRow: row.Row, Peer: sender, Session: sw, Handshake: hs, Effect: effect, Ack: ack},
		result: res,
		ack:    ack,
	}, nil
}

// asksRecovery reports the decryption failures that a recovery request
// answers: the session cannot open what the peer sends. A duplicate is not
// one of them (a relay's copy of an envelope already processed).
func asksRecovery(err error) bool {
	return errors.Is(err, ErrDecrypt) || errors.Is(err, ErrTooManySkipped)
}

// abandonedInitiation completes the drop of an initiation that lost for
// good (stale, or superseded by the established session): when it names a
// one-time prekey this device still holds, it authenticates the initiation
// and, if it is genuine, deletes that key (one-time prekeys never expire,
// so it would otherwise stay on disk for good); a superseded initiation is
// retired too, so that its copies are stale at once. A forgery changes
// nothing; each key costs the work once, since it is gone after.
func (c *Client) abandonedInitiation(ctx context.Context, bs *batchState, sender Address, h *wire.InitiationHeader, incoming InitiationID,
	env wire.Envelope, m wire.RatchetMessage, superseded bool, plan *DropStaged) error {
	if !h.HasOneTimePreKey || bs.consumed[h.OneTimePreKeyID] {
		return nil
	}
	keys, err := c.responderKeys(ctx, bs, h)
	if errors.Is(err, ErrUnknownPreKey) || errors.Is(err, ErrExpiredSignedPreKey) || errors.Is(err, ErrNotPending) {
		return nil
	} else if err != nil {
		return err
	}
	cand, err := Respond(c.self, c.id, sender, h, keys, c.cfg.Now())
	if err != nil {
		return nil
	}
	if _, err := cand.Decrypt(c.cfg.Random, env.Type, env.ID, m); err != nil {
		return nil
	}
	id := h.OneTimePreKeyID
	plan.ConsumeOneTime = &id
	bs.consumed[id] = true
	if superseded && !bs.retired[retiredKey{sender, incoming}] {
		plan.Peer = sender
		plan.Retire = &RetiredInitiation{ID: incoming, SignedPreKeyID: h.SignedPreKeyID, RetiredAt: c.cfg.Now().Unix()}
		bs.retired[retiredKey{sender, incoming}] = true
	}
	return nil
}

// announce prepares an Announcement on the working state of a peer whose
// PreKeyMessage lost to the own initiation (a collision or a stale retry),
// when the own session still awaits its first reply: see Announcement. It
// returns nil when there is nothing to announce.
//
// Announcements stop once the own session has sent MaxSkip/2 messages: a
// relay replaying a stale envelope must not push the session beyond what the
// peer can skip to. Before that bound, each announcement that gets through
// settles the peer.
func (c *Client) announce(ps *peerState, peer Address) (*Announcement, error) {
	if ps.session == nil || !ps.session.Initiator || !ps.session.AwaitingReply || ps.session.r.ns >= MaxSkip/2 {
		return nil, nil
	}
	sw, out, err := c.prepareAck(ps, peer, wire.LogicalID{})
	if err != nil {
		return nil, err
	}
	return &Announcement{Session: *sw, Ack: *out}, nil
}

// classify decides what an application frame with this key and digest is:
// new, a repeat of a pending one, of a committed or of a discarded one, or a
// conflict.
func (c *Client) classify(ctx context.Context, bs *batchState, key inboundKey, d [32]byte) (FrameEffect, ResultKind, error) {
	if prev, ok := bs.delivered[key]; ok {
		if prev != d {
			return nil, 0, ErrLogicalMessageConflict
		}
		return RepeatEffect{}, ResultDelivery, nil
	}
	id := key.id
	if m, err := c.store.Inbound(ctx, key.peer, id); err == nil {
		if m.Digest != d {
			return nil, 0, ErrLogicalMessageConflict
		}
		return RepeatEffect{}, ResultDelivery, nil
	} else if !errors.Is(err, ErrNotPending) {
		return nil, 0, err
	}
	f, err := c.store.Finalized(ctx, key.peer, id)
	switch {
	case errors.Is(err, ErrNotPending):
		return DeliverEffect{}, ResultDelivery, nil
	case err != nil:
		return nil, 0, err
	case f.Outcome == OutcomeDiscarded:
		return RepeatEffect{}, ResultAlreadyDiscarded, nil
	case !bytes.Equal(f.Digest[:], d[:]):
		return nil, 0, ErrLogicalMessageConflict
	}
	return RepeatEffect{}, ResultAlreadyCommitted, nil
}

// responderKeys finds the private prekeys an initiation names.
func (c *Client) responderKeys(ctx context.Context, bs *batchState, h *wire.InitiationHeader) (ResponderKeys, error) {
	c.mu.Lock()
	spk, kem, next := c.spks[h.SignedPreKeyID], c.kems[h.KEMPreKeyID], c.nextPKID
	c.mu.Unlock()
	if spk == nil || kem == nil {
		// An ID this device once issued has been deleted at its expiry.
		if h.SignedPreKeyID < next && h.KEMPreKeyID < next {
			return ResponderKeys{}, ErrExpiredSignedPreKey
		}
		return ResponderKeys{}, ErrUnknownPreKey
	}
	keys := ResponderKeys{SignedPreKey: spk, KEMPreKey: kem}
	if h.HasOneTimePreKey {
		if bs.consumed[h.OneTimePreKeyID] {
			return ResponderKeys{}, ErrUnknownPreKey
		}
		rec, err := c.store.OneTimePreKey(ctx, h.OneTimePreKeyID)
		if err != nil {
			return ResponderKeys{}, err
		}
		if keys.OneTimePreKey, err = UnmarshalOneTimePreKey(rec); err != nil {
			return ResponderKeys{}, err
		}
	}
	return keys, nil
}

// FinalizeRequest names one pending received message to commit or discard.
type FinalizeRequest struct {
	Sender  Address
	ID      wire.LogicalID
	Outcome Outcome
	Reason  DiscardReason // for a discard; DiscardRejected when unset
}

// FinalizeResult reports one finalized message: whether its ACK was handed
// off, or Err when it was not finalized.
type FinalizeResult struct {
	AckSent bool
	Err     error
}

// Commit finalizes a pending received message as committed: it becomes a
// finalized record and enters the history in one transaction, so the
// application's effect happens once. Then the ACK goes out on the existing
// session only; ackSent is false when that failed (the sender's next retry
// triggers a new ACK).
func (c *Client) Commit(ctx context.Context, sender Address, id wire.LogicalID) (bool, error) {
	return c.finalizeOne(ctx, FinalizeRequest{Sender: sender, ID: id, Outcome: OutcomeCommitted})
}

// Discard finalizes a pending received message as discarded: the body is
// deleted, the reason stays local, and the ACK goes out as for a commit.
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
// transaction, each on its own, then hands off their ACKs in order.
func (c *Client) FinalizeBatch(ctx context.Context, reqs []FinalizeRequest) ([]FinalizeResult, error) {
	return c.finalizeBatch(ctx, reqs, nil)
}

// finalizeBatch is FinalizeBatch with the pending records the caller knows
// already (the deliveries of this round): those are not read back. The
// plan still checks the stored digest, so a record finalized meanwhile
// fails its plan as it would have.
func (c *Client) finalizeBatch(ctx context.Context, reqs []FinalizeRequest, known map[inboundKey]*InboundMessage) ([]FinalizeResult, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	results := make([]FinalizeResult, len(reqs))
	work := make(map[Address]*peerState)
	var plans []Plan
	var planOf []int
	seen := make(map[inboundKey]bool)
	for i, r := range reqs {
		key := inboundKey{r.Sender, r.ID}
		if seen[key] {
			results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, ErrNotPending)
			continue
		}
		m := known[key]
		if m == nil {
			stored, err := c.store.Inbound(ctx, r.Sender, r.ID)
			if err != nil {
				results[i].Err = fmt.Errorf("finalize %x from %s: %w", r.ID[:], r.Sender, err)
				continue
			}
			m = &stored
		}
		seen[key] = true
		ps, err := c.working(ctx, work, r.Sender)
		if err != nil {
			return nil, err
		}
		p := Finalize{Sender: r.Sender, ID: r.ID, Digest: m.Digest, Outcome: r.Outcome, At: c.cfg.Now(), Arrived: m.ReceivedAt}
		if r.Outcome == OutcomeCommitted {
			p.Body = m.Body
		} else {
			p.Reason = r.Reason
			if p.Reason == DiscardNone {
				p.Reason = DiscardRejected
			}
		}
		if p.Session, p.Ack, err = c.prepareAck(ps, r.Sender, r.ID); err != nil {
			return nil, err
		}
		plans = append(plans, p)
		planOf = append(planOf, i)
	}
	if len(plans) == 0 {
		return results, nil
	}
	receipts, err := c.commitWork(ctx, work, plans)
	if err != nil {
		return nil, fmt.Errorf("finalize: %w", err)
	}
	acks := make([]*Outgoing, len(plans))
	for k, p := range plans {
		acks[k] = p.(Finalize).Ack
	}
	// The finalizations are durable: a cancelled hand-off leaves the rest
	// of the ACKs unsent (ackSent false), never the commits unreported.
	sent, ackErr := c.sendAcks(ctx, plans[0].Kind(), acks)
	for k, p := range plans {
		f := p.(Finalize)
		i := planOf[k]
		results[i].AckSent = sent[k]
		c.emit(Event{Kind: EventFinalized, At: c.cfg.Now(), Peer: f.Sender, ID: f.ID, Outcome: f.Outcome, AckSent: sent[k], marker: receipts[k].Marker})
	}
	if ackErr != nil {
		return results, ackErr
	}
	return results, nil
}

// RelayIdentity reads and verifies the identity that peer's bundle at the
// relay carries, without pinning anything: what an interface shows (its
// safety number) next to a changed identity before the user accepts it.
func (c *Client) RelayIdentity(ctx context.Context, peer Address) (IdentityKey, error) {
	bundle, err := c.relay.FetchBundle(ctx, peer)
	if err != nil {
		return IdentityKey{}, bundleError(peer, err)
	}
	addr, key, err := VerifyBundle(bundle, c.cfg.Now())
	if err != nil {
		return IdentityKey{}, err
	}
	if addr != peer {
		return IdentityKey{}, fmt.Errorf("bundle for %s names %s: %w", peer, addr, ErrBadSignature)
	}
	return key, nil
}

// AcceptIdentity accepts the identity a peer's relay bundle now carries: it
// pins it and removes the session with that device, keeping pending messages
// and processed IDs. The next retry starts a session to the accepted identity
// and resends the stored frames with their logical IDs.
func (c *Client) AcceptIdentity(ctx context.Context, peer Address) (IdentityKey, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	bundle, err := c.relay.FetchBundle(ctx, peer)
	if err != nil {
		return IdentityKey{}, bundleError(peer, err)
	}
	addr, key, err := VerifyBundle(bundle, c.cfg.Now())
	if err != nil {
		return IdentityKey{}, err
	}
	if addr != peer {
		return IdentityKey{}, fmt.Errorf("bundle for %s names %s: %w", peer, addr, ErrBadSignature)
	}
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return IdentityKey{}, err
	}
	plan := AcceptIdentity{Peer: peer, Identity: key, SessionVersion: ps.version, At: c.cfg.Now()}
	if _, err := c.commitWork(ctx, map[Address]*peerState{peer: {pinned: &key}}, []Plan{plan}); err != nil {
		return IdentityKey{}, fmt.Errorf("accept identity of %s: %w", peer, err)
	}
	c.noteConverged(peer)
	c.emit(Event{Kind: EventIdentityAccepted, At: c.cfg.Now(), Peer: peer})
	return key, nil
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

// PendingOutbound pages pending sent messages.
func (c *Client) PendingOutbound(ctx context.Context, q PageQuery) ([]OutboundMessage, error) {
	return c.store.PendingOutbound(ctx, q)
}

// CountOutbound counts pending sent messages.
func (c *Client) CountOutbound(ctx context.Context, peer *Address) (int, error) {
	return c.store.CountOutbound(ctx, peer)
}

// PendingInbound pages pending received messages.
func (c *Client) PendingInbound(ctx context.Context, q PageQuery) ([]InboundMessage, error) {
	return c.store.PendingInbound(ctx, q)
}

// CountInbound counts pending received messages.
func (c *Client) CountInbound(ctx context.Context, peer *Address) (int, error) {
	return c.store.CountInbound(ctx, peer)
}

// History pages a conversation, newest first.
func (c *Client) History(ctx context.Context, peer Address, before int64, limit int) ([]HistoryEntry, error) {
	return c.store.History(ctx, peer, before, limit)
}

// Conversations lists the peers.
func (c *Client) Conversations(ctx context.Context) ([]Conversation, error) {
	return c.store.Conversations(ctx)
}

// Finalized returns the terminal record of a message received from sender
// (ErrNotPending when there is none: still pending, pruned or never seen).
func (c *Client) Finalized(ctx context.Context, sender Address, id wire.LogicalID) (FinalizedRecord, error) {
	return c.store.Finalized(ctx, sender, id)
}

// Attempts returns the envelopes that carried the message id sent to peer,
// oldest first: the send, then each retry (at most store.MaxAttempts kept).
func (c *Client) Attempts(ctx context.Context, peer Address, id wire.LogicalID) ([]Attempt, error) {
	return c.store.Attempts(ctx, peer, id)
}
