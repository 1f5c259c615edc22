package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// ClientOptions tune a Client. A zero field takes its default.
type ClientOptions struct {
	// RelayID, when not zero, is the only relay the client authenticates
	// to: a relay presenting another ID is refused with ErrRelayChanged,
	// finally. When it is zero, the client pins the ID of the first relay
	// it authenticates to and calls OnPin with it.
	RelayID [32]byte
	// OnPin, when set, is called with the relay's ID after a successful
	// authentication of a client that had no RelayID (trust on first use),
	// until it returns nil: the profile stores the pin, and a pin that could
	// not be stored is stored at the next authentication.
	OnPin func(id [32]byte) error
	// Dialer dials the websocket (default: a 10s handshake timeout, no
	// Origin header).
	Dialer *websocket.Dialer
	// RootCAs, when set, verifies a wss:// relay's certificate instead of
	// the system's roots (a private CA). It applies to the default Dialer
	// and to a Dialer without a TLS configuration.
	RootCAs *x509.CertPool
	// HandshakeTimeout bounds the challenge and authentication (10s).
	HandshakeTimeout time.Duration
	// PingInterval, ReadTimeout and WriteTimeout work as the relay's
	// (20s, 60s, 10s).
	PingInterval time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between reconnection
	// attempts, which doubles from MinBackoff with jitter (250ms, 30s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// SendQueue bounds the requests waiting for the writer (64); callers
	// beyond it wait.
	SendQueue int
	// ReceiveBuffer bounds the deliveries held for Receive (4096): beyond
	// it a delivery is dropped, and the relay delivers it again after its
	// lease timeout.
	ReceiveBuffer int
	// MaxReceive is the most envelopes one Receive returns (256).
	MaxReceive int
	// Logger receives connection events (default: discarded).
	Logger *slog.Logger
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.Dialer == nil {
		o.Dialer = &websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10}
	}
	if o.RootCAs != nil && o.Dialer.TLSClientConfig == nil {
		d := *o.Dialer
		d.TLSClientConfig = &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}
		o.Dialer = &d
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.HandshakeTimeout, 10*time.Second)
	def(&o.PingInterval, 20*time.Second)
	def(&o.ReadTimeout, 60*time.Second)
	def(&o.WriteTimeout, 10*time.Second)
	def(&o.MinBackoff, 250*time.Millisecond)
	def(&o.MaxBackoff, 30*time.Second)
	if o.SendQueue <= 0 {
		o.SendQueue = 64
	}
	if o.ReceiveBuffer <= 0 {
		o.ReceiveBuffer = 4096
	}
	if o.MaxReceive <= 0 {
		o.MaxReceive = 256
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Client is one device's connection to a relay: it authenticates as its
// address, sends requests and collects the envelopes the relay pushes, and
// reconnects with backoff when the connection drops. It implements
// engine.Relay. Its methods are safe for concurrent use.
type Client struct {
	url  string
	self engine.Address
	id   *engine.Identity
	opts ClientOptions
	log  *slog.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has stopped
	wg     sync.WaitGroup
	reqID  atomic.Uint32

	mu      sync.Mutex
	cur     *clientConn // nil while not connected
	state   State
	final   error // why the supervisor stopped, if not Close
	closed  bool
	relayID [32]byte
	pinned  [32]byte // the only relay ID accepted; zero until the first authentication
	stored  bool     // OnPin took the pin
	states  chan State
	epoch   uint64        // connections made so far
	wake    chan struct{} // engine.RelayLink: deliveries or a state change

	recvMu  sync.Mutex
	buf     []engine.Leased
	bufRows map[uint64]struct{}

	// pool is the relay's count of this device's one-time prekeys, as the
	// relay last pushed it; -1 before the first push.
	pool atomic.Int64
}

var (
	_ engine.Relay      = (*Client)(nil)
	_ engine.RelayLink  = (*Client)(nil)
	_ engine.PreKeyPool = (*Client)(nil)
)

// OneTimePreKeyPool implements engine.PreKeyPool: the relay's count of this
// device's one-time prekeys, as it last told it.
func (c *Client) OneTimePreKeyPool() (int, bool) {
	n := c.pool.Load()
	return int(n), n >= 0
}

// setPool records the relay's count and wakes the engine's loop, which tops
// the pool up when it is low.
func (c *Client) setPool(n int) {
	c.pool.Store(int64(n))
	c.signal()
}

// Dial connects to the relay at rawURL (ws:// or wss://; an empty path means
// wire.WebSocketPath) and authenticates as self with id. It returns the first
// attempt's error, such as a *ServerError saying the address belongs to
// another identity; after that first connection the client reconnects on its
// own.
func Dial(ctx context.Context, rawURL string, self engine.Address, id *engine.Identity, opts ClientOptions) (*Client, error) {
	c, err := newClient(rawURL, self, id, opts)
	if err != nil {
		return nil, err
	}
	first := make(chan error, 1)
	c.wg.Add(1)
	go c.supervise(ctx, first)
	if err := <-first; err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// NewClient returns a client that connects in the background and keeps
// trying, reporting its progress on States: for a UI that must start while
// the relay is unreachable.
func NewClient(rawURL string, self engine.Address, id *engine.Identity, opts ClientOptions) (*Client, error) {
	c, err := newClient(rawURL, self, id, opts)
	if err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go c.supervise(context.Background(), nil)
	return c, nil
}

// CheckURL reports whether rawURL is a relay URL a client can dial: ws://
// or wss:// with a host.
func CheckURL(rawURL string) error {
	_, err := parseURL(rawURL)
	return err
}

func parseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("relay URL %q: %w", rawURL, err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, fmt.Errorf("relay URL %q: want ws:// or wss://", rawURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("relay URL %q: no host", rawURL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = wire.WebSocketPath
	}
	return u, nil
}

func newClient(rawURL string, self engine.Address, id *engine.Identity, opts ClientOptions) (*Client, error) {
	if id == nil {
		return nil, errors.New("transport: no identity")
	}
	if _, err := engine.ParseAddress(self.String()); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{url: u.String(), self: self, id: id, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), states: make(chan State, 16), bufRows: make(map[uint64]struct{}), wake: make(chan struct{}, 1)}
	c.state = State{Conn: StateConnecting, At: time.Now()}
	c.pinned = opts.RelayID
	c.stored = opts.RelayID != [32]byte{}
	c.pool.Store(-1)
	return c, nil
}

// Self returns the address the client authenticates as.
func (c *Client) Self() engine.Address { return c.self }

// RelayID returns the ID of the relay last authenticated to (zero before).
func (c *Client) RelayID() [32]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relayID
}

// State returns the connection's current state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// States reports every change of State. When the reader falls behind, the
// oldest reports are dropped (State always has the latest). It is closed by
// Close.
func (c *Client) States() <-chan State { return c.states }

// Wake implements engine.RelayLink: it receives a value when deliveries
// arrive and when the connection state changes.
func (c *Client) Wake() <-chan struct{} { return c.wake }

// Link implements engine.RelayLink.
func (c *Client) Link() engine.Link {
	c.mu.Lock()
	defer c.mu.Unlock()
	return engine.Link{Up: c.state.Conn == StateConnected, Epoch: c.epoch, Err: c.state.Err}
}

func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Client) setState(s State) {
	s.At = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	if s.Conn == StateConnected {
		c.epoch++
	}
	c.state = s
	select {
	case c.states <- s:
	default:
		select {
		case <-c.states:
		default:
		}
		select {
		case c.states <- s:
		default:
		}
	}
}

