package wire_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// TestLimits pins every size limit, so that a change to one is a visible,
// deliberate change of the format.
func TestLimits(t *testing.T) {
	tests := []struct {
		name      string
		got, want int
	}{
		{"MaxBodySize", wire.MaxBodySize, 196608},
		{"MaxFrameSize", wire.MaxFrameSize, 196630},
		{"MaxAddressSize", wire.MaxAddressSize, 75},
		{"MaxPayloadSize", wire.MaxPayloadSize, 262144},
		{"MaxEnvelopeSize", wire.MaxEnvelopeSize, 1 + 1 + 16 + 1 + 75 + 1 + 75 + 4 + 262144},
		{"RatchetHeaderSize", wire.RatchetHeaderSize, 40},
		{"MinCiphertextSize", wire.MinCiphertextSize, 16},
		{"MaxCiphertextSize", wire.MaxCiphertextSize, 262104},
		{"KEMCiphertextSize", wire.KEMCiphertextSize, 1088},
		{"KEMPublicKeySize", wire.KEMPublicKeySize, 1184},
		{"MaxBundleSize", wire.MaxBundleSize, 1626},
		{"MaxPublishOneTimePreKeys", wire.MaxPublishOneTimePreKeys, 200},
		{"MaxAckRows", wire.MaxAckRows, 256},
		{"MaxErrorMessageSize", wire.MaxErrorMessageSize, 512},
		{"MaxRelayMessageSize", wire.MaxRelayMessageSize, 6 + 8 + 4 + 262318},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

// TestLargestFrameFits checks that the largest frame, encrypted, fits every
// layer around it: a ratchet message or PreKeyMessage within MaxPayloadSize,
// its envelope within MaxEnvelopeSize, and that envelope in a Submit or a
// Deliver within MaxRelayMessageSize.
func TestLargestFrameFits(t *testing.T) {
	ciphertext := seq(0, wire.MaxFrameSize+16) // the largest frame and an AEAD tag
	ratchet, err := wire.EncodeRatchetMessage(wire.RatchetMessage{Ciphertext: ciphertext})
	if err != nil {
		t.Fatalf("ratchet message carrying the largest frame: %v", err)
	}
	preKey, err := wire.EncodePreKeyMessage(wire.PreKeyMessage{Initiation: initiation(true), Message: wire.RatchetMessage{Ciphertext: ciphertext}})
	if err != nil {
		t.Fatalf("PreKeyMessage carrying the largest frame: %v", err)
	}
	for _, p := range [][]byte{ratchet, preKey} {
		if len(p) > wire.MaxPayloadSize {
			t.Fatalf("payload of %d bytes over MaxPayloadSize", len(p))
		}
	}
	envelope, err := wire.EncodeEnvelope(wire.Envelope{
		Type: wire.EnvelopeRatchet, Sender: longAddress, Recipient: longAddress, Payload: seq(0, wire.MaxPayloadSize),
	})
	if err != nil {
		t.Fatalf("envelope with the largest payload: %v", err)
	}
	if len(envelope) != wire.MaxEnvelopeSize {
		t.Fatalf("largest envelope is %d bytes, want MaxEnvelopeSize %d", len(envelope), wire.MaxEnvelopeSize)
	}
	for _, m := range []wire.RelayMessage{
		wire.Submit{Envelope: envelope},
		wire.Deliver{Row: 1<<64 - 1, Envelope: envelope},
	} {
		b, err := wire.EncodeRelay(1<<32-1, m)
		if err != nil {
			t.Fatalf("%s of the largest envelope: %v", m.RelayKind(), err)
		}
		if len(b) > wire.MaxRelayMessageSize {
			t.Fatalf("%s of the largest envelope is %d bytes, over MaxRelayMessageSize", m.RelayKind(), len(b))
		}
		if _, _, err := wire.DecodeRelay(b); err != nil {
			t.Fatalf("%s of the largest envelope does not decode: %v", m.RelayKind(), err)
		}
	}
	publish, err := wire.EncodeRelay(1, wire.PublishBundle{Bundle: func() wire.Bundle {
		b := bundle(false)
		b.Address = longAddress
		return b
	}(), OneTimePreKeys: otks(wire.MaxPublishOneTimePreKeys)})
	if err != nil || len(publish) > wire.MaxRelayMessageSize {
		t.Fatalf("largest PublishBundle: %d bytes, %v; want at most MaxRelayMessageSize", len(publish), err)
	}
}

// allocated returns the bytes f allocates per call, averaged over runs.
// The process's counter also counts what other goroutines allocate
// meanwhile (the runtime, other tests), which only ever adds: the least of
// a few measurements is f's own figure.
func allocated(f func()) uint64 {
	const runs = 100
	f()
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/runs)
	}
	return least
}

