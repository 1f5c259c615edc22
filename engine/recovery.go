package engine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Recovery. A device that cannot use an envelope from a peer (an
// initiation refused as stale or for an unknown prekey, a message that does
// not decrypt) tells the peer so with a recovery request: signed by its
// identity key, carrying no plaintext and no key, naming what failed and its
// own current session with the peer. The peer checks the signature against
// its pin and whether the request names its own current session (the
// initiation it sends, or the ratchet key it sends on). Only then does it
// reset: the session is removed and retired, and its next initiation,
// fresh from a new bundle, names the requester's current session as the one
// it replaces, which the requester accepts in place of an established
// session (session.DecidePreKeyMessage rule 5). The pending messages go out again
// with their logical IDs. A request that names anything else (a session
// already replaced, a replay) changes nothing; a forged one fails the
// signature.

const labelRecoveryRequest = "parley/v2/recovery-request"

// Recovery bounds. They keep a device from being made to send requests
// without end (every refused envelope could ask for one), a relay replaying
// one failure from turning it into many, strangers from using up the budget
// that peers with a session need, and a peer (or a relay forging failures)
// from making a device reset and resend without end.
const (
	// RecoveryRepeat is how long the same failure of the same peer waits
	// before it is answered with a request again (the first may be lost),
	// and how long a device waits between two resets of its session with
	// one peer.
	RecoveryRepeat = 30 * time.Second
	// RecoveryWindow, RecoveryPerPeer and RecoveryTotal bound the requests
	// sent in a window: to one peer, and in all to peers this device has a
	// session with. RecoveryStrangers bounds those to everyone else (no
	// pin, or no session) together, within RecoveryTotal.
	RecoveryWindow    = time.Minute
	RecoveryPerPeer   = 4
	RecoveryTotal     = 64
	RecoveryStrangers = 8
)

// recoveryLimits is the in-memory record of the requests sent and the
// resets done lately.
type recoveryLimits struct {
	windowStart time.Time
	total       int
	strangers   int
	perPeer     map[Address]int
	last        map[recoveryKey]time.Time
	resets      map[Address]time.Time
}

type recoveryKey struct {
	peer Address
	ref  [32]byte
}

// recoveryTicket is a request counted against the limits before it went
// out; refund gives it back when it did not.
type recoveryTicket struct {
	key      recoveryKey
	at       time.Time
	stranger bool
}

// allow reserves a request to peer about ref at now, or reports false when
// the limits say no. A stranger is a peer without a pin or a session.
func (l *recoveryLimits) allow(peer Address, ref [32]byte, stranger bool, now time.Time) (recoveryTicket, bool) {
	if now.Sub(l.windowStart) >= RecoveryWindow || now.Before(l.windowStart) {
		l.windowStart, l.total, l.strangers, l.perPeer = now, 0, 0, map[Address]int{}
		for k, at := range l.last {
			if now.Sub(at) >= RecoveryRepeat {
				delete(l.last, k)
			}
		}
	}
	if l.last == nil {
		l.last = map[recoveryKey]time.Time{}
	}
	k := recoveryKey{peer, ref}
	if at, ok := l.last[k]; ok && now.Sub(at) < RecoveryRepeat {
		return recoveryTicket{}, false
	}
	if l.total >= RecoveryTotal || l.perPeer[peer] >= RecoveryPerPeer || stranger && l.strangers >= RecoveryStrangers {
		return recoveryTicket{}, false
	}
	l.total++
	l.perPeer[peer]++
	if stranger {
		l.strangers++
	}
	l.last[k] = now
	return recoveryTicket{key: k, at: now, stranger: stranger}, true
}

// refund gives back a ticket whose request never went out (its batch
// failed, or the hand-off did), so that the failure is answered when the
// envelope is processed again or comes again.
func (l *recoveryLimits) refund(t recoveryTicket) {
	if at, ok := l.last[t.key]; !ok || !at.Equal(t.at) {
		return // the window moved on, or a newer request took the slot
	}
	delete(l.last, t.key)
	if !t.at.Before(l.windowStart) {
		l.total--
		l.perPeer[t.key.peer]--
		if t.stranger {
			l.strangers--
		}
	}
}

// canReset reports whether a session with peer may be reset at now: at
// most once per RecoveryRepeat, so that neither a peer nor a relay forging
// failures can make this device set up sessions and resend its pending
// messages without end.
func (l *recoveryLimits) canReset(peer Address, now time.Time) bool {
	at, ok := l.resets[peer]
	return !ok || now.Sub(at) >= RecoveryRepeat || now.Before(at)
}

// reset records that the session with peer was reset at now.
func (l *recoveryLimits) reset(peer Address, now time.Time) {
	if l.resets == nil {
		l.resets = map[Address]time.Time{}
	}
	for p, at := range l.resets {
		if now.Sub(at) >= RecoveryRepeat {
			delete(l.resets, p)
		}
	}
	l.resets[peer] = now
}

// noteReset records a committed reset of the session with peer.
func (c *Client) noteReset(peer Address) {
	c.recoveryMu.Lock()
	c.recovery.reset(peer, c.cfg.Now())
	c.recoveryMu.Unlock()
}

// resendAfterReset sends the pending messages to each peer whose session a
// recovery request reset, on a fresh session from a new bundle: that is the
// rest of the recovery, whatever the retry policy. A failure is reported as
// an event; the messages stay pending for the next retry.
func (c *Client) resendAfterReset(ctx context.Context, res []ReceiveResult) {
	done := map[Address]bool{}
	for _, r := range res {
		if r.Kind != ResultSessionReset || done[r.Sender] {
			continue
		}
		done[r.Sender] = true
		if _, err := c.Retry(ctx, r.Sender); err != nil && ctx.Err() == nil {
			var notSent *MessageNotSentError
			if !errors.As(err, &notSent) {
				c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "retry", Peer: r.Sender, Err: err})
			}
		}
	}
}

