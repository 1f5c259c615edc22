package transport

import (
	"net"
	"net/netip"
	"strings"
)

// Plaintext reports whether rawURL is a ws:// URL to a host that is not
// loopback (127.0.0.0/8, ::1 or localhost): over it the envelopes stay
// end-to-end encrypted, but anyone on the path sees the metadata a relay
// sees, so parley refuses it unless the user accepts it. It returns the
// host for the warning.
func Plaintext(rawURL string) (host string, plain bool) {
	u, err := parseURL(rawURL)
	if err != nil || u.Scheme != "ws" {
		return "", false
	}
	host = u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return host, false
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return host, false
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return host, false
	}
	return host, true
}
