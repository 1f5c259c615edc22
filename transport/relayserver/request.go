package relayserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The requests of an authenticated client: AckRows, FetchBundle and
// PublishBundle (Submit and SubmitBatch in submit.go). Each checks the
// protocol, asks the store, maps its errors to replies and counts what
// happened.

// ack deletes rows of the authenticated address's own mailbox and tells
// their senders the envelopes were taken. Rows of other mailboxes are
// ignored, and the reply is the same whatever they were, so that guessing
// rows reveals nothing.
func (c *conn) ack(req uint32, m wire.AckRows) bool {
	removed, err := c.s.store.Ack(c.ctx, c.addr, m.Rows)
	if err != nil {
		c.s.log.Error("acknowledge", "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not acknowledge the rows"))
	}
	c.s.metrics.acknowledged.Add(float64(len(removed)))
	c.s.readers.read(c.addr, c.s.now())
	c.s.tellStatus(c.ctx, removed, wire.EnvelopeTaken)
	now := time.Now()
	c.mu.Lock()
	for _, r := range m.Rows {
		if l, ok := c.outstanding[r]; ok {
			c.s.metrics.leaseToAck.Observe(now.Sub(l.at).Seconds())
			delete(c.outstanding, r)
		}
	}
	c.mu.Unlock()
	c.poke()
	return c.reply(encode(req, wire.Done{}))
}

// fetch hands out a bundle, with a one-time prekey while the target's
// budget lasts, within the fetch rates of the requester and the target.
func (c *conn) fetch(req uint32, m wire.FetchBundle) bool {
	s := c.s
	now := time.Now()
	if !s.fetchesBy.allow(c.addr, now) {
		s.metrics.limitedBy(limitFetchRequester)
		return c.reply(errorMsg(req, wire.ErrorRateLimited, "bundle fetches rate limited: slow down"))
	}
	if a, err := engine.ParseAddress(m.Address); err != nil || a.String() != m.Address {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("invalid device address %q", m.Address)))
	}
	if !s.fetchesOf.allow(m.Address, now) {
		s.metrics.limitedBy(limitFetchTarget)
		return c.reply(errorMsg(req, wire.ErrorRateLimited, "too many fetches of "+m.Address+" lately: try again later"))
	}
	// A fetch past the target's one-time budget still gets the bundle,
	// without a one-time prekey: the session is set up all the same.
	oneTime := s.oneTimeOf.allow(m.Address, now)
	if !oneTime {
		s.metrics.limitedBy(limitOneTimeTarget)
	}
	b, pool, err := s.store.TakeBundle(c.ctx, m.Address, oneTime)
	switch {
	case errors.Is(err, relaystore.ErrNoBundle):
		return c.reply(errorMsg(req, wire.ErrorNotFound, "no bundle for "+m.Address))
	case err != nil:
		s.log.Error("fetch bundle", "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not read the bundle"))
	}
	s.metrics.bundlesFetched.Inc()
	if b.OneTimePreKey != nil {
		s.metrics.oneTimeHandedOut.Inc()
		if pool <= s.lim.PrekeyPoolLow {
			s.notifyPool(m.Address, pool)
		}
	}
	return c.reply(encode(req, wire.BundleReply{Bundle: b}))
}

// publish stores the authenticated address's own bundle, once verified,
// and adds its one-time prekeys to the pool.
func (c *conn) publish(req uint32, m wire.PublishBundle) bool {
	s := c.s
	b := m.Bundle
	if b.Address != c.addr {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("bundle is for %s, not for the authenticated %s", b.Address, c.addr)))
	}
	if b.IdentitySigningKey != c.key {
		return c.reply(errorMsg(req, wire.ErrorAuthFailed, "bundle identity is not the key that authenticated"))
	}
	if msg := c.overWrites(); msg != "" {
		return c.limitedBy(req, msg)
	}
	if _, _, err := engine.VerifyBundle(b, s.now()); err != nil {
		if errors.Is(err, engine.ErrExpiredSignedPreKey) {
			return c.reply(errorMsg(req, wire.ErrorExpired, err.Error()))
		}
		return c.reply(errorMsg(req, wire.ErrorBadRequest, err.Error()))
	}
	_, err := s.store.PutBundle(c.ctx, c.addr, c.key, b, m.OneTimePreKeys)
	switch {
	case errors.Is(err, relaystore.ErrKeyMismatch):
		return c.reply(errorMsg(req, wire.ErrorAuthFailed, c.addr+" is registered to another identity"))
	case err != nil:
		s.log.Error("publish bundle", "err", cause(err))
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not store the bundle"))
	}
	s.metrics.bundlesPublished.Inc()
	if !c.reply(encode(req, wire.Done{})) {
		return false
	}
	if n, err := s.store.OneTimePreKeys(c.ctx, c.addr); err == nil {
		c.push(encode(0, wire.PrekeyPool{Count: uint32(n)}))
	}
	return true
}
