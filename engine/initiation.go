package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/engine/session"

	"github.com/parley-chat/parley/wire"
)

// Incoming initiations. A PreKeyMessage is decided by session.DecidePreKeyMessage
// before any cryptographic work; what the decision says is done here, on
// copies: the message is opened on the current session, its initiation is
// accepted (a handshake, whose frame prepareFrame decides), refused for good
// (stale or superseded), or loses a collision to the own initiation.

// preparePreKey prepares a PreKeyMessage as session.DecidePreKeyMessage decides.
func (c *Client) preparePreKey(ctx context.Context, bs *batchState, in *incoming) (opening, error) {
	pm, err := wire.DecodePreKeyMessage(in.env.Payload)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, err)), nil
	}
	id := session.IncomingInitiationID(c.self.String(), c.id, in.sender.String(), &pm.Initiation)
	decision, err := c.decidePreKey(ctx, bs, in, &pm.Initiation, id)
	if err != nil {
		return opening{}, err
	}
	switch decision {
	case session.DecideIdentityChanged:
		return final(in.drop(wire.LogicalID{}, fmt.Errorf("%s: %w", in.sender, ErrIdentityChanged))), nil
	case session.DecideSuperseded, session.DecideStale:
		return finalOr(c.refuseInitiation(ctx, bs, in, &pm, id, decision))
	case session.DecideDecryptCurrent:
		// The current session opens what it sent: a failure here is a
		// forgery or a copy, never a reason to start again.
		cand := in.ps.session.Clone()
		plaintext, err := cand.Decrypt(c.cfg.Random, in.env.Type, in.env.ID, pm.Message)
		if err != nil {
			return final(in.drop(wire.LogicalID{}, err)), nil
		}
		return opening{session: cand, plaintext: plaintext}, nil
	default:
		return c.acceptInitiation(ctx, bs, in, &pm, id, decision)
	}
}

// decidePreKey gathers what session.DecidePreKeyMessage looks at, the initiations
// this batch retired included, and applies it.
func (c *Client) decidePreKey(ctx context.Context, bs *batchState, in *incoming, h *wire.InitiationHeader, id InitiationID) (session.Decision, error) {
	ps, sender := in.ps, in.sender
	dec := session.PreKeyDecisionInput{Pinned: ps.pinned, Identity: session.InitiationIdentity(h), ID: id, Replaces: InitiationID(h.Replaces)}
	if ps.session != nil {
		dec.Current = &session.CurrentSession{ID: ps.session.ID, AwaitingReply: ps.session.Initiator && ps.session.AwaitingReply}
	}
	var retiredErr error
	dec.Retired = func(id InitiationID) bool {
		if bs.retired[retiredKey{sender, id}] {
			return true
		}
		ok, err := c.store.Retired(ctx, sender, id)
		if err != nil {
			retiredErr = err
		}
		return ok
	}
	decision := session.DecidePreKeyMessage(dec)
	if retiredErr != nil {
		return 0, retiredErr
	}
	return decision, nil
}

// refuseInitiation is the verdict on an initiation that lost for good
// (stale, or superseded by the established session): the row is dropped
// (see abandonedInitiation for what the drop cleans up), and the own
// session is announced or, with nothing to announce, the peer is asked for
// recovery.
func (c *Client) refuseInitiation(ctx context.Context, bs *batchState, in *incoming, pm *wire.PreKeyMessage, id InitiationID, decision session.Decision) (prepared, error) {
	sender := in.sender
	verdict := fmt.Errorf("%s: %w", sender, ErrStaleSessionInitiation)
	if decision == session.DecideSuperseded {
		verdict = fmt.Errorf("%s: superseded by the established session: %w", sender, ErrStaleSessionInitiation)
	}
	plan := DropStaged{StagedRow: in.row.Row, Reason: ErrorName(verdict), At: in.now}
	if err := c.abandonedInitiation(ctx, bs, sender, &pm.Initiation, id, in.env, pm.Message, decision == session.DecideSuperseded, &plan); err != nil {
		return prepared{}, err
	}
	if decision == session.DecideStale {
		var err error
		if plan.Announce, err = c.announce(in.ps, sender, id); err != nil {
			return prepared{}, err
		}
	}
	if plan.Announce == nil {
		// Nothing to announce, or nothing the peer would take in place of
		// this initiation: a peer that still sends on it abandoned it, lost
		// what replaced it, or holds it against an own session it retired.
		return c.askRecovery(in, wire.RecoveryInitiation, id, verdict, &plan)
	}
	return prepared{plan: plan, result: ReceiveResult{Kind: ResultError, Sender: sender, Err: verdict}, ack: &plan.Announce.Ack}, nil
}

