package relayserver

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

func TestIPKey(t *testing.T) {
	tests := []struct {
		in   string
		bits int
		want string
	}{
		{"192.0.2.7", 64, "192.0.2.7"},
		{"::ffff:192.0.2.7", 64, "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6"},
		{"::1", 64, "::/64"},
	}
	for _, tt := range tests {
		if got := ipKey(netip.MustParseAddr(tt.in), tt.bits); got != tt.want {
			t.Errorf("ipKey(%s, %d) = %s, want %s", tt.in, tt.bits, got, tt.want)
		}
	}
}

// TestIPv6PrefixSharesALimit (finding 5): behind a trusted proxy
// (127.0.0.2), ten websockets forwarded for ten addresses of one /64 share
// that /64's cap of 4 (they used to be ten "IPs"); another /64 through the
// same proxy and a client from 127.0.0.1 still connect, register, send and
// receive.
func TestIPv6PrefixSharesALimit(t *testing.T) {
	r := startRelay(t, Config{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Limits:         Limits{MaxConnectionsPerIP: 4, MaxUnauthenticatedPerIP: 4},
	})
	viaProxy := func(forwarded string) (*websocket.Conn, error) {
		h := http.Header{"X-Forwarded-For": {forwarded}}
		ws, resp, err := from("127.0.0.2").Dial(r.url+wire.WebSocketPath, h)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err == nil {
			t.Cleanup(func() { ws.Close() })
		}
		return ws, err
	}
	admitted := 0
	for i := range 10 {
		if _, err := viaProxy(fmt.Sprintf("2001:db8:1:2::%x", i+1)); err == nil {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("one /64 got %d websockets, want its 4", admitted)
	}
	if n := r.metric(t, `parley_relay_limited_total{limit="ip_connections"}`); n != 6 {
		t.Fatalf("ip_connections refusals: %v, want 6", n)
	}
	// Another /64, through the same proxy.
	carol, bob := newDevice(t, "carol/1"), newDevice(t, "bob/1")
	cb := mustDialFrom(t, r, bob, "127.0.0.1")
	ws, err := viaProxy("2001:db8:9::1")
	if err != nil {
		t.Fatalf("another /64: %v", err)
	}
	c := &raw{tb: t, ws: ws}
	c.login(carol)
	e := envelope(carol, bob, "from another network")
	b, _ := wire.EncodeEnvelope(e)
	c.send(5, wire.Submit{Envelope: b})
	if m, ok := c.reply(5).(wire.Accepted); !ok {
		t.Fatalf("submit from another /64: %v", m)
	}
	// And a client from 127.0.0.1.
	alice := newDevice(t, "alice/1")
	ca := mustDialFrom(t, r, alice, "127.0.0.1")
	mustSubmit(t, ca, envelope(alice, bob, "hi"))
	if got := receiveN(t, cb, 2); len(got) != 2 {
		t.Fatalf("bob got %d", len(got))
	}
}
