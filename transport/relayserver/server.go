package relayserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is a parley relay: one websocket path (wire.WebSocketPath), /healthz and
// /metrics on one listener.
type Server struct {
	cfg         Config
	lim         Limits
	log         *slog.Logger
	now         func() time.Time
	store       relaystore.Store
	blobs       relaystore.BlobStore // nil: no blob store
	ownStore    bool                 // made by NewMemory: Shutdown closes it
	relayID     [32]byte
	instance    string // prefix of this process's lease holders
	metrics     *metrics
	blobMetrics *blobMetrics
	http        *http.Server
	upgrader    websocket.Upgrader

	conns   atomic.Int64 // open websockets, counted from before the upgrade
	unauth  atomic.Int64 // of those, not yet authenticated
	connSeq atomic.Uint64

	// The guards of guard.go.
	ipSlots       *ipSlots
	registrations *keyedLimiters // first registrations per remote IP
	fetchesBy     *keyedLimiters // bundle fetches per requesting address
	fetchesOf     *keyedLimiters // bundle fetches per target address
	oneTimeOf     *keyedLimiters // one-time prekeys handed out per target
	floods        *keyedLimiters // connections closed for flooding, per remote IP
	writesBy      *keyedLimiters // changes to its own records per address (allowWrite)
	writesFrom    *keyedLimiters // the same per remote IP
	readers       *readers       // addresses that read their mail lately
	accepts       *acceptCache   // accepted peers recorded lately (peers.go)
	sockets       *socketCount   // TCP connections, counted at accept
	proxied       *socketCount   // plain requests in flight per forwarded IP
	counting      atomic.Bool    // a listener counts the connections (CountConnections)
	storeFailing  atomic.Bool    // the last sweep's store call failed
	admin         http.Handler   // /healthz and /metrics
	provisions    *mailboxes     // provisioning mailboxes (provision.go)

	sweepOnce   sync.Once
	stopSweep   context.CancelFunc // nil until Serve
	sweeperDone chan struct{}

	mu       sync.RWMutex
	ln       net.Listener
	shutdown bool
	all      map[*conn]struct{}
	byAddr   map[string]map[*conn]struct{} // authenticated connections
	watches  map[string]func()             // addresses whose signals from other relays this one hears
	handlers sync.WaitGroup                // websocket handlers, which outlive the http.Server's view
}

