package wire_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayMultiFormat holds the vectors of kind 29, a file of its own so that
// the files frozen before it never change.
var relayMultiFormat = format[relayValue]{
	file:   "relay-submit-multi.txt",
	title:  "relay protocol: multi-mailbox submit (kind 29)",
	fuzz:   "FuzzDecodeRelayMulti",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayMultiVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{
			name: "submit-multi-one",
			doc:  `kind 29, request 5, envelope type 4 (chain), sender "alice/1", payload bytes 10.. (3 bytes), 1 mailbox: envelope ID bytes 00.., "bob/1"`,
			v: relayValue{5, wire.SubmitMulti{Type: wire.EnvelopeChain, Sender: "alice/1", Payload: seq(0x10, 3),
				Mailboxes: []wire.Mailbox{{EnvelopeID: seq16(0x00), Recipient: "bob/1"}}}},
		},
		{
			name: "submit-multi-three",
			doc: `kind 29, request 0x01020304, envelope type 4 (chain), sender "alice/1", payload bytes 20.. (5 bytes), 3 mailboxes:
				envelope ID bytes 00.., "bob/1"; envelope ID bytes 10.., "bob/2"; envelope ID bytes 20.., "carol/1"`,
			v: relayValue{0x01020304, wire.SubmitMulti{Type: wire.EnvelopeChain, Sender: "alice/1", Payload: seq(0x20, 5),
				Mailboxes: []wire.Mailbox{
					{EnvelopeID: seq16(0x00), Recipient: "bob/1"},
					{EnvelopeID: seq16(0x10), Recipient: "bob/2"},
					{EnvelopeID: seq16(0x20), Recipient: "carol/1"},
				}}},
		},
	}
}

func TestRelayMultiVectors(t *testing.T) {
	checkVectors(t, relayMultiFormat, relayMultiVectors())
}

// mailboxes returns n mailboxes with the longest addresses, in order.
func mailboxes(n int) []wire.Mailbox {
	ms := make([]wire.Mailbox, n)
	for i := range ms {
		ms[i] = wire.Mailbox{EnvelopeID: seq16(byte(i)), Recipient: longMember(i)}
	}
	return ms
}

// TestRelayMultiBoundaries: a SubmitMulti at every limit encodes within the
// read limit and decodes; one past a limit is refused by the encoder.
func TestRelayMultiBoundaries(t *testing.T) {
	largest := wire.SubmitMulti{Type: wire.EnvelopeChain, Sender: longMember(99), Payload: seq(0, wire.MaxSubmitMultiPayloadSize), Mailboxes: mailboxes(wire.MaxSubmitMultiMailboxes)}
	b, err := wire.EncodeRelay(1, largest)
	if err != nil {
		t.Fatalf("encode the largest SubmitMulti: %v", err)
	}
	if len(b) != wire.MaxRelayMessageSize {
		t.Errorf("the largest SubmitMulti is %d bytes, want the read limit %d", len(b), wire.MaxRelayMessageSize)
	}
	roundTrip(t, relayMultiFormat, b)
	if env := largest.Envelope(3); env.Recipient != longMember(3) || env.ID != seq16(3) || env.Sender != longMember(99) || env.Type != wire.EnvelopeChain {
		t.Errorf("Envelope(3) = %+v", env)
	}
	base := relayMultiVectors()[1].v.Msg.(wire.SubmitMulti)
	for _, tt := range []struct {
		name   string
		change func(*wire.SubmitMulti)
		want   error
	}{
		{"envelope type 0", func(m *wire.SubmitMulti) { m.Type = 0 }, wire.ErrMalformed},
		{"no sender", func(m *wire.SubmitMulti) { m.Sender = "" }, wire.ErrMalformed},
		{"empty payload", func(m *wire.SubmitMulti) { m.Payload = nil }, wire.ErrMalformed},
		{"payload one byte too long", func(m *wire.SubmitMulti) { m.Payload = make([]byte, wire.MaxSubmitMultiPayloadSize+1) }, wire.ErrMessageTooLarge},
		{"no mailboxes", func(m *wire.SubmitMulti) { m.Mailboxes = nil }, wire.ErrMalformed},
		{"one mailbox too many", func(m *wire.SubmitMulti) { m.Mailboxes = mailboxes(wire.MaxSubmitMultiMailboxes + 1) }, wire.ErrMessageTooLarge},
		{"a recipient twice", func(m *wire.SubmitMulti) { m.Mailboxes[1].Recipient = m.Mailboxes[0].Recipient }, wire.ErrMalformed},
		{"recipients out of order", func(m *wire.SubmitMulti) {
			m.Mailboxes[0], m.Mailboxes[1] = m.Mailboxes[1], m.Mailboxes[0]
		}, wire.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			m.Mailboxes = append([]wire.Mailbox(nil), base.Mailboxes...)
			tt.change(&m)
			wantEncodeError(t, encodeRelay, relayValue{1, m}, tt.want)
		})
	}
}

