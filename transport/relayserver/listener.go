package relayserver

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Every TCP connection is counted where it is accepted, whatever it then
// carries (a websocket, /healthz, /metrics, nothing at all): in all, and per
// remote IP unless the peer is a trusted proxy. Behind a proxy every
// connection has the proxy's IP, so the plain HTTP requests it forwards are
// counted per forwarded IP instead, once the header is read (limitRequests);
// websockets are counted per forwarded IP by admit either way.

// countingListener refuses, by closing them at once, the connections past
// Limits.MaxSockets or, from one IP, Limits.MaxSocketsPerIP.
type countingListener struct {
	net.Listener
	s *Server
}

// countedConn gives its slots back when closed, once.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CountConnections wraps ln so that every connection it accepts counts
// against the relay's socket caps. Serve does it for the listener it is
// given; a caller that wraps ln itself (in TLS, so that the HTTP server still
// sees a *tls.Conn) calls it on the raw listener first.
func (s *Server) CountConnections(ln net.Listener) net.Listener {
	s.counting.Store(true)
	if _, ok := ln.(*countingListener); ok {
		return ln
	}
	return &countingListener{Listener: ln, s: s}
}

// Accept implements net.Listener.
func (l *countingListener) Accept() (net.Conn, error) {
	s := l.s
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip, perIP := "", false
		if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			if a, ok := netip.AddrFromSlice(tcp.IP); ok {
				a = a.Unmap()
				ip, perIP = ipKey(a, s.lim.IPv6PrefixBits), !isTrusted(a, s.cfg.TrustedProxies)
			}
		}
		if perIP && s.floods.spent(ip, time.Now()) {
			// An IP that flooded lately: not worth a handshake.
			s.metrics.limitedBy(limitIPFloods)
			c.Close()
			continue
		}
		if refused := s.sockets.acquire(ip, perIP, s.lim.MaxSockets, s.lim.MaxSocketsPerIP); refused != "" {
			s.metrics.limitedBy(refused)
			c.Close()
			continue
		}
		return &countedConn{Conn: c, release: func() { s.sockets.release(ip, perIP) }}, nil
	}
}

// socketCount counts the open TCP connections, in all and per IP.
type socketCount struct {
	all   atomic.Int64
	mu    sync.Mutex
	perIP map[string]int
}

func newSocketCount() *socketCount { return &socketCount{perIP: make(map[string]int)} }

func (s *socketCount) acquire(ip string, perIP bool, maxAll, maxPerIP int) (refused limit) {
	if n := s.all.Add(1); n > int64(maxAll) {
		s.all.Add(-1)
		return limitSockets
	}
	if !perIP {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perIP[ip] >= maxPerIP {
		s.all.Add(-1)
		return limitIPSockets
	}
	s.perIP[ip]++
	return ""
}

func (s *socketCount) release(ip string, perIP bool) {
	s.all.Add(-1)
	if perIP {
		s.mu.Lock()
		dec(s.perIP, ip)
		s.mu.Unlock()
	}
}

// limitRequests counts the plain HTTP requests a trusted proxy forwards
// against the forwarded IP's socket cap, while they run; requests from
// other peers were counted with their connection.
func (s *Server) limitRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.fromProxy(r) {
			next.ServeHTTP(w, r)
			return
		}
		ip := s.clientKey(r)
		s.proxied.mu.Lock()
		if s.proxied.perIP[ip] >= s.lim.MaxSocketsPerIP {
			s.proxied.mu.Unlock()
			s.metrics.limitedBy(limitIPSockets)
			http.Error(w, "too many connections from your address", http.StatusTooManyRequests)
			return
		}
		s.proxied.perIP[ip]++
		s.proxied.mu.Unlock()
		defer func() {
			s.proxied.mu.Lock()
			dec(s.proxied.perIP, ip)
			s.proxied.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// fromProxy reports whether r's TCP peer is a trusted proxy.
func (s *Server) fromProxy(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && isTrusted(ap.Addr().Unmap(), s.cfg.TrustedProxies)
}
