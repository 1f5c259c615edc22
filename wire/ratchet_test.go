package wire_test

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var ratchetFormat = format[wire.RatchetMessage]{
	file:   "ratchet.txt",
	title:  "ratchet message",
	fuzz:   "FuzzDecodeRatchetMessage",
	encode: wire.EncodeRatchetMessage,
	decode: wire.DecodeRatchetMessage,
	slack:  func(m wire.RatchetMessage) int { return len(m.Ciphertext) - wire.MinCiphertextSize },
}

func ratchetVectors() []vector[wire.RatchetMessage] {
	return []vector[wire.RatchetMessage]{
		{
			name: "minimum",
			doc: `ratchet key bytes 01.., previous chain length 0, message number 0,
			      ciphertext bytes a0.. of length 16 (a tag alone: an empty plaintext)`,
			v: wire.RatchetMessage{
				Header:     wire.RatchetHeader{RatchetKey: seq32(0x01)},
				Ciphertext: seq(0xa0, 16),
			},
		},
		{
			name: "counters",
			doc: `ratchet key all ff, previous chain length 0x01020304, message number 0xfffffffe,
			      ciphertext bytes 30.. of length 21`,
			v: wire.RatchetMessage{
				Header:     wire.RatchetHeader{RatchetKey: fill32(0xff), PreviousChainLength: 0x01020304, MessageNumber: 0xfffffffe},
				Ciphertext: seq(0x30, 21),
			},
		},
	}
}

func TestRatchetHeaderAppendBinary(t *testing.T) {
	h := ratchetVectors()[1].v.Header
	prefix := []byte("ad prefix")
	got, err := h.AppendBinary(bytes.Clone(prefix))
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(prefix), mustEncode(wire.EncodeRatchetMessage, ratchetVectors()[1].v)[:wire.RatchetHeaderSize]...)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendBinary:\n got %x\nwant %x", got, want)
	}
}

func TestRatchetCiphertextBoundaries(t *testing.T) {
	tests := []struct {
		name string
		size int
		want error
	}{
		{"0", 0, wire.ErrMalformed},
		{"15", 15, wire.ErrMalformed},
		{"16", 16, nil},
		{"max", wire.MaxCiphertextSize, nil},
		{"max+1", wire.MaxCiphertextSize + 1, wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := wire.RatchetMessage{Header: wire.RatchetHeader{RatchetKey: seq32(9), MessageNumber: 3}, Ciphertext: seq(0, tt.size)}
			forged := append(mustAppendHeader(m.Header), m.Ciphertext...)
			if tt.want != nil {
				wantEncodeError(t, wire.EncodeRatchetMessage, m, tt.want)
				dst := []byte("keep")
				got, err := wire.AppendRatchetMessage(dst, m)
				if !errors.Is(err, tt.want) || string(got) != "keep" {
					t.Fatalf("AppendRatchetMessage: got %q, %v; want dst unchanged and %v", got, err, tt.want)
				}
				wantReject(t, wire.DecodeRatchetMessage, forged, tt.want)
				return
			}
			b, err := wire.EncodeRatchetMessage(m)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(b, forged) {
				t.Fatalf("encode: got %s, want %s", brief(b), brief(forged))
			}
			if tt.size == wire.MaxCiphertextSize && len(b) != wire.MaxPayloadSize {
				t.Fatalf("largest ratchet message is %d bytes, want MaxPayloadSize", len(b))
			}
			roundTrip(t, ratchetFormat, b)
		})
	}
}

func TestAppendRatchetMessage(t *testing.T) {
	m := ratchetVectors()[1].v
	want := mustEncode(wire.EncodeRatchetMessage, m)
	for _, prefix := range [][]byte{nil, {}, []byte("prefix"), make([]byte, 3, 1000)} {
		got, err := wire.AppendRatchetMessage(bytes.Clone(prefix), m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(bytes.Clone(prefix), want...)) {
			t.Fatalf("AppendRatchetMessage(%x) = %x, want the prefix and %x", prefix, got, want)
		}
	}
	dst := make([]byte, 0, 256)
	if allocs := testing.AllocsPerRun(100, func() { _, _ = wire.AppendRatchetMessage(dst[:0], m) }); allocs != 0 {
		t.Fatalf("AppendRatchetMessage into a roomy slice allocates %.0f times, want 0", allocs)
	}
}

func TestDecodeRatchetMessageRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"header only", make([]byte, wire.RatchetHeaderSize), wire.ErrMalformed},
		{"ciphertext 15", make([]byte, wire.RatchetHeaderSize+15), wire.ErrMalformed},
		{"over MaxPayloadSize", make([]byte, wire.MaxPayloadSize+1), wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, wire.DecodeRatchetMessage, tt.in, tt.want)
		})
	}
}

func TestDecodeRatchetMessageAllocatesOnce(t *testing.T) {
	b := mustEncode(wire.EncodeRatchetMessage, wire.RatchetMessage{Ciphertext: seq(0, 1000)})
	if allocs := testing.AllocsPerRun(100, func() { _, _ = wire.DecodeRatchetMessage(b) }); allocs != 1 {
		t.Fatalf("DecodeRatchetMessage allocates %.0f times, want 1 (the ciphertext)", allocs)
	}
}

func BenchmarkDecodeRatchetMessage(b *testing.B) {
	for _, size := range []int{16, 1024, wire.MaxFrameSize + 16} {
		in := mustEncode(wire.EncodeRatchetMessage, wire.RatchetMessage{Ciphertext: seq(0, size)})
		b.Run("ciphertext="+strconv.Itoa(size), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.DecodeRatchetMessage(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustAppendHeader(h wire.RatchetHeader) []byte {
	b, err := h.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	return b
}
