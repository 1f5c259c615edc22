package relayserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// TestAddressTaken checks first-key-wins registration, and the takeover
// AllowReregister permits.
func TestAddressTaken(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		r := startRelay(t, Config{})
		bob := newDevice(t, "bob/1")
		dial(t, r, bob).Close()
		impostor := newDevice(t, "bob/1")
		_, err := transport.Dial(ctxT(t), r.url, impostor.addr, impostor.id, fastClient)
		var se *transport.ServerError
		if !errors.As(err, &se) || se.Code != wire.ErrorAddressTaken || se.Message != "bob/1 is registered to another identity" {
			t.Fatalf("another key for bob/1: got %v, want address taken", err)
		}
		if got := r.metric(t, `parley_relay_auth_failures_total{reason="address_taken"}`); got != 1 {
			t.Fatalf("auth failures (address taken) = %v, want 1", got)
		}
		dial(t, r, bob) // the owner still gets in
	})
	t.Run("reregister", func(t *testing.T) {
		r := startRelay(t, Config{AllowReregister: true})
		alice := newDevice(t, "alice/1")
		old := newDevice(t, "bob/1").withBundle(t, 3)
		ca, cold := dial(t, r, alice), dial(t, r, old)
		if err := cold.PublishPreKeys(ctxT(t), old.bundle, old.oneTime); err != nil {
			t.Fatal(err)
		}
		reinstall := newDevice(t, "bob/1")
		dial(t, r, reinstall)
		// The old key's connection is closed, and it may not come back.
		st := waitFinal(t, cold)
		var se *transport.ServerError
		if !errors.As(st.Err, &se) || (se.Code != wire.ErrorAddressTaken && se.Code != wire.ErrorAuthFailed) {
			t.Fatalf("old key after reregistration: %v", st.Err)
		}
		// The old bundle is gone with the old key.
		if _, err := ca.FetchBundle(ctxT(t), old.addr); !errors.As(err, &se) || se.Code != wire.ErrorNotFound {
			t.Fatalf("old bundle after reregistration: got %v, want not found", err)
		}
	})
}

func waitFinal(t *testing.T, c *transport.Conn) transport.State {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if st := c.State(); st.Final {
			return st
		}
		select {
		case <-c.States():
		case <-timeout:
			t.Fatalf("client never gave up: %+v", c.State())
		}
	}
}

// TestAuthRefused checks every way an Auth is refused: each gets an Error and
// a closed connection.
func TestAuthRefused(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	r := startRelay(t, Config{Now: now})
	alice := newDevice(t, "alice/1")

	// An Auth captured on one connection.
	first := dialRaw(t, r)
	captured := first.login(alice)

	tests := []struct {
		name   string
		auth   func(ch wire.Challenge) wire.Auth
		before func()
		code   wire.ErrorCode
		metric string
	}{
		{"replayed on another connection", func(wire.Challenge) wire.Auth { return captured }, nil, wire.ErrorAuthFailed, "bad_signature"},
		{"replayed with this expiry", func(ch wire.Challenge) wire.Auth {
			a := captured
			a.Expires = ch.Expires
			return a
		}, nil, wire.ErrorAuthFailed, "bad_signature"},
		{"bad signature", func(ch wire.Challenge) wire.Auth {
			a := signAuth(ch, alice)
			a.Signature[5] ^= 1
			return a
		}, nil, wire.ErrorAuthFailed, "bad_signature"},
		{"another relay's challenge", func(ch wire.Challenge) wire.Auth {
			ch.RelayID[0] ^= 1
			return signAuth(ch, alice)
		}, nil, wire.ErrorAuthFailed, "bad_signature"},
		{"expired", func(ch wire.Challenge) wire.Auth { return signAuth(ch, alice) },
			func() { offset.Store(int64(2 * DefaultChallengeLifetime)) }, wire.ErrorExpired, "expired"},
		{"malformed address", func(ch wire.Challenge) wire.Auth {
			d := *alice
			d.addr = engine.Address{User: "Alice", Device: 1}
			return signAuth(ch, &d)
		}, nil, wire.ErrorBadRequest, "malformed"},
		{"non-canonical address", func(ch wire.Challenge) wire.Auth {
			a := signAuth(ch, alice)
			a.Address = "alice/01"
			return a
		}, nil, wire.ErrorBadRequest, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offset.Store(0)
			series := fmt.Sprintf(`parley_relay_auth_failures_total{reason=%q}`, tt.metric)
			before := r.metric(t, series)
			c := dialRaw(t, r)
			ch := c.challenge()
			if tt.before != nil {
				tt.before()
			}
			c.send(7, tt.auth(ch))
			e := c.expectError(7, tt.code)
			t.Logf("refused: %q", e.Message)
			c.expectClose(websocket.ClosePolicyViolation)
			if got := r.metric(t, series); got != before+1 {
				t.Fatalf("%s = %v, want %v", series, got, before+1)
			}
		})
	}
	offset.Store(0)

	// The nonce is spent: a second Auth on the authenticated connection is
	// refused, and the connection closed.
	first.send(2, captured)
	first.expectError(2, wire.ErrorAuthFailed)
	first.expectClose(websocket.ClosePolicyViolation)

	// Anything but an Auth first is refused.
	c := dialRaw(t, r)
	c.challenge()
	c.send(3, wire.Submit{Envelope: []byte{1}})
	if m := c.reply(3); m.(wire.Refused).Reason != wire.RefuseNotAuthenticated {
		t.Fatalf("submit before auth: got %+v", m)
	}
	c.expectClose(websocket.ClosePolicyViolation)
}

