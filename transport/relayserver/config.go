package relayserver

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
	"golang.org/x/time/rate"
)

// Config configures a Server. The zero value is a relay with the default
// limits and first-key-wins registration; the store is New's argument.
type Config struct {
	// RelayID, when not zero, is the ID the relay presents instead of its
	// store's. A memory store makes a new random ID at every start, and
	// clients pin the ID they first met: a relay without durable storage
	// keeps its ID in a file (parley relay --id-file) and sets it here.
	RelayID [32]byte
	// AllowReregister lets a new key take over a registered address (the old
	// bundle is removed and the old key's connections closed). Off by
	// default; the demo turns it on to stage a reinstall. With DeviceLists,
	// such a key authenticates even though the held list names another key
	// for its device (the reinstalled device made a new account, whose list
	// the relay then refuses as stale: the held one stays).
	AllowReregister bool
	// Limits bound what each connection, IP, address and mailbox may use.
	Limits Limits
	// TrustedProxies are the networks of proxies in front of the relay (a
	// load balancer): a connection from one of them is charged to the
	// client named in X-Forwarded-For. Empty: every connection is charged to
	// its TCP peer.
	TrustedProxies []netip.Prefix
	// Blobs is the relay's blob store (wire.FeatureBlobs), which the caller
	// opened with Limits.Blobs and closes after Shutdown. Nil: the relay
	// keeps no blobs, except that NewMemory makes a memory one.
	Blobs relaystore.BlobStore
	// DeviceLists makes the relay keep the latest device list of each
	// account and announce wire.FeatureDeviceLists; a device that is not
	// active in its account's list is then refused at authentication
	// (devicelist.go). Off by default: nothing yet sends to several devices
	// of a person (issue 33).
	DeviceLists bool
	// DeviceListJoins, with DeviceLists, lets a device whose number the
	// held list never used authenticate as joining, only to publish the
	// list that adds it (devicelist.go, "Joining"): how a device restored
	// from a backup, which has no other device at hand, enters its
	// account. Off: such a device is refused at authentication.
	DeviceListJoins bool
	// SeparateAdmin serves /healthz and /metrics only on AdminHandler (an
	// admin listener), not on the relay's own.
	SeparateAdmin bool
	// Logger receives connection and storage events (default: discarded).
	Logger *slog.Logger
	// Now is the clock of challenges, bundle checks and leases (default
	// time.Now).
	Now func() time.Time

	// NoSubmitMulti stops serving wire.SubmitMulti (one payload for
	// several mailboxes, kind 29) and announcing wire.FeatureSubmitMulti,
	// which a relay does by default. The memory and SQLite stores keep
	// its payload once with a small entry per mailbox; NATS keeps an
	// envelope per mailbox (docs/relay.md, "One payload for several
	// mailboxes").
	NoSubmitMulti bool

	// withoutSubmitBatch: tests play a relay that predates SubmitBatch
	// (no wire.FeatureSubmitBatch; a batch is a bad request).
	withoutSubmitBatch bool
}

