package relayserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The abuse tests: one hostile client (or IP) tries to hurt the relay or
// its other users, and each shows the victim unharmed. Another IP is
// played from 127.0.0.2, which is loopback too on Linux.

// from returns a websocket dialer whose connections come from ip.
func from(ip string) *websocket.Dialer {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &websocket.Dialer{NetDialContext: d.DialContext, HandshakeTimeout: 5 * time.Second}
}

// dialFrom dials the relay as d from ip.
func dialFrom(tb testing.TB, r *testRelay, d *device, ip string) (*transport.Conn, error) {
	tb.Helper()
	opts := fastClient
	opts.Dialer = from(ip)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, r.url, d.addr, d.id, opts)
	if err == nil {
		tb.Cleanup(func() { c.Close() })
	}
	return c, err
}

func mustDialFrom(tb testing.TB, r *testRelay, d *device, ip string) *transport.Conn {
	tb.Helper()
	c, err := dialFrom(tb, r, d, ip)
	if err != nil {
		tb.Fatalf("Dial as %s from %s: %v", d.addr, ip, err)
	}
	return c
}

// TestIPQuotaLeavesOthersRoom: one IP registers addresses and floods them
// until the relay holds its share for that IP; the relay then refuses it
// (storage full, counted as ip_share), and a client from another IP still gets its envelopes
// stored. (Before the quota, one client could make the relay hold a
// gigabyte.)
func TestIPQuotaLeavesOthersRoom(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{Limits: relaystore.Limits{IPBytes: 64 << 10}, MessageRate: -1, ByteRate: -1}})
	var sinks []*device
	for i := range 4 {
		d := newDevice(t, fmt.Sprintf("sink%d/1", i))
		mustDialFrom(t, r, d, "127.0.0.1")
		sinks = append(sinks, d)
	}
	mallory := newDevice(t, "mallory/1")
	cm := mustDialFrom(t, r, mallory, "127.0.0.1")
	junk := strings.Repeat("x", 4000)
	stored := 0
	var refusal error
	for i := 0; i < 100 && refusal == nil; i++ {
		refusal = cm.Submit(ctxT(t), envelope(mallory, sinks[i%len(sinks)], junk))
		if refusal == nil {
			stored++
		}
	}
	var re *transport.RefusedError
	if !errors.As(refusal, &re) || re.Reason != wire.RefuseStoreFull {
		t.Fatalf("after %d envelopes: %v, want refused: relay storage full", stored, refusal)
	}
	if stored < 10 || stored > 17 {
		t.Fatalf("one IP got %d envelopes of 4 kB stored under a 64 KiB quota", stored)
	}
	if got := r.metric(t, `parley_relay_limited_total{limit="ip_share"}`); got != 1 {
		t.Fatalf("ip_share = %v, want 1", got)
	}
	if got := r.metric(t, `parley_relay_limited_total{limit="store_full"}`); got != 0 {
		t.Fatalf("store_full = %v, want 0: the relay as a whole has room", got)
	}
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca := mustDialFrom(t, r, alice, "127.0.0.2")
	cb := mustDialFrom(t, r, bob, "127.0.0.2")
	mustSubmit(t, ca, envelope(alice, bob, junk))
	if got := payloads(t, receiveN(t, cb, 1)); got[0] != junk {
		t.Fatal("bob got something else")
	}
}

// TestRegistrationsPerIP: one IP registers its burst of new addresses and is
// refused the next; another IP registers as usual, and an address the IP
// already registered still authenticates.
func TestRegistrationsPerIP(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{RegistrationBurst: 3, RegistrationRate: 3.0 / 3600}})
	var first *device
	for i := range 3 {
		d := newDevice(t, fmt.Sprintf("new%d/1", i))
		c := mustDialFrom(t, r, d, "127.0.0.1")
		if first == nil {
			first = d
			c.Close()
		}
	}
	_, err := dialFrom(t, r, newDevice(t, "new3/1"), "127.0.0.1")
	var se *transport.ServerError
	if !errors.As(err, &se) || se.Code != wire.ErrorRateLimited {
		t.Fatalf("a fourth new address from one IP: %v, want rate limited", err)
	}
	if got := r.metric(t, `parley_relay_limited_total{limit="ip_registrations_hour"}`); got < 1 {
		t.Fatalf("ip_registrations_hour = %v, want at least 1", got)
	}
	mustDialFrom(t, r, first, "127.0.0.1")                  // an address it owns: no new registration
	mustDialFrom(t, r, newDevice(t, "else/1"), "127.0.0.2") // another IP
}