// TestForgedLengthsCostNothing feeds every decoder a few bytes that announce
// a huge field: the decoder must check the length against the input before
// it allocates, so what it allocates stays small (an error value).
func TestForgedLengthsCostNothing(t *testing.T) {
	envelope := mustEncode(wire.EncodeEnvelope, validEnvelope())
	tests := []struct {
		name   string
		decode func([]byte) error
		in     []byte
	}{
		{"frame body", func(b []byte) error { _, err := wire.DecodeFrame(b); return err }, mustHex("0101000102030405060708090a0b0c0d0e0f00030000")},
		{"envelope payload", func(b []byte) error { _, err := wire.DecodeEnvelope(b); return err }, append(envelope[:32:32], 0, 4, 0, 0, 1)},
		{"relay envelope", func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err }, relayBytes(wire.RelayDeliver, u64(1), u32(wire.MaxEnvelopeSize), []byte{1})},
		{"relay bundle", func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err }, relayBytes(wire.RelayBundleReply, u32(wire.MaxBundleSize), []byte{1})},
		{"relay rows", func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err }, relayBytes(wire.RelayAckRows, u16(wire.MaxAckRows), u64(1))},
		{"relay keys", func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err }, relayBytes(wire.RelayPublishBundle, u32(len(forgeBundle(bundle(false)))), forgeBundle(bundle(false)), u16(wire.MaxPublishOneTimePreKeys))},
		{"relay error message", func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err }, relayBytes(wire.RelayError, u16(1), u16(wire.MaxErrorMessageSize), []byte("x"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.decode(tt.in); err == nil {
				t.Fatal("forged input decodes")
			}
			// The PublishBundle case decodes its bundle (an address
			// string) before it meets the forged count.
			if got := allocated(func() { _ = tt.decode(tt.in) }); got > 512 {
				t.Fatalf("decoding %d forged bytes allocates %d bytes, want at most 512", len(tt.in), got)
			}
		})
	}
}

// TestDecodeAllocatesAtMostItsInput decodes every frozen vector and checks
// that it allocates no more than its input, give or take the allocator's
// size classes (a decoded relay message is a struct boxed in an interface,
// rounded up to the next class).
func TestDecodeAllocatesAtMostItsInput(t *testing.T) {
	check := func(t *testing.T, name string, b []byte, decode func([]byte) error) {
		t.Run(name, func(t *testing.T) {
			if got, limit := allocated(func() { _ = decode(b) }), uint64(len(b)*5/4+256); got > limit {
				t.Fatalf("decoding %d bytes allocates %d bytes, want at most %d", len(b), got, limit)
			}
		})
	}
	for _, v := range envelopeVectors() {
		check(t, "envelope/"+v.name, mustEncode(wire.EncodeEnvelope, v.v), func(b []byte) error { _, err := wire.DecodeEnvelope(b); return err })
	}
	for _, v := range preKeyVectors() {
		check(t, "prekey/"+v.name, mustEncode(wire.EncodePreKeyMessage, v.v), func(b []byte) error { _, err := wire.DecodePreKeyMessage(b); return err })
	}
	for _, v := range bundleVectors() {
		check(t, "bundle/"+v.name, mustEncode(wire.EncodeBundle, v.v), func(b []byte) error { _, err := wire.DecodeBundle(b); return err })
	}
	for _, v := range relayVectors() {
		check(t, "relay/"+v.name, mustEncode(encodeRelay, v.v), func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err })
	}
	big := mustEncode(encodeRelay, relayValue{1, wire.PublishBundle{Bundle: bundle(false), OneTimePreKeys: otks(wire.MaxPublishOneTimePreKeys)}})
	check(t, "relay/publish-200", big, func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err })
	rows := mustEncode(encodeRelay, relayValue{1, wire.AckRows{Rows: rows(wire.MaxAckRows)}})
	check(t, "relay/ack-256", rows, func(b []byte) error { _, _, err := wire.DecodeRelay(b); return err })
}