// Close closes the connection and stops reconnecting; it returns once every
// goroutine of the client has ended. Calls waiting on the client fail.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.setState(State{Conn: StateClosed})
	close(c.states)
	return nil
}

// supervise connects, waits for the connection to end, and connects again
// with backoff, until Close or a final error. With first set, the first
// attempt runs under ctx too and its outcome goes to first; a failure then
// ends the supervisor.
func (c *Client) supervise(ctx context.Context, first chan<- error) {
	defer c.wg.Done()
	defer close(c.done)
	attempt := 0
	var last error
	for {
		c.setState(State{Conn: StateConnecting, Err: last, Attempt: attempt})
		actx, cancel := context.WithCancel(c.ctx)
		if first != nil {
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
		}
		cc, err := c.connect(actx)
		cancel()
		if err == nil {
			attempt, last = 0, nil
			c.mu.Lock()
			c.cur = cc
			c.mu.Unlock()
			c.setState(State{Conn: StateConnected})
		}
		if first != nil {
			first <- err // Dial returns: the connection is usable already
			first = nil
			if err != nil {
				return
			}
		}
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			last = err
			attempt++
			final := isFinal(err)
			c.log.Info("relay connection failed", "attempt", attempt, "err", err, "final", final)
			if final {
				c.mu.Lock()
				c.final = err
				c.mu.Unlock()
				c.setState(State{Conn: StateDisconnected, Err: err, Final: true, Attempt: attempt})
				return
			}
			c.setState(State{Conn: StateDisconnected, Err: err, Attempt: attempt})
			if !c.sleep(c.backoff(attempt)) {
				return
			}
			continue
		}
		select {
		case <-cc.done:
		case <-c.ctx.Done():
		}
		c.mu.Lock()
		c.cur = nil
		c.mu.Unlock()
		cc.close()
		if c.ctx.Err() != nil {
			return
		}
		last = cc.cause()
		c.log.Info("relay connection lost", "err", last)
		if isFinal(last) {
			// The relay closed the connection because another key took the
			// address over: coming back would take it back.
			c.mu.Lock()
			c.final = last
			c.mu.Unlock()
			c.setState(State{Conn: StateDisconnected, Err: last, Final: true})
			return
		}
		c.setState(State{Conn: StateDisconnected, Err: last})
		if !c.sleep(c.backoff(1)) {
			return
		}
	}
}