// Limits are the relay's bounds. A zero field takes its default (the
// Default* constants here, relaystore's for the quotas); a negative rate
// disables that token bucket.
type Limits struct {
	// Limits are the quotas on what the relay holds, which its store
	// enforces (per mailbox, per sender, per IP, in all, registrations per
	// IP, one-time prekeys per address): NewMemory hands them to its
	// store, and a caller opening its own store for New passes them to it
	// (StoreLimits). Unlike the store's, the reserve defaults to a quarter
	// of the totals here; a negative reserve means none.
	relaystore.Limits
	// EnvelopeLifetime is how long an envelope waits unacknowledged before
	// the relay deletes it and tells its sender it expired (7 days); the
	// sweep runs every SweepInterval (1 minute).
	EnvelopeLifetime time.Duration
	SweepInterval    time.Duration
	// Blobs are the blob store's quotas (its defaults: the largest blob
	// 128 MiB, an address's and an IP's share 256 MiB each, 1 GiB in all
	// with a quarter kept in reserve, an incomplete blob idle for an hour
	// expired), separate from the envelope quotas; NewMemory hands them to
	// its blob store, and a caller opening its own passes them to it.
	// BlobLifetime is how long a blob lives from its creation (7 days);
	// the sweep deletes it then.
	Blobs        relaystore.BlobLimits
	BlobLifetime time.Duration
	// ProvisioningLifetime is how long a provisioning mailbox lives (10
	// minutes); ProvisioningPerIP how many one remote IP may hold open (2).
	// Both apply with Config.DeviceLists (provision.go).
	ProvisioningLifetime time.Duration
	ProvisioningPerIP    int
	// MaxConnections caps open websockets; MaxUnauthenticated caps those
	// that have not authenticated yet. Beyond either the upgrade is refused
	// with 503.
	MaxConnections     int
	MaxUnauthenticated int
	// MaxConnectionsPerIP and MaxUnauthenticatedPerIP are the same caps for
	// one remote IP, so that one IP cannot take every slot; beyond them the
	// upgrade is refused with 429. MaxConnectionsPerAddress caps one
	// address's authenticated connections; beyond it the authentication is
	// refused.
	MaxConnectionsPerIP      int
	MaxUnauthenticatedPerIP  int
	MaxConnectionsPerAddress int
	// MaxSockets and MaxSocketsPerIP cap the TCP connections open, counted
	// where they are accepted whatever they carry (websockets, /healthz,
	// /metrics, nothing): past either a new connection is closed at once.
	// A trusted proxy's connections count in all only; the requests it
	// forwards count against the forwarded IP while they run. Defaults:
	// MaxConnections+MaxUnauthenticated (17,408) and
	// MaxConnectionsPerIP+16 (80).
	MaxSockets      int
	MaxSocketsPerIP int
	// IPv6PrefixBits is the prefix an IPv6 client is keyed by in every
	// per-IP limit (64: a host's usual share); an IPv4 client is keyed by
	// its address.
	IPv6PrefixBits int
	// RegistrationRate/RegistrationBurst bound the first registrations of
	// addresses from one remote IP over time (per second; default 20 an
	// hour); relaystore.Limits.RegistrationsPerIP bounds them in all.
	RegistrationRate  float64
	RegistrationBurst int
	// AuthTimeout is how long a new connection has to send its Auth.
	AuthTimeout time.Duration
	// ChallengeLifetime is how far ahead a Challenge's expiry lies.
	ChallengeLifetime time.Duration
	// PingInterval is how often the relay pings; ReadTimeout is the read
	// deadline, pushed back by every message and pong.
	PingInterval time.Duration
	ReadTimeout  time.Duration
	// WriteTimeout is the deadline of every write.
	WriteTimeout time.Duration
	// SendQueue bounds the replies waiting for the connection's writer; a
	// client that lets it fill (it does not read) is disconnected.
	SendQueue int
	// Window is the most leased, unacknowledged rows a connection holds;
	// Page the most leased at a time.
	Window int
	Page   int
	// LeaseTimeout is how long a delivered row waits for its
	// acknowledgement before it is delivered again.
	LeaseTimeout time.Duration
	// MessageRate/MessageBurst and ByteRate/ByteBurst are the per-connection
	// token buckets over every message received. ByteBurst is raised to at
	// least wire.MaxRelayMessageSize.
	MessageRate  float64
	MessageBurst int
	ByteRate     float64
	ByteBurst    int
	// RefusalRate/RefusalBurst bound what a connection sends over those
	// buckets: each message or control frame refused by them takes a token
	// here, and a connection with none left is closed (disconnect reason
	// over_budget), so that a flood of refused frames ends instead of
	// costing the relay a read and a refusal each. Default 250/s, burst
	// 1,000: a client that pauses after a refusal (the transport client
	// waits at least 10 ms) stays far below.
	RefusalRate  float64
	RefusalBurst int
	// FloodRate/FloodBurst bound the connections of one remote IP that the
	// relay closes for flooding (a control frame before authentication, or
	// frames past the refusal allowance): past them every new connection
	// from that IP is closed where it is accepted (429 before the upgrade
	// behind a trusted proxy) until the bucket refills. Without it a
	// flooder would dial again and again, and the relay would pay a new
	// handshake each time. Default 4 at once, then one a minute; an honest
	// client is never closed for flooding.
	FloodRate  float64
	FloodBurst int
	// FetchRate/FetchBurst bound the bundle fetches one address makes,
	// across all its connections; TargetFetchRate/TargetFetchBurst the
	// fetches of one address's bundle, whoever asks.
	FetchRate        float64
	FetchBurst       int
	TargetFetchRate  float64
	TargetFetchBurst int
	// WriteRate/WriteBurst bound the changes one address makes to its own
	// records at the relay (SenderBlock, PublishBundle), across its
	// connections; IPWriteRate/IPWriteBurst the same from one remote IP.
	// Each is a durable write (a cluster write on NATS) and a publish
	// checks three signatures, while a client makes a few an hour: one
	// token per request was a write a millisecond per connection (issue
	// 30, finding 5). Defaults: 1/s, burst 20 per address; 10/s, burst
	// 200 per IP (a NAT's clients all publishing as a restarted relay
	// comes back).
	WriteRate    float64
	WriteBurst   int
	IPWriteRate  float64
	IPWriteBurst int
	// TargetOneTimeRate/TargetOneTimeBurst bound the one-time prekeys handed
	// out of one address's pool (per second; default 20 at once, then one a
	// minute). Beyond them a fetch gets the bundle without one, so a burst
	// of fresh identities cannot drain a pool.
	TargetOneTimeRate  float64
	TargetOneTimeBurst int
	// PrekeyPoolLow is the pool size at or below which the relay tells the
	// owner (a PrekeyPool push) after a fetch, so that it tops up.
	PrekeyPoolLow int
	// MaxEnvelopeSize is the largest envelope accepted (at most
	// wire.MaxEnvelopeSize).
	MaxEnvelopeSize int
	// HTTPReadHeaderTimeout, HTTPReadTimeout and HTTPIdleTimeout are the
	// http.Server's; the websocket clears them once upgraded. The idle
	// timeout is short (5 s): a kept-alive plain connection holds a socket
	// slot of its IP.
	HTTPReadHeaderTimeout time.Duration
	HTTPReadTimeout       time.Duration
	HTTPIdleTimeout       time.Duration
}