// recoveryMessage is what a recovery request's signature covers: a label,
// the envelope's ID, both addresses and the request's fields.
func recoveryMessage(envID wire.EnvelopeID, sender, recipient string, r wire.RecoveryRequest) []byte {
	b := make([]byte, 0, len(labelRecoveryRequest)+16+2+len(sender)+len(recipient)+wire.RecoveryRequestSize)
	b = append(b, labelRecoveryRequest...)
	b = append(b, envID[:]...)
	b = append(b, byte(len(sender)))
	b = append(b, sender...)
	b = append(b, byte(len(recipient)))
	b = append(b, recipient...)
	return r.AppendSigned(b)
}

// requestRecovery makes a recovery request to peer about what failed (the
// initiation or the ratchet key ref), naming the own current session with
// it as ps holds it. It returns nil when the limits say no.
func (c *Client) requestRecovery(ps *peerState, peer Address, kind wire.RecoveryKind, ref [32]byte) (*Outgoing, recoveryTicket, error) {
	stranger := ps.pinned == nil || ps.session == nil
	c.recoveryMu.Lock()
	ticket, ok := c.recovery.allow(peer, ref, stranger, c.cfg.Now())
	c.recoveryMu.Unlock()
	if !ok {
		return nil, recoveryTicket{}, nil
	}
	r := wire.RecoveryRequest{Kind: kind, Ref: ref}
	if ps.session != nil {
		r.Current = ps.session.ID
	}
	envID, err := c.newEnvelopeID()
	if err != nil {
		c.refundRecovery(ticket)
		return nil, recoveryTicket{}, err
	}
	copy(r.Signature[:], c.id.Sign(recoveryMessage(envID, c.self.String(), peer.String(), r)))
	payload, err := wire.EncodeRecoveryRequest(r)
	if err != nil {
		c.refundRecovery(ticket)
		return nil, recoveryTicket{}, err
	}
	return &Outgoing{Envelope: wire.Envelope{Type: wire.EnvelopeRecovery, ID: envID, Sender: c.self.String(), Recipient: peer.String(), Payload: payload}}, ticket, nil
}

// refundRecovery gives back the slot of a request that did not go out.
func (c *Client) refundRecovery(t recoveryTicket) {
	if t.at.IsZero() {
		return
	}
	c.recoveryMu.Lock()
	c.recovery.refund(t)
	c.recoveryMu.Unlock()
}