// isFinal reports the errors that waiting will not cure.
func isFinal(err error) bool {
	var se *ServerError
	if errors.As(err, &se) {
		return se.Code == wire.ErrorAddressTaken || se.Code == wire.ErrorAuthFailed || se.Code == wire.ErrorBadRequest
	}
	return errors.Is(err, ErrRelayChanged)
}

// backoff returns the delay before attempt n (1, 2, ...): MinBackoff doubled
// n-1 times, at most MaxBackoff, with its upper half drawn at random so that
// clients cut off together do not come back together.
func (c *Client) backoff(n int) time.Duration {
	d := c.opts.MinBackoff
	for i := 1; i < n && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opts.MaxBackoff)
	return d/2 + mrand.N(d/2+1)
}

func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *Client) nextReq() uint32 {
	for {
		if r := c.reqID.Add(1); r != 0 {
			return r
		}
	}
}

// connect dials, answers the challenge and starts the connection's reader
// and writer.
func (c *Client) connect(ctx context.Context) (*clientConn, error) {
	ws, resp, err := c.opts.Dialer.DialContext(ctx, c.url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, unreachable{fmt.Errorf("dial relay %s: %s: %w", c.url, resp.Status, err)}
		}
		return nil, unreachable{fmt.Errorf("dial relay %s: %w", c.url, err)}
	}
	cc, err := c.handshake(ctx, ws)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return cc, nil
}

