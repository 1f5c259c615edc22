package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
	"golang.org/x/time/rate"
)

const (
	// closeGrace is how long the relay waits for the peer's close frame
	// after sending its own.
	closeGrace = time.Second
	// lingerBytes bounds what a closing connection reads and discards, so
	// that the peer's last frames do not turn the close into a reset that
	// would swallow the close frame (a 1009 after an oversized frame, say).
	lingerBytes = 2 * wire.MaxRelayMessageSize
)

// conn is one client's websocket on the relay. Its handler goroutine
// authenticates and then reads; once authenticated, every write is made by
// the connection's writer: replies from the bounded queue, deliveries from
// the mailbox, pings, and the close. The writer is a goroutine that runs
// only while it has work and exits when it has none, so that an idle
// connection costs one goroutine (the reader) and two timers.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	holder string // lease holder: unique to this connection
	ip     string // remote IP, which the guards and quotas charge
	addr   string // authenticated address; set once by handshake
	key    [32]byte
	// attached: the handshake listed the connection under its address
	// (Server.attach); run detaches it at the end.
	attached bool
	ctx      context.Context
	cancel   context.CancelFunc

	quit       chan struct{} // closed by finish
	writerDone chan struct{} // closed when the writer has ended for good

	// wmu guards the writer's work and state.
	wmu     sync.Mutex
	queue   [][]byte // encoded replies, at most Limits.SendQueue
	work    work     // what else the writer is asked to do
	on      bool     // the writer may run: the connection is authenticated
	running bool     // a writer goroutine is running
	ended   bool     // the writer has ended; nothing more is written
	ping    *time.Timer
	tick    *time.Timer

	// phaseMu orders the end of the handshake against stop: a connection
	// stopped before it authenticated is cut, one stopped after gets a close
	// frame.
	phaseMu sync.Mutex
	authed  bool
	stopped bool

	finishOnce sync.Once
	reason     string // disconnect metric label, set by finish
	final      []byte // a last message before the close frame
	closeCode  int
	closeText  string

	msgs, bytes *rate.Limiter

	mu          sync.Mutex
	outstanding map[uint64]leased // leased, unacknowledged rows
}

// leased is a row this connection delivered and waits to hear back about.
type leased struct {
	at, until time.Time // when it was delivered; when the lease runs out
}

func newConn(s *Server, ws *websocket.Conn, ip string) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	lim := s.lim
	return &conn{
		s: s, ws: ws, ip: ip, ctx: ctx, cancel: cancel,
		holder:      fmt.Sprintf("%s-%d", s.instance, s.connSeq.Add(1)),
		quit:        make(chan struct{}),
		writerDone:  make(chan struct{}),
		msgs:        limiter(lim.MessageRate, lim.MessageBurst),
		bytes:       limiter(lim.ByteRate, lim.ByteBurst),
		outstanding: make(map[uint64]leased),
	}
}

// run authenticates the connection, then serves it until it ends, and
// releases what it held. authenticated is called once the client proved its
// address.
func (c *conn) run(authenticated func()) {
	s := c.s
	defer c.cancel()
	defer lingerClose(c.ws.NetConn())
	ok := c.handshake()
	if c.attached {
		// Listed under its address by the handshake: unlisted at the end,
		// and the address's other connections told that rows may be free.
		defer func() {
			s.detach(c)
			s.notify(c.addr)
		}()
	}
	if !ok {
		return
	}
	authenticated()
	// A registration by another key may have raced this handshake, after its
	// eviction of the address's connections and before this attach.
	if k, err := s.store.Registered(c.ctx, c.addr); err != nil || k != c.key {
		c.writeNow(errorMsg(0, wire.ErrorAuthFailed, c.addr+" was registered to another identity"))
		s.metrics.disconnects.WithLabelValues(dropKicked).Inc()
		return
	}
	c.ws.SetPongHandler(func(string) error {
		c.ws.SetReadDeadline(time.Now().Add(s.lim.ReadTimeout))
		return nil
	})
	// The owner learns its one-time prekey pool at once, to top it up
	// against the relay's count.
	if n, err := s.store.OneTimePreKeys(c.ctx, c.addr); err == nil {
		c.push(encode(0, wire.PrekeyPool{Count: uint32(n)}))
	}
	c.startWriter()
	reason := c.readLoop()
	c.finish(reason, nil, 0, "")
	<-c.writerDone
	label := c.reason
	if reason == dropReadLimit {
		// The cause, even when the writer failed first on the socket the
		// peer closed after the 1009 close frame.
		label = reason
	}
	s.metrics.disconnects.WithLabelValues(label).Inc()
	// Rows this connection held go back to the mailbox, for the address's
	// next connection (or another one open now).
	if err := s.store.Release(context.Background(), c.addr, c.holder); err != nil {
		s.log.Error("release leases", "err", err)
	}
}