// New makes a relay that keeps what it holds in store, which the caller
// opened (memory, SQLite or NATS, decorated with relaystore.WithFaults when
// asked) with cfg.Limits' quotas (Limits.Limits), and closes after
// Shutdown: the server never closes a store it was given.
func New(store relaystore.Store, cfg Config) (*Server, error) {
	if store == nil {
		panic("relayserver: New without a store")
	}
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("relay limits: %w", err)
	}
	s := &Server{cfg: cfg, lim: lim, log: cfg.Logger, now: cfg.Now, store: store, blobs: cfg.Blobs,
		all: make(map[*conn]struct{}), byAddr: make(map[string]map[*conn]struct{}), watches: make(map[string]func()),
		ipSlots:       newIPSlots(),
		provisions:    newMailboxes(),
		registrations: newKeyedLimiters(lim.RegistrationRate, lim.RegistrationBurst),
		fetchesBy:     newKeyedLimiters(lim.FetchRate, lim.FetchBurst),
		fetchesOf:     newKeyedLimiters(lim.TargetFetchRate, lim.TargetFetchBurst),
		oneTimeOf:     newKeyedLimiters(lim.TargetOneTimeRate, lim.TargetOneTimeBurst),
		floods:        newKeyedLimiters(lim.FloodRate, lim.FloodBurst),
		writesBy:      newKeyedLimiters(lim.WriteRate, lim.WriteBurst),
		writesFrom:    newKeyedLimiters(lim.IPWriteRate, lim.IPWriteBurst),
		readers:       newReaders(lim.EnvelopeLifetime),
		accepts:       newAcceptCache(),
		sockets:       newSocketCount(),
		proxied:       newSocketCount()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	var inst [8]byte
	rand.Read(inst[:])
	s.instance = hex.EncodeToString(inst[:])
	if s.relayID, err = s.store.RelayID(context.Background()); err != nil {
		return nil, fmt.Errorf("relay id: %w", err)
	}
	if cfg.RelayID != ([32]byte{}) {
		s.relayID = cfg.RelayID
	}
	// Stats gets half the /metrics write deadline, so that a slow store
	// still leaves time to write the other series.
	s.metrics = newMetrics(newGaugeCollector(&s.conns, &s.unauth, &s.sockets.all, s.store, lim.HTTPReadTimeout/2, s.log), s.store)
	s.blobMetrics = newBlobMetrics(s.metrics.reg, s.blobs, lim.HTTPReadTimeout/2, s.log)
	// An idle connection should cost little (a relay holds tens of
	// thousands): reads go through a small buffer of the connection's own
	// (not the HTTP server's, which would keep the server's per-request
	// state reachable), and a write borrows its buffer from a pool for as
	// long as it takes, so a connection holds none between writes.
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: lim.HTTPReadHeaderTimeout,
		ReadBufferSize:   readBufferSize,
		WriteBufferSize:  16 << 10,
		WriteBufferPool:  &sync.Pool{},
		CheckOrigin:      noOrigin,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+wire.WebSocketPath, s.serveWS)
	admin := http.NewServeMux()
	admin.HandleFunc("GET /healthz", s.serveHealth)
	admin.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.admin = admin
	if !cfg.SeparateAdmin {
		mux.Handle("GET /healthz", s.limitRequests(admin))
		mux.Handle("GET /metrics", s.limitRequests(admin))
	}
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: lim.HTTPReadHeaderTimeout,
		ReadTimeout:       lim.HTTPReadTimeout,
		WriteTimeout:      lim.HTTPReadTimeout,
		IdleTimeout:       lim.HTTPIdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// NewMemory makes a relay that keeps everything in memory, in a store of
// its own that Shutdown closes: the demo's relay, the benchmark's and most
// tests'. Its ID changes at every start unless cfg.RelayID is set.
func NewMemory(cfg Config) (*Server, error) {
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("relay limits: %w", err)
	}
	if cfg.Blobs == nil {
		cfg.Blobs = relaystore.NewMemoryBlobs(lim.Blobs)
	}
	s, err := New(relaystore.NewMemory(lim.Limits), cfg)
	if err != nil {
		return nil, err
	}
	s.ownStore = true
	return s, nil
}

// noOrigin refuses any request that carries a non-empty Origin header: the
// relay serves parley clients, never a web page, so a browser's cross-site
// request is refused before it can use a visitor's network position.
func noOrigin(r *http.Request) bool {
	for _, o := range r.Header.Values("Origin") {
		if o != "" {
			return false
		}
	}
	return true
}

// RelayID returns the relay's identity, which clients sign into their
// authentication.
func (s *Server) RelayID() [32]byte { return s.relayID }

// Handler returns the relay's HTTP handler, for embedding it in another
// server. Serve uses it.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// AdminHandler serves /healthz and /metrics alone, for an admin listener
// (parley relay --admin-listen); the main handler serves them too unless
// Config.SeparateAdmin is set.
func (s *Server) AdminHandler() http.Handler { return s.admin }

