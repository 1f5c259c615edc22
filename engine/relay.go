package engine

import (
	"context"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Relay is everything the engine needs from the relay, in one interface, so
// that the compiler (not a type assertion at run time) says what an
// implementation or a wrapper lacks: a wrapper embeds the Relay it wraps and
// overrides what it changes. The websocket client in transport implements
// it; tests use an in-process one (enginetest). A relay that cannot do a
// part says so through that part's own answers (no wake channel, features
// not known, ErrNoBlobStore), never by lacking the method.
type Relay interface {
	RelayLink
	PreKeyPool
	EnvelopeNews
	BatchSubmitter
	BlobRelay
	SenderBlocker
	DeviceListPublisher
	DeviceListReader

	// FetchBundle returns the peer's current prekey bundle (with at most one
	// one-time prekey, handed out once).
	FetchBundle(ctx context.Context, peer Address) (wire.Bundle, error)
	// PublishPreKeys publishes the own bundle and a batch of one-time prekeys.
	PublishPreKeys(ctx context.Context, bundle wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error
	// Submit hands an envelope to the relay; nil means the relay accepted it.
	// HandoffOf(ctx) says what the envelope carries.
	Submit(ctx context.Context, env wire.Envelope) error
	// Receive returns the envelopes the relay delivered that no earlier call
	// returned, oldest first, without waiting for more: an empty result
	// means nothing is waiting now. Each stays leased until released.
	Receive(ctx context.Context) ([]Leased, error)
	// Release ends the leases of rows staged durably: the relay deletes
	// them. Only the engine's loop calls it, and only for rows it staged.
	// (Acknowledging is the end-to-end ACK between devices, never this.)
	Release(ctx context.Context, rows []uint64) error
}

// RelayLink is the part of Relay that knows its own connection. The
// engine's loop waits on Wake instead of polling (a nil Wake: it polls), and
// runs what a new connection calls for (maintenance, automatic retries) when
// Epoch moves.
type RelayLink interface {
	// Wake receives a value (the relay never blocks on it) when Receive
	// may return something new or the connection changed. It may be nil
	// before the relay first connects.
	Wake() <-chan struct{}
	// Link reports the connection now.
	Link() Link
}

// Link is the state of a relay connection as the engine sees it.
type Link struct {
	// Up is true while the relay is connected and authenticated.
	Up bool
	// Epoch counts the connections made so far: it moves at every
	// reconnection.
	Epoch uint64
	// Err is why the link is down, when it is.
	Err error
}

// PreKeyPool is the part of Relay that knows how many of this device's
// one-time prekeys the relay holds (the relay tells its owner). The engine
// then tops the pool up against that count: prekeys handed out to others,
// honest or not, are gone from the relay even though this device still
// holds their private halves.
type PreKeyPool interface {
	// OneTimePreKeyPool returns the relay's count, and false while it is
	// not known yet.
	OneTimePreKeyPool() (count int, known bool)
}

// EnvelopeNews is the part of Relay that hears what became of the
// envelopes this device sent: the relay pushes wire.EnvelopeStatus (taken
// by the recipient's device, or expired) to the sender's live connections,
// best effort, when it announced wire.FeatureEnvelopeStatus. A status
// missed while offline is never repeated, so it is a hint for the retry
// policy, never its only trigger.
type EnvelopeNews interface {
	// RelayFeatures returns what the relay of the current connection
	// announced, and false while it has not (not connected yet, or a relay
	// that predates the announcement, which supports none).
	RelayFeatures() (wire.FeatureSet, bool)
	// EnvelopeStatuses returns the statuses heard since the last call,
	// oldest first, and forgets them. Wake receives a value when new ones
	// arrive.
	EnvelopeStatuses() []wire.EnvelopeStatus
	// EnvelopeLifetime returns how long the relay of the current
	// connection keeps an envelope unacknowledged before it expires, as it
	// announced (wire.Lifetimes), and false while it has not: an envelope
	// reported expired sooner is not believed (DecideExpiredRetry).
	EnvelopeLifetime() (time.Duration, bool)
}

// Leased is one envelope the relay delivered under a lease.
type Leased struct {
	Row      uint64
	Envelope []byte
}

// BatchSubmitter is the part of Relay that hands off several envelopes: in
// order, each with its own answer (pipelined where the relay can, one by one
// otherwise). Every envelope of one batch carries the same Handoff kind.
type BatchSubmitter interface {
	SubmitBatch(ctx context.Context, envs []wire.Envelope) []error
}

// Handoff says what the envelopes handed to Relay.Submit carry. The relay
// itself never learns it (envelopes are opaque); a relay wrapper that plays
// the network, such as the demo's fault switches, may ask.
type Handoff uint8

// Handoff kinds.
const (
	// HandoffMessage: an application message (a send or a retry).
	HandoffMessage Handoff = iota + 1
	// HandoffAck: an acknowledgement (after a commit or a discard, a repeat
	// of a finalized message, or an announcement of a winning session).
	HandoffAck
	// HandoffRecovery: a recovery request.
	HandoffRecovery
)

type handoffKey struct{}

// HandoffOf reports what the envelope submitted under ctx carries; 0 when
// the engine did not say (a caller outside the engine).
func HandoffOf(ctx context.Context) Handoff {
	h, _ := ctx.Value(handoffKey{}).(Handoff)
	return h
}

func withHandoff(ctx context.Context, h Handoff) context.Context {
	return context.WithValue(ctx, handoffKey{}, h)
}
