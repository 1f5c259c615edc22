package wire_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var envelopeFormat = format[wire.Envelope]{
	file:   "envelope-v2.txt",
	title:  "envelope",
	fuzz:   "FuzzDecodeEnvelope",
	encode: wire.EncodeEnvelope,
	decode: wire.DecodeEnvelope,
}

// longAddress is a 75-byte address: a 64-character user and the largest
// device number.
var longAddress = strings.Repeat("z", 64) + "/2147483647"

func envelopeVectors() []vector[wire.Envelope] {
	ratchet := mustEncode(wire.EncodeRatchetMessage, ratchetVectors()[0].v)
	return []vector[wire.Envelope]{
		{
			name: "ratchet",
			doc: `type 2 (ratchet), ID bytes 00.., sender "alice/1", recipient "bob/1",
			      payload: the ratchet message "minimum" of ratchet.txt (56 bytes)`,
			v: wire.Envelope{Type: wire.EnvelopeRatchet, ID: seq16(0x00), Sender: "alice/1", Recipient: "bob/1", Payload: ratchet},
		},
		{
			name: "prekey-one-byte",
			doc: `type 1 (prekey), ID all ff, sender "b/2", recipient "a/2147483647",
			      payload the single byte 2a (the envelope does not parse its payload)`,
			v: wire.Envelope{Type: wire.EnvelopePreKey, ID: wire.EnvelopeID(bytes.Repeat([]byte{0xff}, 16)), Sender: "b/2", Recipient: "a/2147483647", Payload: []byte{0x2a}},
		},
		{
			name: "long-sender",
			doc: `type 2 (ratchet), ID bytes 80.., sender 64 "z" then "/2147483647" (75 bytes, the maximum),
			      recipient "!#~" (the lowest and highest address bytes), payload bytes 00.. of length 3`,
			v: wire.Envelope{Type: wire.EnvelopeRatchet, ID: seq16(0x80), Sender: longAddress, Recipient: "!#~", Payload: seq(0, 3)},
		},
		{
			name: "recovery",
			doc: `type 3 (recovery), ID bytes 40.., sender "bob/1", recipient "alice/1",
			      payload: the recovery request "chain" of recovery.txt (130 bytes)`,
			v: wire.Envelope{Type: wire.EnvelopeRecovery, ID: seq16(0x40), Sender: "bob/1", Recipient: "alice/1",
				Payload: mustEncode(wire.EncodeRecoveryRequest, recoveryVectors()[1].v)},
		},
	}
}

func mustEncode[T any](encode func(T) ([]byte, error), v T) []byte {
	b, err := encode(v)
	if err != nil {
		panic(err)
	}
	return b
}

// validEnvelope is a valid envelope the boundary tests change one field of.
func validEnvelope() wire.Envelope {
	return wire.Envelope{Type: wire.EnvelopeRatchet, ID: seq16(0), Sender: "alice/1", Recipient: "bob/1", Payload: []byte{1}}
}

func TestEnvelopeBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		change func(e *wire.Envelope)
		want   error // nil: encodes, and decodes back to itself
	}{
		{"type 0", func(e *wire.Envelope) { e.Type = 0 }, wire.ErrMalformed},
		{"type prekey", func(e *wire.Envelope) { e.Type = wire.EnvelopePreKey }, nil},
		{"type 3", func(e *wire.Envelope) { e.Type = 3 }, nil},
		{"type 4", func(e *wire.Envelope) { e.Type = 4 }, nil},
		{"type 5", func(e *wire.Envelope) { e.Type = 5 }, wire.ErrMalformed},
		{"sender length 0", func(e *wire.Envelope) { e.Sender = "" }, wire.ErrMalformed},
		{"sender length 1", func(e *wire.Envelope) { e.Sender = "a" }, nil},
		{"sender length 75", func(e *wire.Envelope) { e.Sender = longAddress }, nil},
		{"sender length 76", func(e *wire.Envelope) { e.Sender = longAddress + "0" }, wire.ErrMalformed},
		{"recipient length 0", func(e *wire.Envelope) { e.Recipient = "" }, wire.ErrMalformed},
		{"recipient length 1", func(e *wire.Envelope) { e.Recipient = "~" }, nil},
		{"recipient length 75", func(e *wire.Envelope) { e.Recipient = longAddress }, nil},
		{"recipient length 76", func(e *wire.Envelope) { e.Recipient = "0" + longAddress }, wire.ErrMalformed},
		{"sender with a space", func(e *wire.Envelope) { e.Sender = "alice /1" }, wire.ErrMalformed},
		{"sender with 0x7f", func(e *wire.Envelope) { e.Sender = "alice/1\x7f" }, wire.ErrMalformed},
		{"sender with 0x80", func(e *wire.Envelope) { e.Sender = "al\x80ce/1" }, wire.ErrMalformed},
		{"recipient with a newline", func(e *wire.Envelope) { e.Recipient = "bob/1\n" }, wire.ErrMalformed},
		{"recipient with NUL", func(e *wire.Envelope) { e.Recipient = "\x00" }, wire.ErrMalformed},
		{"payload 0", func(e *wire.Envelope) { e.Payload = nil }, wire.ErrMalformed},
		{"payload 0, not nil", func(e *wire.Envelope) { e.Payload = []byte{} }, wire.ErrMalformed},
		{"payload 1", func(e *wire.Envelope) { e.Payload = []byte{0} }, nil},
		{"payload max", func(e *wire.Envelope) { e.Payload = seq(3, wire.MaxPayloadSize) }, nil},
		{"payload max+1", func(e *wire.Envelope) { e.Payload = seq(3, wire.MaxPayloadSize+1) }, wire.ErrMessageTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := validEnvelope()
			tt.change(&e)
			if tt.want != nil {
				wantEncodeError(t, wire.EncodeEnvelope, e, tt.want)
				// The same field on the wire is rejected too. Forge it
				// from a valid encoding with the field swapped in.
				if b := forgeEnvelope(e); b != nil {
					want := wire.ErrMalformed
					if len(b) > wire.MaxEnvelopeSize {
						want = wire.ErrMessageTooLarge
					}
					wantReject(t, wire.DecodeEnvelope, b, want)
				}
				return
			}
			b, err := wire.EncodeEnvelope(e)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, err := wire.DecodeEnvelope(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.Type != e.Type || got.ID != e.ID || got.Sender != e.Sender || got.Recipient != e.Recipient || !bytes.Equal(got.Payload, e.Payload) {
				t.Fatalf("decode(encode(e)) = %+v, want %+v", got, e)
			}
		})
	}
}