// prepareRecovery turns a staged recovery request into a plan: a session
// reset when it is genuine and names the own current session, a drop
// otherwise.
func (c *Client) prepareRecovery(bs *batchState, in *incoming) prepared {
	env, sender, ps, now := in.env, in.sender, in.ps, in.now
	r, err := wire.DecodeRecoveryRequest(env.Payload)
	if err != nil {
		return in.drop(wire.LogicalID{}, err)
	}
	if ps.pinned == nil {
		return in.drop(wire.LogicalID{}, fmt.Errorf("recovery request from %s, whose identity is not pinned: %w", sender, ErrBadSignature))
	}
	if !ed25519.Verify(ps.pinned.SigningKey[:], recoveryMessage(env.ID, env.Sender, env.Recipient, r), r.Signature[:]) {
		return in.drop(wire.LogicalID{}, fmt.Errorf("recovery request from %s: %w", sender, ErrBadSignature))
	}
	s := ps.session
	// An initiation is only ever refused while its PreKeyMessages go out,
	// so a request about one is current only while the session still
	// awaits its first reply; one about a chain only while this device
	// sends on it.
	names := s != nil && (r.Kind == wire.RecoveryInitiation && r.Ref == s.ID && s.Initiator && s.AwaitingReply ||
		r.Kind == wire.RecoveryChain && r.Ref == s.SendingKey())
	if !names {
		return in.drop(wire.LogicalID{}, fmt.Errorf("%s: %w", sender, ErrStaleRecovery))
	}
	c.recoveryMu.Lock()
	ok := c.recovery.canReset(sender, now)
	c.recoveryMu.Unlock()
	if !ok {
		return in.drop(wire.LogicalID{}, fmt.Errorf("%s: the session was reset less than %v ago: %w", sender, RecoveryRepeat, ErrStaleRecovery))
	}
	plan := ResetSession{StagedRow: in.row.Row, Peer: sender, SessionVersion: ps.version, Replaces: r.Current, At: now,
		Retire: []RetiredInitiation{{ID: s.ID, SignedPreKeyID: s.SignedPreKeyID, RetiredAt: now.Unix()}}}
	bs.retired[retiredKey{sender, s.ID}] = true
	if r.Current != (InitiationID{}) && r.Current != s.ID {
		// The peer's session that the next initiation replaces: a copy of
		// its initiation that arrives late must be stale here.
		plan.Retire = append(plan.Retire, RetiredInitiation{ID: r.Current, RetiredAt: now.Unix()})
		bs.retired[retiredKey{sender, r.Current}] = true
	}
	refused := ps.refused
	if h := s.Initiation; r.Kind == wire.RecoveryInitiation && h != nil && h.HasOneTimePreKey && !slices.Contains(refused, h.OneTimePreKeyID) {
		// The peer refused an initiation that used this one-time prekey
		// (unknown to it, or stale): a relay replaying it must not get
		// the next initiation refused the same way.
		plan.RefusedOneTime = []uint32{h.OneTimePreKeyID}
		refused = append(slices.Clip(refused), h.OneTimePreKeyID)
	}
	*ps = peerState{pinned: ps.pinned, replaces: r.Current, refused: refused}
	return prepared{plan: plan, result: ReceiveResult{Kind: ResultSessionReset, Sender: sender}}
}

// ResetSession forgets the session with peer as if this device had been
// reinstalled, but keeps the pinned identity: the session is removed and its
// initiation retired (a copy of its messages that arrives later is refused),
// and the next message to peer sets up a new session from a fresh bundle.
// Pending messages stay and go out on it at the next retry. With no session
// it does nothing. The demo resets both sides so that a collision can be
// staged after a conversation has started.
func (c *Client) ResetSession(ctx context.Context, peer Address) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	work := make(map[Address]*peerState)
	ps, err := c.working(ctx, work, peer)
	if err != nil {
		return err
	}
	s := ps.session
	if s == nil {
		return nil
	}
	now := c.cfg.Now()
	plan := ResetSession{Peer: peer, SessionVersion: ps.version, At: now,
		Retire: []RetiredInitiation{{ID: s.ID, SignedPreKeyID: s.SignedPreKeyID, RetiredAt: now.Unix()}}}
	*ps = peerState{pinned: ps.pinned, refused: ps.refused}
	rs, err := c.applyWork(ctx, work, []Plan{plan})
	if err != nil {
		return fmt.Errorf("reset the session with %s: %w", peer, err)
	}
	c.emit(Event{Kind: EventSessionReset, At: now, Peer: peer, marker: rs[0].Marker})
	return nil
}

// HasSession reports whether this device has a session with peer.
func (c *Client) HasSession(ctx context.Context, peer Address) (bool, error) {
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return false, err
	}
	return ps.session != nil, nil
}
