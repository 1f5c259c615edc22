package wire_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/parley-chat/parley/wire"
)

// envelopeLifetimeFormat holds the vectors of kind 26, a file of its own so
// that the files frozen before it never change.
var envelopeLifetimeFormat = format[relayValue]{
	file:   "relay-envelope-lifetime.txt",
	title:  "relay protocol: envelope lifetime (kind 26)",
	fuzz:   "FuzzDecodeRelay",
	encode: encodeRelay,
	decode: decodeRelay,
}

func envelopeLifetimeVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{
			name: "envelope-lifetime-7-days",
			doc:  `kind 26, request 0 (a push), lifetime 604800 s (the relay's default, 7 days)`,
			v:    relayValue{0, wire.EnvelopeLifetime{Lifetime: 7 * 24 * time.Hour}},
		},
		{
			name: "envelope-lifetime-1-second",
			doc:  `kind 26, request 0 (a push), lifetime 1 s (the shortest)`,
			v:    relayValue{0, wire.EnvelopeLifetime{Lifetime: time.Second}},
		},
		{
			name: "envelope-lifetime-longest",
			doc:  `kind 26, request 0 (a push), lifetime 4294967295 s (the longest)`,
			v:    relayValue{0, wire.EnvelopeLifetime{Lifetime: math.MaxUint32 * time.Second}},
		},
	}
}

func TestEnvelopeLifetimeVectors(t *testing.T) {
	checkVectors(t, envelopeLifetimeFormat, envelopeLifetimeVectors())
}

// TestEnvelopeLifetimeStrict: a lifetime of 0 s, truncation and trailing
// bytes are refused as ErrMalformed; the encoder refuses what the decoder
// cannot say (below a second, not whole seconds, beyond 2^32-1 s).
func TestEnvelopeLifetimeStrict(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"zero", relayBytes(wire.RelayEnvelopeLifetime, u32(0))},
		{"cut short", relayBytes(wire.RelayEnvelopeLifetime, []byte{0, 0, 1})},
		{"trailing byte", relayBytes(wire.RelayEnvelopeLifetime, u32(1), []byte{0})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := wire.DecodeRelay(tt.in)
			if m != nil || !errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrUnknownRelayKind) {
				t.Fatalf("DecodeRelay(%x) = %v, %v; want nothing and a plain ErrMalformed", tt.in, m, err)
			}
		})
	}
	for _, d := range []time.Duration{0, -time.Second, time.Second - 1, 1500 * time.Millisecond, (math.MaxUint32 + 1) * time.Second} {
		if b, err := wire.EncodeRelay(0, wire.EnvelopeLifetime{Lifetime: d}); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("EncodeRelay of lifetime %v = %x, %v; want ErrMalformed", d, b, err)
		}
	}
	if got := wire.RelayEnvelopeLifetime.String(); got != "envelope lifetime" {
		t.Errorf("kind 26 String() = %q", got)
	}
	if got, want := (wire.FeatureEnvelopeStatus | wire.FeatureEnvelopeLifetime).String(), "envelope status, envelope lifetime"; got != want || wire.FeatureEnvelopeLifetime != 1<<3 {
		t.Errorf("features String() = %q, want %q, bit 3", got, want)
	}
}