// TestDecodeRelayMultiRejects: every count, length and order out of range is
// a plain ErrMalformed (not an unknown kind), with nothing returned.
func TestDecodeRelayMultiRejects(t *testing.T) {
	head := func(n int) []byte {
		return append(append([]byte{byte(wire.EnvelopeChain), 7}, "alice/1"...), append(u32(n), seq(0, n)...)...)
	}
	mb := func(addr string) []byte { return append(append(seq(0, 16), byte(len(addr))), addr...) }
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"nothing", relayBytes(wire.RelaySubmitMulti)},
		{"envelope type 5", relayBytes(wire.RelaySubmitMulti, []byte{5, 7}, []byte("alice/1"), u32(1), []byte{1}, []byte{1}, mb("bob/1"))},
		{"empty payload", relayBytes(wire.RelaySubmitMulti, head(0), []byte{1}, mb("bob/1"))},
		{"a forged payload length", relayBytes(wire.RelaySubmitMulti, []byte{4, 7}, []byte("alice/1"), u32(-1), []byte{1})},
		{"zero mailboxes", relayBytes(wire.RelaySubmitMulti, head(1), []byte{0})},
		{"65 mailboxes", relayBytes(wire.RelaySubmitMulti, head(1), []byte{65}, mb("bob/1"))},
		{"fewer mailboxes than counted", relayBytes(wire.RelaySubmitMulti, head(1), []byte{2}, mb("bob/1"))},
		{"a recipient twice", relayBytes(wire.RelaySubmitMulti, head(1), []byte{2}, mb("bob/1"), mb("bob/1"))},
		{"recipients out of order", relayBytes(wire.RelaySubmitMulti, head(1), []byte{2}, mb("bob/2"), mb("bob/1"))},
		{"an empty recipient", relayBytes(wire.RelaySubmitMulti, head(1), []byte{1}, mb(""))},
		{"trailing byte", relayBytes(wire.RelaySubmitMulti, head(1), []byte{1}, mb("bob/1"), []byte{0})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := wire.DecodeRelay(tt.in)
			if m != nil || !errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrUnknownRelayKind) {
				t.Fatalf("DecodeRelay(%s) = %v, %v; want nothing and a plain ErrMalformed", brief(tt.in), m, err)
			}
		})
	}
	if got := fmt.Sprint(wire.RelaySubmitMulti, ", ", wire.FeatureSubmitMulti); got != "submit multi, submit multi" {
		t.Errorf("names: %q", got)
	}
	if wire.RelaySubmitMulti != 29 || wire.FeatureSubmitMulti != 1<<5 {
		t.Error("the multi-mailbox submit is not kind 29, or its feature not bit 5")
	}
}

// FuzzDecodeRelayMulti fuzzes DecodeRelay from kind 29: an error returns
// nothing, a success re-encodes to exactly the input.
func FuzzDecodeRelayMulti(f *testing.F) {
	for _, v := range relayMultiVectors() {
		b := mustEncode(encodeRelay, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // the last recipient cut short
		f.Add(append(b, 0)) // a trailing byte
	}
	f.Add(relayBytes(wire.RelaySubmitMulti, []byte{4, 7}, []byte("alice/1"), u32(-1), []byte{1})) // a forged payload length
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, decodeRelay, encodeRelay)
	})
}