func (c *Client) handshake(ctx context.Context, ws *websocket.Conn) (*clientConn, error) {
	ws.SetReadLimit(wire.MaxRelayMessageSize)
	deadline := time.Now().Add(c.opts.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ws.SetReadDeadline(deadline)
	ws.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { ws.NetConn().Close() })
	defer stop()
	read := func() (wire.RelayMessage, error) {
		_, data, err := ws.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("authenticate to relay: %w", ctx.Err())
			}
			return nil, fmt.Errorf("authenticate to relay: %w", err)
		}
		_, m, err := wire.DecodeRelay(data)
		if err != nil {
			return nil, fmt.Errorf("authenticate to relay: %w", err)
		}
		return m, nil
	}
	m, err := read()
	if err != nil {
		return nil, err
	}
	ch, ok := m.(wire.Challenge)
	if !ok {
		return nil, fmt.Errorf("authenticate to relay: expected a challenge, got %s", m.RelayKind())
	}
	c.mu.Lock()
	pinned := c.pinned
	c.mu.Unlock()
	if pinned != ([32]byte{}) && ch.RelayID != pinned {
		return nil, fmt.Errorf("relay %s presents ID %x, not the pinned %x (a relay replaced on purpose is accepted with: parley relay-settings --accept-new-id): %w",
			c.url, ch.RelayID[:8], pinned[:8], ErrRelayChanged)
	}
	key := c.id.Public().SigningKey
	addr := c.self.String()
	auth := wire.Auth{Address: addr, SigningKey: key, Expires: ch.Expires}
	copy(auth.Signature[:], c.id.Sign(wire.AuthMessage(ch.Nonce, ch.RelayID, addr, key, ch.Expires)))
	b, err := wire.EncodeRelay(c.nextReq(), auth)
	if err != nil {
		return nil, fmt.Errorf("authenticate to relay: %w", err)
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		return nil, fmt.Errorf("authenticate to relay: %w", err)
	}
	if m, err = read(); err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case wire.AuthOK:
	case wire.Error:
		return nil, &ServerError{Code: m.Code, Message: m.Message}
	default:
		return nil, fmt.Errorf("authenticate to relay: expected auth ok, got %s", m.RelayKind())
	}
	if !stop() {
		return nil, fmt.Errorf("authenticate to relay: %w", ctx.Err())
	}
	c.mu.Lock()
	c.relayID = ch.RelayID
	c.pinned = ch.RelayID
	store := c.opts.OnPin != nil && !c.stored
	c.mu.Unlock()
	if store && c.opts.OnPin(ch.RelayID) == nil {
		c.mu.Lock()
		c.stored = true
		c.mu.Unlock()
	}
	ws.SetWriteDeadline(time.Time{})
	ws.SetReadDeadline(time.Now().Add(c.opts.ReadTimeout))
	return startClientConn(c, ws), nil
}

// conn returns the live connection, or why there is none.
func (c *Client) conn() (*clientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, fmt.Errorf("relay client: %w", engine.ErrClosed)
	case c.final != nil:
		return nil, c.final
	case c.cur != nil:
		return c.cur, nil
	case c.state.Err != nil:
		return nil, fmt.Errorf("%w: %v", ErrNotConnected, c.state.Err)
	}
	return nil, ErrNotConnected
}

// call sends one request and waits for its reply.
func (c *Client) call(ctx context.Context, m wire.RelayMessage) (wire.RelayMessage, error) {
	cc, err := c.conn()
	if err != nil {
		return nil, err
	}
	req := c.nextReq()
	b, err := wire.EncodeRelay(req, m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.RelayKind(), err)
	}
	reply := make(chan wire.RelayMessage, 1)
	if !cc.await(req, reply) {
		return nil, cc.lost()
	}
	defer cc.forget(req)
	select {
	case cc.out <- b:
	case <-cc.done:
		return nil, cc.lost()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-reply:
		if e, ok := r.(wire.Error); ok {
			return nil, &ServerError{Code: e.Code, Message: e.Message}
		}
		return r, nil
	case <-cc.done:
		return nil, cc.lost()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func unexpected(req wire.RelayKind, got wire.RelayMessage) error {
	return fmt.Errorf("relay answered %s with %s", req, got.RelayKind())
}

// FetchBundle implements engine.Relay. A peer without a bundle is an
// engine.ErrPeerNotRegistered (the relay's *ServerError with code
// wire.ErrorNotFound wrapped in it).
func (c *Client) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	r, err := c.call(ctx, wire.FetchBundle{Address: peer.String()})
	var se *ServerError
	if errors.As(err, &se) && se.Code == wire.ErrorNotFound {
		return wire.Bundle{}, &notRegistered{peer: peer, err: se}
	}
	if err != nil {
		return wire.Bundle{}, err
	}
	br, ok := r.(wire.BundleReply)
	if !ok {
		return wire.Bundle{}, unexpected(wire.RelayFetchBundle, r)
	}
	return br.Bundle, nil
}

