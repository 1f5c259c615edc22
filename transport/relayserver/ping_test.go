package relayserver

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// TestPingsPayAndWaitForAuth (finding 6): from 127.0.0.2, pings before
// authentication get no pong; after it, they pay from the connection's
// message bucket (50 here, refilled at one in 100 s), so 200 pings get at
// most 51 pongs and the rest are counted as rate limited. A client from
// 127.0.0.1 is served meanwhile.
func TestPingsPayAndWaitForAuth(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{MessageRate: 0.01, MessageBurst: 50}})
	c := dialRawWith(t, r, from("127.0.0.2"), nil)
	var pongs atomic.Int64
	c.ws.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	ping := func() {
		if err := c.ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	ch := c.challenge()
	for range 20 {
		ping()
	}
	// The pings were read before the Auth: the AuthOK comes after any pong.
	mallory := newDevice(t, "mallory/1")
	c.send(1, signAuth(ch, mallory))
	if _, m := c.read(); m.RelayKind() != wire.RelayAuthOK {
		t.Fatalf("auth: %v", m)
	}
	if n := pongs.Load(); n != 0 {
		t.Fatalf("%d pongs before authentication, want none", n)
	}
	for range 200 {
		ping()
	}
	// A request after the pings: its reply comes after every pong.
	c.send(2, wire.FetchBundle{Address: "nobody/1"})
	c.reply(2)
	if n := pongs.Load(); n > 51 {
		t.Fatalf("%d pongs for 200 pings, want at most the bucket's 50 and one refilled", n)
	}
	if n := r.metric(t, `parley_relay_rate_limited_total{bucket="messages"}`); n < 149 {
		t.Fatalf("rate-limited control frames: %v, want at least 149", n)
	}
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
	mustSubmit(t, ca, envelope(alice, bob, "hi"))
	receiveN(t, cb, 1)
}
