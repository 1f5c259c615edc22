package relayserver

import (
	"crypto/rand"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// Provisioning mailboxes (issue 33, kinds 44 to 47): with Config.DeviceLists
// the relay lets a new device and a device of the account it joins talk
// while they link. The new device opens a mailbox on a connection that
// never authenticates (it has no address yet); the other device joins it,
// on a connection of the same kind, with the mailbox ID it read from the
// new device's code. The relay passes each payload from one side to the
// other and understands none of them (they are sealed end to end).
//
// A mailbox is one-time and short-lived: it ends, and both connections
// with it, when either side leaves or ProvisioningLifetime passes, and a
// second joiner is refused. It lives in this process's memory only: what
// it carries is worth nothing after the ceremony, which starts again from
// the beginning if the relay restarts, and leaves both profiles as they
// were. A cluster of relays sharing a store must send both sides of a
// mailbox to the same process (docs/relay.md says how far that goes).
//
// The bounds: each remote IP holds at most ProvisioningPerIP open
// mailboxes (the opener's IP), each side's messages pay from its
// connection's buckets, a payload sent before the joiner came waits in a
// queue of provisionHeld payloads and provisionHeldBytes bytes, a mailbox
// carries provisionMessages payloads in all, and the relay holds at most
// MaxUnauthenticated mailboxes in all (each one's opener was a connection
// that had not authenticated, and stays one).

const (
	// DefaultProvisioningLifetime is how long a mailbox lives: the issue's
	// ten minutes, time for a person to carry a code from one screen to
	// the other and compare six digits on both.
	DefaultProvisioningLifetime = 10 * time.Minute
	// DefaultProvisioningPerIP is how many open mailboxes one remote IP
	// may hold: a person links one device at a time, and a second leaves
	// room to start again while an abandoned one runs out; more would let
	// one host hold connections open for ten minutes at a time.
	DefaultProvisioningPerIP = 2
	// provisionHeld is how many payloads wait for a joiner that has not
	// come yet: the new device says its one opening message before anyone
	// joins; the rest of the ceremony waits for answers.
	provisionHeld = 4
	// provisionHeldBytes bounds the bytes of those payloads: the opening
	// message is an ML-KEM key of 1,184 bytes and a few more, and nothing
	// else is said before the joiner comes, so a mailbox opened and left
	// costs the relay a few KiB, not provisionHeld full payloads.
	provisionHeldBytes = 8 << 10
	// provisionMessages bounds the payloads one mailbox carries, both
	// sides together: the ceremony says five, and a mailbox whose opener
	// joins it itself must not become a ten-minute tunnel between two
	// connections that never authenticated.
	provisionMessages = 16
)

// limitIPProvisioning is the limit label of a mailbox refused by
// ProvisioningPerIP.
const limitIPProvisioning limit = "ip_provisioning"

// provisionSide is one connection of a mailbox. Writes to it come from
// both sides' readers, so they go under mu.
type provisionSide struct {
	c  *conn
	mu sync.Mutex
}

func (p *provisionSide) write(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c.writeNow(b)
}

// mailbox is one open provisioning mailbox.
type mailbox struct {
	id      wire.MailboxID
	ip      string // the opener's, charged for it
	expires time.Time
	sides   [2]*provisionSide // opener, joiner
	held    [][]byte          // encoded pushes waiting for the joiner
	heldN   int               // their bytes
	passed  int               // payloads carried, both sides together
	ended   bool
}

// mailboxes is the relay's set of open mailboxes.
type mailboxes struct {
	mu    sync.Mutex
	byID  map[wire.MailboxID]*mailbox
	perIP map[string]int
}

func newMailboxes() *mailboxes {
	return &mailboxes{byID: make(map[wire.MailboxID]*mailbox), perIP: make(map[string]int)}
}

// provision serves a connection whose first message was ProvisionOpen,
// until its mailbox ends. It is called in place of the authentication's
// end: the connection never authenticates.
func (c *conn) provision(req uint32, m wire.ProvisionOpen) {
	s := c.s
	if !s.cfg.DeviceLists {
		c.refuse(authProtocol, errorMsg(req, wire.ErrorBadRequest, "this relay keeps no provisioning mailboxes"))
		return
	}
	side := &provisionSide{c: c}
	// Held until the answer and what waited are written: the other side
	// may pass a payload the moment this one is in the mailbox, and it
	// must come after them.
	side.mu.Lock()
	mb, at, refusal := s.openMailbox(c, m.Mailbox, side)
	if refusal != nil {
		side.mu.Unlock()
		c.writeNow(refusal(req))
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "no mailbox"), time.Now().Add(s.lim.WriteTimeout))
		return
	}
	peer := 1 - at
	reason := wire.ProvisionPeerLeft
	defer func() { s.endMailbox(mb, at, reason) }()
	c.ws.SetReadDeadline(mb.expires)
	held := s.provisions.opened(mb, at)
	ok := c.writeNow(encode(req, wire.ProvisionOpened{Mailbox: mb.id, Expires: mb.expires.Unix()}))
	for _, b := range held {
		ok = ok && c.writeNow(b)
	}
	side.mu.Unlock()
	if !ok {
		return
	}
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(mb.expires) {
				reason = wire.ProvisionExpired
			}
			return
		}
		if typ != websocket.BinaryMessage || !c.msgs.Allow() || !c.bytes.AllowN(time.Now(), len(data)) {
			s.metrics.rateLimitedIn(bucketMessages)
			side.write(errorMsg(0, wire.ErrorRateLimited, "rate limited: provisioning connection closed"))
			return
		}
		req, m, err := wire.DecodeRelay(data)
		pm, ok := m.(wire.ProvisionMessage)
		if err != nil || !ok {
			_, req = peek(data)
			side.write(errorMsg(req, wire.ErrorBadRequest, "a provisioning connection sends provision messages only"))
			return
		}
		push := encode(0, pm)
		switch s.provisions.pass(mb, peer, push) {
		case passSent, passHeld:
			if !side.write(encode(req, wire.Done{})) {
				return
			}
		case passFull:
			if !side.write(errorMsg(req, wire.ErrorRateLimited, "the mailbox holds all it may until the other device joins")) {
				return
			}
		case passSpent:
			side.write(errorMsg(req, wire.ErrorRateLimited, "the mailbox carried all a linking needs: start again"))
			return
		case passEnded:
			return
		}
	}
}

