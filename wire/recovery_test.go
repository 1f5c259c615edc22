package wire_test

import (
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var recoveryFormat = format[wire.RecoveryRequest]{
	file:   "recovery.txt",
	title:  "recovery request",
	fuzz:   "FuzzDecodeRecoveryRequest",
	encode: wire.EncodeRecoveryRequest,
	decode: wire.DecodeRecoveryRequest,
}

func recoveryVectors() []vector[wire.RecoveryRequest] {
	return []vector[wire.RecoveryRequest]{
		{
			name: "initiation",
			doc:  `kind 1 (initiation), ref bytes 00.., current bytes 20.., signature bytes 40.. (64)`,
			v:    wire.RecoveryRequest{Kind: wire.RecoveryInitiation, Ref: seq32(0x00), Current: seq32(0x20), Signature: seq64(0x40)},
		},
		{
			name: "chain",
			doc:  `kind 2 (chain), ref bytes 80.., current zero (no session), signature bytes c0.. (64)`,
			v:    wire.RecoveryRequest{Kind: wire.RecoveryChain, Ref: seq32(0x80), Signature: seq64(0xc0)},
		},
	}
}

func TestRecoveryRequestRejects(t *testing.T) {
	valid := mustEncode(wire.EncodeRecoveryRequest, recoveryVectors()[0].v)
	with := func(i int, c byte) []byte {
		b := append([]byte(nil), valid...)
		b[i] = c
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"version 0", with(0, 0), wire.ErrUnsupportedVersion},
		{"version 2", with(0, 2), wire.ErrUnsupportedVersion},
		{"kind 0", with(1, 0), wire.ErrMalformed},
		{"kind 3", with(1, 3), wire.ErrMalformed},
		{"one byte short", valid[:len(valid)-1], wire.ErrMalformed},
		{"one byte long", append(append([]byte(nil), valid...), 0), wire.ErrMalformed},
		{"over the payload limit", make([]byte, wire.MaxPayloadSize+1), wire.ErrMessageTooLarge},
		{"valid", valid, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := wire.DecodeRecoveryRequest(tt.in)
			if !errors.Is(err, tt.want) || tt.want == nil && err != nil {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if err != nil && r != (wire.RecoveryRequest{}) {
				t.Fatalf("an error returned a value: %+v", r)
			}
		})
	}
	if _, err := wire.EncodeRecoveryRequest(wire.RecoveryRequest{Kind: 7}); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("encode kind 7: %v, want ErrMalformed", err)
	}
}

func TestRecoveryAppendSigned(t *testing.T) {
	v := recoveryVectors()[0].v
	b := mustEncode(wire.EncodeRecoveryRequest, v)
	if got := v.AppendSigned([]byte("x")); string(got) != "x"+string(b[:len(b)-64]) {
		t.Fatalf("AppendSigned is not the encoding before the signature")
	}
}

func FuzzDecodeRecoveryRequest(f *testing.F) {
	for _, v := range recoveryVectors() {
		f.Add(mustEncode(wire.EncodeRecoveryRequest, v.v)) // every frozen vector
	}
	f.Add([]byte{1, 2}) // truncated after the kind
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeRecoveryRequest, wire.EncodeRecoveryRequest)
	})
}
