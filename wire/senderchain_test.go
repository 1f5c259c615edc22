package wire_test

import (
	"bytes"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var chainAnnounceFormat = format[wire.ChainAnnounce]{
	file:   "chain-announce.txt",
	title:  "sender chain announcement (frame kind 8)",
	fuzz:   "FuzzDecodeChainAnnounce",
	encode: wire.EncodeChainAnnounce,
	decode: wire.DecodeChainAnnounce,
}

var needChainFormat = format[wire.NeedChain]{
	file:   "need-chain.txt",
	title:  "need-chain request (frame kind 9)",
	fuzz:   "FuzzDecodeNeedChain",
	encode: wire.EncodeNeedChain,
	decode: wire.DecodeNeedChain,
}

var chainMessageFormat = format[wire.ChainMessage]{
	file:   "chain-message.txt",
	title:  "chain message (the payload of envelope type 4)",
	fuzz:   "FuzzDecodeChainMessage",
	encode: wire.EncodeChainMessage,
	decode: wire.DecodeChainMessage,
}

func chainAnnounceVectors() []vector[wire.ChainAnnounce] {
	return []vector[wire.ChainAnnounce]{
		{
			name: "chain-announce",
			doc: `kind 8, id bytes 00.., group bytes 10.., generation 3, chain bytes 20..,
				position 0, chain key bytes 40.., signing key bytes 60..`,
			v: wire.ChainAnnounce{ID: seq16(0x00), Group: seq16(0x10), Generation: 3, Chain: seq16(0x20),
				Position: 0, ChainKey: seq32(0x40), SigningKey: seq32(0x60)},
		},
		{
			name: "chain-announce-mid-chain",
			doc: `kind 8, id bytes 80.., group bytes 10.., generation 0x0102030405060708, chain bytes 20..,
				position 0x01020304 (a member added mid-chain), chain key bytes a0.., signing key bytes c0..`,
			v: wire.ChainAnnounce{ID: seq16(0x80), Group: seq16(0x10), Generation: 0x0102030405060708, Chain: seq16(0x20),
				Position: 0x01020304, ChainKey: seq32(0xa0), SigningKey: seq32(0xc0)},
		},
	}
}

func needChainVectors() []vector[wire.NeedChain] {
	return []vector[wire.NeedChain]{
		{
			name: "need-chain",
			doc:  `kind 9, group bytes 10.., generation 3, chain bytes 20.., position 7`,
			v:    wire.NeedChain{Group: seq16(0x10), Generation: 3, Chain: seq16(0x20), Position: 7},
		},
	}
}

func chainMessageVectors() []vector[wire.ChainMessage] {
	return []vector[wire.ChainMessage]{
		{
			name: "chain-message-empty",
			doc: `version 1, chain bytes 20.., position 0, salt bytes 30..,
				ciphertext bytes 40.. (16 bytes: a tag alone), signature bytes 80..`,
			v: wire.ChainMessage{Chain: seq16(0x20), Position: 0, Salt: seq16(0x30),
				Ciphertext: seq(0x40, 16), Signature: seq64(0x80)},
		},
		{
			name: "chain-message",
			doc: `version 1, chain bytes 20.., position 0xfffffffe,
				salt bytes f0.., ciphertext bytes 40.. (21 bytes), signature bytes 80..`,
			v: wire.ChainMessage{Chain: seq16(0x20), Position: 0xfffffffe,
				Salt: seq16(0xf0), Ciphertext: seq(0x40, 21), Signature: seq64(0x80)},
		},
	}
}

func TestSenderChainVectors(t *testing.T) {
	t.Run("announce", func(t *testing.T) { checkVectors(t, chainAnnounceFormat, chainAnnounceVectors()) })
	t.Run("need", func(t *testing.T) { checkVectors(t, needChainFormat, needChainVectors()) })
	t.Run("message", func(t *testing.T) { checkVectors(t, chainMessageFormat, chainMessageVectors()) })
}

// TestSenderChainSizes: the frames are their documented sizes, and a chain
// message at each ciphertext limit encodes and decodes while one past it is
// refused by both sides.
func TestSenderChainSizes(t *testing.T) {
	a := mustEncode(wire.EncodeChainAnnounce, chainAnnounceVectors()[0].v)
	if len(a) != wire.ChainAnnounceSize {
		t.Errorf("announcement is %d bytes, want %d", len(a), wire.ChainAnnounceSize)
	}
	n := mustEncode(wire.EncodeNeedChain, needChainVectors()[0].v)
	if len(n) != wire.NeedChainSize {
		t.Errorf("need-chain is %d bytes, want %d", len(n), wire.NeedChainSize)
	}
	m := chainMessageVectors()[0].v
	if h := m.Header(); !bytes.Equal(h, mustEncode(wire.EncodeChainMessage, m)[:wire.ChainMessageHeaderSize]) {
		t.Errorf("Header() = %x, not the encoding's first %d bytes", h, wire.ChainMessageHeaderSize)
	}
	for _, tt := range []struct {
		size int
		want error
	}{
		{wire.ChainTagSize - 1, wire.ErrMalformed},
		{wire.ChainTagSize, nil},
		{wire.MaxChainCiphertextSize, nil},
		{wire.MaxChainCiphertextSize + 1, wire.ErrMessageTooLarge},
	} {
		m.Ciphertext = make([]byte, tt.size)
		if tt.want != nil {
			wantEncodeError(t, wire.EncodeChainMessage, m, tt.want)
			continue
		}
		b := mustEncode(wire.EncodeChainMessage, m)
		roundTrip(t, chainMessageFormat, b)
		if tt.size == wire.MaxChainCiphertextSize && len(b) != wire.MaxChainMessageSize {
			t.Errorf("largest chain message is %d bytes, want MaxChainMessageSize %d", len(b), wire.MaxChainMessageSize)
		}
	}
	if wire.MaxChainMessageSize > wire.MaxPayloadSize || wire.MaxChainMessageSize > wire.MaxSubmitMultiPayloadSize {
		t.Errorf("MaxChainMessageSize %d fits neither an envelope nor a SubmitMulti", wire.MaxChainMessageSize)
	}
}

// TestDecodeSenderChainRejects: another version, another kind and a forged
// ciphertext length are refused.
func TestDecodeSenderChainRejects(t *testing.T) {
	a := mustEncode(wire.EncodeChainAnnounce, chainAnnounceVectors()[0].v)
	with := func(b []byte, i int, c byte) []byte { b = bytes.Clone(b); b[i] = c; return b }
	wantReject(t, wire.DecodeChainAnnounce, with(a, 0, 2), wire.ErrUnsupportedVersion)
	wantReject(t, wire.DecodeChainAnnounce, with(a, 1, byte(wire.FrameNeedChain)), wire.ErrMalformed)
	wantReject(t, wire.DecodeChainAnnounce, make([]byte, wire.MaxFrameSize+1), wire.ErrMessageTooLarge)
	n := mustEncode(wire.EncodeNeedChain, needChainVectors()[0].v)
	wantReject(t, wire.DecodeNeedChain, with(n, 1, byte(wire.FrameChainAnnounce)), wire.ErrMalformed)
	m := mustEncode(wire.EncodeChainMessage, chainMessageVectors()[0].v)
	wantReject(t, wire.DecodeChainMessage, with(m, 0, 2), wire.ErrUnsupportedVersion)
	// Offsets: header 37, ciphertext length 37..40.
	wantReject(t, wire.DecodeChainMessage, with(m, 40, 15), wire.ErrMalformed)
	wantReject(t, wire.DecodeChainMessage, with(m, 37, 0xff), wire.ErrMalformed)
	wantReject(t, wire.DecodeChainMessage, make([]byte, wire.MaxChainMessageSize+1), wire.ErrMessageTooLarge)
	// Kinds 8 and 9 are reported: the engine handles them.
	if k, err := wire.PeekFrameKind(a); err != nil || k != wire.FrameChainAnnounce {
		t.Errorf("PeekFrameKind(announcement) = %d, %v", k, err)
	}
	if k, err := wire.PeekFrameKind(n); err != nil || k != wire.FrameNeedChain {
		t.Errorf("PeekFrameKind(need chain) = %d, %v", k, err)
	}
	if wire.EnvelopeChain.String() != "chain" {
		t.Errorf("EnvelopeChain.String() = %q", wire.EnvelopeChain.String())
	}
}

func FuzzDecodeChainAnnounce(f *testing.F) {
	for _, v := range chainAnnounceVectors() {
		b := mustEncode(wire.EncodeChainAnnounce, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // one byte short
		f.Add(append(b, 0)) // a trailing byte
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeChainAnnounce, wire.EncodeChainAnnounce)
	})
}

func FuzzDecodeNeedChain(f *testing.F) {
	for _, v := range needChainVectors() {
		b := mustEncode(wire.EncodeNeedChain, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // one byte short
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeNeedChain, wire.EncodeNeedChain)
	})
}

func FuzzDecodeChainMessage(f *testing.F) {
	for _, v := range chainMessageVectors() {
		b := mustEncode(wire.EncodeChainMessage, v.v)
		f.Add(b)             // a frozen vector
		f.Add(b[:len(b)-1])  // the signature one byte short
		f.Add(b[:len(b)-64]) // no signature
		f.Add(append(b, 0))  // a trailing byte
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeChainMessage, wire.EncodeChainMessage)
	})
}
