package relayserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// testRelay is a relay serving on 127.0.0.1:0 for one test.
type testRelay struct {
	srv    *Server
	url    string // ws://127.0.0.1:port
	addr   string // 127.0.0.1:port
	served chan error
	store  relaystore.Store // closed by stop when the test opened it; nil with NewMemory
	once   sync.Once
}

// startRelay starts a relay in memory.
func startRelay(tb testing.TB, cfg Config) *testRelay {
	tb.Helper()
	return startRelayOn(tb, "127.0.0.1:0", cfg)
}

func startRelayOn(tb testing.TB, addr string, cfg Config) *testRelay {
	tb.Helper()
	srv, err := NewMemory(cfg)
	if err != nil {
		tb.Fatalf("NewMemory: %v", err)
	}
	return serveRelay(tb, addr, srv, nil)
}

// startSQLiteRelay starts a relay keeping its data in SQLite in dir, as
// parley relay --data does; stop closes the store.
func startSQLiteRelay(tb testing.TB, dir string, cfg Config) *testRelay {
	tb.Helper()
	return startSQLiteRelayOn(tb, "127.0.0.1:0", dir, cfg)
}

func startSQLiteRelayOn(tb testing.TB, addr, dir string, cfg Config) *testRelay {
	tb.Helper()
	st, err := relaystore.OpenSQLite(context.Background(), dir, cfg.Limits.StoreLimits())
	if err != nil {
		tb.Fatalf("OpenSQLite: %v", err)
	}
	return startStoreRelay(tb, addr, st, cfg)
}

// startStoreRelay starts a relay on st, which stop closes.
func startStoreRelay(tb testing.TB, addr string, st relaystore.Store, cfg Config) *testRelay {
	tb.Helper()
	srv, err := New(st, cfg)
	if err != nil {
		st.Close()
		tb.Fatalf("New: %v", err)
	}
	return serveRelay(tb, addr, srv, st)
}

func serveRelay(tb testing.TB, addr string, srv *Server, st relaystore.Store) *testRelay {
	tb.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		srv.Shutdown(context.Background())
		if st != nil {
			st.Close()
		}
		tb.Fatalf("listen: %v", err)
	}
	r := &testRelay{srv: srv, url: "ws://" + ln.Addr().String(), addr: ln.Addr().String(), served: make(chan error, 1), store: st}
	go func() { r.served <- srv.Serve(ln) }()
	tb.Cleanup(r.stop)
	return r
}

// stop shuts the relay down, waits for Serve to return and closes the store
// the test opened.
func (r *testRelay) stop() {
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
		<-r.served
		if r.store != nil {
			r.store.Close()
		}
	})
}

// metric scrapes /metrics and returns the value of one series, such as
// `parley_relay_envelopes_refused_total{reason="mailbox_full"}`.
func (r *testRelay) metric(tb testing.TB, series string) float64 {
	tb.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + r.addr + "/metrics")
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				tb.Fatalf("metric %s: %v", series, err)
			}
			return v
		}
	}
	tb.Fatalf("metric %s not found", series)
	return 0
}

// waitMetric polls a metric until it reaches at least want.
func (r *testRelay) waitMetric(tb testing.TB, series string, want float64) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.metric(tb, series)
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s = %v, want at least %v", series, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitMetricAtMost polls a metric until it falls to at most want.
func (r *testRelay) waitMetricAtMost(tb testing.TB, series string, want float64) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.metric(tb, series)
		if got <= want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s = %v, want at most %v", series, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// device is a test identity with a publishable bundle.
type device struct {
	addr    engine.Address
	id      *engine.Identity
	bundle  wire.Bundle
	oneTime []wire.OneTimePreKeyPublic
}

func newDevice(tb testing.TB, addr string) *device {
	tb.Helper()
	r := engine.SystemRandom{}
	a := engine.MustParseAddress(addr)
	id, err := engine.NewIdentity(r)
	if err != nil {
		tb.Fatal(err)
	}
	return &device{addr: a, id: id}
}