// stop ends the connection from outside (shutdown).
func (c *conn) stop(reason string, code int, text string) {
	c.phaseMu.Lock()
	authed := c.authed
	c.stopped = !authed
	c.phaseMu.Unlock()
	if authed {
		c.finish(reason, nil, code, text)
		return
	}
	c.ws.NetConn().Close()
}

// finish asks the writer to send final (when set) and a close frame (when
// code is set) and to stop. Only the first call counts.
func (c *conn) finish(reason string, final []byte, code int, text string) {
	c.finishOnce.Do(func() {
		c.reason, c.final, c.closeCode, c.closeText = reason, final, code, text
		close(c.quit)
		c.ask(0)
	})
}

// abort ends the connection at once: the socket closes under both
// goroutines.
func (c *conn) abort(reason string) {
	c.finish(reason, nil, 0, "")
	c.ws.NetConn().Close()
}

// poke wakes the writer to lease rows.
func (c *conn) poke() { c.ask(workFill) }

// lingerClose half-closes the socket, reads and discards what the peer still
// sends for a moment, then closes it.
func lingerClose(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		if tc.CloseWrite() == nil {
			tc.SetReadDeadline(time.Now().Add(closeGrace))
			io.CopyN(io.Discard, tc, lingerBytes)
		}
	}
	nc.Close()
}

// writeNow writes one message from the handler goroutine, before the writer
// exists.
func (c *conn) writeNow(b []byte) bool {
	c.ws.SetWriteDeadline(time.Now().Add(c.s.lim.WriteTimeout))
	return c.ws.WriteMessage(websocket.BinaryMessage, b) == nil
}

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
			s.metrics.authFailures.WithLabelValues(authTimeout).Inc()
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "authentication timeout"), time.Now().Add(s.lim.WriteTimeout))
		case errors.Is(err, websocket.ErrReadLimit):
			s.metrics.authFailures.WithLabelValues(authMalformed).Inc()
		default:
			s.metrics.authFailures.WithLabelValues(authProtocol).Inc()
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
	if !ed25519.Verify(a.SigningKey[:], AuthMessage(nonce, s.relayID, a.Address, a.SigningKey, expires), a.Signature[:]) {
		return c.refuse(authBadSignature, errorMsg(req, wire.ErrorAuthFailed, "auth signature does not verify"))
	}
	if _, err := s.store.Registered(c.ctx, a.Address); errors.Is(err, relaystore.ErrNotRegistered) && !s.registrations.allow(c.ip, time.Now()) {
		s.metrics.limited.WithLabelValues(limitIPRegistrations).Inc()
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, "too many new addresses from your IP lately: try again later"))
	}
	replaced, err := s.store.Register(c.ctx, a.Address, a.SigningKey, s.cfg.AllowReregister, c.ip)
	switch {
	case errors.Is(err, relaystore.ErrAddressTaken):
		return c.refuse(authTaken, errorMsg(req, wire.ErrorAddressTaken, a.Address+" is registered to another identity"))
	case errors.Is(err, relaystore.ErrRegistrationQuota):
		s.metrics.limited.WithLabelValues(limitIPRegistered).Inc()
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, "your IP has registered all the addresses it may"))
	case err != nil:
		s.log.Error("register", "err", err)
		return c.refuse(authInternal, errorMsg(req, wire.ErrorInternal, "registration failed"))
	}
	if s.addressFull(a.Address) {
		s.metrics.limited.WithLabelValues(limitAddressConnections).Inc()
		return c.refuse(authRateLimited, errorMsg(req, wire.ErrorRateLimited, fmt.Sprintf("%s has %d connections open, the most allowed", a.Address, s.lim.MaxConnectionsPerAddress)))
	}
	c.addr, c.key = a.Address, a.SigningKey
	if replaced {
		s.log.Info("address registered to a new key", "address", a.Address)
		s.evict(a.Address, a.SigningKey)
	}
	// The connection counts against its address before the client hears
	// yes, so that two handshakes racing for the last slot cannot both be
	// told yes.
	attached, full := s.attach(c)
	switch {
	case full:
		s.metrics.limited.WithLabelValues(limitAddressConnections).Inc()
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
	if stopped || !c.writeNow(encode(req, wire.AuthOK{})) {
		return false
	}
	c.ws.SetReadDeadline(time.Now().Add(s.lim.ReadTimeout))
	return true
}