// acceptInitiation responds to an initiation with the prekeys it names and
// opens its message: a handshake, unless the initiation loses a collision.
func (c *Client) acceptInitiation(ctx context.Context, bs *batchState, in *incoming, pm *wire.PreKeyMessage, id InitiationID, decision session.Decision) (opening, error) {
	h := &pm.Initiation
	keys, err := c.responderKeys(ctx, bs, h)
	if err != nil {
		if errors.Is(err, ErrUnknownPreKey) || errors.Is(err, ErrExpiredSignedPreKey) {
			// A one-time prekey handed out twice, or a bundle older than
			// the prekeys held: the peer must start again from a new
			// bundle.
			return finalOr(c.askRecovery(in, wire.RecoveryInitiation, id, err, nil))
		}
		return opening{}, err
	}
	// Prekeys this device holds that do not open the initiation or its
	// message: a forgery, not a reason to start again.
	cand, err := session.Respond(c.self.String(), c.id, in.sender.String(), h, keys, in.now)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, err)), nil
	}
	plaintext, err := cand.Decrypt(c.cfg.Random, in.env.Type, in.env.ID, pm.Message)
	if err != nil {
		return final(in.drop(wire.LogicalID{}, err)), nil
	}
	if decision == session.DecideCollision {
		return finalOr(c.loseCollision(bs, in, h, id, keys))
	}
	hs := &Handshake{}
	if in.ps.pinned == nil {
		// Pinned on first use, unless the person's list held here names
		// this device with other keys: then it is not theirs (a relay
		// making up a session under a listed device's address), and no
		// session is kept with it.
		if err := c.checkListed(ctx, in.sender, cand.PeerIdentity); errors.Is(err, ErrNotInDeviceList) {
			return final(in.drop(wire.LogicalID{}, fmt.Errorf("initiation: %w", err))), nil
		} else if err != nil {
			return opening{}, err
		}
		k := cand.PeerIdentity
		hs.Pin = &k
	}
	if keys.OneTimePreKey != nil {
		id := keys.OneTimePreKey.ID
		hs.ConsumeOneTime = &id
	}
	if decision == session.DecideAcceptReplace || decision == session.DecideReplaceNamed {
		s := in.ps.session
		hs.Retire = &RetiredInitiation{ID: s.ID, SignedPreKeyID: s.SignedPreKeyID, RetiredAt: in.now.Unix()}
	}
	return opening{session: cand, handshake: hs, plaintext: plaintext}, nil
}