// forgeEnvelope lays out e without any checks, or returns nil when a field
// cannot be laid out at all (an address over 255 bytes).
func forgeEnvelope(e wire.Envelope) []byte {
	if len(e.Sender) > 255 || len(e.Recipient) > 255 {
		return nil
	}
	b := []byte{wire.EnvelopeVersion, byte(e.Type)}
	b = append(b, e.ID[:]...)
	b = append(append(b, byte(len(e.Sender))), e.Sender...)
	b = append(append(b, byte(len(e.Recipient))), e.Recipient...)
	n := len(e.Payload)
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(b, e.Payload...)
}

func TestForgeEnvelopeMatchesEncode(t *testing.T) {
	for _, v := range envelopeVectors() {
		if got, want := forgeEnvelope(v.v), mustEncode(wire.EncodeEnvelope, v.v); !bytes.Equal(got, want) {
			t.Fatalf("%s: forged %x, encoded %x", v.name, got, want)
		}
	}
}

func TestDecodeEnvelopeRejects(t *testing.T) {
	valid := mustEncode(wire.EncodeEnvelope, validEnvelope())
	with := func(i int, c byte) []byte {
		b := bytes.Clone(valid)
		b[i] = c
		return b
	}
	// valid: 02 02 id[16] 07 "alice/1" 05 "bob/1" 00000001 01
	const senderLen, recipientLen, payloadLen = 18, 26, 32
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, wire.ErrMalformed},
		{"version 0", with(0, 0), wire.ErrUnsupportedVersion},
		{"version 1", with(0, 1), wire.ErrUnsupportedVersion},
		{"version 3", with(0, 3), wire.ErrUnsupportedVersion},
		{"version 3, truncated", []byte{3}, wire.ErrUnsupportedVersion},
		{"version 3, over the limit", append([]byte{3}, make([]byte, wire.MaxEnvelopeSize)...), wire.ErrMessageTooLarge},
		{"over the limit", append(bytes.Clone(valid), make([]byte, wire.MaxEnvelopeSize)...), wire.ErrMessageTooLarge},
		{"type 0", with(1, 0), wire.ErrMalformed},
		{"type 5", with(1, 5), wire.ErrMalformed},
		{"type ff", with(1, 0xff), wire.ErrMalformed},
		{"sender length 0", with(senderLen, 0), wire.ErrMalformed},
		{"sender length 255", with(senderLen, 255), wire.ErrMalformed},
		{"recipient length 0", with(recipientLen, 0), wire.ErrMalformed},
		{"recipient length 6", with(recipientLen, 6), wire.ErrMalformed},
		{"payload length 0", with(payloadLen+3, 0)[:payloadLen+4], wire.ErrMalformed},
		{"payload length 2", with(payloadLen+3, 2), wire.ErrMalformed},
		{"payload length 2^32-1", append(bytes.Clone(valid[:payloadLen]), 0xff, 0xff, 0xff, 0xff, 1), wire.ErrMalformed},
		{"payload length max+1, tiny input", append(bytes.Clone(valid[:payloadLen]), 0, 4, 0, 1, 1), wire.ErrMalformed},
		{"trailing byte", append(bytes.Clone(valid), 0), wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, wire.DecodeEnvelope, tt.in, tt.want)
		})
	}
}

func TestEnvelopeTypeString(t *testing.T) {
	tests := []struct {
		in   wire.EnvelopeType
		want string
	}{
		{wire.EnvelopePreKey, "prekey"},
		{wire.EnvelopeRatchet, "ratchet"},
		{9, "envelope type 9"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("EnvelopeType(%d).String() = %q, want %q", uint8(tt.in), got, tt.want)
		}
	}
}