// openMailbox opens a new mailbox for side (a zero id) or joins side to
// the open mailbox id. It returns the mailbox and side's place (0 opener,
// 1 joiner), or the reply that refuses it.
func (s *Server) openMailbox(c *conn, id wire.MailboxID, side *provisionSide) (*mailbox, int, func(req uint32) []byte) {
	p := s.provisions
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != (wire.MailboxID{}) {
		mb := p.byID[id]
		// One answer for a mailbox that never was, ended, expired or has
		// its joiner: a guess learns nothing.
		if mb == nil || mb.ended || mb.sides[1] != nil || !s.now().Before(mb.expires) {
			return nil, 0, func(req uint32) []byte { return errorMsg(req, wire.ErrorNotFound, "no such provisioning mailbox") }
		}
		mb.sides[1] = side
		return mb, 1, nil
	}
	if p.perIP[c.ip] >= s.lim.ProvisioningPerIP {
		s.metrics.limitedBy(limitIPProvisioning)
		return nil, 0, func(req uint32) []byte {
			return errorMsg(req, wire.ErrorRateLimited, "your IP has all the provisioning mailboxes open it may: finish or wait for one")
		}
	}
	if len(p.byID) >= s.lim.MaxUnauthenticated {
		s.metrics.limitedBy(limitHandshakes)
		return nil, 0, func(req uint32) []byte {
			return errorMsg(req, wire.ErrorRateLimited, "too many provisioning mailboxes open")
		}
	}
	mb := &mailbox{ip: c.ip, expires: s.now().Add(s.lim.ProvisioningLifetime)}
	rand.Read(mb.id[:])
	mb.sides[0] = side
	p.byID[mb.id] = mb
	p.perIP[c.ip]++
	s.metrics.provisioningOpened.Inc()
	s.metrics.provisioningOpen.Inc()
	return mb, 0, nil
}

// opened returns, for a joiner, what waited for it.
func (p *mailboxes) opened(mb *mailbox, at int) [][]byte {
	if at != 1 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	held := mb.held
	mb.held, mb.heldN = nil, 0
	return held
}

type passResult uint8

const (
	passSent passResult = iota
	passHeld
	passFull
	passSpent
	passEnded
)

// pass hands push to side to of mb, or holds it while that side has not
// joined.
func (p *mailboxes) pass(mb *mailbox, to int, push []byte) passResult {
	p.mu.Lock()
	if mb.ended {
		p.mu.Unlock()
		return passEnded
	}
	if mb.passed >= provisionMessages {
		p.mu.Unlock()
		return passSpent
	}
	peer := mb.sides[to]
	if peer == nil {
		defer p.mu.Unlock()
		if len(mb.held) >= provisionHeld || mb.heldN+len(push) > provisionHeldBytes {
			return passFull
		}
		mb.passed++
		mb.held = append(mb.held, push)
		mb.heldN += len(push)
		return passHeld
	}
	mb.passed++
	p.mu.Unlock()
	if !peer.write(push) {
		peer.c.ws.NetConn().Close()
		return passEnded
	}
	return passSent
}

// endMailbox ends mb when side at leaves: the other side hears why and its
// connection closes.
func (s *Server) endMailbox(mb *mailbox, at int, reason wire.ProvisionCloseReason) {
	p := s.provisions
	p.mu.Lock()
	first := !mb.ended
	if first {
		mb.ended = true
		delete(p.byID, mb.id)
		if p.perIP[mb.ip]--; p.perIP[mb.ip] <= 0 {
			delete(p.perIP, mb.ip)
		}
		s.metrics.provisioningOpen.Dec()
	}
	other := mb.sides[1-at]
	p.mu.Unlock()
	if first && other != nil {
		other.write(encode(0, wire.ProvisionClosed{Reason: reason}))
		other.mu.Lock()
		other.c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "mailbox ended"), time.Now().Add(s.lim.WriteTimeout))
		other.mu.Unlock()
		// The other side's reader ends on the close (or the deadline).
		other.c.ws.SetReadDeadline(time.Now().Add(closeGrace))
	}
}
