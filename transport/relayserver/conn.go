package relayserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
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
	// controlRate and controlBurst bound the pings and pongs a connection
	// sends, on top of the message and byte buckets they also pay from:
	// a client pings every 20 s and answers the relay's pings, which come
	// as often, so one a second with a burst of 8 is room to spare, and a
	// flood of pings costs the relay at most that many pongs before its
	// frames are refused.
	controlRate  = 1
	controlBurst = 8
)

// errControlBeforeAuth ends a connection that sends a ping or a pong before
// it authenticated: the relay serves nothing but the auth exchange then, and
// reading frames for a connection that proved nothing must end at once.
var errControlBeforeAuth = errors.New("control frame before authentication")

// errOverBudget ends a connection that kept sending over its buckets
// (Limits.RefusalRate).
var errOverBudget = errors.New("over budget: frames refused past the refusal allowance")

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
	// joining: the address is a device number the account's held list
	// has never used, authenticated only to publish the list that adds
	// it (devicelist.go, "Joining"); nothing else is served.
	joining bool
	ctx     context.Context
	cancel  context.CancelFunc

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
	reason     dropReason // set by finish
	final      []byte     // a last message before the close frame
	closeCode  int
	closeText  string

	// flooded: the connection ends for frames it should not have sent (a
	// control frame before authentication, frames past its refusal
	// allowance), and closes without lingering over what it still sends.
	flooded atomic.Bool

	msgs, bytes *rate.Limiter
	control     *rate.Limiter // pings and pongs (controlRate)
	refusals    *rate.Limiter // frames refused by the buckets (Limits.RefusalRate)

	mu          sync.Mutex
	outstanding map[uint64]leased // leased, unacknowledged rows

	// provisionOpen is the ProvisionOpen a connection sent in place of
	// Auth, and provisionReq its request ID (provision.go).
	provisionOpen *wire.ProvisionOpen
	provisionReq  uint32

	putq putQueue    // blob puts waiting for the store (blobput.go)
	subq submitQueue // envelopes waiting for the store (submit.go)
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
		control:     rate.NewLimiter(controlRate, controlBurst),
		refusals:    limiter(lim.RefusalRate, lim.RefusalBurst),
		outstanding: make(map[uint64]leased),
	}
}

// run authenticates the connection, then serves it until it ends, and
// releases what it held. authenticated is called once the client proved its
// address.
func (c *conn) run(authenticated func()) {
	s := c.s
	defer c.cancel()
	defer func() {
		if c.flooded.Load() {
			// A flood the relay refused: what the peer still sends is
			// not worth reading, nor the close frame worth saving, and
			// its IP is a step nearer to being refused at accept.
			s.floods.allow(c.ip, time.Now())
			c.ws.NetConn().Close()
			return
		}
		lingerClose(c.ws.NetConn())
	}()
	// Before authentication only the auth exchange is served: a ping or a
	// pong ends the connection (gorilla's default handler would answer
	// every ping, and ignoring them would still read a flood for free).
	refuseControl := func(string) error {
		c.flooded.Store(true)
		return errControlBeforeAuth
	}
	c.ws.SetPingHandler(refuseControl)
	c.ws.SetPongHandler(refuseControl)
	ok := c.handshake()
	if c.attached {
		// Listed under its address by the handshake: unlisted at the end,
		// and the address's other connections told that rows may be free.
		defer func() {
			s.detach(c)
			s.notify(c.addr)
		}()
	}
	if !ok && c.provisionOpen != nil {
		// A provisioning connection gives its handshake slot back: it
		// may stay the mailbox's ten minutes, counted as an open
		// connection of its IP, and is bounded by ProvisioningPerIP.
		authenticated()
		c.provision(c.provisionReq, *c.provisionOpen)
		return
	}
	if !ok {
		return
	}
	authenticated()
	if c.joining {
		c.startWriter()
		reason := c.readLoop()
		c.finish(reason, nil, 0, "")
		<-c.writerDone
		s.metrics.disconnected(c.reason)
		return
	}
	// A registration by another key may have raced this handshake, after its
	// eviction of the address's connections and before this attach.
	if k, err := s.store.Registered(c.ctx, c.addr); err != nil || k != c.key {
		c.writeNow(errorMsg(0, wire.ErrorAuthFailed, c.addr+" was registered to another identity"))
		s.metrics.disconnected(dropKicked)
		return
	}
	// Control frames pay from the connection's buckets like messages, and
	// from a small bucket of their own: a ping over them gets no pong, a
	// pong over them does not count as life, and either counts against the
	// refusal allowance, past which the connection ends.
	c.ws.SetPingHandler(func(data string) error {
		if now := time.Now(); !c.allowControl(now, len(data)) {
			return c.refusedFrame(now)
		}
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(s.lim.WriteTimeout))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})
	c.ws.SetPongHandler(func(data string) error {
		if now := time.Now(); !c.allowControl(now, len(data)) {
			return c.refusedFrame(now)
		}
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
	c.waitPuts()
	c.waitSubmits()
	<-c.writerDone
	label := c.reason
	if reason == dropReadLimit {
		// The cause, even when the writer failed first on the socket the
		// peer closed after the 1009 close frame.
		label = reason
	}
	s.metrics.disconnected(label)
	// Rows this connection held go back to the mailbox, for the address's
	// next connection (or another one open now).
	if err := s.store.Release(context.Background(), c.addr, c.holder); err != nil {
		s.log.Error("release leases", "err", cause(err))
	}
}

// allowControl takes a control frame of n bytes of payload from the
// connection's buckets, counting a refusal as a message's.
func (c *conn) allowControl(now time.Time, n int) bool {
	switch {
	case !c.control.AllowN(now, 1):
		c.s.metrics.rateLimitedIn(bucketControl)
		return false
	case !c.msgs.AllowN(now, 1):
		c.s.metrics.rateLimitedIn(bucketMessages)
		return false
	case !c.bytes.AllowN(now, n):
		c.s.metrics.rateLimitedIn(bucketBytes)
		return false
	}
	return true
}

// refusedFrame counts a frame the buckets refused against the refusal
// allowance: errOverBudget once it is spent, which ends the connection.
func (c *conn) refusedFrame(now time.Time) error {
	if c.refusals.AllowN(now, 1) {
		return nil
	}
	c.flooded.Store(true)
	return errOverBudget
}

// stop ends the connection from outside (shutdown).
func (c *conn) stop(reason dropReason, code int, text string) {
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
func (c *conn) finish(reason dropReason, final []byte, code int, text string) {
	c.finishOnce.Do(func() {
		c.reason, c.final, c.closeCode, c.closeText = reason, final, code, text
		close(c.quit)
		c.ask(0)
	})
}

// abort ends the connection at once: the socket closes under both
// goroutines.
func (c *conn) abort(reason dropReason) {
	c.finish(reason, nil, 0, "")
	c.ws.NetConn().Close()
}

// poke wakes the writer to lease rows.
func (c *conn) poke() { c.ask(workFill) }

// lingerClose half-closes the socket, reads and discards what the peer still
// sends for a moment, then closes it.
func lingerClose(nc net.Conn) {
	raw := nc
	if cc, ok := nc.(*countedConn); ok {
		raw = cc.Conn // the half-close is the TCP connection's; the close is the wrapper's
	}
	if tc, ok := raw.(*net.TCPConn); ok {
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