// TestAuthTimeout checks that a connection that never authenticates is
// closed, and that the cap on such connections holds meanwhile.
func TestAuthTimeout(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{AuthTimeout: time.Second, MaxUnauthenticated: 1}})
	idle := dialRaw(t, r)
	idle.challenge()
	// A second unauthenticated connection is over the cap.
	_, resp, err := websocket.DefaultDialer.Dial(r.url+wire.WebSocketPath, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second unauthenticated connection: got %v, want 503", err)
	}
	resp.Body.Close()
	if got := r.metric(t, `parley_relay_limited_total{limit="handshakes"}`); got != 1 {
		t.Fatalf("handshakes limited = %v, want 1", got)
	}
	idle.expectClose(websocket.ClosePolicyViolation)
	r.waitMetric(t, `parley_relay_auth_failures_total{reason="timeout"}`, 1)
	// The slot is free again once the relay let go of the socket.
	idle.ws.Close()
	r.waitMetricAtMost(t, `parley_relay_connections{state="unauthenticated"}`, 0)
	dial(t, r, newDevice(t, "alice/1"))
}

func TestMaxConnections(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{MaxConnections: 2}})
	dial(t, r, newDevice(t, "alice/1"))
	dial(t, r, newDevice(t, "bob/1"))
	d := newDevice(t, "carol/1")
	_, err := transport.Dial(ctxT(t), r.url, d.addr, d.id, fastClient)
	if err == nil {
		t.Fatal("third connection accepted over a cap of 2")
	}
	t.Logf("refused: %v", err)
	if got := r.metric(t, `parley_relay_limited_total{limit="connections"}`); got < 1 {
		t.Fatalf("connections limited = %v, want at least 1", got)
	}
}

// TestOrigin checks that a request with a browser Origin is refused.
func TestOrigin(t *testing.T) {
	r := startRelay(t, Config{})
	for _, origin := range []string{"http://evil.example", "null"} {
		_, resp, err := websocket.DefaultDialer.Dial(r.url+wire.WebSocketPath, http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("Origin %q: got %v, want 403", origin, err)
		}
		resp.Body.Close()
	}
	c := dialRawWith(t, r, &websocket.Dialer{}, http.Header{"Origin": {""}})
	c.challenge()
}

// TestAckOthersRows checks that acknowledging another address's rows, by
// guessing them, has no effect and looks like any acknowledgement.
func TestAckOthersRows(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob, eve := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "eve/1")
	ca, cb, ce := dial(t, r, alice), dial(t, r, bob), dial(t, r, eve)
	for i := range 3 {
		mustSubmit(t, ca, envelope(alice, bob, fmt.Sprint(i)))
	}
	rows := rowsOf(receiveN(t, cb, 3))
	// Eve knows bob's real rows (the worst case) and guesses around them.
	guess := append([]uint64{}, rows...)
	for i := range uint64(50) {
		guess = append(guess, rows[0]-25+i)
	}
	if err := ce.Release(ctxT(t), guess); err != nil {
		t.Fatalf("eve's acknowledgement: got %v, want the same Done as any", err)
	}
	if got := r.metric(t, "parley_relay_envelopes_acknowledged_total"); got != 0 {
		t.Fatalf("rows deleted by eve: %v", got)
	}
	cb.Close()
	cb = dial(t, r, bob)
	if again := rowsOf(receiveN(t, cb, 3)); fmt.Sprint(again) != fmt.Sprint(rows) {
		t.Fatalf("bob's rows after eve's acknowledgement: %v, want %v", again, rows)
	}
}