// refuse ends a connection that failed to authenticate: the reply, then a
// close frame.
func (c *conn) refuse(reason string, reply []byte) bool {
	c.s.metrics.authFailures.WithLabelValues(reason).Inc()
	if c.writeNow(reply) {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "authentication failed"), time.Now().Add(c.s.lim.WriteTimeout))
	}
	return false
}

// readLoop reads and handles messages until the connection ends, and
// returns the disconnect label of a read failure.
func (c *conn) readLoop() string {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, websocket.ErrReadLimit):
				return dropReadLimit // gorilla has sent the 1009 close
			case errors.As(err, &ne) && ne.Timeout():
				return dropTimeout
			}
			return dropPeer
		}
		c.ws.SetReadDeadline(time.Now().Add(c.s.lim.ReadTimeout))
		if typ != websocket.BinaryMessage {
			c.finish(dropProtocol, errorMsg(0, wire.ErrorBadRequest, "binary messages only"), websocket.CloseUnsupportedData, "binary messages only")
			return dropProtocol
		}
		if !c.handle(data) {
			return dropProtocol
		}
	}
}

// handle serves one message; false ends the connection.
func (c *conn) handle(data []byte) bool {
	kind, req := peek(data)
	if !c.msgs.Allow() {
		return c.limited(bucketMessages, kind, req, data)
	}
	if !c.bytes.AllowN(time.Now(), len(data)) {
		return c.limited(bucketBytes, kind, req, data)
	}
	req, m, err := wire.DecodeRelay(data)
	if err != nil {
		_, req = peek(data)
		return c.reply(errorMsg(req, wire.ErrorBadRequest, "malformed message: "+err.Error()))
	}
	switch m := m.(type) {
	case wire.Submit:
		return c.submit(req, m)
	case wire.AckRows:
		return c.ack(req, m)
	case wire.FetchBundle:
		return c.fetch(req, m)
	case wire.PublishBundle:
		return c.publish(req, m)
	case wire.Auth:
		c.finish(dropProtocol, errorMsg(req, wire.ErrorAuthFailed, "already authenticated: a challenge is answered once"), websocket.ClosePolicyViolation, "already authenticated")
		return false
	}
	return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("a client does not send %s", m.RelayKind())))
}

// limited answers a message over a token bucket without acting on it.
func (c *conn) limited(bucket string, kind wire.RelayKind, req uint32, data []byte) bool {
	c.s.metrics.rateLimited.WithLabelValues(bucket).Inc()
	if kind == wire.RelaySubmit {
		c.s.metrics.refused.WithLabelValues(refuseLabel(wire.RefuseRateLimited)).Inc()
		return c.reply(encode(req, wire.Refused{EnvelopeID: peekEnvelopeID(data), Reason: wire.RefuseRateLimited}))
	}
	return c.reply(errorMsg(req, wire.ErrorRateLimited, "rate limited: slow down"))
}

// push queues a message the relay sends on its own (not a reply): when the
// queue is full it is dropped, since the client learns the same again later.
func (c *conn) push(b []byte) { c.enqueue(b) }

// reply queues a message for the writer. A full queue means the client does
// not read what it asked for: it is disconnected rather than buffered for.
func (c *conn) reply(b []byte) bool {
	if c.enqueue(b) {
		return true
	}
	c.s.log.Info("send queue full: disconnecting", "address", c.addr)
	c.abort(dropSlow)
	return false
}

