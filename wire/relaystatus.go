package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"
)

// The relay's pushes added after version 1 was frozen: kind 15 tells a sender
// what became of an envelope it submitted, kind 16 tells a client what the
// relay supports, kind 26 how long it keeps an envelope. None changes a
// frozen kind; a client that predates them sees an unknown kind
// (ErrUnknownRelayKind).

// RelayEnvelopeLifetime is the kind of EnvelopeLifetime, server → client:
// the first after the blob kinds (18 to 25, relayblob.go).
const RelayEnvelopeLifetime RelayKind = 26

// relayLastKind is the highest kind this package knows: the batch kinds
// (relaybatch.go) follow the envelope lifetime, and the multi-mailbox submit
// (relaymulti.go) follows them.
const relayLastKind = RelaySubmitMulti

// knownRelayKind reports whether this package knows kind: 1 to
// relayLastKind, and the device list kinds (relaydevice.go), numbered from 40
// so that kinds added alongside them on other branches need not move.
func knownRelayKind(kind RelayKind) bool {
	return (kind >= RelayChallenge && kind <= relayLastKind) || (kind >= relayDeviceFirst && kind <= relayDeviceLast) ||
		(kind >= relayProvisionFirst && kind <= relayProvisionLast) || kind == RelayCheckDeviceList
}

// laterKindName names the kinds past the first table (relay.go): the blob
// kinds, the envelope lifetime, the batch kinds and the multi-mailbox
// submit; "" for any other.
func laterKindName(k RelayKind) string {
	switch {
	case k >= relayBlobFirst && k <= relayBlobLast:
		return relayBlobKindNames[k-relayBlobFirst]
	case k == RelayEnvelopeLifetime:
		return "envelope lifetime"
	case k == RelaySubmitBatch:
		return "submit batch"
	case k == RelayBatchResults:
		return "batch results"
	case k == RelaySubmitMulti:
		return "submit multi"
	case k >= relayDeviceFirst && k <= relayDeviceLast:
		return relayDeviceKindNames[k-relayDeviceFirst]
	case k >= relayProvisionFirst && k <= relayProvisionLast:
		return relayProvisionKindNames[k-relayProvisionFirst]
	case k == RelayCheckDeviceList:
		return "check device list"
	}
	return ""
}

// ErrUnknownRelayKind is the error of DecodeRelay for a kind this package
// does not know. It is an ErrMalformed; a client may skip such a message
// when it is a push (request ID 0), since a newer relay announces what it
// adds in Features.
var ErrUnknownRelayKind = fmt.Errorf("unknown relay kind: %w", ErrMalformed)

// EnvelopeState is what EnvelopeStatus says of an envelope.
type EnvelopeState uint8

// Envelope states.
const (
	// EnvelopeTaken: the recipient's device acknowledged the envelope's
	// row after staging it, and the relay deleted it.
	EnvelopeTaken EnvelopeState = 1
	// EnvelopeExpired: the envelope outlived the relay's envelope lifetime
	// unacknowledged and the relay deleted it; a sender that wants it
	// delivered sends it again.
	EnvelopeExpired EnvelopeState = 2
)

// String returns "taken" or "expired".
func (s EnvelopeState) String() string {
	switch s {
	case EnvelopeTaken:
		return "taken"
	case EnvelopeExpired:
		return "expired"
	}
	return fmt.Sprintf("envelope state %d", uint8(s))
}

func (s EnvelopeState) valid() bool { return s == EnvelopeTaken || s == EnvelopeExpired }

// EnvelopeStatus tells the sender of an envelope, best effort, that it left
// the recipient's mailbox and how. The relay pushes it (request ID 0) to the
// sender address's live connections and never stores it: a sender that was
// offline hears nothing.
type EnvelopeStatus struct {
	EnvelopeID EnvelopeID
	State      EnvelopeState
}

// FeatureSet is a bit set of what a relay supports beyond version 1.
// Unknown bits are kept as they are: a newer relay may set bits this
// package does not name, and a client ignores them.
type FeatureSet uint32

// Relay features.
const (
	// FeatureEnvelopeStatus: the relay sends EnvelopeStatus.
	FeatureEnvelopeStatus FeatureSet = 1 << 0
	// FeatureSenderBlock: the relay serves SenderBlock (senderblock.go).
	FeatureSenderBlock FeatureSet = 1 << 1
	// FeatureEnvelopeLifetime: the relay pushes EnvelopeLifetime right
	// after Features.
	FeatureEnvelopeLifetime FeatureSet = 1 << 3
)

// Has reports whether every feature of f is in s.
func (s FeatureSet) Has(f FeatureSet) bool { return s&f == f }

// String names the known features, such as "envelope status", and the
// unknown bits in hex.
func (s FeatureSet) String() string {
	var names []string
	for _, f := range []struct {
		bit  FeatureSet
		name string
	}{{FeatureEnvelopeStatus, "envelope status"}, {FeatureSenderBlock, "sender block"}, {FeatureBlobs, "blobs"}, {FeatureEnvelopeLifetime, "envelope lifetime"}, {FeatureSubmitBatch, "submit batch"}, {FeatureSubmitMulti, "submit multi"}, {FeatureDeviceLists, "device lists"}} {
		if s.Has(f.bit) {
			names = append(names, f.name)
			s &^= f.bit
		}
	}
	if s != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint32(s)))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Features announces what the relay supports. The relay pushes it right
