package relayserver

import (
	"net/http"
	"net/netip"
)

// Per-IP limits are per network for IPv6: one host holds a /64 (2^64
// addresses), so keying them by the full address made every per-IP limit a
// per-host-bit one. An IPv4 address (an IPv4-mapped IPv6 one unmapped
// first) is its own key; an IPv6 address is keyed by its prefix of
// Limits.IPv6PrefixBits bits, written as a prefix ("2001:db8:1:2::/64").

// ipKey returns the key the per-IP limits count a as.
func ipKey(a netip.Addr, bits int) string {
	a = a.Unmap()
	if a.Is4() || bits >= 128 {
		return a.String()
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// keyOf returns the per-IP key of a remote IP as clientIP reads it; a string
// that is not an address stays as it is.
func (s *Server) keyOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	return ipKey(a, s.lim.IPv6PrefixBits)
}

// clientKey is clientIP's address as a per-IP key.
func (s *Server) clientKey(r *http.Request) string {
	return s.keyOf(clientIP(r, s.cfg.TrustedProxies))
}
