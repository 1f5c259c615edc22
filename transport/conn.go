package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// ClientOptions tune a Conn, the client side of the relay protocol. A zero
// field takes its default.
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

// Conn is one device's connection to a relay: it authenticates as its
// address, sends requests and collects the envelopes the relay pushes, and
// reconnects with backoff when the connection drops. It implements
// engine.Relay. Its methods are safe for concurrent use. (It is a Conn, not
// a Client: engine.Client is the device's engine, which holds a Conn as its
// engine.Relay.)
type Conn struct {
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
	cur     *socket // nil while not connected
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

	// statusMu guards what the relay announced and told (status.go).
	statusMu      sync.Mutex
	features      wire.FeatureSet
	featuresKnown bool
	lifetime      time.Duration // announced envelope lifetime; 0 until announced
	statuses      []wire.EnvelopeStatus
}

var (
	_ engine.Relay        = (*Conn)(nil)
	_ engine.RelayLink    = (*Conn)(nil)
	_ engine.PreKeyPool   = (*Conn)(nil)
	_ engine.EnvelopeNews = (*Conn)(nil)
)

// OneTimePreKeyPool implements engine.PreKeyPool: the relay's count of this
// device's one-time prekeys, as it last told it.
func (c *Conn) OneTimePreKeyPool() (int, bool) {
	n := c.pool.Load()
	return int(n), n >= 0
}

// setPool records the relay's count and wakes the engine's loop, which tops
// the pool up when it is low.
func (c *Conn) setPool(n int) {
	c.pool.Store(int64(n))
	c.signal()
}

// Dial connects to the relay at rawURL (ws:// or wss://; an empty path means
// wire.WebSocketPath) and authenticates as self with id. It returns the first
// attempt's error, such as a *ServerError saying the address belongs to
// another identity; after that first connection the client reconnects on its
// own.
func Dial(ctx context.Context, rawURL string, self engine.Address, id *engine.Identity, opts ClientOptions) (*Conn, error) {
	c, err := newConn(rawURL, self, id, opts)
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

// NewConn returns a client that connects in the background and keeps
// trying, reporting its progress on States: for a UI that must start while
// the relay is unreachable.
func NewConn(rawURL string, self engine.Address, id *engine.Identity, opts ClientOptions) (*Conn, error) {
	c, err := newConn(rawURL, self, id, opts)
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

func newConn(rawURL string, self engine.Address, id *engine.Identity, opts ClientOptions) (*Conn, error) {
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
	c := &Conn{url: u.String(), self: self, id: id, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), states: make(chan State, 16), bufRows: make(map[uint64]struct{}), wake: make(chan struct{}, 1)}
	c.state = State{Conn: StateConnecting, At: time.Now()}
	c.pinned = opts.RelayID
	c.stored = opts.RelayID != [32]byte{}
	c.pool.Store(-1)
	return c, nil
}

// Self returns the address the client authenticates as.
func (c *Conn) Self() engine.Address { return c.self }

// RelayID returns the ID of the relay last authenticated to (zero before).
func (c *Conn) RelayID() [32]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relayID
}

// State returns the connection's current state.
func (c *Conn) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// States reports every change of State. When the reader falls behind, the
// oldest reports are dropped (State always has the latest). It is closed by
// Close.
func (c *Conn) States() <-chan State { return c.states }

// Wake implements engine.RelayLink: it receives a value when deliveries
// arrive and when the connection state changes.
func (c *Conn) Wake() <-chan struct{} { return c.wake }

// Link implements engine.RelayLink.
func (c *Conn) Link() engine.Link {
	c.mu.Lock()
	defer c.mu.Unlock()
	return engine.Link{Up: c.state.Conn == StateConnected, Epoch: c.epoch, Err: c.state.Err}
}

func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Conn) setState(s State) {
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
func (c *Conn) Close() error {
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