// TestSubmitRefused checks each refusal reason a client can provoke.
func TestSubmitRefused(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{MaxEnvelopeSize: 1000, Limits: relaystore.Limits{MailboxEnvelopes: 3, SenderEnvelopes: 3,
		StrangerEnvelopes: 3, StrangerIPEnvelopes: 3}}}) // the mailbox's limit, not the room for strangers
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	nobody := newDevice(t, "nobody/1")

	refused := func(t *testing.T, err error, want wire.RefuseReason) {
		t.Helper()
		var re *transport.RefusedError
		if !errors.As(err, &re) || re.Reason != want {
			t.Fatalf("got %v, want refused: %s", err, want)
		}
	}
	t.Run("forged sender", func(t *testing.T) {
		refused(t, ca.Submit(ctxT(t), envelope(bob, alice, "from bob, honest")), wire.RefuseWrongSender)
	})
	t.Run("unknown recipient", func(t *testing.T) {
		refused(t, ca.Submit(ctxT(t), envelope(alice, nobody, "hello?")), wire.RefuseUnknownRecipient)
	})
	t.Run("too large", func(t *testing.T) {
		refused(t, ca.Submit(ctxT(t), envelope(alice, bob, string(make([]byte, 1000)))), wire.RefuseTooLarge)
	})
	t.Run("malformed", func(t *testing.T) {
		c := dialRaw(t, r)
		c.login(newDevice(t, "mallory/1"))
		c.send(9, wire.Submit{Envelope: []byte("not an envelope at all")})
		if m := c.reply(9); m.(wire.Refused).Reason != wire.RefuseMalformed {
			t.Fatalf("got %+v, want refused: malformed", m)
		}
	})
	t.Run("mailbox full", func(t *testing.T) {
		for i := range 3 {
			mustSubmit(t, ca, envelope(alice, bob, fmt.Sprint(i)))
		}
		refused(t, ca.Submit(ctxT(t), envelope(alice, bob, "fourth")), wire.RefuseMailboxFull)
		got := receiveN(t, cb, 3)
		if err := cb.Release(ctxT(t), rowsOf(got[:1])); err != nil {
			t.Fatal(err)
		}
		mustSubmit(t, ca, envelope(alice, bob, "room again"))
		if got := r.metric(t, `parley_relay_envelopes_refused_total{reason="mailbox_full"}`); got != 1 {
			t.Fatalf("mailbox_full refusals = %v, want 1", got)
		}
	})
}

// TestPublishRefused checks that a device publishes only its own, valid
// bundle.
func TestPublishRefused(t *testing.T) {
	r := startRelay(t, Config{})
	alice := newDevice(t, "alice/1").withBundle(t, 1)
	bob := newDevice(t, "bob/1").withBundle(t, 1)
	ca := dial(t, r, alice)
	tampered := alice.bundle
	tampered.SignedPreKey.PublicKey[0] ^= 1
	tests := []struct {
		name   string
		bundle wire.Bundle
		code   wire.ErrorCode
	}{
		{"another address's bundle", bob.bundle, wire.ErrorBadRequest},
		{"tampered signed prekey", tampered, wire.ErrorBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ca.PublishPreKeys(ctxT(t), tt.bundle, nil)
			var se *transport.ServerError
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
		})
	}
	t.Run("another key under the address", func(t *testing.T) {
		b := bob.bundle
		b.Address = alice.addr.String()
		err := ca.PublishPreKeys(ctxT(t), b, nil)
		var se *transport.ServerError
		if !errors.As(err, &se) || se.Code != wire.ErrorAuthFailed {
			t.Fatalf("got %v, want authentication failed", err)
		}
	})
}

// TestOversizedFrame checks that a frame over the read limit closes the
// connection with 1009 and leaves others alone.
func TestOversizedFrame(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	c := dialRaw(t, r)
	c.login(newDevice(t, "mallory/1"))
	c.ws.WriteMessage(websocket.BinaryMessage, make([]byte, wire.MaxRelayMessageSize+1))
	c.expectClose(websocket.CloseMessageTooBig)
	r.waitMetric(t, `parley_relay_disconnects_total{reason="frame_too_large"}`, 1)

	// Before authentication too.
	c = dialRaw(t, r)
	c.challenge()
	c.ws.WriteMessage(websocket.BinaryMessage, make([]byte, wire.MaxRelayMessageSize+1))
	c.expectClose(websocket.CloseMessageTooBig)

	// The largest frame is fine.
	mustSubmit(t, ca, envelope(alice, bob, string(make([]byte, wire.MaxPayloadSize))))
	if got := receiveN(t, cb, 1); len(got[0].Envelope) > wire.MaxEnvelopeSize {
		t.Fatal("envelope over the maximum")
	}
}

