package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/engine/session"
	"time"
)

// The sending window: a sending chain never runs further ahead of what the
// peer is known to have received than the peer can skip (MaxSkip), so this
// device never encrypts what the peer would have to refuse
// (docs/protocol.md, "The sending window").
//
// What this device knows of the peer's place on the current sending chain:
// nothing. A chain starts when a message arrives on a new ratchet key of
// the peer, and the peer makes a new ratchet key only after it received
// something on the chain this device sent on then. So as soon as the peer
// has received anything of the current chain (which its ACK would say), its
// next message, whatever it carries, starts a new chain here. Until then the
// peer may be at the chain's start, and a message at position n makes it
// skip n keys (at most MaxSkip), the next chain's first message the whole
// length of this one (at most MaxSkip too).

const (
	// SendWindow is the most messages one sending chain carries: MaxSkip,
	// the peer's skip window, counted from the chain's start, the last
	// position the peer is known to have reached.
	SendWindow = MaxSkip
	// SendWindowWait is how long a full window waits for the peer before
	// the retry resets the session and sends on a fresh one that names it
	// (at most once per RecoveryRepeat): the peer that holds the session
	// replaces it (rule 5), and a chain whose every envelope a relay lost
	// does not leave the messages pending for ever. An hour: the envelopes
	// of a full window usually wait in the mailbox of a peer that is away,
	// and a reset then only costs a one-time prekey.
	SendWindowWait = time.Hour
)

// canSend reports whether the sending chain has room for one more message
// (SendWindow).
func canSend(s *session.Session) bool { return s.SendingCount() < SendWindow }

// noteWindow records whether the window of the session with peer was full
// when a message was to go (full), keeping the time it was first found full
// (for SendWindowWait).
func (c *Client) noteWindow(peer Address, full bool) {
	c.recoveryMu.Lock()
	defer c.recoveryMu.Unlock()
	switch _, known := c.windowFull[peer]; {
	case full && !known:
		if c.windowFull == nil {
			c.windowFull = make(map[Address]time.Time)
		}
		c.windowFull[peer] = c.cfg.Now()
	case !full && known:
		delete(c.windowFull, peer)
	}
}

// resetFullWindow resets the session with peer when its window has been
// full for SendWindowWait (and no reset happened within RecoveryRepeat), so
// that the retry that follows sends on a fresh session naming it. It is
// one ResetSession plan, as a reset the device asks for itself. Callers
// hold sendMu.
func (c *Client) resetFullWindow(ctx context.Context, peer Address) error {
	now := c.cfg.Now()
	c.recoveryMu.Lock()
	since, full := c.windowFull[peer]
	due := full && now.Sub(since) >= SendWindowWait && c.recovery.canReset(peer, now)
	c.recoveryMu.Unlock()
	if !due {
		return nil
	}
	work := make(map[Address]*peerState)
	ps, err := c.working(ctx, work, peer)
	if err != nil {
		return err
	}
	s := ps.session
	if s == nil || canSend(s) {
		c.noteWindow(peer, false)
		return nil
	}
	plan := ResetSession{Peer: peer, SessionVersion: ps.version, At: now, Replaces: s.ID,
		Retire: []RetiredInitiation{{ID: s.ID, SignedPreKeyID: s.SignedPreKeyID, RetiredAt: now.Unix()}}}
	*ps = peerState{pinned: ps.pinned, replaces: s.ID, refused: ps.refused}
	rs, err := c.applyWork(ctx, work, []Plan{plan})
	if err != nil {
		return fmt.Errorf("reset the session with %s after its window stayed full: %w", peer, err)
	}
	c.noteReset(peer)
	c.noteWindow(peer, false)
	c.emit(Event{Kind: EventSessionReset, At: now, Peer: peer, Err: ErrSendWindow, marker: rs[0].Marker})
	return nil
}

// windowHeld reports whether err says a message waits for the window.
func windowHeld(err error) bool { return errors.Is(err, ErrSendWindow) }
