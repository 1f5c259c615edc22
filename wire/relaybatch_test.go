package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayBatchFormat holds the vectors of kinds 27 and 28, a file of their
// own so that the files frozen before them never change.
var relayBatchFormat = format[relayValue]{
	file:   "relay-batch.txt",
	title:  "relay protocol: submit batch and batch results (kinds 27 and 28)",
	fuzz:   "FuzzDecodeRelayBatch",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayBatchVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{
			name: "submit-batch-one",
			doc:  `kind 27, request 5, 1 envelope: bytes 10.. (3 bytes)`,
			v:    relayValue{5, wire.SubmitBatch{Envelopes: [][]byte{seq(0x10, 3)}}},
		},
		{
			name: "submit-batch-three",
			doc:  `kind 27, request 0x01020304, 3 envelopes: bytes 10.. (3 bytes), bytes 20.. (1 byte), bytes 30.. (5 bytes)`,
			v:    relayValue{0x01020304, wire.SubmitBatch{Envelopes: [][]byte{seq(0x10, 3), seq(0x20, 1), seq(0x30, 5)}}},
		},
		{
			name: "batch-results-one",
			doc:  `kind 28, request 5, 1 result: envelope ID bytes 00.., outcome 0 (accepted)`,
			v:    relayValue{5, wire.BatchResults{Results: []wire.SubmitResult{{EnvelopeID: seq16(0x00), Outcome: wire.SubmitAccepted}}}},
		},
		{
			name: "batch-results-mixed",
			doc: `kind 28, request 0x01020304, 4 results: envelope ID bytes 00.., outcome 0 (accepted);
				envelope ID bytes 10.., outcome 3 (refused: unknown recipient);
				envelope ID bytes 20.., outcome 9 (refused: relay storage full);
				envelope ID bytes 30.., outcome 255 (failed)`,
			v: relayValue{0x01020304, wire.BatchResults{Results: []wire.SubmitResult{
				{EnvelopeID: seq16(0x00), Outcome: wire.SubmitAccepted},
				{EnvelopeID: seq16(0x10), Outcome: wire.Refusal(wire.RefuseUnknownRecipient)},
				{EnvelopeID: seq16(0x20), Outcome: wire.Refusal(wire.RefuseStoreFull)},
				{EnvelopeID: seq16(0x30), Outcome: wire.SubmitFailed},
			}}},
		},
	}
}

func TestRelayBatchVectors(t *testing.T) {
	checkVectors(t, relayBatchFormat, relayBatchVectors())
}

// TestRelayBatchBoundaries: a batch at every limit encodes and decodes, and
// one past it is refused by both sides.
func TestRelayBatchBoundaries(t *testing.T) {
	many := func(n, size int) [][]byte {
		envs := make([][]byte, n)
		for i := range envs {
			envs[i] = seq(byte(i), size)
		}
		return envs
	}
	largest := wire.MaxSubmitBatchBytes / wire.MaxSubmitBatchEnvelopes
	for _, m := range []wire.RelayMessage{
		wire.SubmitBatch{Envelopes: many(wire.MaxSubmitBatchEnvelopes, 1)},
		wire.SubmitBatch{Envelopes: [][]byte{seq(0, wire.MaxSubmitBatchBytes)}},
		wire.SubmitBatch{Envelopes: append(many(wire.MaxSubmitBatchEnvelopes-1, largest), seq(0, wire.MaxSubmitBatchBytes-(wire.MaxSubmitBatchEnvelopes-1)*largest))},
		wire.BatchResults{Results: make([]wire.SubmitResult, wire.MaxSubmitBatchEnvelopes)},
	} {
		b, err := wire.EncodeRelay(1, m)
		if err != nil {
			t.Fatalf("encode %s at its limit: %v", m.RelayKind(), err)
		}
		if len(b) > wire.MaxRelayMessageSize {
			t.Fatalf("%s at its limit is %d bytes, over the read limit %d", m.RelayKind(), len(b), wire.MaxRelayMessageSize)
		}
		roundTrip(t, relayBatchFormat, b)
	}
	for _, tt := range []struct {
		name string
		m    wire.RelayMessage
		want error
	}{
		{"no envelopes", wire.SubmitBatch{}, wire.ErrMalformed},
		{"an empty envelope", wire.SubmitBatch{Envelopes: [][]byte{{1}, {}}}, wire.ErrMalformed},
		{"one envelope too many", wire.SubmitBatch{Envelopes: many(wire.MaxSubmitBatchEnvelopes+1, 1)}, wire.ErrMessageTooLarge},
		{"one byte too many", wire.SubmitBatch{Envelopes: [][]byte{seq(0, wire.MaxSubmitBatchBytes-1), {1, 2}}}, wire.ErrMessageTooLarge},
		{"no results", wire.BatchResults{}, wire.ErrMalformed},
		{"one result too many", wire.BatchResults{Results: make([]wire.SubmitResult, wire.MaxSubmitBatchEnvelopes+1)}, wire.ErrMessageTooLarge},
		{"outcome 10", wire.BatchResults{Results: []wire.SubmitResult{{Outcome: 10}}}, wire.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantEncodeError(t, encodeRelay, relayValue{1, tt.m}, tt.want)
		})
	}
}

