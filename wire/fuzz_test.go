package wire_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// The fuzz targets share one invariant: an error returns nothing (the zero
// value), and a success re-encodes to exactly the input. Seeds come from
// f.Add below and from the committed corpora in testdata/fuzz/FuzzXxx, which
// hold every frozen vector; plain `go test` runs them all.

// fuzzRoundTrip checks the invariant for one decoder and its encoder.
func fuzzRoundTrip[T any](t *testing.T, b []byte, decode func([]byte) (T, error), encode func(T) ([]byte, error)) {
	v, err := decode(b)
	if err != nil {
		if !reflect.ValueOf(&v).Elem().IsZero() {
			t.Fatalf("%x fails to decode (%v) but returns %+v", b, err, v)
		}
		return
	}
	again, err := encode(v)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("%x decodes but re-encodes as %x (%v)", b, again, err)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add(mustHex("0101000102030405060708090a0b0c0d0e0f000000026869")) // application "hi" (SPEC 4.1)
	f.Add(mustHex("0102ffffffffffffffffffffffffffffffff"))             // acknowledgement (SPEC 4.1)
	f.Add(mustHex("0101000102030405060708090a0b0c0d0e0fffffffff"))     // length 2^32-1, no body
	f.Add(mustHex("0201000102030405060708090a0b0c0d0e0f00000000"))     // version 2
	f.Add(mustHex("0103000102030405060708090a0b0c0d0e0f"))             // kind 3
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeFrame, wire.EncodeFrame)
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, v := range envelopeVectors() {
		f.Add(mustEncode(wire.EncodeEnvelope, v.v)) // every frozen vector
	}
	valid := mustEncode(wire.EncodeEnvelope, validEnvelope())
	f.Add(valid[:len(valid)-1])                                    // payload cut short
	f.Add(append(bytes.Clone(valid[:32]), 0xff, 0xff, 0xff, 0xff)) // payload length 2^32-1, no payload
	f.Add(append([]byte{1, 2}, make([]byte, 16)...))               // cut after the ID
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeEnvelope, wire.EncodeEnvelope)
	})
}

func FuzzDecodeRatchetMessage(f *testing.F) {
	for _, v := range ratchetVectors() {
		f.Add(mustEncode(wire.EncodeRatchetMessage, v.v)) // every frozen vector
	}
	f.Add(make([]byte, wire.RatchetHeaderSize+wire.MinCiphertextSize-1)) // ciphertext one byte short
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeRatchetMessage, wire.EncodeRatchetMessage)
	})
}

func FuzzDecodePreKeyMessage(f *testing.F) {
	for _, v := range preKeyVectors() {
		b := mustEncode(wire.EncodePreKeyMessage, v.v)
		f.Add(b)                       // a frozen vector
		f.Add(b[:len(b)-17])           // its ratchet ciphertext one byte short
		f.Add(append([]byte{2}, b...)) // an unknown version in front
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodePreKeyMessage, wire.EncodePreKeyMessage)
	})
}

func FuzzDecodeBundle(f *testing.F) {
	for _, v := range bundleVectors() {
		b := mustEncode(wire.EncodeBundle, v.v)
		f.Add(b)               // a frozen vector
		f.Add(b[:len(b)-1])    // cut by one byte
		f.Add(append(b, 0x00)) // a trailing byte
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeBundle, wire.EncodeBundle)
	})
}

func FuzzDecodeRelay(f *testing.F) {
	for _, v := range relayVectors() {
		f.Add(mustEncode(encodeRelay, v.v)) // every frozen vector, one per kind
	}
	f.Add(relayBytes(wire.RelayAckRows, u16(0xffff), u64(1)))             // a forged row count
	f.Add(relayBytes(wire.RelaySubmit, u32(-1), []byte{1}))               // a forged envelope length
	f.Add(relayBytes(wire.RelayPublishBundle, u32(wire.MaxBundleSize+1))) // a bundle length over the limit
	f.Add(relayBytes(14))                                                 // an unknown kind
	for _, v := range relayPushVectors() {
		f.Add(mustEncode(encodeRelay, v.v)) // the kinds added later, 15 and 16
	}
	f.Add(relayBytes(wire.RelayEnvelopeStatus, make([]byte, 16), []byte{3})) // an unknown envelope state
	f.Add(relayBytes(0xfe))                                                  // a kind past the last one
	for _, v := range senderBlockVectors() {
		f.Add(mustEncode(encodeRelay, v.v)) // kind 17
	}
	f.Add(relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a/1"), []byte{2})) // a blocked byte neither 0 nor 1
	for _, v := range relayBlobVectors() {
		f.Add(mustEncode(encodeRelay, v.v)) // the blob kinds, 18 to 25
	}
	f.Add(relayBytes(wire.RelayBlobPut, make([]byte, 16), u64(0), u32(-1))) // a forged chunk length
	f.Add(relayBytes(wire.RelayBlobHeld, make([]byte, 16), u64(2), u64(1))) // held past the size
	f.Add(relayBytes(wire.RelayBlobCreate, u64(1<<63)))                     // a size that is negative as an int64
	for _, v := range envelopeLifetimeVectors() {
		f.Add(mustEncode(encodeRelay, v.v)) // kind 26
	}
	f.Add(relayBytes(wire.RelayEnvelopeLifetime, u32(0))) // a lifetime of 0 s
	f.Add(relayBytes(29))                                 // a kind past the last one
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, decodeRelay, encodeRelay)
	})
}