// Default limits (docs/relay.md explains each).
const (
	DefaultMaxConnections        = 16384
	DefaultMaxUnauthenticated    = 1024
	DefaultMaxConnectionsPerIP   = 64
	DefaultMaxUnauthPerIP        = 8
	DefaultMaxConnectionsPerAddr = 4
	DefaultRegistrationRate      = 20.0 / 3600
	DefaultRegistrationBurst     = 20
	DefaultTargetFetchRate       = 10
	DefaultTargetFetchBurst      = 100
	DefaultTargetOneTimeRate     = 1.0 / 60
	DefaultTargetOneTimeBurst    = 20
	DefaultPrekeyPoolLow         = 20
	DefaultAuthTimeout           = 10 * time.Second
	DefaultChallengeLifetime     = 60 * time.Second
	DefaultPingInterval          = 20 * time.Second
	DefaultReadTimeout           = 60 * time.Second
	DefaultWriteTimeout          = 10 * time.Second
	DefaultSendQueue             = 128
	DefaultWindow                = 256
	DefaultPage                  = 64
	DefaultLeaseTimeout          = 30 * time.Second
	DefaultMessageRate           = 1000
	DefaultMessageBurst          = 2000
	DefaultByteRate              = 32 << 20
	DefaultByteBurst             = 32 << 20
	DefaultRefusalRate           = 250
	DefaultRefusalBurst          = 1000
	DefaultFloodRate             = 1.0 / 60
	DefaultFloodBurst            = 4
	DefaultFetchRate             = 5
	DefaultWriteRate             = 1
	DefaultWriteBurst            = 20
	DefaultIPWriteRate           = 10
	DefaultIPWriteBurst          = 200
	DefaultFetchBurst            = 50
	DefaultHTTPReadHeaderTimeout = 5 * time.Second
	DefaultHTTPReadTimeout       = 10 * time.Second
	DefaultHTTPIdleTimeout       = 5 * time.Second
	DefaultEnvelopeLifetime      = 7 * 24 * time.Hour
	DefaultIPv6PrefixBits        = 64
	DefaultSweepInterval         = time.Minute
	DefaultBlobLifetime          = 7 * 24 * time.Hour
)