// TestDecodeRelayBatchRejects: every count, length and outcome out of range
// is a plain ErrMalformed (not an unknown kind), with nothing returned.
func TestDecodeRelayBatchRejects(t *testing.T) {
	env := func(n int) []byte { return append(u32(n), seq(0, n)...) }
	sum := wire.MaxSubmitBatchBytes
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"no envelope count", relayBytes(wire.RelaySubmitBatch)},
		{"zero envelopes", relayBytes(wire.RelaySubmitBatch, []byte{0})},
		{"65 envelopes", relayBytes(wire.RelaySubmitBatch, []byte{65}, bytes.Repeat(env(1), 65))},
		{"fewer envelopes than counted", relayBytes(wire.RelaySubmitBatch, []byte{3}, env(1), env(1))},
		{"an empty envelope", relayBytes(wire.RelaySubmitBatch, []byte{2}, env(1), u32(0))},
		{"a forged envelope length", relayBytes(wire.RelaySubmitBatch, []byte{1}, u32(-1), []byte{1})},
		{"envelopes over the byte bound", relayBytes(wire.RelaySubmitBatch, []byte{2}, env(sum-1), env(2))},
		{"trailing byte", relayBytes(wire.RelaySubmitBatch, []byte{1}, env(1), []byte{0})},
		{"zero results", relayBytes(wire.RelayBatchResults, []byte{0})},
		{"65 results", relayBytes(wire.RelayBatchResults, []byte{65}, make([]byte, 65*17))},
		{"fewer results than counted", relayBytes(wire.RelayBatchResults, []byte{2}, make([]byte, 17))},
		{"outcome 10", relayBytes(wire.RelayBatchResults, []byte{1}, make([]byte, 16), []byte{10})},
		{"outcome 254", relayBytes(wire.RelayBatchResults, []byte{1}, make([]byte, 16), []byte{254})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := wire.DecodeRelay(tt.in)
			if m != nil || !errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrUnknownRelayKind) {
				t.Fatalf("DecodeRelay(%s) = %v, %v; want nothing and a plain ErrMalformed", brief(tt.in), m, err)
			}
		})
	}
}

func TestRelayBatchNames(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{wire.RelaySubmitBatch.String(), "submit batch"},
		{wire.RelayBatchResults.String(), "batch results"},
		{wire.SubmitAccepted.String(), "accepted"},
		{wire.SubmitFailed.String(), "failed"},
		{wire.Refusal(wire.RefuseMailboxFull).String(), "refused: mailbox full"},
		{wire.SubmitOutcome(10).String(), "submit outcome 10"},
		{(wire.FeatureBlobs | wire.FeatureSubmitBatch).String(), "blobs, submit batch"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if wire.FeatureSubmitBatch != 1<<4 || wire.RelaySubmitBatch != 27 || wire.RelayBatchResults != 28 {
		t.Error("the batch kinds are not 27 and 28, or the feature not bit 4")
	}
	if r, ok := wire.Refusal(wire.RefuseSenderQuota).Refused(); !ok || r != wire.RefuseSenderQuota {
		t.Errorf("Refusal(sender quota).Refused() = %v, %v", r, ok)
	}
	if _, ok := wire.SubmitAccepted.Refused(); ok {
		t.Error("an accepted outcome says it is refused")
	}
}

// FuzzDecodeRelayBatch fuzzes DecodeRelay from the batch kinds: an error
// returns nothing, a success re-encodes to exactly the input.
func FuzzDecodeRelayBatch(f *testing.F) {
	for _, v := range relayBatchVectors() {
		f.Add(mustEncode(encodeRelay, v.v)) // every frozen vector of kinds 27 and 28
	}
	f.Add(relayBytes(wire.RelaySubmitBatch, []byte{64}, u32(1), []byte{1}))                     // a count the body does not hold
	f.Add(relayBytes(wire.RelaySubmitBatch, []byte{2}, u32(1), []byte{1}, u32(-1)))             // a forged second length
	f.Add(relayBytes(wire.RelayBatchResults, []byte{1}, make([]byte, 16), []byte{0xfe}))        // an unknown outcome
	f.Add(relayBytes(wire.RelayBatchResults, []byte{0xff}, make([]byte, 17)))                   // a count over the limit
	f.Add(relayBytes(wire.RelaySubmitBatch, []byte{1}, u32(wire.MaxEnvelopeSize+1), []byte{1})) // a length over MaxEnvelopeSize
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, decodeRelay, encodeRelay)
	})
}
