package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// preKeyMinSize is the shortest PreKeyMessage: no one-time prekey and a
// ratchet message with a bare tag.
const preKeyMinSize = 1 + 32 + 32 + 64 + 32 + 4 + 4 + 1 + wire.KEMCiphertextSize + 32 + wire.RatchetHeaderSize + wire.MinCiphertextSize

var preKeyFormat = format[wire.PreKeyMessage]{
	file:   "prekey-v2.txt",
	title:  "PreKeyMessage",
	fuzz:   "FuzzDecodePreKeyMessage",
	encode: wire.EncodePreKeyMessage,
	decode: wire.DecodePreKeyMessage,
	slack:  func(m wire.PreKeyMessage) int { return len(m.Message.Ciphertext) - wire.MinCiphertextSize },
}

func kemCiphertext(start byte) (a [wire.KEMCiphertextSize]byte) {
	copy(a[:], seq(start, len(a)))
	return a
}

func initiation(withOTK bool) wire.InitiationHeader {
	h := wire.InitiationHeader{
		IdentitySigningKey: seq32(0x10),
		IdentityDHKey:      seq32(0x30),
		IdentitySignature:  seq64(0x50),
		EphemeralKey:       seq32(0x90),
		SignedPreKeyID:     1,
		KEMPreKeyID:        2,
		KEMCiphertext:      kemCiphertext(0x00),
	}
	if withOTK {
		h.HasOneTimePreKey, h.OneTimePreKeyID = true, 3
	}
	return h
}

func preKeyVectors() []vector[wire.PreKeyMessage] {
	noOTK := initiation(false)
	noOTK.SignedPreKeyID, noOTK.KEMPreKeyID = 0xfffffffe, 0x80000000
	replacing := initiation(true)
	replacing.Replaces = seq32(0xe0)
	return []vector[wire.PreKeyMessage]{
		{
			name: "one-time-prekey",
			doc: `identity signing key bytes 10.., identity DH key bytes 30.., identity signature bytes 50.. (64),
			      ephemeral key bytes 90.., signed prekey ID 1, KEM prekey ID 2, one-time prekey ID 3,
			      KEM ciphertext bytes 00.. (1088), message: the ratchet message "minimum" of ratchet.txt`,
			v: wire.PreKeyMessage{Initiation: initiation(true), Message: ratchetVectors()[0].v},
		},
		{
			name: "no-one-time-prekey",
			doc: `as "one-time-prekey" but signed prekey ID 0xfffffffe, KEM prekey ID 0x80000000, no one-time prekey,
			      message: the ratchet message "counters" of ratchet.txt`,
			v: wire.PreKeyMessage{Initiation: noOTK, Message: ratchetVectors()[1].v},
		},
		{
			name: "replaces",
			doc: `as "one-time-prekey" but replacing the initiation bytes e0..,
			      message: the ratchet message "minimum" of ratchet.txt`,
			v: wire.PreKeyMessage{Initiation: replacing, Message: ratchetVectors()[0].v},
		},
	}
}

func TestInitiationHeaderAppendBinary(t *testing.T) {
	for _, v := range preKeyVectors() {
		t.Run(v.name, func(t *testing.T) {
			msg := mustEncode(wire.EncodePreKeyMessage, v.v)
			ratchet := mustEncode(wire.EncodeRatchetMessage, v.v.Message)
			got, err := v.v.Initiation.AppendBinary([]byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			want := append([]byte("x"), msg[:len(msg)-len(ratchet)]...)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendBinary:\n got %s\nwant %s", brief(got), brief(want))
			}
		})
	}
	h := initiation(false)
	h.OneTimePreKeyID = 5
	got, err := h.AppendBinary([]byte("x"))
	if !errors.Is(err, wire.ErrMalformed) || string(got) != "x" {
		t.Fatalf("AppendBinary of an ID without a one-time prekey: got %q, %v; want \"x\" and ErrMalformed", got, err)
	}
}

