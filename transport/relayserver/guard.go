package relayserver

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The relay's guards against one client hurting the others: limits per
// remote IP (connections, handshakes in flight, registrations), per address
// (connections, bundle fetches it makes) and per target (bundle fetches of
// it, one-time prekeys handed out of its pool). They live in this process;
// the quotas on what is held (per mailbox, per sender, per IP, in all) live
// in the store, so that they hold across relays sharing one.

// limit names a guard or a quota: the limit label of
// parley_relay_limited_total.
type limit string

// The limits; their values are the metric's label values.
const (
	limitConnections        limit = "connections"
	limitHandshakes         limit = "handshakes"
	limitIPConnections      limit = "ip_connections"
	limitIPHandshakes       limit = "ip_handshakes"
	limitAddressConnections limit = "address_connections"
	limitIPRegistrations    limit = "ip_registrations_hour"
	limitIPRegistered       limit = "ip_registrations_total"
	limitFetchRequester     limit = "fetches_by_requester"
	limitFetchTarget        limit = "fetches_of_target"
	limitOneTimeTarget      limit = "one_time_prekeys_of_target"
	limitSenderQuota        limit = "sender_share"
	limitIPShare            limit = "ip_share"
	limitStoreFull          limit = "store_full"
	limitReserve            limit = "reserve"
	limitSockets            limit = "sockets"
	limitIPSockets          limit = "ip_sockets"
	limitStrangerRoom       limit = "stranger_room"
	limitStrangerIPShare    limit = "stranger_ip_share"
	limitBlockList          limit = "block_list"
	limitIPFloods           limit = "ip_floods"
	limitAddressWrites      limit = "address_writes"
	limitIPWrites           limit = "ip_writes"
	limitIPDeviceLists      limit = "ip_device_lists"
)

// limits lists every limit, so that each series shows from the first
// scrape.
var limits = []limit{limitConnections, limitHandshakes, limitIPConnections, limitIPHandshakes, limitAddressConnections, limitIPRegistrations,
	limitIPRegistered, limitFetchRequester, limitFetchTarget, limitOneTimeTarget, limitSenderQuota, limitIPShare, limitStoreFull, limitReserve,
	limitSockets, limitIPSockets, limitStrangerRoom, limitStrangerIPShare, limitBlockList, limitIPFloods,
	limitAddressWrites, limitIPWrites, limitIPDeviceLists, limitIPProvisioning}

// keyedLimiters is one token bucket per key (an IP, an address), made on
// first use. A bucket that has refilled completely is forgotten at the next
// sweep, so idle keys cost nothing.
type keyedLimiters struct {
	r     rate.Limit
	burst int

	mu    sync.Mutex
	m     map[string]*rate.Limiter
	swept time.Time
}

func newKeyedLimiters(r float64, burst int) *keyedLimiters {
	lim := rate.Limit(r)
	if r < 0 {
		lim = rate.Inf
	}
	return &keyedLimiters{r: lim, burst: burst, m: make(map[string]*rate.Limiter)}
}

// allow takes one token from key's bucket.
func (k *keyedLimiters) allow(key string, now time.Time) bool {
	if k.r == rate.Inf {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.swept) > time.Minute || len(k.m) > 1<<16 {
		k.sweep(now)
	}
	l := k.m[key]
	if l == nil {
		l = rate.NewLimiter(k.r, k.burst)
		k.m[key] = l
	}
	return l.AllowN(now, 1)
}

// spent reports whether key's bucket is empty at now, without taking from
// it (a key never charged has a full one).
func (k *keyedLimiters) spent(key string, now time.Time) bool {
	if k.r == rate.Inf {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	l := k.m[key]
	return l != nil && l.TokensAt(now) < 1
}

// sweep forgets the buckets that are full again; callers hold mu.
func (k *keyedLimiters) sweep(now time.Time) {
	k.swept = now
	for key, l := range k.m {
		if l.TokensAt(now) >= float64(k.burst) {
			delete(k.m, key)
		}
	}
}

// ipSlots counts each remote IP's open websockets and, of those, the ones
// that have not authenticated yet.
type ipSlots struct {
	mu     sync.Mutex
	conns  map[string]int
	unauth map[string]int
}

func newIPSlots() *ipSlots {
	return &ipSlots{conns: make(map[string]int), unauth: make(map[string]int)}
}

// acquire takes a connection slot and a handshake slot of ip, or names the
// limit that refuses them.
func (s *ipSlots) acquire(ip string, maxConns, maxUnauth int) (refused limit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conns[ip] >= maxConns:
		return limitIPConnections
	case s.unauth[ip] >= maxUnauth:
		return limitIPHandshakes
	}
	s.conns[ip]++
	s.unauth[ip]++
	return ""
}

// authenticated gives back ip's handshake slot.
func (s *ipSlots) authenticated(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dec(s.unauth, ip)
}

// release gives back ip's connection slot, and its handshake slot when the
// connection never authenticated.
func (s *ipSlots) release(ip string, authed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dec(s.conns, ip)
	if !authed {
		dec(s.unauth, ip)
	}
}

func dec(m map[string]int, k string) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// clientIP returns the remote IP of r: the peer of the TCP connection or,
// when that peer is a trusted proxy, the last address in X-Forwarded-For that
// is not one (a client can prepend anything to the header; the proxies
// append what they saw).
func clientIP(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	hops := r.Header.Values("X-Forwarded-For")
	var chain []string
	for _, h := range hops {
		for _, a := range strings.Split(h, ",") {
			chain = append(chain, strings.TrimSpace(a))
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(chain[i])
		if err != nil {
			break // a hop we cannot read: stop at the last one we could
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a.String()
		}
		peer = a
	}
	return peer.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
