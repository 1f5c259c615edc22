package relayserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The handshake: a Challenge, the Auth that answers it, and the
// registration of the address it proves.

// handshake sends a Challenge and checks the Auth that answers it.
func (c *conn) handshake() bool {
	s := c.s
	var nonce [32]byte
	rand.Read(nonce[:])
	expires := s.now().Add(s.lim.ChallengeLifetime).Unix()
	challenge, err := wire.EncodeRelay(0, wire.Challenge{Nonce: nonce, RelayID: s.relayID, Expires: expires})
	if err != nil {
		panic(err) // fixed-size fields: cannot fail
	}
	c.ws.SetReadLimit(wire.MaxRelayMessageSize)
	if !c.writeNow(challenge) {
		return false
	}
	c.ws.SetReadDeadline(time.Now().Add(s.lim.AuthTimeout))
	typ, data, err := c.ws.ReadMessage()
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			s.metrics.authFailed(authTimeout)
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "authentication timeout"), time.Now().Add(s.lim.WriteTimeout))
		case errors.Is(err, websocket.ErrReadLimit):
			s.metrics.authFailed(authMalformed)
		case errors.Is(err, errControlBeforeAuth):
			s.metrics.authFailed(authControl) // cut: nothing more is read or written
		default:
			s.metrics.authFailed(authProtocol)
		}
		return false
	}
	if typ != websocket.BinaryMessage {
		return c.refuse(authProtocol, errorMsg(0, wire.ErrorBadRequest, "binary messages only"))
	}
	req, m, err := wire.DecodeRelay(data)
	if err != nil {
		_, req := peek(data)
		return c.refuse(authMalformed, errorMsg(req, wire.ErrorBadRequest, "malformed auth: "+err.Error()))
	}
	if po, ok := m.(wire.ProvisionOpen); ok {
		// Not an authentication: run serves the mailbox (provision.go).
		c.provisionReq, c.provisionOpen = req, &po
		return false
	}
	a, ok := m.(wire.Auth)
	if !ok {
		if _, ok := m.(wire.Submit); ok {
			return c.refuse(authProtocol, encode(req, wire.Refused{EnvelopeID: peekEnvelopeID(data), Reason: wire.RefuseNotAuthenticated}))
		}
		return c.refuse(authProtocol, errorMsg(req, wire.ErrorAuthFailed, fmt.Sprintf("authenticate first (got %s)", m.RelayKind())))
	}
	if addr, err := engine.ParseAddress(a.Address); err != nil || addr.String() != a.Address {
		msg := fmt.Sprintf("address %q is not canonical", a.Address)
		if err != nil {
			msg = err.Error()
		}
		return c.refuse(authMalformed, errorMsg(req, wire.ErrorBadRequest, msg))
	}
	if a.Expires != expires {
		return c.refuse(authBadSignature, errorMsg(req, wire.ErrorAuthFailed, "auth does not answer this connection's challenge"))
	}
	if s.now().Unix() > expires {
		return c.refuse(authExpired, errorMsg(req, wire.ErrorExpired, "challenge expired"))
	}
	if !ed25519.Verify(a.SigningKey[:], wire.AuthMessage(nonce, s.relayID, a.Address, a.SigningKey, expires), a.Signature[:]) {
		return c.refuse(authBadSignature, errorMsg(req, wire.ErrorAuthFailed, "auth signature does not verify"))
	}
	switch why, err := s.deviceAllowed(c, a.Address, a.SigningKey); {
	case err != nil:
		s.log.Error("read device list", "err", cause(err))
		return c.refuse(authInternal, errorMsg(req, wire.ErrorInternal, "the relay could not read the device list"))
	case why != "" && s.mayJoin(c, a.Address):
		c.addr, c.key, c.joining = a.Address, a.SigningKey, true
		c.phaseMu.Lock()
		stopped := c.stopped
		c.authed = !stopped
		c.phaseMu.Unlock()
		if stopped || !c.writeNow(encode(req, wire.AuthOK{})) || !c.writeNow(encode(0, wire.Features{Set: s.features()})) {
			return false
		}
		c.ws.SetReadDeadline(time.Now().Add(s.lim.ReadTimeout))
		return true
	case why != "":
		return c.refuse(authNotInList, errorMsg(req, wire.ErrorAuthFailed, why))
	}
	if _, err := s.store.Registered(c.ctx, a.Address); errors.Is(err, relaystore.ErrNotRegistered) && !s.registrations.allow(c.ip, time.Now()) {
		s.metrics.limitedBy(limitIPRegistrations)
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, "too many new addresses from your IP lately: try again later"))
	}
	replaced, err := s.store.Register(c.ctx, a.Address, a.SigningKey, s.cfg.AllowReregister, c.ip)
	switch {
	case errors.Is(err, relaystore.ErrAddressTaken):
		return c.refuse(authTaken, errorMsg(req, wire.ErrorAddressTaken, a.Address+" is registered to another identity"))
	case errors.Is(err, relaystore.ErrRegistrationQuota):
		s.metrics.limitedBy(limitIPRegistered)
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, "your IP has registered all the addresses it may"))
	case err != nil:
		s.log.Error("register", "err", cause(err))
		return c.refuse(authInternal, errorMsg(req, wire.ErrorInternal, "registration failed"))
	}
	if s.addressFull(a.Address) {
		s.metrics.limitedBy(limitAddressConnections)
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, fmt.Sprintf("%s has %d connections open, the most allowed", a.Address, s.lim.MaxConnectionsPerAddress)))
	}
	c.addr, c.key = a.Address, a.SigningKey
	if replaced {
		s.log.Info("an address was registered to a new key")
		s.evict(a.Address, a.SigningKey)
	}
	// The connection counts against its address before the client hears
	// yes, so that two handshakes racing for the last slot cannot both be
	// told yes.
	attached, full := s.attach(c)
	switch {
	case full:
		s.metrics.limitedBy(limitAddressConnections)
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, fmt.Sprintf("%s has %d connections open, the most allowed", a.Address, s.lim.MaxConnectionsPerAddress)))
	case !attached: // shutting down
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "relay shutting down"), time.Now().Add(s.lim.WriteTimeout))
		return false
	}
	c.attached = true
	c.phaseMu.Lock()
	stopped := c.stopped
	c.authed = !stopped
	c.phaseMu.Unlock()
	// Features right after AuthOK, which is frozen and empty, then the
	// envelope lifetime: before any other push, so that a client knows
	// them before it hears a status.
	if stopped || !c.writeNow(encode(req, wire.AuthOK{})) || !c.writeNow(encode(0, wire.Features{Set: s.features()})) {
		return false
	}
	if l, ok := s.announcedLifetime(); ok && !c.writeNow(encode(0, l)) {
		return false
	}
	c.ws.SetReadDeadline(time.Now().Add(s.lim.ReadTimeout))
	return true
}

// refuse ends a connection that failed to authenticate: the reply, then a
// close frame.
func (c *conn) refuse(reason authFailure, reply []byte) bool {
	c.s.metrics.authFailed(reason)
	if c.writeNow(reply) {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "authentication failed"), time.Now().Add(c.s.lim.WriteTimeout))
	}
	return false
}
