package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// senderBlockFormat holds the vectors of kind 17, a file of its own so that
// the files frozen before it never change.
var senderBlockFormat = format[relayValue]{
	file:   "relay-sender-block.txt",
	title:  "relay protocol: sender block (kind 17)",
	fuzz:   "FuzzDecodeRelay",
	encode: encodeRelay,
	decode: decodeRelay,
}

func senderBlockVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{
			name: "sender-block",
			doc:  `kind 17, request 7, sender "mallory/1", blocked 1`,
			v:    relayValue{7, wire.SenderBlock{Sender: "mallory/1", Blocked: true}},
		},
		{
			name: "sender-unblock",
			doc:  `kind 17, request 0x01020304, sender "mallory/1", blocked 0`,
			v:    relayValue{0x01020304, wire.SenderBlock{Sender: "mallory/1"}},
		},
		{
			name: "sender-block-longest-address",
			doc:  `kind 17, request 1, sender of MaxAddressSize (75) bytes ("a/" and 73 "b"), blocked 1`,
			v:    relayValue{1, wire.SenderBlock{Sender: "a/" + strings.Repeat("b", wire.MaxAddressSize-2), Blocked: true}},
		},
	}
}

func TestSenderBlockVectors(t *testing.T) {
	checkVectors(t, senderBlockFormat, senderBlockVectors())
}

// TestSenderBlockStrict: the decoder refuses a blocked byte other than 0
// or 1, an empty or unprintable address, truncation and trailing bytes,
// each as ErrMalformed; the encoder refuses what the decoder would.
func TestSenderBlockStrict(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"blocked byte 2", relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a/1"), []byte{2})},
		{"blocked byte ff", relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a/1"), []byte{0xff})},
		{"no blocked byte", relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a/1"))},
		{"address cut short", relayBytes(wire.RelaySenderBlock, []byte{4}, []byte("a/1"))},
		{"empty address", relayBytes(wire.RelaySenderBlock, []byte{0}, []byte{1})},
		{"address with a space", relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a 1"), []byte{1})},
		{"address with an escape", relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a\x1b1"), []byte{1})},
		{"trailing byte", relayBytes(wire.RelaySenderBlock, []byte{3}, []byte("a/1"), []byte{1, 0})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := wire.DecodeRelay(tt.in)
			if m != nil || !errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrUnknownRelayKind) {
				t.Fatalf("DecodeRelay(%x) = %v, %v; want nothing and a plain ErrMalformed", tt.in, m, err)
			}
		})
	}
	for _, bad := range []string{"", "a 1", "a\x1b1", "a/" + strings.Repeat("b", wire.MaxAddressSize-1)} {
		if b, err := wire.EncodeRelay(1, wire.SenderBlock{Sender: bad, Blocked: true}); err == nil {
			t.Errorf("EncodeRelay of sender %q = %x, want an error", bad, b)
		}
	}
	if !wire.FeatureSet(3).Has(wire.FeatureSenderBlock) || wire.FeatureEnvelopeStatus.Has(wire.FeatureSenderBlock) || wire.FeatureSenderBlock != 1<<1 {
		t.Error("FeatureSenderBlock is not bit 1")
	}
	if got, want := (wire.FeatureEnvelopeStatus | wire.FeatureSenderBlock | 1<<31).String(), "envelope status, sender block, 0x80000000"; got != want {
		t.Errorf("features String() = %q, want %q", got, want)
	}
}
