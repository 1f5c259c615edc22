package wire_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var frameFormat = format[wire.Frame]{
	file:   "frame.txt",
	title:  "reliability frame (SPEC 4.1)",
	fuzz:   "FuzzDecodeFrame",
	encode: wire.EncodeFrame,
	decode: wire.DecodeFrame,
}

func frameVectors() []vector[wire.Frame] {
	return []vector[wire.Frame]{
		{
			name: "application-hi",
			doc:  `application message (kind 1), ID bytes 00.., body "hi"`,
			v:    wire.Frame{Kind: wire.FrameApplication, ID: seq16(0x00), Body: []byte("hi")},
		},
		{
			name: "ack",
			doc:  `acknowledgement (kind 2), ID bytes 00..`,
			v:    wire.Frame{Kind: wire.FrameAck, ID: seq16(0x00)},
		},
		{
			name: "application-empty",
			doc:  `application message (kind 1), ID all 00, empty body`,
			v:    wire.Frame{Kind: wire.FrameApplication, Body: []byte{}},
		},
		{
			name: "ack-ff",
			doc:  `acknowledgement (kind 2), ID all ff`,
			v:    wire.Frame{Kind: wire.FrameAck, ID: wire.LogicalID(bytes.Repeat([]byte{0xff}, 16))},
		},
	}
}

// TestFrameSpecVectors pins the four vectors of SPEC 4.1 independently of
// the vector file.
func TestFrameSpecVectors(t *testing.T) {
	spec := map[string]string{
		"application-hi":    "0101000102030405060708090a0b0c0d0e0f000000026869",
		"ack":               "0102000102030405060708090a0b0c0d0e0f",
		"application-empty": "01010000000000000000000000000000000000000000",
		"ack-ff":            "0102ffffffffffffffffffffffffffffffff",
	}
	for _, v := range frameVectors() {
		t.Run(v.name, func(t *testing.T) {
			got, err := wire.EncodeFrame(v.v)
			if err != nil {
				t.Fatal(err)
			}
			if want := spec[v.name]; hex.EncodeToString(got) != want {
				t.Fatalf("got %x, want %s (SPEC 4.1)", got, want)
			}
		})
	}
}

func TestDecodeFrameRejects(t *testing.T) {
	app := func(n uint32, body int) []byte {
		b := []byte{1, 1}
		b = append(b, seq(0, 16)...)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		return append(b, make([]byte, body)...)
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"version 0", []byte{0, 1}, wire.ErrUnsupportedVersion},
		{"version 2", mustHex("0201000102030405060708090a0b0c0d0e0f000000026869"), wire.ErrUnsupportedVersion},
		{"version only", []byte{1}, wire.ErrMalformed},
		{"kind 0", mustHex("0100000102030405060708090a0b0c0d0e0f"), wire.ErrMalformed},
		{"kind 3", mustHex("0103000102030405060708090a0b0c0d0e0f"), wire.ErrMalformed},
		{"ack with a body", mustHex("0102000102030405060708090a0b0c0d0e0f00"), wire.ErrMalformed},
		{"length over remaining", app(3, 2), wire.ErrMalformed},
		{"length under remaining", app(1, 2), wire.ErrMalformed},
		{"length over limit, tiny input", app(wire.MaxBodySize+1, 0), wire.ErrMalformed},
		{"length 2^32-1, tiny input", app(0xffffffff, 0), wire.ErrMalformed},
		{"body MaxBodySize+1", app(wire.MaxBodySize+1, wire.MaxBodySize+1), wire.ErrMessageTooLarge},
		{"input over MaxFrameSize", make([]byte, wire.MaxFrameSize+1), wire.ErrMessageTooLarge},
		{"bad version over MaxFrameSize", bytes.Repeat([]byte{9}, wire.MaxFrameSize+1), wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, wire.DecodeFrame, tt.in, tt.want)
		})
	}
}

func TestFrameBodyBoundaries(t *testing.T) {
	tests := []struct {
		name string
		body int
		want error // from encoding; decoding the same bytes agrees
	}{
		{"empty", 0, nil},
		{"one", 1, nil},
		{"MaxBodySize", wire.MaxBodySize, nil},
		{"MaxBodySize+1", wire.MaxBodySize + 1, wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := wire.Frame{Kind: wire.FrameApplication, ID: seq16(1), Body: seq(7, tt.body)}
			if tt.want != nil {
				wantEncodeError(t, wire.EncodeFrame, f, tt.want)
				return
			}
			b, err := wire.EncodeFrame(f)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if got, want := len(b), 22+tt.body; got != want {
				t.Fatalf("encoded %d bytes, want %d", got, want)
			}
			if tt.body == wire.MaxBodySize && len(b) != wire.MaxFrameSize {
				t.Fatalf("largest frame is %d bytes, want MaxFrameSize %d", len(b), wire.MaxFrameSize)
			}
			roundTrip(t, frameFormat, b)
		})
	}
}

func TestEncodeFrameRejects(t *testing.T) {
	tests := []struct {
		name string
		in   wire.Frame
		want error
	}{
		{"kind 0", wire.Frame{}, wire.ErrMalformed},
		{"kind 3", wire.Frame{Kind: 3}, wire.ErrMalformed},
		{"ack with a body", wire.Frame{Kind: wire.FrameAck, Body: []byte{0}}, wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantEncodeError(t, wire.EncodeFrame, tt.in, tt.want)
		})
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
