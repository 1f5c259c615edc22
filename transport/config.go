package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
	"golang.org/x/time/rate"
)

// WebSocketPath is where the relay serves its websocket.
const WebSocketPath = "/v1/ws"

// ServerConfig configures a Server. The zero value is a relay in memory with
// the default limits, no faults and first-key-wins registration.
type ServerConfig struct {
	// DataDir, when set, keeps registrations, bundles and mailboxes in
	// SQLite there (relaystore.FileName); otherwise they live in memory.
	DataDir string
	// Store, when set, is used instead of DataDir. The server does not close
	// a Store it was given.
	Store relaystore.Store
	// RelayID, when not zero, is the ID the relay presents instead of its
	// store's. A memory store makes a new random ID at every start, and
	// clients pin the ID they first met: a relay without DataDir keeps its
	// ID in a file (parley relay --id-file) and sets it here.
	RelayID [32]byte
	// AllowReregister lets a new key take over a registered address (the old
	// bundle is removed and the old key's connections closed). Off by
	// default; the demo turns it on to stage a reinstall.
	AllowReregister bool
	// FaultDrop and FaultDup are the probabilities (0 to 1) that an accepted
	// envelope is dropped (acknowledged to the sender, never stored) or
	// stored twice. FaultSeed seeds them (0 picks a random seed), so that a
	// run with the same seed and the same order of envelopes repeats.
	FaultDrop, FaultDup float64
	FaultSeed           uint64
	// Limits bound what each connection and mailbox may use.
	Limits Limits
	// Logger receives connection and storage events (default: discarded).
	Logger *slog.Logger
	// Now is the clock of challenges, bundle checks and leases (default
	// time.Now).
	Now func() time.Time
}

// Limits are the relay's bounds. A zero field takes its default (the
// Default* constants); a negative rate disables that token bucket.
type Limits struct {
	// MaxConnections caps open websockets; MaxUnauthenticated caps those
	// that have not authenticated yet. Beyond either the upgrade is refused
	// with 503.
	MaxConnections     int
	MaxUnauthenticated int
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
	// token buckets over every message received; FetchRate/FetchBurst the
	// one over FetchBundle. ByteBurst is raised to at least
	// wire.MaxRelayMessageSize.
	MessageRate  float64
	MessageBurst int
	ByteRate     float64
	ByteBurst    int
	FetchRate    float64
	FetchBurst   int
	// MaxEnvelopeSize is the largest envelope accepted (at most
	// wire.MaxEnvelopeSize).
	MaxEnvelopeSize int
	// MailboxEnvelopes, MailboxBytes and OneTimePreKeys bound each address's
	// mailbox and one-time prekey pool (see relaystore.Limits).
	MailboxEnvelopes int
	MailboxBytes     int64
	OneTimePreKeys   int
	// HTTPReadHeaderTimeout, HTTPReadTimeout and HTTPIdleTimeout are the
	// http.Server's; the websocket clears them once upgraded.
	HTTPReadHeaderTimeout time.Duration
	HTTPReadTimeout       time.Duration
	HTTPIdleTimeout       time.Duration
}

// Default limits (docs/relay.md explains each).
const (
	DefaultMaxConnections        = 1024
	DefaultMaxUnauthenticated    = 128
	DefaultAuthTimeout           = 10 * time.Second
	DefaultChallengeLifetime     = 60 * time.Second
	DefaultPingInterval          = 20 * time.Second
	DefaultReadTimeout           = 60 * time.Second
	DefaultWriteTimeout          = 10 * time.Second
	DefaultSendQueue             = 256
	DefaultWindow                = 256
	DefaultPage                  = 64
	DefaultLeaseTimeout          = 30 * time.Second
	DefaultMessageRate           = 1000
	DefaultMessageBurst          = 2000
	DefaultByteRate              = 32 << 20
	DefaultByteBurst             = 32 << 20
	DefaultFetchRate             = 5
	DefaultFetchBurst            = 50
	DefaultHTTPReadHeaderTimeout = 5 * time.Second
	DefaultHTTPReadTimeout       = 10 * time.Second
	DefaultHTTPIdleTimeout       = 60 * time.Second
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
	setDur(&l.AuthTimeout, DefaultAuthTimeout)
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
	setRate(&l.FetchRate, DefaultFetchRate)
	setInt(&l.FetchBurst, DefaultFetchBurst)
	setInt(&l.MaxEnvelopeSize, wire.MaxEnvelopeSize)
	setDur(&l.HTTPReadHeaderTimeout, DefaultHTTPReadHeaderTimeout)
	setDur(&l.HTTPReadTimeout, DefaultHTTPReadTimeout)
	setDur(&l.HTTPIdleTimeout, DefaultHTTPIdleTimeout)
	sl := relaystore.Limits{MailboxEnvelopes: l.MailboxEnvelopes, MailboxBytes: l.MailboxBytes, OneTimePreKeys: l.OneTimePreKeys}.WithDefaults()
	l.MailboxEnvelopes, l.MailboxBytes, l.OneTimePreKeys = sl.MailboxEnvelopes, sl.MailboxBytes, sl.OneTimePreKeys
	l.ByteBurst = max(l.ByteBurst, wire.MaxRelayMessageSize)

	switch {
	case l.MaxConnections < 1 || l.MaxUnauthenticated < 1:
		return l, errors.New("connection caps must be positive")
	case l.AuthTimeout < 0 || l.ChallengeLifetime < time.Second || l.WriteTimeout < 0 || l.LeaseTimeout < 0:
		return l, errors.New("timeouts must be positive (a challenge lives at least 1s)")
	case l.PingInterval <= 0 || l.ReadTimeout <= l.PingInterval:
		return l, fmt.Errorf("read timeout %v must exceed the ping interval %v", l.ReadTimeout, l.PingInterval)
	case l.SendQueue < 1 || l.Window < 1 || l.Page < 1:
		return l, errors.New("queue, window and page must be positive")
	case l.MessageBurst < 1 || l.FetchBurst < 1:
		return l, errors.New("bursts must be positive")
	case l.MaxEnvelopeSize < 1 || l.MaxEnvelopeSize > wire.MaxEnvelopeSize:
		return l, fmt.Errorf("max envelope size must be 1..%d", wire.MaxEnvelopeSize)
	}
	l.Page = min(l.Page, l.Window)
	return l, nil
}

func (l Limits) storeLimits() relaystore.Limits {
	return relaystore.Limits{MailboxEnvelopes: l.MailboxEnvelopes, MailboxBytes: l.MailboxBytes, OneTimePreKeys: l.OneTimePreKeys}
}

// limiter returns a token bucket; a negative rate means none.
func limiter(r float64, burst int) *rate.Limiter {
	if r < 0 || math.IsInf(r, 1) {
		return rate.NewLimiter(rate.Inf, burst)
	}
	return rate.NewLimiter(rate.Limit(r), burst)
}