// PublishPreKeys implements engine.Relay: the bundle (its one-time prekey
// field is ignored) and the one-time prekeys, in batches of
// wire.MaxPublishOneTimePreKeys.
func (c *Client) PublishPreKeys(ctx context.Context, bundle wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	bundle.OneTimePreKey = nil
	for first := true; first || len(oneTime) > 0; first = false {
		n := min(len(oneTime), wire.MaxPublishOneTimePreKeys)
		r, err := c.call(ctx, wire.PublishBundle{Bundle: bundle, OneTimePreKeys: oneTime[:n]})
		if err != nil {
			return fmt.Errorf("publish prekeys: %w", err)
		}
		if _, ok := r.(wire.Done); !ok {
			return unexpected(wire.RelayPublishBundle, r)
		}
		oneTime = oneTime[n:]
	}
	return nil
}

// Submit implements engine.Relay: nil once the relay accepted the envelope,
// a *RefusedError when it refused it (nothing stored), and another error
// when the outcome is unknown or the request never left.
func (c *Client) Submit(ctx context.Context, env wire.Envelope) error {
	b, err := wire.EncodeEnvelope(env)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	r, err := c.call(ctx, wire.Submit{Envelope: b})
	if err != nil {
		return fmt.Errorf("submit envelope %x: %w", env.ID[:4], err)
	}
	return submitResult(env, r)
}

// Receive implements engine.Relay: it returns the envelopes the relay has
// delivered since the last call, oldest first, at most MaxReceive, without
// waiting (Wake says when there may be more). Each stays leased until
// acknowledged; after a reconnect or the relay's lease timeout it may be
// delivered again. After Close, or once the client gave up for good, it
// fails.
func (c *Client) Receive(ctx context.Context) ([]engine.Leased, error) {
	c.recvMu.Lock()
	if len(c.buf) > 0 {
		n := min(len(c.buf), c.opts.MaxReceive)
		out := make([]engine.Leased, n)
		copy(out, c.buf)
		c.buf = c.buf[n:]
		if len(c.buf) == 0 {
			c.buf = nil
		} else {
			c.signal() // more to take
		}
		for _, l := range out {
			delete(c.bufRows, l.Row)
		}
		c.recvMu.Unlock()
		return out, nil
	}
	c.recvMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		c.mu.Lock()
		err := c.final
		c.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("relay client: %w", engine.ErrClosed)
		}
		return nil, fmt.Errorf("receive: %w", err)
	default:
		return nil, nil
	}
}

// deliver buffers a pushed envelope for Receive, once per row.
func (c *Client) deliver(d wire.Deliver) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	if _, ok := c.bufRows[d.Row]; ok {
		return
	}
	if len(c.buf) >= c.opts.ReceiveBuffer {
		c.log.Warn("receive buffer full: dropping a delivery until the relay repeats it", "row", d.Row)
		return
	}
	c.bufRows[d.Row] = struct{}{}
	c.buf = append(c.buf, engine.Leased{Row: d.Row, Envelope: d.Envelope})
	c.signal()
}

// Acknowledge implements engine.Relay: the relay deletes the rows, in
// batches of wire.MaxAckRows.
func (c *Client) Acknowledge(ctx context.Context, rows []uint64) error {
	for len(rows) > 0 {
		n := min(len(rows), wire.MaxAckRows)
		r, err := c.call(ctx, wire.AckRows{Rows: rows[:n]})
		if err != nil {
			return fmt.Errorf("acknowledge %d rows: %w", n, err)
		}
		if _, ok := r.(wire.Done); !ok {
			return unexpected(wire.RelayAckRows, r)
		}
		rows = rows[n:]
	}
	return nil
}