// after AuthOK, which is frozen and empty; a relay that predates it sends
// none, which means the empty set.
type Features struct {
	Set FeatureSet
}

// EnvelopeLifetime announces how long the relay keeps an envelope
// unacknowledged before it expires (EnvelopeExpired), so that a sender need
// not believe an expiry reported sooner. The relay pushes it right after
// Features, which then carries FeatureEnvelopeLifetime.
type EnvelopeLifetime struct {
	// Lifetime is a whole number of seconds, from 1 s to 2^32-1 s, sent
	// as a u32 of seconds.
	Lifetime time.Duration
}

// RelayKind implements RelayMessage.
func (EnvelopeStatus) RelayKind() RelayKind { return RelayEnvelopeStatus }

// RelayKind implements RelayMessage.
func (Features) RelayKind() RelayKind { return RelayFeatures }

// RelayKind implements RelayMessage.
func (EnvelopeLifetime) RelayKind() RelayKind { return RelayEnvelopeLifetime }

func (EnvelopeStatus) isRelayMessage()   {}
func (Features) isRelayMessage()         {}
func (EnvelopeLifetime) isRelayMessage() {}

// lifetimeSeconds checks d as EnvelopeLifetime carries it.
func lifetimeSeconds(d time.Duration) (uint32, error) {
	if d < time.Second || d%time.Second != 0 || d/time.Second > math.MaxUint32 {
		return 0, fmt.Errorf("envelope lifetime %v: want whole seconds from 1 to %d: %w", d, uint32(math.MaxUint32), ErrMalformed)
	}
	return uint32(d / time.Second), nil
}

// appendRelayPush appends the body of a kind added after version 1.
func appendRelayPush(b []byte, m RelayMessage) ([]byte, error) {
	if isRelayBlob(m) {
		return appendRelayBlob(b, m)
	}
	if isRelayDevice(m) {
		return appendRelayDevice(b, m)
	}
	if isRelayProvision(m) {
		return appendRelayProvision(b, m)
	}
	switch m := m.(type) {
	case CheckDeviceList:
		return appendCheckDeviceList(b, m)
	case EnvelopeStatus:
		if !m.State.valid() {
			return nil, fmt.Errorf("unknown envelope state %d: %w", m.State, ErrMalformed)
		}
		b = append(b, m.EnvelopeID[:]...)
		return append(b, byte(m.State)), nil
	case Features:
		return binary.BigEndian.AppendUint32(b, uint32(m.Set)), nil
	case SenderBlock:
		return appendSenderBlock(b, m)
	case EnvelopeLifetime:
		secs, err := lifetimeSeconds(m.Lifetime)
		if err != nil {
			return nil, err
		}
		return binary.BigEndian.AppendUint32(b, secs), nil
	case SubmitBatch:
		return appendSubmitBatch(b, m)
	case BatchResults:
		return appendBatchResults(b, m)
	case SubmitMulti:
		return appendSubmitMulti(b, m)
	}
	return nil, fmt.Errorf("unsupported type %T: %w", m, ErrMalformed)
}

// relayPush reads the body of a kind added after version 1.
func (r *reader) relayPush(kind RelayKind) RelayMessage {
	if kind >= relayBlobFirst && kind <= relayBlobLast {
		return r.relayBlob(kind)
	}
	if kind >= relayDeviceFirst && kind <= relayDeviceLast {
		return r.relayDevice(kind)
	}
	if kind >= relayProvisionFirst && kind <= relayProvisionLast {
		return r.relayProvision(kind)
	}
	switch kind {
	case RelayCheckDeviceList:
		return r.checkDeviceList()
	case RelayEnvelopeStatus:
		var s EnvelopeStatus
		r.array(s.EnvelopeID[:], "envelope ID")
		s.State = EnvelopeState(r.u8("state"))
		if r.err == nil && !s.State.valid() {
			r.fail(fmt.Errorf("unknown envelope state %d: %w", s.State, ErrMalformed))
		}
		return ok(r, s)
	case RelayFeatures:
		return ok(r, Features{Set: FeatureSet(r.u32("features"))})
	case RelaySenderBlock:
		return r.senderBlock()
	case RelayEnvelopeLifetime:
		secs := r.u32("envelope lifetime")
		if r.err == nil && secs == 0 {
			r.fail(fmt.Errorf("envelope lifetime 0: %w", ErrMalformed))
		}
		return ok(r, EnvelopeLifetime{Lifetime: time.Duration(secs) * time.Second})
	case RelaySubmitBatch:
		return r.submitBatch()
	case RelayBatchResults:
		return r.batchResults()
	case RelaySubmitMulti:
		return r.submitMulti()
	}
	r.fail(fmt.Errorf("kind %d: %w", kind, ErrUnknownRelayKind))
	return nil
}