// withDefaults fills zero fields and checks the rest.
func (l Limits) withDefaults() (Limits, error) {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setRate := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&l.MaxConnections, DefaultMaxConnections)
	setInt(&l.MaxUnauthenticated, DefaultMaxUnauthenticated)
	setInt(&l.MaxConnectionsPerIP, DefaultMaxConnectionsPerIP)
	setInt(&l.MaxUnauthenticatedPerIP, DefaultMaxUnauthPerIP)
	setInt(&l.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddr)
	setInt(&l.IPv6PrefixBits, DefaultIPv6PrefixBits)
	setInt(&l.MaxSockets, l.MaxConnections+l.MaxUnauthenticated)
	setInt(&l.MaxSocketsPerIP, l.MaxConnectionsPerIP+16)
	setRate(&l.RegistrationRate, DefaultRegistrationRate)
	setInt(&l.RegistrationBurst, DefaultRegistrationBurst)
	setRate(&l.TargetFetchRate, DefaultTargetFetchRate)
	setInt(&l.TargetFetchBurst, DefaultTargetFetchBurst)
	setRate(&l.TargetOneTimeRate, DefaultTargetOneTimeRate)
	setInt(&l.TargetOneTimeBurst, DefaultTargetOneTimeBurst)
	setInt(&l.PrekeyPoolLow, DefaultPrekeyPoolLow)
	setDur(&l.AuthTimeout, DefaultAuthTimeout)
	setDur(&l.ProvisioningLifetime, DefaultProvisioningLifetime)
	setInt(&l.ProvisioningPerIP, DefaultProvisioningPerIP)
	setDur(&l.ChallengeLifetime, DefaultChallengeLifetime)
	setDur(&l.PingInterval, DefaultPingInterval)
	setDur(&l.ReadTimeout, DefaultReadTimeout)
	setDur(&l.WriteTimeout, DefaultWriteTimeout)
	setInt(&l.SendQueue, DefaultSendQueue)
	setInt(&l.Window, DefaultWindow)
	setInt(&l.Page, DefaultPage)
	setDur(&l.LeaseTimeout, DefaultLeaseTimeout)
	setRate(&l.MessageRate, DefaultMessageRate)
	setInt(&l.MessageBurst, DefaultMessageBurst)
	setRate(&l.ByteRate, DefaultByteRate)
	setInt(&l.ByteBurst, DefaultByteBurst)
	setRate(&l.RefusalRate, DefaultRefusalRate)
	setInt(&l.RefusalBurst, DefaultRefusalBurst)
	setRate(&l.FloodRate, DefaultFloodRate)
	setInt(&l.FloodBurst, DefaultFloodBurst)
	setRate(&l.FetchRate, DefaultFetchRate)
	setInt(&l.FetchBurst, DefaultFetchBurst)
	setRate(&l.WriteRate, DefaultWriteRate)
	setInt(&l.WriteBurst, DefaultWriteBurst)
	setRate(&l.IPWriteRate, DefaultIPWriteRate)
	setInt(&l.IPWriteBurst, DefaultIPWriteBurst)
	setInt(&l.MaxEnvelopeSize, wire.MaxEnvelopeSize)
	setDur(&l.HTTPReadHeaderTimeout, DefaultHTTPReadHeaderTimeout)
	setDur(&l.HTTPReadTimeout, DefaultHTTPReadTimeout)
	setDur(&l.HTTPIdleTimeout, DefaultHTTPIdleTimeout)
	setDur(&l.EnvelopeLifetime, DefaultEnvelopeLifetime)
	setDur(&l.SweepInterval, DefaultSweepInterval)
	setDur(&l.BlobLifetime, DefaultBlobLifetime)
	l.Blobs = l.Blobs.WithDefaults()
	l.Limits = l.StoreLimits()
	l.ByteBurst = max(l.ByteBurst, wire.MaxRelayMessageSize)

	switch {
	case l.MaxConnections < 1 || l.MaxUnauthenticated < 1 || l.MaxConnectionsPerIP < 1 || l.MaxUnauthenticatedPerIP < 1 || l.MaxConnectionsPerAddress < 1 ||
		l.MaxSockets < 1 || l.MaxSocketsPerIP < 1:
		return l, errors.New("connection caps must be positive")
	case l.AuthTimeout < 0 || l.ChallengeLifetime < time.Second || l.WriteTimeout < 0 || l.LeaseTimeout < 0:
		return l, errors.New("timeouts must be positive (a challenge lives at least 1s)")
	case l.PingInterval <= 0 || l.ReadTimeout <= l.PingInterval:
		return l, fmt.Errorf("read timeout %v must exceed the ping interval %v", l.ReadTimeout, l.PingInterval)
	case l.SendQueue < 1 || l.Window < 1 || l.Page < 1:
		return l, errors.New("queue, window and page must be positive")
	case l.MessageBurst < 1 || l.RefusalBurst < 1 || l.FloodBurst < 1 || l.WriteBurst < 1 || l.IPWriteBurst < 1 || l.FetchBurst < 1 || l.TargetFetchBurst < 1 || l.TargetOneTimeBurst < 1 || l.RegistrationBurst < 1:
		return l, errors.New("bursts must be positive")
	case l.IPv6PrefixBits < 1 || l.IPv6PrefixBits > 128:
		return l, errors.New("the IPv6 prefix must be 1..128 bits")
	case l.EnvelopeLifetime <= 0 || l.SweepInterval <= 0 || l.BlobLifetime <= 0:
		return l, errors.New("the envelope and blob lifetimes and the sweep interval must be positive")
	case l.MaxEnvelopeSize < 1 || l.MaxEnvelopeSize > wire.MaxEnvelopeSize:
		return l, fmt.Errorf("max envelope size must be 1..%d", wire.MaxEnvelopeSize)
	}
	l.Page = min(l.Page, l.Window)
	return l, nil
}

// StoreLimits returns the store's quotas with the relay's defaults: the
// store's own, and a reserve of a quarter of the totals unless l sets one
// (negative: none). A caller opening a store for New passes it these.
func (l Limits) StoreLimits() relaystore.Limits {
	sl := l.Limits.WithDefaults()
	if l.ReserveEnvelopes == 0 {
		sl.ReserveEnvelopes = sl.TotalEnvelopes / 4
	}
	if l.ReserveBytes == 0 {
		sl.ReserveBytes = sl.TotalBytes / 4
	}
	return sl.WithDefaults()
}

// limiter returns a token bucket; a negative rate means none.
func limiter(r float64, burst int) *rate.Limiter {
	if r < 0 || math.IsInf(r, 1) {
		return rate.NewLimiter(rate.Inf, burst)
	}
	return rate.NewLimiter(rate.Limit(r), burst)
}
