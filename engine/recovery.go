package engine

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
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
// session (DecidePreKeyMessage rule 5). The pending messages go out again
// with their logical IDs. A request that names anything else (a session
// already replaced, a replay) changes nothing; a forged one fails the
// signature.

const labelRecoveryRequest = "parley/v2/recovery-request"

// Recovery request bounds. They keep a device from being made to send
// requests without end (every refused envelope could ask for one) and a
// relay replaying one failure from turning it into many.
const (
	// RecoveryRepeat is how long the same failure of the same peer waits
	// before it is answered with a request again (the first may be lost).
	RecoveryRepeat = 30 * time.Second
	// RecoveryWindow, RecoveryPerPeer and RecoveryTotal bound the requests
	// sent in a window: to one peer, and in all.
	RecoveryWindow  = time.Minute
	RecoveryPerPeer = 4
	RecoveryTotal   = 64
)

// recoveryLimits is the in-memory record of the requests sent lately.
type recoveryLimits struct {
	windowStart time.Time
	total       int
	perPeer     map[Address]int
	last        map[recoveryKey]time.Time
}

type recoveryKey struct {
	peer Address
	ref  [32]byte
}

// allow reports whether a request to peer about ref may go out at now, and
// counts it when it may.
func (l *recoveryLimits) allow(peer Address, ref [32]byte, now time.Time) bool {
	if now.Sub(l.windowStart) >= RecoveryWindow || now.Before(l.windowStart) {
		l.windowStart, l.total, l.perPeer = now, 0, map[Address]int{}
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
		return false
	}
	if l.total >= RecoveryTotal || l.perPeer[peer] >= RecoveryPerPeer {
		return false
	}
	l.total++
	l.perPeer[peer]++
	l.last[k] = now
	return true
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
func (c *Client) requestRecovery(ps *peerState, peer Address, kind wire.RecoveryKind, ref [32]byte) (*Outgoing, error) {
	c.recoveryMu.Lock()
	ok := c.recovery.allow(peer, ref, c.cfg.Now())
	c.recoveryMu.Unlock()
	if !ok {
		return nil, nil
	}
	r := wire.RecoveryRequest{Kind: kind, Ref: ref}
	if ps.session != nil {
		r.Current = ps.session.ID
	}
	envID, err := c.newEnvelopeID()
	if err != nil {
		return nil, err
	}
	copy(r.Signature[:], c.id.Sign(recoveryMessage(envID, c.self.String(), peer.String(), r)))
	payload, err := wire.EncodeRecoveryRequest(r)
	if err != nil {
		return nil, err
	}
	return &Outgoing{Envelope: wire.Envelope{Type: wire.EnvelopeRecovery, ID: envID, Sender: c.self.String(), Recipient: peer.String(), Payload: payload}}, nil
}

// prepareRecovery turns a staged recovery request from sender into a plan:
// a session reset when it is genuine and names the own current session, a
// drop otherwise.
func (c *Client) prepareRecovery(bs *batchState, row StagedEnvelope, env wire.Envelope, sender Address, ps *peerState) prepared {
	now := c.cfg.Now()
	drop := func(verdict error) prepared {
		return prepared{
			plan:   DropStaged{StagedRow: row.Row, Reason: ErrorName(verdict), At: now},
			result: ReceiveResult{Kind: ResultError, Sender: sender, Err: verdict},
		}
	}
	r, err := wire.DecodeRecoveryRequest(env.Payload)
	if err != nil {
		return drop(err)
	}
	if ps.pinned == nil {
		return drop(fmt.Errorf("recovery request from %s, whose identity is not pinned: %w", sender, ErrBadSignature))
	}
	if !ed25519.Verify(ps.pinned.SigningKey[:], recoveryMessage(env.ID, env.Sender, env.Recipient, r), r.Signature[:]) {
		return drop(fmt.Errorf("recovery request from %s: %w", sender, ErrBadSignature))
	}
	s := ps.session
	names := s != nil && (r.Kind == wire.RecoveryInitiation && r.Ref == s.ID || r.Kind == wire.RecoveryChain && r.Ref == s.r.dhsPub)
	if !names {
		return drop(fmt.Errorf("%s: %w", sender, ErrStaleRecovery))
	}
	plan := ResetSession{StagedRow: row.Row, Peer: sender, SessionVersion: ps.version, Replaces: r.Current, At: now,
		Retire: []RetiredInitiation{{ID: s.ID, SignedPreKeyID: s.SignedPreKeyID, RetiredAt: now.Unix()}}}
	bs.retired[retiredKey{sender, s.ID}] = true
	if r.Current != (InitiationID{}) && r.Current != s.ID {
		// The peer's session that the next initiation replaces: a copy of
		// its initiation that arrives late must be stale here.
		plan.Retire = append(plan.Retire, RetiredInitiation{ID: r.Current, RetiredAt: now.Unix()})
		bs.retired[retiredKey{sender, r.Current}] = true
	}
	*ps = peerState{pinned: ps.pinned, replaces: r.Current}
	return prepared{plan: plan, result: ReceiveResult{Kind: ResultSessionReset, Sender: sender}}
}