func (c *conn) refused(req uint32, id wire.EnvelopeID, r wire.RefuseReason) bool {
	c.s.metrics.refused.WithLabelValues(refuseLabel(r)).Inc()
	return c.reply(encode(req, wire.Refused{EnvelopeID: id, Reason: r}))
}

func (c *conn) submit(req uint32, m wire.Submit) bool {
	s := c.s
	id := envelopeID(m.Envelope)
	if len(m.Envelope) > s.lim.MaxEnvelopeSize {
		return c.refused(req, id, wire.RefuseTooLarge)
	}
	env, err := wire.DecodeEnvelope(m.Envelope)
	if err != nil {
		return c.refused(req, id, wire.RefuseMalformed)
	}
	if env.Sender != c.addr {
		return c.refused(req, id, wire.RefuseWrongSender)
	}
	if a, err := engine.ParseAddress(env.Recipient); err != nil || a.String() != env.Recipient {
		return c.refused(req, id, wire.RefuseMalformed)
	}
	copies := s.faults.copies()
	var err2 error
	if copies == 0 {
		_, err2 = s.store.Registered(c.ctx, env.Recipient)
	} else {
		from := relaystore.Origin{Address: c.addr, IP: c.ip}
		_, err2 = s.store.Append(c.ctx, env.Recipient, m.Envelope, copies, from)
		if copies == 2 && err2 != nil && !errors.Is(err2, relaystore.ErrNotRegistered) {
			copies = 1
			_, err2 = s.store.Append(c.ctx, env.Recipient, m.Envelope, copies, from)
		}
	}
	switch {
	case errors.Is(err2, relaystore.ErrNotRegistered):
		return c.refused(req, id, wire.RefuseUnknownRecipient)
	case errors.Is(err2, relaystore.ErrMailboxFull):
		return c.refused(req, id, wire.RefuseMailboxFull)
	case errors.Is(err2, relaystore.ErrSenderQuota):
		s.metrics.limited.WithLabelValues(limitSenderQuota).Inc()
		return c.refused(req, id, wire.RefuseSenderQuota)
	case errors.Is(err2, relaystore.ErrIPQuota):
		s.metrics.limited.WithLabelValues(limitIPShare).Inc()
		return c.refused(req, id, wire.RefuseStoreFull)
	case errors.Is(err2, relaystore.ErrStoreFull):
		s.metrics.limited.WithLabelValues(limitStoreFull).Inc()
		return c.refused(req, id, wire.RefuseStoreFull)
	case err2 != nil:
		s.log.Error("append", "err", err2)
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not store the envelope"))
	}
	s.metrics.accepted.Inc()
	switch copies {
	case 0:
		s.metrics.dropped.Inc()
	case 2:
		s.metrics.duplicated.Inc()
	}
	if copies > 0 {
		s.notify(env.Recipient)
	}
	return c.reply(encode(req, wire.Accepted{EnvelopeID: env.ID}))
}