// TestConnectionSlotsPerIP: one IP holds every handshake slot it may, and
// opens more as the relay refuses them; a client from another IP still
// connects. The same with authenticated connections, and with connections
// of one address.
func TestConnectionSlotsPerIP(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{MaxUnauthenticatedPerIP: 4, MaxConnectionsPerIP: 6, MaxConnectionsPerAddress: 2,
		AuthTimeout: 30 * time.Second, MaxUnauthenticated: 8}})
	var held []*websocket.Conn
	open := func(ip string) (*websocket.Conn, int) {
		ws, resp, err := from(ip).Dial(r.url+wire.WebSocketPath, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			if resp != nil {
				return nil, resp.StatusCode
			}
			t.Fatalf("dial from %s: %v", ip, err)
		}
		held = append(held, ws)
		return ws, http.StatusSwitchingProtocols
	}
	defer func() {
		for _, ws := range held {
			ws.Close()
		}
	}()
	for i := range 4 {
		if _, code := open("127.0.0.1"); code != http.StatusSwitchingProtocols {
			t.Fatalf("handshake %d: HTTP %d", i, code)
		}
	}
	for range 3 {
		if _, code := open("127.0.0.1"); code != http.StatusTooManyRequests {
			t.Fatalf("a fifth handshake in flight from one IP: HTTP %d, want 429", code)
		}
	}
	// The relay's global handshake cap (8) is not reached by one IP, so
	// another IP gets in.
	mustDialFrom(t, r, newDevice(t, "alice/1"), "127.0.0.2")
	if got := r.metric(t, `parley_relay_limited_total{limit="ip_handshakes"}`); got != 3 {
		t.Fatalf("ip_handshakes = %v, want 3", got)
	}

	// Two authenticated connections of one address fit; a third is
	// refused, and other addresses connect.
	carol := newDevice(t, "carol/1")
	mustDialFrom(t, r, carol, "127.0.0.3")
	mustDialFrom(t, r, carol, "127.0.0.3")
	_, err := dialFrom(t, r, carol, "127.0.0.3")
	var se *transport.ServerError
	if !errors.As(err, &se) || se.Code != wire.ErrorRateLimited {
		t.Fatalf("a third connection of one address: %v, want rate limited", err)
	}
	mustDialFrom(t, r, newDevice(t, "dave/1"), "127.0.0.3")
}

// TestOneTimePreKeyDrain: a burst of fresh identities fetches a victim's
// bundle; at most the target's burst of one-time prekeys goes out, the rest
// of the fetches get the bundle without one, and the victim is told its
// pool runs low.
func TestOneTimePreKeyDrain(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{TargetOneTimeBurst: 20, PrekeyPoolLow: 85, RegistrationBurst: 1000, Limits: relaystore.Limits{RegistrationsPerIP: 1000}}})
	victim := newDevice(t, "victim/1").withBundle(t, 100)
	cv := dial(t, r, victim)
	if err := cv.PublishPreKeys(ctxT(t), victim.bundle, victim.oneTime); err != nil {
		t.Fatal(err)
	}
	waitPool(t, cv, 100)
	handed := 0
	for i := range 60 {
		c := dial(t, r, newDevice(t, fmt.Sprintf("drainer%d/1", i)))
		b, err := c.FetchBundle(ctxT(t), victim.addr)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if b.OneTimePreKey != nil {
			handed++
		}
		c.Close()
	}
	if handed != 20 {
		t.Fatalf("%d one-time prekeys went to 60 fresh identities, want the burst of 20", handed)
	}
	if got := r.metric(t, `parley_relay_limited_total{limit="one_time_prekeys_of_target"}`); got != 40 {
		t.Fatalf("one_time_prekeys_of_target = %v, want 40", got)
	}
	waitPool(t, cv, 80)
}

// waitPool waits until the relay told c its pool holds n.
func waitPool(t *testing.T, c *transport.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, ok := c.OneTimePreKeyPool(); ok && got == n {
			return
		}
		if time.Now().After(deadline) {
			got, ok := c.OneTimePreKeyPool()
			t.Fatalf("pool told %d (known %v), want %d", got, ok, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSenderShareOfAMailbox: one sender fills its share of bob's mailbox and
// is refused; alice's next message to bob is still accepted.
func TestSenderShareOfAMailbox(t *testing.T) {
	// The room for strangers as large as the mailbox, so that the sender's
	// share alone bites (room_test.go tests the room).
	r := startRelay(t, Config{Limits: Limits{Limits: relaystore.Limits{MailboxEnvelopes: 100, StrangerEnvelopes: 100, StrangerIPEnvelopes: 100},
		MessageRate: -1, ByteRate: -1}})
	alice, bob, mallory := newDevice(t, "alice/1"), newDevice(t, "bob/1"), newDevice(t, "mallory/1")
	ca, cm := dial(t, r, alice), dial(t, r, mallory)
	dial(t, r, bob)
	var err error
	n := 0
	for ; n < 100; n++ {
		if err = cm.Submit(ctxT(t), envelope(mallory, bob, "junk")); err != nil {
			break
		}
	}
	var re *transport.RefusedError
	if !errors.As(err, &re) || re.Reason != wire.RefuseSenderQuota || n != 25 {
		t.Fatalf("mallory stored %d, then %v; want 25 (a quarter) and refused: sender's share", n, err)
	}
	mustSubmit(t, ca, envelope(alice, bob, "still room for alice"))
	if got := r.metric(t, `parley_relay_envelopes_refused_total{reason="sender_share"}`); got != 1 {
		t.Fatalf("sender_share refusals = %v, want 1", got)
	}
}

// TestTrustedProxy: behind a trusted proxy the client IP is the last
// untrusted hop of X-Forwarded-For; from anywhere else the header is
// ignored.
func TestTrustedProxy(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tt := range []struct {
		remote, xff, want string
	}{
		{"203.0.113.5:4000", "198.51.100.1", "203.0.113.5"},
		{"10.1.2.3:4000", "198.51.100.1", "198.51.100.1"},
		{"10.1.2.3:4000", "1.2.3.4, 198.51.100.1, 10.9.9.9", "198.51.100.1"},
		{"10.1.2.3:4000", "", "10.1.2.3"},
		{"10.1.2.3:4000", "garbage", "10.1.2.3"},
		{"[::ffff:203.0.113.5]:4000", "", "203.0.113.5"},
	} {
		r := &http.Request{RemoteAddr: tt.remote, Header: http.Header{}}
		if tt.xff != "" {
			r.Header.Set("X-Forwarded-For", tt.xff)
		}
		if got := clientIP(r, trusted); got != tt.want {
			t.Errorf("remote %s, X-Forwarded-For %q: got %s, want %s", tt.remote, tt.xff, got, tt.want)
		}
	}
}