// TestSlowReader checks that a client that does not read is disconnected,
// whether its writer times out or its queue of replies fills, while other
// clients go on.
func TestSlowReader(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		flood  bool // send requests without reading the replies
		reason dropReason
	}{
		{"write deadline", Limits{WriteTimeout: 300 * time.Millisecond}, false, dropWrite},
		{"queue full", Limits{WriteTimeout: 20 * time.Second, SendQueue: 8}, true, dropSlow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// alice is a stranger to sink: her 9.6 MB would pass one IP's
			// share of the room for strangers, which this test is not about.
			lim := tt.limits
			lim.StrangerBytes, lim.StrangerIPBytes = relaystore.DefaultMailboxBytes, relaystore.DefaultMailboxBytes
			r := startRelay(t, Config{Limits: lim})
			alice, bob, sink := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "sink/1")
			ca, cb := dial(t, r, alice), dial(t, r, bob)
			// Register sink, then fill its mailbox with more than the socket
			// buffers hold.
			dial(t, r, sink).Close()
			for i := range 48 {
				mustSubmit(t, ca, envelope(alice, sink, fmt.Sprintf("%0200000d", i)))
			}
			// sink connects with a small receive buffer and never reads.
			d := &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err == nil {
					conn.(*net.TCPConn).SetReadBuffer(4096)
				}
				return conn, err
			}}
			c := dialRawWith(t, r, d, nil)
			c.login(sink)
			if tt.flood {
				for i := range 64 {
					c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if err := c.ws.WriteMessage(websocket.BinaryMessage, mustEncode(t, uint32(10+i), wire.FetchBundle{Address: "bob/1"})); err != nil {
						break // disconnected already
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			// Meanwhile alice and bob talk.
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					if err := ca.Submit(context.Background(), envelope(alice, bob, fmt.Sprint(i))); err != nil {
						t.Errorf("alice's submit while sink stalls: %v", err)
					}
				}
			}()
			got := receiveN(t, cb, 5)
			wg.Wait()
			if err := cb.Release(ctxT(t), rowsOf(got)); err != nil {
				t.Fatal(err)
			}
			r.waitMetric(t, fmt.Sprintf(`parley_relay_disconnects_total{reason=%q}`, tt.reason), 1)
		})
	}
}

func mustEncode(tb testing.TB, req uint32, m wire.RelayMessage) []byte {
	tb.Helper()
	b, err := wire.EncodeRelay(req, m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestRateLimit checks that a flood beyond the per-connection rate is
// refused while another client is unaffected, and that bundle fetches have
// their own, tighter bucket.
func TestRateLimit(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{MessageRate: 5, MessageBurst: 20, FetchRate: 1, FetchBurst: 3}})
	alice, bob, flood := newDevice(t, "alice/1"), newDevice(t, "bob/1").withBundle(t, 0), newDevice(t, "flood/1")
	ca, cb, cf := dial(t, r, alice), dial(t, r, bob), dial(t, r, flood)
	if err := cb.PublishPreKeys(ctxT(t), bob.bundle, nil); err != nil {
		t.Fatal(err)
	}

	var limited, accepted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				err := cf.Submit(context.Background(), envelope(flood, bob, "spam"))
				var re *transport.RefusedError
				switch {
				case err == nil:
					accepted.Add(1)
				case errors.As(err, &re) && re.Reason == wire.RefuseRateLimited:
					limited.Add(1)
				default:
					t.Errorf("flood: %v", err)
				}
			}
		}()
	}
	// Alice is not slowed by the flood.
	for i := range 10 {
		mustSubmit(t, ca, envelope(alice, bob, fmt.Sprint(i)))
	}
	wg.Wait()
	t.Logf("flood: %d accepted, %d rate limited", accepted.Load(), limited.Load())
	if limited.Load() < 50 {
		t.Fatalf("only %d of 100 flooded envelopes were rate limited", limited.Load())
	}

	var se *transport.ServerError
	for i := range 4 {
		_, err := ca.FetchBundle(ctxT(t), bob.addr)
		switch {
		case i < 3 && err != nil:
			t.Fatalf("fetch %d: %v", i, err)
		case i == 3 && (!errors.As(err, &se) || se.Code != wire.ErrorRateLimited):
			t.Fatalf("fourth fetch in a burst of 3: got %v, want rate limited", err)
		}
	}
}

// TestShutdownClosesClients checks that Shutdown closes websockets with 1001
// and waits for their handlers.
func TestShutdownClosesClients(t *testing.T) {
	r := startRelay(t, Config{})
	c := dialRaw(t, r)
	c.login(newDevice(t, "alice/1"))
	idle := dialRaw(t, r)
	idle.challenge()
	// Read while the relay shuts down, as a client would.
	ended := func(ws *websocket.Conn) <-chan error {
		ch := make(chan error, 1)
		go func() {
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					ws.Close()
					ch <- err
					return
				}
			}
		}()
		return ch
	}
	authed, unauthed := ended(c.ws), ended(idle.ws)
	r.stop()
	var ce *websocket.CloseError
	if err := <-authed; !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("authenticated connection ended with %v, want close 1001", err)
	}
	if err := <-unauthed; err == nil {
		t.Fatal("unauthenticated connection still open")
	}
	if err := r.srv.Serve(mustListen(t)); err == nil {
		t.Fatal("Serve after Shutdown succeeded")
	}
}

func mustListen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
