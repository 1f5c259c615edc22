package wire_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayPushFormat holds the vectors of the kinds added after relay.txt was
// frozen (15 and 16): a file of their own, so that relay.txt never changes.
var relayPushFormat = format[relayValue]{
	file:   "relay-push.txt",
	title:  "relay protocol messages added after version 1 (kinds 15 and 16)",
	fuzz:   "FuzzDecodeRelay",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayPushVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{
			name: "envelope-status-taken",
			doc:  `kind 15, request 0 (a push), envelope ID bytes 00.., state 1 (taken)`,
			v:    relayValue{0, wire.EnvelopeStatus{EnvelopeID: seq16(0x00), State: wire.EnvelopeTaken}},
		},
		{
			name: "envelope-status-expired",
			doc:  `kind 15, request 0 (a push), envelope ID bytes 80.., state 2 (expired)`,
			v:    relayValue{0, wire.EnvelopeStatus{EnvelopeID: seq16(0x80), State: wire.EnvelopeExpired}},
		},
		{
			name: "features-envelope-status",
			doc:  `kind 16, request 0 (a push), features 0x00000001 (envelope status)`,
			v:    relayValue{0, wire.Features{Set: wire.FeatureEnvelopeStatus}},
		},
		{
			name: "features-none",
			doc:  `kind 16, request 0 (a push), features 0 (none)`,
			v:    relayValue{0, wire.Features{}},
		},
		{
			name: "features-unknown-bits",
			doc:  `kind 16, request 0 (a push), features 0x80000003 (envelope status and two bits of a later relay, kept as they are)`,
			v:    relayValue{0, wire.Features{Set: 0x80000003}},
		},
	}
}

func TestRelayPushVectors(t *testing.T) {
	checkVectors(t, relayPushFormat, relayPushVectors())
}

func TestRelayPushBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		msg    wire.RelayMessage
		forged []byte
		want   error
	}{
		{"state 0", wire.EnvelopeStatus{}, relayBytes(wire.RelayEnvelopeStatus, make([]byte, 16), []byte{0}), wire.ErrMalformed},
		{"state 1", wire.EnvelopeStatus{State: wire.EnvelopeTaken}, nil, nil},
		{"state 2", wire.EnvelopeStatus{State: wire.EnvelopeExpired}, nil, nil},
		{"state 3", wire.EnvelopeStatus{State: 3}, relayBytes(wire.RelayEnvelopeStatus, make([]byte, 16), []byte{3}), wire.ErrMalformed},
		{"state ff", wire.EnvelopeStatus{State: 0xff}, relayBytes(wire.RelayEnvelopeStatus, make([]byte, 16), []byte{0xff}), wire.ErrMalformed},
		{"features all bits", wire.Features{Set: 0xffffffff}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := relayValue{0, tt.msg}
			if tt.want == nil {
				roundTrip(t, relayPushFormat, mustEncode(encodeRelay, v))
				return
			}
			wantEncodeError(t, encodeRelay, v, tt.want)
			wantReject(t, decodeRelay, tt.forged, tt.want)
		})
	}
}

func TestDecodeRelayPushRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"status without state", relayBytes(wire.RelayEnvelopeStatus, make([]byte, 16))},
		{"status with a short ID", relayBytes(wire.RelayEnvelopeStatus, make([]byte, 15))},
		{"status with a trailing byte", relayBytes(wire.RelayEnvelopeStatus, make([]byte, 16), []byte{1, 0})},
		{"features cut short", relayBytes(wire.RelayFeatures, []byte{0, 0, 1})},
		{"features with a trailing byte", relayBytes(wire.RelayFeatures, u32(1), []byte{0})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, decodeRelay, tt.in, wire.ErrMalformed)
		})
	}
}

// TestUnknownRelayKind: a kind past the last known one is an
// ErrUnknownRelayKind, itself an ErrMalformed, so that a client can skip a
// later relay's pushes without skipping a broken message of a known kind.
func TestUnknownRelayKind(t *testing.T) {
	for _, k := range []wire.RelayKind{0, 0xfe, 0xff} {
		_, m, err := wire.DecodeRelay(relayBytes(k))
		if m != nil || !errors.Is(err, wire.ErrUnknownRelayKind) || !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("kind %d: %v, %v; want ErrUnknownRelayKind and ErrMalformed", k, m, err)
		}
	}
	_, _, err := wire.DecodeRelay(relayBytes(wire.RelayFeatures, []byte{1}))
	if errors.Is(err, wire.ErrUnknownRelayKind) {
		t.Errorf("a truncated Features is %v, want a plain ErrMalformed", err)
	}
}

func TestEnvelopeStateAndFeatureNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{wire.EnvelopeTaken.String(), "taken"},
		{wire.EnvelopeExpired.String(), "expired"},
		{wire.EnvelopeState(3).String(), "envelope state 3"},
		{wire.FeatureSet(0).String(), "none"},
		{wire.FeatureEnvelopeStatus.String(), "envelope status"},
		{wire.FeatureSet(0x80000001).String(), "envelope status, 0x80000000"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if !wire.FeatureSet(3).Has(wire.FeatureEnvelopeStatus) || wire.FeatureSet(2).Has(wire.FeatureEnvelopeStatus) {
		t.Error("Has is wrong")
	}
}
