package relayserver

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// ping writes a ping on c's websocket.
func (r *raw) ping() error {
	return r.ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(10*time.Second))
}

// closedBy reads from c until its connection ends, skipping what the relay
// says last, and fails when it stays open.
func closedBy(t *testing.T, c *raw) {
	t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := c.ws.ReadMessage(); err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection is still open after 10 s")
			}
			return
		}
	}
}

// TestPingsPayAndWaitForAuth (issue 30, finding 6): a ping before
// authentication ends the connection (counted as control_frame among the
// authentication failures); after it, pings pay from the connection's
// buckets and the small control bucket, so a flood gets at most 8 pongs,
// and a connection that keeps sending over its buckets (pings or messages)
// is closed once its refusal allowance is spent, counted as over_budget.
// The attackers dial from 127.0.0.2 to .4; a client from 127.0.0.1 is
// served throughout.
func TestPingsPayAndWaitForAuth(t *testing.T) {
	const refusals = 50
	r := startRelay(t, Config{Limits: Limits{MessageRate: 0.01, MessageBurst: 50, RefusalRate: 0.01, RefusalBurst: refusals}})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")

	// Before authentication: the first ping ends the connection.
	early := dialRawWith(t, r, from("127.0.0.2"), nil)
	early.challenge()
	if err := early.ping(); err != nil {
		t.Fatal(err)
	}
	closedBy(t, early)
	r.waitMetric(t, `parley_relay_auth_failures_total{reason="control_frame"}`, 1)

	// After it: a flood of pings gets the control bucket's pongs, then is
	// refused, then closed.
	c := dialRawWith(t, r, from("127.0.0.3"), nil)
	var pongs atomic.Int64
	c.ws.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	c.login(newDevice(t, "mallory/1"))
	sent := 0
	for ; sent < 10_000; sent++ {
		if c.ping() != nil {
			break // the relay closed the connection under the flood
		}
	}
	closedBy(t, c)
	if n := pongs.Load(); n > controlBurst+1 {
		t.Fatalf("%d pongs for a flood of pings, want at most the control bucket's %d and one refilled", n, controlBurst)
	}
	r.waitMetric(t, `parley_relay_disconnects_total{reason="over_budget"}`, 1)
	if n := r.metric(t, `parley_relay_rate_limited_total{bucket="control"}`); n < refusals || n > refusals+2 {
		t.Fatalf("pings refused by the control bucket: %v, want the refusal allowance %d (the connection ends there)", n, refusals)
	}

	// Messages over the buckets end a connection the same way.
	m := dialRawWith(t, r, from("127.0.0.4"), nil)
	m.login(newDevice(t, "mallory/2"))
	for req := uint32(2); req < 2+50+refusals+10; req++ {
		b, _ := wire.EncodeRelay(req, wire.FetchBundle{Address: "nobody/1"})
		m.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if m.ws.WriteMessage(websocket.BinaryMessage, b) != nil {
			break
		}
	}
	closedBy(t, m)
	r.waitMetric(t, `parley_relay_disconnects_total{reason="over_budget"}`, 2)

	mustSubmit(t, ca, envelope(alice, bob, "hi"))
	if got := payloads(t, receiveN(t, cb, 1)); got[0] != "hi" {
		t.Fatalf("bob received %q", got)
	}
}