// ack deletes rows of the authenticated address's own mailbox. Rows of other
// mailboxes are ignored, and the reply is the same whatever they were, so
// that guessing rows reveals nothing.
func (c *conn) ack(req uint32, m wire.AckRows) bool {
	n, err := c.s.store.Ack(c.ctx, c.addr, m.Rows)
	if err != nil {
		c.s.log.Error("acknowledge", "err", err)
		return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not acknowledge the rows"))
	}
	c.s.metrics.acknowledged.Add(float64(n))
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

func (c *conn) fetch(req uint32, m wire.FetchBundle) bool {
	s := c.s
	now := time.Now()
	if !s.fetchesBy.allow(c.addr, now) {
		s.metrics.limited.WithLabelValues(limitFetchRequester).Inc()
		return c.reply(errorMsg(req, wire.ErrorRateLimited, "bundle fetches rate limited: slow down"))
	}
	if a, err := engine.ParseAddress(m.Address); err != nil || a.String() != m.Address {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("invalid device address %q", m.Address)))
	}
	if !s.fetchesOf.allow(m.Address, now) {
		s.metrics.limited.WithLabelValues(limitFetchTarget).Inc()
		return c.reply(errorMsg(req, wire.ErrorRateLimited, "too many fetches of "+m.Address+" lately: try again later"))
	}
	// A fetch past the target's one-time budget still gets the bundle,
	// without a one-time prekey: the session is set up all the same.
	oneTime := s.oneTimeOf.allow(m.Address, now)
	if !oneTime {
		s.metrics.limited.WithLabelValues(limitOneTimeTarget).Inc()
	}
	b, pool, err := s.store.TakeBundle(c.ctx, m.Address, oneTime)
	switch {
	case errors.Is(err, relaystore.ErrNoBundle):
		return c.reply(errorMsg(req, wire.ErrorNotFound, "no bundle for "+m.Address))
	case err != nil:
		s.log.Error("fetch bundle", "err", err)
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

func (c *conn) publish(req uint32, m wire.PublishBundle) bool {
	s := c.s
	b := m.Bundle
	if b.Address != c.addr {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("bundle is for %s, not for the authenticated %s", b.Address, c.addr)))
	}
	if b.IdentitySigningKey != c.key {
		return c.reply(errorMsg(req, wire.ErrorAuthFailed, "bundle identity is not the key that authenticated"))
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
		s.log.Error("publish bundle", "err", err)
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

// work is what the writer is asked to do besides writing queued replies.
type work uint8

const (
	workFill work = 1 << iota // lease rows into the window
	workTick                  // expire unacknowledged rows, then fill
	workPing                  // send a ping
)

// startWriter lets the writer run, once the connection is authenticated,
// and arms the ping and lease timers. The lease tick expires unacknowledged
// rows and also looks for rows that no notification announced (released by
// another connection, say).
func (c *conn) startWriter() {
	lim := c.s.lim
	c.wmu.Lock()
	c.on = true
	c.ping = time.AfterFunc(lim.PingInterval, func() { c.ask(workPing) })
	c.tick = time.AfterFunc(tickInterval(lim), func() { c.ask(workTick) })
	c.wmu.Unlock()
	c.ask(workFill)
}

func tickInterval(lim Limits) time.Duration {
	return max(lim.LeaseTimeout/4, 10*time.Millisecond)
}

// enqueue queues b for the writer, unless the queue is full or the writer
// has ended.
func (c *conn) enqueue(b []byte) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ended || len(c.queue) >= c.s.lim.SendQueue {
		return false
	}
	c.queue = append(c.queue, b)
	c.schedule()
	return true
}

// ask adds w to the writer's work and makes sure a writer runs.
func (c *conn) ask(w work) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.work |= w
	c.schedule()
}

// schedule starts a writer goroutine if the writer may run and none is
// running. The caller holds wmu.
func (c *conn) schedule() {
	if c.on && !c.running && !c.ended {
		c.running = true
		go c.writeLoop()
	}
}

// writeLoop does the writer's work until there is none left, then exits; the
// next piece of work starts another. It ends the writer for good after the
// goodbye or a failed write.
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.quit:
			c.goodbye()
			c.endWriter()
			return
		default:
		}
		b, ok := c.dequeue()
		if ok {
			if !c.write(b) {
				c.endWriter()
				return
			}
			continue
		}
		c.wmu.Lock()
		w := c.work
		c.work = 0
		if w == 0 {
			c.running = false
			c.wmu.Unlock()
			return
		}
		c.wmu.Unlock()
		if w&workPing != 0 {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.s.lim.WriteTimeout)); err != nil {
				c.abort(dropWrite)
				c.endWriter()
				return
			}
			c.ping.Reset(c.s.lim.PingInterval)
		}
		if w&workTick != 0 {
			c.expire()
			c.tick.Reset(tickInterval(c.s.lim))
		}
		if w&(workFill|workTick) != 0 && !c.fill() {
			c.endWriter()
			return
		}
	}
}

// dequeue takes the oldest queued reply.
func (c *conn) dequeue() ([]byte, bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.queue) == 0 {
		return nil, false
	}
	b := c.queue[0]
	c.queue[0] = nil
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil // let an idle connection keep no queue
	}
	return b, true
}

// endWriter ends the writer for good: its timers stop, what is queued is
// dropped, and run may go on to release the connection's leases.
func (c *conn) endWriter() {
	c.wmu.Lock()
	c.ended, c.running, c.queue = true, false, nil
	c.ping.Stop()
	c.tick.Stop()
	c.wmu.Unlock()
	close(c.writerDone)
}