// loseCollision is the verdict on an authenticated initiation that lost a
// collision to the own one: its plaintext is dropped unread, its initiation
// retired and its one-time prekey consumed, and the own session announced.
func (c *Client) loseCollision(bs *batchState, in *incoming, h *wire.InitiationHeader, id InitiationID, keys session.ResponderKeys) (prepared, error) {
	sender := in.sender
	bs.retired[retiredKey{sender, id}] = true
	ann, err := c.announce(in.ps, sender, id)
	if err != nil {
		return prepared{}, err
	}
	plan := CollisionRetire{StagedRow: in.row.Row, Peer: sender, Retired: RetiredInitiation{ID: id, SignedPreKeyID: h.SignedPreKeyID, RetiredAt: in.now.Unix()}, Announce: ann}
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

// abandonedInitiation completes the drop of an initiation that lost for
// good (stale, or superseded by the established session): when it names a
// one-time prekey this device still holds, it authenticates the initiation
// and, if it is genuine, deletes that key (one-time prekeys never expire,
// so it would otherwise stay on disk for good); a superseded initiation is
// retired too, so that its copies are stale at once. A forgery changes
// nothing; each key costs the work once, since it is gone after.
func (c *Client) abandonedInitiation(ctx context.Context, bs *batchState, sender Address, h *wire.InitiationHeader, id InitiationID,
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
	cand, err := session.Respond(c.self.String(), c.id, sender.String(), h, keys, c.cfg.Now())
	if err != nil {
		return nil
	}
	if _, err := cand.Decrypt(c.cfg.Random, env.Type, env.ID, m); err != nil {
		return nil
	}
	otk := h.OneTimePreKeyID
	plan.ConsumeOneTime = &otk
	bs.consumed[otk] = true
	if superseded && !bs.retired[retiredKey{sender, id}] {
		plan.Peer = sender
		plan.Retire = &RetiredInitiation{ID: id, SignedPreKeyID: h.SignedPreKeyID, RetiredAt: c.cfg.Now().Unix()}
		bs.retired[retiredKey{sender, id}] = true
	}
	return nil
}

// announce prepares an Announcement on the working state of a peer whose
// PreKeyMessage of the initiation theirs lost to the own initiation (a
// collision or a stale retry), when the own session still awaits its first
// reply: see Announcement. It returns nil when there is nothing to
// announce, or when the announcement could not settle the peer (takesOver).
//
// Announcements stop once the own session has sent MaxSkip/2 messages: a
// relay replaying a stale envelope must not push the session beyond what the
// peer can skip to. Before that bound, each announcement that gets through
// settles the peer.
func (c *Client) announce(ps *peerState, peer Address, theirs InitiationID) (*Announcement, error) {
	s := ps.session
	if s == nil || !s.Initiator || !s.AwaitingReply || s.SendingCount() >= MaxSkip/2 || !takesOver(s, theirs) {
		return nil, nil
	}
	sw, out, err := c.prepareAck(ps, peer, wire.LogicalID{})
	if err != nil || sw == nil {
		return nil, err
	}
	return &Announcement{Session: *sw, Ack: *out}, nil
}

// takesOver reports whether a peer that sends on its initiation theirs,
// still awaiting its first reply, takes the own session s in its place: s
// names theirs as the one it replaces (rule 5 there), or s has the smaller
// ID (rule 8 there). A collision this device won always passes: the losing
// ID is the greater. A stale initiation need not: when the session it lost
// to is gone (reset by a recovery request before the peer heard of it), the
// own next initiation names what the request named, and has the greater ID
// half the time. The peer then keeps theirs, and refuses s as the loser of
// a collision, retiring it: each side holds an initiation the other
// retired, and announcing s would only make the peer announce theirs back,
// stale here in turn. Only a recovery request about theirs settles that.
func takesOver(s *session.Session, theirs InitiationID) bool {
	if s.Initiation != nil && InitiationID(s.Initiation.Replaces) == theirs {
		return true
	}
	return s.ID.Compare(theirs) < 0
}

// responderKeys finds the private prekeys an initiation names.
func (c *Client) responderKeys(ctx context.Context, bs *batchState, h *wire.InitiationHeader) (session.ResponderKeys, error) {
	c.mu.Lock()
	spk, kem, next := c.spks[h.SignedPreKeyID], c.kems[h.KEMPreKeyID], c.nextPKID
	c.mu.Unlock()
	if spk == nil || kem == nil {
		// An ID this device once issued has been deleted at its expiry.
		if h.SignedPreKeyID < next && h.KEMPreKeyID < next {
			return session.ResponderKeys{}, ErrExpiredSignedPreKey
		}
		return session.ResponderKeys{}, ErrUnknownPreKey
	}
	keys := session.ResponderKeys{SignedPreKey: spk, KEMPreKey: kem}
	if h.HasOneTimePreKey {
		if bs.consumed[h.OneTimePreKeyID] {
			return session.ResponderKeys{}, ErrUnknownPreKey
		}
		rec, err := c.store.OneTimePreKey(ctx, h.OneTimePreKeyID)
		if err != nil {
			return session.ResponderKeys{}, err
		}
		if keys.OneTimePreKey, err = session.UnmarshalOneTimePreKey(rec); err != nil {
			return session.ResponderKeys{}, err
		}
	}
	return keys, nil
}