func TestPreKeyMessageBoundaries(t *testing.T) {
	// room is the largest ciphertext with and without a one-time prekey.
	room := func(otk bool) int {
		n := wire.MaxPayloadSize - (preKeyMinSize - wire.MinCiphertextSize)
		if otk {
			n -= 4
		}
		return n
	}
	tests := []struct {
		name       string
		otk        bool
		otkID      uint32
		ciphertext int
		want       error
	}{
		{"ciphertext 15", true, 3, 15, wire.ErrMalformed},
		{"ciphertext 16", true, 3, 16, nil},
		{"ciphertext 16, no one-time prekey", false, 0, 16, nil},
		{"one-time prekey ID 0", true, 0, 16, nil},
		{"ID without a one-time prekey", false, 3, 16, wire.ErrMalformed},
		{"ciphertext max", true, 3, room(true), nil},
		{"ciphertext max+1", true, 3, room(true) + 1, wire.ErrMessageTooLarge},
		{"ciphertext max, no one-time prekey", false, 0, room(false), nil},
		{"ciphertext max+1, no one-time prekey", false, 0, room(false) + 1, wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := initiation(tt.otk)
			h.OneTimePreKeyID = tt.otkID
			m := wire.PreKeyMessage{Initiation: h, Message: wire.RatchetMessage{Ciphertext: seq(0, tt.ciphertext)}}
			if tt.want != nil {
				wantEncodeError(t, wire.EncodePreKeyMessage, m, tt.want)
				if tt.ciphertext != 16 { // a forged ciphertext length is rejected on decode too
					b := mustForgePreKey(m)
					want := tt.want
					if len(b) <= wire.MaxPayloadSize {
						want = wire.ErrMalformed
					}
					wantReject(t, wire.DecodePreKeyMessage, b, want)
				}
				return
			}
			b, err := wire.EncodePreKeyMessage(m)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if tt.ciphertext > 16 && len(b) != wire.MaxPayloadSize {
				t.Fatalf("largest PreKeyMessage is %d bytes, want MaxPayloadSize", len(b))
			}
			got, err := wire.DecodePreKeyMessage(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.Initiation != m.Initiation || got.Message.Header != m.Message.Header || !bytes.Equal(got.Message.Ciphertext, m.Message.Ciphertext) {
				t.Fatal("decode(encode(m)) differs from m")
			}
		})
	}
}

// mustForgePreKey lays out m with its header checked but its ciphertext not.
func mustForgePreKey(m wire.PreKeyMessage) []byte {
	b, err := m.Initiation.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	b, _ = m.Message.Header.AppendBinary(b)
	return append(b, m.Message.Ciphertext...)
}

func TestDecodePreKeyMessageRejects(t *testing.T) {
	valid := mustEncode(wire.EncodePreKeyMessage, preKeyVectors()[0].v)
	const flagAt = 1 + 32 + 32 + 64 + 32 + 4 + 4
	with := func(i int, c byte) []byte {
		b := bytes.Clone(valid)
		b[i] = c
		return b
	}
	withoutOTK := mustEncode(wire.EncodePreKeyMessage, wire.PreKeyMessage{Initiation: initiation(false), Message: ratchetVectors()[0].v})
	withoutOTK[flagAt] = 1
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"version 0", with(0, 0), wire.ErrUnsupportedVersion},
		{"version 1", with(0, 1), wire.ErrUnsupportedVersion},
		{"version 3 alone", []byte{3}, wire.ErrUnsupportedVersion},
		{"over MaxPayloadSize", append(bytes.Clone(valid), make([]byte, wire.MaxPayloadSize)...), wire.ErrMessageTooLarge},
		{"flag 2", with(flagAt, 2), wire.ErrMalformed},
		{"flag ff", with(flagAt, 0xff), wire.ErrMalformed},
		// Flag 1 on a message laid out without an ID: the header takes
		// four bytes of the ratchet message, whose ciphertext is then too
		// short.
		{"flag 1 without an ID", withoutOTK, wire.ErrMalformed},
		{"no ratchet message", valid[:len(valid)-wire.RatchetHeaderSize-wire.MinCiphertextSize], wire.ErrMalformed},
		{"ratchet ciphertext 15", valid[:len(valid)-1], wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, wire.DecodePreKeyMessage, tt.in, tt.want)
		})
	}
}
