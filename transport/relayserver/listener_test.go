package relayserver

import (
	"bufio"
	"net"
	"net/http"
	"net/netip"
	"os"
	"testing"
	"time"
)

// fullSize reports whether the abuse tests run at full size (make abuse,
// PARLEY_ABUSE_FULL=1) rather than with the scaled limits of CI.
func fullSize() bool { return os.Getenv("PARLEY_ABUSE_FULL") != "" }

// holdHealthz opens a TCP connection from ip, asks GET /healthz on it with
// keep-alive, and reports whether the relay answered (the connection then
// stays open until the relay's idle timeout closes it) or closed it at
// once.
func holdHealthz(t *testing.T, r *testRelay, ip string) (net.Conn, bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", r.addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n")); err != nil {
		c.Close() // refused: keep no descriptor for it
		return c, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return c, false
	}
	resp.Body.Close()
	return c, resp.StatusCode == http.StatusOK
}

// TestPlainConnectionsCounted (finding 2): 200 keep-alive GET /healthz
// connections from 127.0.0.2 against a relay that holds 256 sockets, 64
// per IP: the IP holds 64 and the rest are closed at accept (counted as
// ip_sockets); a client from 127.0.0.1 registers, sends and receives. (The
// idle timeout is long here, so that none of the 64 ends while the others
// are tried; TestIdlePlainConnectionsEnd tries it.)
func TestPlainConnectionsCounted(t *testing.T) {
	lim, tries := Limits{MaxSockets: 256, MaxSocketsPerIP: 64, HTTPIdleTimeout: 10 * time.Minute}, 200
	if fullSize() {
		// make abuse: the default caps (17,408 in all, 80 per IP) against
		// the 19,990 connections of the finding.
		lim, tries = Limits{MaxSocketsPerIP: 64, HTTPIdleTimeout: 10 * time.Minute}, 19990
	}
	r := startRelay(t, Config{Limits: lim})
	answered := 0
	for range tries {
		if _, ok := holdHealthz(t, r, "127.0.0.2"); ok {
			answered++
		}
	}
	if answered != 64 {
		t.Fatalf("127.0.0.2 got %d answers on 200 connections, want its 64", answered)
	}
	if n := r.metric(t, `parley_relay_limited_total{limit="ip_sockets"}`); n != float64(tries-64) {
		t.Fatalf("ip_sockets refusals: %v, want %d", n, tries-64)
	}
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
	e := envelope(alice, bob, "through the crowd")
	mustSubmit(t, ca, e)
	if got := payloads(t, receiveN(t, cb, 1)); got[0] != "through the crowd" {
		t.Fatalf("bob got %q", got)
	}
	// Each scrape may hold a kept-alive connection of its own (the idle
	// timeout is long), and this test scrapes twice.
	if n := r.metric(t, "parley_relay_sockets"); n > 64+2+2 {
		t.Fatalf("%v sockets open, want at most 127.0.0.2's 64, the two clients' and the two scrapes'", n)
	}
}

// TestIdlePlainConnectionsEnd (finding 2): kept-alive plain connections
// end at the idle timeout, and give their slots back.
func TestIdlePlainConnectionsEnd(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{MaxSocketsPerIP: 10, HTTPIdleTimeout: 200 * time.Millisecond}})
	for range 10 {
		if _, ok := holdHealthz(t, r, "127.0.0.2"); !ok {
			t.Fatal("a connection within the cap was refused")
		}
	}
	// Only the scrape's own is left once they idled out.
	r.waitMetricAtMost(t, "parley_relay_sockets", 1)
	if _, ok := holdHealthz(t, r, "127.0.0.2"); !ok {
		t.Fatal("the slots were not given back")
	}
}

// TestProxyConnectionsNotPerIP (finding 2): a trusted proxy's connections
// count in all but not against its own IP (every client behind it has that
// IP): ten from the proxy at 127.0.0.2 pass a per-IP cap of 4, while a
// direct peer at 127.0.0.3 is held to it.
func TestProxyConnectionsNotPerIP(t *testing.T) {
	r := startRelay(t, Config{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Limits:         Limits{MaxSocketsPerIP: 4, HTTPIdleTimeout: 10 * time.Minute},
	})
	proxied, direct := 0, 0
	for range 10 {
		if _, ok := holdHealthz(t, r, "127.0.0.2"); ok {
			proxied++
		}
		if _, ok := holdHealthz(t, r, "127.0.0.3"); ok {
			direct++
		}
	}
	if proxied != 10 || direct != 4 {
		t.Fatalf("proxy got %d of 10, direct peer %d of 10; want 10 and 4", proxied, direct)
	}
}
