package relayserver

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// Room for the people a recipient talks to, and its block list. The relay
// learns whom an address accepts by observing its envelopes: once bob's
// envelope to alice is stored, the store records that bob accepts alice
// (relaystore.Store.Accept), and alice's envelopes to bob are no longer
// charged to the room bob's mailbox keeps for strangers. docs/relay.md
// says what this record costs in privacy.

// acceptRefresh is how often one relay process writes the same accepted
// pair again: often enough that a pair a client keeps writing to stays
// among the most recent of its owner, rarely enough that a conversation
// costs the store one write an hour rather than one per envelope.
const acceptRefresh = time.Hour

// maxAcceptCache bounds the pairs remembered as written; past it the
// memory is dropped, which costs only writes done again.
const maxAcceptCache = 100000

// acceptCache remembers which accepted pairs this process wrote lately.
type acceptCache struct {
	mu   sync.Mutex
	seen map[[2]string]time.Time
}

func newAcceptCache() *acceptCache { return &acceptCache{seen: make(map[[2]string]time.Time)} }

// due reports whether the pair should be written at now, given that a
// record lives lifetime, and notes it written when so.
func (a *acceptCache) due(owner, peer string, now time.Time, lifetime time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := [2]string{owner, peer}
	if at, ok := a.seen[k]; ok && now.Sub(at) < min(acceptRefresh, lifetime/2) {
		return false
	}
	if len(a.seen) >= maxAcceptCache {
		clear(a.seen)
	}
	a.seen[k] = now
	return true
}

// forget drops a pair, so that a failed write is tried again.
func (a *acceptCache) forget(owner, peer string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.seen, [2]string{owner, peer})
}

// recordAccept records that the authenticated address accepts peer, the
// recipient of an envelope it just had stored. A failure is logged: the
// envelope is stored all the same, and the next one tries again.
func (c *conn) recordAccept(peer string) {
	s := c.s
	if peer == c.addr {
		return
	}
	now := s.now()
	if !s.accepts.due(c.addr, peer, now, s.lim.AcceptedLifetime) {
		return
	}
	forgot, err := s.store.Accept(c.ctx, c.addr, peer, now)
	if err != nil {
		s.accepts.forget(c.addr, peer)
		s.log.Error("record accepted peer", "err", cause(err))
		return
	}
	s.metrics.acceptRecorded.Inc()
	s.metrics.acceptForgotten.Add(float64(forgot))
}

// overWrites takes a token for a change the authenticated address makes
// to its own records (a block list, a bundle) from its bucket and its IP's;
// when either has none it counts the refusal and returns what to tell the
// client.
func (c *conn) overWrites() string {
	now := time.Now()
	switch {
	case !c.s.writesBy.allow(c.addr, now):
		c.s.metrics.limitedBy(limitAddressWrites)
		return "too many changes from " + c.addr + " lately: slow down"
	case !c.s.writesFrom.allow(c.ip, now):
		c.s.metrics.limitedBy(limitIPWrites)
		return "too many changes from your IP lately: slow down"
	}
	return ""
}

// block adds a sender to the authenticated address's block list, or takes
// it off, and answers Done.
func (c *conn) block(req uint32, m wire.SenderBlock) bool {
	s := c.s
	if a, err := engine.ParseAddress(m.Sender); err != nil || a.String() != m.Sender {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("invalid device address %q", m.Sender)))
	}
	if m.Sender == c.addr {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, "an address does not block itself"))
	}
	if msg := c.overWrites(); msg != "" {
		return c.limitedBy(req, msg)
	}
	err := s.store.Block(c.ctx, c.addr, m.Sender, m.Blocked)
	switch {
	case errors.Is(err, relaystore.ErrBlockListFull):
		s.metrics.limitedBy(limitBlockList)
		return c.reply(errorMsg(req, wire.ErrorBadRequest,
			fmt.Sprintf("block list full: the relay keeps at most %d blocked senders per address; unblock one first", s.lim.BlockedSenders)))
	case err != nil:
		s.log.Error("block sender", "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not change the block list"))
	}
	if m.Blocked {
		s.metrics.blockChanges.WithLabelValues("block").Inc()
	} else {
		s.metrics.blockChanges.WithLabelValues("unblock").Inc()
	}
	return c.reply(encode(req, wire.Done{}))
}