// write writes one message under the write deadline.
func (c *conn) write(b []byte) bool {
	c.ws.SetWriteDeadline(time.Now().Add(c.s.lim.WriteTimeout))
	if err := c.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		c.abort(dropWrite)
		return false
	}
	return true
}

// flush writes the replies already queued: they go before deliveries.
func (c *conn) flush() bool {
	for {
		b, ok := c.dequeue()
		if !ok {
			return true
		}
		if !c.write(b) {
			return false
		}
	}
}

// fill leases rows into the free part of the window and delivers them in
// FIFO order.
func (c *conn) fill() bool {
	s := c.s
	for {
		c.mu.Lock()
		free := s.lim.Window - len(c.outstanding)
		c.mu.Unlock()
		if free <= 0 {
			return true
		}
		n := min(free, s.lim.Page)
		now := s.now()
		until := now.Add(s.lim.LeaseTimeout)
		rows, err := s.store.Lease(c.ctx, c.addr, c.holder, n, now, until)
		if err != nil {
			s.log.Error("lease", "err", err)
			return true // the lease tick tries again
		}
		if len(rows) == 0 {
			return true
		}
		c.mu.Lock()
		wall := time.Now()
		for _, r := range rows {
			c.outstanding[r.ID] = leased{at: wall, until: until}
		}
		c.mu.Unlock()
		for _, r := range rows {
			if !c.flush() {
				return false
			}
			select {
			case <-c.quit:
				return true // the rows stay leased until the connection releases them
			default:
			}
			if !c.write(encode(0, wire.Deliver{Row: r.ID, Envelope: r.Envelope})) {
				return false
			}
			s.metrics.delivered.Inc()
			if !r.Accepted.IsZero() {
				s.metrics.acceptToDeliver.Observe(time.Since(r.Accepted).Seconds())
			}
		}
		if len(rows) < n {
			return true
		}
	}
}

// expire forgets rows whose lease ran out; the next fill leases them again.
func (c *conn) expire() {
	now := c.s.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for r, l := range c.outstanding {
		if !now.Before(l.until) {
			delete(c.outstanding, r)
		}
	}
}

// goodbye writes what is queued, the final message and the close frame, and
// gives the peer closeGrace to answer.
func (c *conn) goodbye() {
	lim := c.s.lim
	if !c.flush() {
		return
	}
	if c.final != nil && !c.write(c.final) {
		return
	}
	if c.closeCode != 0 {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, c.closeText), time.Now().Add(lim.WriteTimeout))
	}
	c.ws.SetReadDeadline(time.Now().Add(closeGrace))
}

// encode encodes a message the relay built itself.
func encode(req uint32, m wire.RelayMessage) []byte {
	b, err := wire.EncodeRelay(req, m)
	if err != nil {
		panic(fmt.Sprintf("transport: encode %s: %v", m.RelayKind(), err))
	}
	return b
}

// errorMsg encodes an Error reply, its message cut to the limit.
func errorMsg(req uint32, code wire.ErrorCode, msg string) []byte {
	if len(msg) > wire.MaxErrorMessageSize {
		msg = msg[:wire.MaxErrorMessageSize]
	}
	b, err := wire.EncodeRelay(req, wire.Error{Code: code, Message: msg})
	if err != nil { // a cut through a multi-byte character
		b = encode(req, wire.Error{Code: code})
	}
	return b
}

// peek reads the kind and request ID of a message without decoding it.
func peek(b []byte) (wire.RelayKind, uint32) {
	if len(b) < 6 {
		return 0, 0
	}
	return wire.RelayKind(b[1]), binary.BigEndian.Uint32(b[2:6])
}

// peekEnvelopeID reads the envelope ID of a Submit without decoding it:
// header (6), envelope length (4), envelope version and type (2), ID (16).
func peekEnvelopeID(b []byte) wire.EnvelopeID {
	if len(b) < 10 {
		return wire.EnvelopeID{}
	}
	return envelopeID(b[10:])
}

// envelopeID reads the ID of an encoded envelope, zero when it is too short.
func envelopeID(env []byte) wire.EnvelopeID {
	var id wire.EnvelopeID
	if len(env) >= 18 {
		copy(id[:], env[2:18])
	}
	return id
}