// Serve serves the relay on ln until Shutdown, then returns nil.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	if !s.counting.Load() {
		ln = s.CountConnections(ln)
	}
	s.ln = ln
	s.sweepOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopSweep, s.sweeperDone = cancel, make(chan struct{})
		go s.sweeper(ctx, s.sweeperDone)
	})
	s.mu.Unlock()
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Addr returns the address Serve listens on, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections, closes every websocket with 1001
// (going away), waits for their handlers until ctx is done, and closes the
// store NewMemory made (never one given to New). Unacknowledged rows stay
// in the mailboxes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.shutdown = true
	s.mu.Unlock()
	err := s.http.Shutdown(ctx)
	s.mu.Lock()
	for c := range s.all {
		c.stop(dropShutdown, websocket.CloseGoingAway, "relay shutting down")
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
		// Force the stragglers; their handlers finish on their own.
		s.mu.Lock()
		for c := range s.all {
			c.ws.NetConn().Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.mu.Lock()
	stopSweep, sweeperDone := s.stopSweep, s.sweeperDone
	s.mu.Unlock()
	if stopSweep != nil {
		stopSweep()
		<-sweeperDone
	}
	if cerr := s.closeStore(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func (s *Server) closeStore() error {
	if s.ownStore {
		return s.store.Close()
	}
	return nil
}

// serveHealth answers from what the relay already knows and never asks the
// store: 503 when the last sweep could not reach it, or while shutting down.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	down := s.shutdown
	s.mu.RUnlock()
	if down || s.storeFailing.Load() {
		http.Error(w, "storage unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// readBufferSize is each connection's read buffer. Frame headers and small
// messages are read through it; a large envelope's payload mostly bypasses
// it.
const readBufferSize = 1 << 10

// serveWS admits a websocket within the connection caps and runs it.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		http.Error(w, "relay shutting down", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	ip := s.clientKey(r)
	release, ok := s.admit(w, ip)
	if !ok {
		s.handlers.Done()
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil) // writes its own error response
	if err != nil {
		release(false)
		s.handlers.Done()
		return
	}
	// The connection lives on in a goroutine of its own, so that what the
	// HTTP server kept for the request (its goroutine's stack, the request,
	// the response and their buffers) is garbage once the upgrade is done.
	go func() {
		defer s.handlers.Done()
		authed := false
		defer func() { release(authed) }()
		s.serveConn(ws, ip, func() {
			authed = true
			s.unauth.Add(-1)
			s.ipSlots.authenticated(ip)
		})
	}()
}

// admit takes a connection slot for ip, from the per-IP and relay-wide
// caps, or answers the HTTP request with the cap that refused it. release
// gives the slots back, told whether the connection authenticated (and so
// gave its handshake slot back already).
func (s *Server) admit(w http.ResponseWriter, ip string) (release func(authed bool), ok bool) {
	if s.floods.spent(ip, time.Now()) {
		s.metrics.limitedBy(limitIPFloods)
		http.Error(w, "too many connections closed for flooding from your address: try again later", http.StatusTooManyRequests)
		return nil, false
	}
	if refused := s.ipSlots.acquire(ip, s.lim.MaxConnectionsPerIP, s.lim.MaxUnauthenticatedPerIP); refused != "" {
		s.metrics.limitedBy(refused)
		http.Error(w, "too many connections from your address", http.StatusTooManyRequests)
		return nil, false
	}
	if n := s.conns.Add(1); n > int64(s.lim.MaxConnections) {
		s.conns.Add(-1)
		s.ipSlots.release(ip, false)
		s.metrics.limitedBy(limitConnections)
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return nil, false
	}
	if n := s.unauth.Add(1); n > int64(s.lim.MaxUnauthenticated) {
		s.unauth.Add(-1)
		s.conns.Add(-1)
		s.ipSlots.release(ip, false)
		s.metrics.limitedBy(limitHandshakes)
		http.Error(w, "too many connections authenticating", http.StatusServiceUnavailable)
		return nil, false
	}
	return func(authed bool) {
		if !authed {
			s.unauth.Add(-1)
		}
		s.conns.Add(-1)
		s.ipSlots.release(ip, authed)
	}, true
}

// serveConn serves one upgraded websocket until it ends.
func (s *Server) serveConn(ws *websocket.Conn, ip string, authenticated func()) {
	s.metrics.connectionsTotal.Inc()
	c := newConn(s, ws, ip)
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.all[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.all, c)
		s.mu.Unlock()
	}()
	c.run(authenticated)
}