// withBundle gives the device signed prekeys and n one-time prekeys.
func (d *device) withBundle(tb testing.TB, n int) *device {
	tb.Helper()
	r := engine.SystemRandom{}
	now := time.Now()
	spk, err := session.NewSignedPreKey(r, d.id, 1, now)
	if err != nil {
		tb.Fatal(err)
	}
	kem, err := session.NewKEMPreKey(r, d.id, 2, now)
	if err != nil {
		tb.Fatal(err)
	}
	d.bundle = engine.BuildBundle(d.addr, d.id, spk, kem)
	d.oneTime = nil
	for i := range n {
		k, err := session.NewOneTimePreKey(r, uint32(3+i))
		if err != nil {
			tb.Fatal(err)
		}
		d.oneTime = append(d.oneTime, k.Public())
	}
	return d
}

// fastClient are options that reconnect quickly in tests.
var fastClient = transport.ClientOptions{MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

func dial(tb testing.TB, r *testRelay, d *device) *transport.Conn {
	tb.Helper()
	return dialOpts(tb, r, d, fastClient)
}

func dialOpts(tb testing.TB, r *testRelay, d *device, opts transport.ClientOptions) *transport.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, r.url, d.addr, d.id, opts)
	if err != nil {
		tb.Fatalf("Dial as %s: %v", d.addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// envelope makes an envelope from one device to another with a random ID;
// its payload is body (which must not be empty).
func envelope(from, to *device, body string) wire.Envelope {
	e := wire.Envelope{Type: wire.EnvelopeRatchet, Sender: from.addr.String(), Recipient: to.addr.String(), Payload: []byte(body)}
	rand.Read(e.ID[:])
	return e
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

func mustSubmit(tb testing.TB, c *transport.Conn, e wire.Envelope) {
	tb.Helper()
	if err := c.Submit(ctxT(tb), e); err != nil {
		tb.Fatalf("Submit %s→%s: %v", e.Sender, e.Recipient, err)
	}
}

// receiveN receives until n envelopes arrived, and returns them in order.
func receiveN(tb testing.TB, c *transport.Conn, n int) []engine.Leased {
	tb.Helper()
	got := receiveAtLeast(tb, c, n)
	if len(got) != n {
		tb.Fatalf("received %d envelopes, want %d", len(got), n)
	}
	return got
}

// receiveAtLeast receives until at least n envelopes arrived and returns
// all of them in order: the last batch may hold more than n.
func receiveAtLeast(tb testing.TB, c *transport.Conn, n int) []engine.Leased {
	tb.Helper()
	ctx := ctxT(tb)
	var got []engine.Leased
	for len(got) < n {
		ls, err := waitReceive(ctx, c)
		if err != nil {
			tb.Fatalf("Receive after %d of %d: %v", len(got), n, err)
		}
		got = append(got, ls...)
	}
	return got
}

// waitReceive waits for at least one delivery (or the end of ctx) and
// returns what Receive has.
func waitReceive(ctx context.Context, c *transport.Conn) ([]engine.Leased, error) {
	for {
		ls, err := c.Receive(ctx)
		if err != nil || len(ls) > 0 {
			return ls, err
		}
		select {
		case <-c.Wake():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// expectNothing checks that nothing arrives for d.
func expectNothing(tb testing.TB, c *transport.Conn, d time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if ls, err := waitReceive(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
		tb.Fatalf("Receive: got %d envelopes, %v; want nothing", len(ls), err)
	}
}

func payloads(tb testing.TB, ls []engine.Leased) []string {
	tb.Helper()
	var out []string
	for _, l := range ls {
		e, err := wire.DecodeEnvelope(l.Envelope)
		if err != nil {
			tb.Fatalf("row %d: %v", l.Row, err)
		}
		out = append(out, string(e.Payload))
	}
	return out
}

func rowsOf(ls []engine.Leased) []uint64 {
	var out []uint64
	for _, l := range ls {
		out = append(out, l.Row)
	}
	return out
}

// raw is a websocket to the relay driven by hand, to send what the Client
// never would.
type raw struct {
	tb testing.TB
	ws *websocket.Conn

	features  []wire.Features         // pushed, in order
	lifetimes []wire.EnvelopeLifetime // pushed, in order
	statuses  []wire.EnvelopeStatus   // pushed, in order
}

func dialRaw(tb testing.TB, r *testRelay) *raw {
	tb.Helper()
	return dialRawWith(tb, r, &websocket.Dialer{}, nil)
}

func dialRawWith(tb testing.TB, r *testRelay, d *websocket.Dialer, h http.Header) *raw {
	tb.Helper()
	ws, resp, err := d.Dial(r.url+wire.WebSocketPath, h)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(wire.MaxRelayMessageSize)
	tb.Cleanup(func() { ws.Close() })
	return &raw{tb: tb, ws: ws}
}

// next reads one message, or the error that ended the connection. It
// skips the relay's prekey pool pushes, which come on their own, and keeps
// its feature, lifetime and envelope status pushes in r.features,
// r.lifetimes and r.statuses.
func (r *raw) next() (uint32, wire.RelayMessage, error) {
	for {
		r.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, data, err := r.ws.ReadMessage()
		if err != nil {
			return 0, nil, err
		}
		req, m, err := wire.DecodeRelay(data)
		if err != nil {
			r.tb.Fatalf("relay sent a malformed message: %v", err)
		}
		switch m := m.(type) {
		case wire.PrekeyPool:
			continue
		case wire.Features:
			r.features = append(r.features, m)
			continue
		case wire.EnvelopeLifetime:
			r.lifetimes = append(r.lifetimes, m)
			continue
		case wire.EnvelopeStatus:
			r.statuses = append(r.statuses, m)
			continue
		}
		return req, m, nil
	}
}

func (r *raw) read() (uint32, wire.RelayMessage) {
	r.tb.Helper()
	req, m, err := r.next()
	if err != nil {
		r.tb.Fatalf("read: %v", err)
	}
	return req, m
}

// reply reads until the reply to req, skipping deliveries.
func (r *raw) reply(req uint32) wire.RelayMessage {
	r.tb.Helper()
	for {
		got, m := r.read()
		if got == req {
			return m
		}
		if _, ok := m.(wire.Deliver); !ok {
			r.tb.Fatalf("waiting for reply %d, got %s for %d", req, m.RelayKind(), got)
		}
	}
}

func (r *raw) send(req uint32, m wire.RelayMessage) {
	r.tb.Helper()
	b, err := wire.EncodeRelay(req, m)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.sendBytes(b)
}

func (r *raw) sendBytes(b []byte) {
	r.tb.Helper()
	r.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := r.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		r.tb.Fatalf("write: %v", err)
	}
}

func (r *raw) challenge() wire.Challenge {
	r.tb.Helper()
	_, m := r.read()
	ch, ok := m.(wire.Challenge)
	if !ok {
		r.tb.Fatalf("first message: got %s, want a challenge", m.RelayKind())
	}
	return ch
}

// signAuth answers ch as d.
func signAuth(ch wire.Challenge, d *device) wire.Auth {
	a := wire.Auth{Address: d.addr.String(), SigningKey: d.id.Public().SigningKey, Expires: ch.Expires}
	copy(a.Signature[:], d.id.Sign(wire.AuthMessage(ch.Nonce, ch.RelayID, a.Address, a.SigningKey, ch.Expires)))
	return a
}

// login authenticates as d and returns the Auth it sent.
func (r *raw) login(d *device) wire.Auth {
	r.tb.Helper()
	a := signAuth(r.challenge(), d)
	r.send(1, a)
	if _, m := r.read(); m.RelayKind() != wire.RelayAuthOK {
		r.tb.Fatalf("auth as %s: got %+v, want auth ok", d.addr, m)
	}
	return a
}

// expectError reads the reply to req and checks it is an Error with code.
func (r *raw) expectError(req uint32, code wire.ErrorCode) wire.Error {
	r.tb.Helper()
	m := r.reply(req)
	e, ok := m.(wire.Error)
	if !ok || e.Code != code {
		r.tb.Fatalf("reply %d: got %+v, want an Error %q", req, m, code)
	}
	return e
}

// expectClose reads until the connection ends and checks the close code
// (0: any end).
func (r *raw) expectClose(code int) {
	r.tb.Helper()
	for {
		_, m, err := r.next()
		if err == nil {
			if _, ok := m.(wire.Deliver); ok {
				continue
			}
			if _, ok := m.(wire.Error); ok {
				continue
			}
			r.tb.Fatalf("expected the connection to close, got %s", m.RelayKind())
		}
		var ce *websocket.CloseError
		if code != 0 && (!errors.As(err, &ce) || ce.Code != code) {
			r.tb.Fatalf("connection ended with %v, want close code %d", err, code)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			r.tb.Fatalf("connection still open after 10s: %v", err)
		}
		return
	}
}
