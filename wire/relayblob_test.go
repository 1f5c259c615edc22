package wire_test

import (
	"bytes"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// relayBlobFormat holds the vectors of the blob kinds (18 to 25): a file of
// their own, so that relay.txt and relay-push.txt never change.
var relayBlobFormat = format[relayValue]{
	file:   "relay-blob.txt",
	title:  "relay protocol messages of the blob store (kinds 18 to 25)",
	fuzz:   "FuzzDecodeRelay",
	encode: encodeRelay,
	decode: decodeRelay,
}

func relayBlobVectors() []vector[relayValue] {
	return []vector[relayValue]{
		{
			name: "blob-create",
			doc:  `kind 18, request 1, size 0x0000000006400100 (100 MiB and 256 bytes)`,
			v:    relayValue{1, wire.BlobCreate{Size: 100<<20 + 256}},
		},
		{
			name: "blob-created",
			doc:  `kind 19, request 1, blob ID bytes 00.., expires 1700000000`,
			v:    relayValue{1, wire.BlobCreated{ID: seq16(0x00), Expires: 1700000000}},
		},
		{
			name: "blob-put",
			doc:  `kind 20, request 2, blob ID bytes 00.., offset 65552, data bytes a0.. (5 bytes)`,
			v:    relayValue{2, wire.BlobPut{ID: seq16(0x00), Offset: 65552, Data: seq(0xa0, 5)}},
		},
		{
			name: "blob-stat",
			doc:  `kind 21, request 3, blob ID bytes 40..`,
			v:    relayValue{3, wire.BlobStat{ID: seq16(0x40)}},
		},
		{
			name: "blob-held-partial",
			doc:  `kind 22, request 3, blob ID bytes 40.., held 65552, size 131104`,
			v:    relayValue{3, wire.BlobHeld{ID: seq16(0x40), Held: 65552, Size: 131104}},
		},
		{
			name: "blob-held-none",
			doc:  `kind 22, request 4, blob ID bytes 40.., held 0, size 1`,
			v:    relayValue{4, wire.BlobHeld{ID: seq16(0x40), Held: 0, Size: 1}},
		},
		{
			name: "blob-get",
			doc:  `kind 23, request 5, blob ID bytes 80.., offset 131072, length 65552`,
			v:    relayValue{5, wire.BlobGet{ID: seq16(0x80), Offset: 131072, Length: 65552}},
		},
		{
			name: "blob-data",
			doc:  `kind 24, request 5, offset 131072, data bytes 10.. (4 bytes)`,
			v:    relayValue{5, wire.BlobData{Offset: 131072, Data: seq(0x10, 4)}},
		},
		{
			name: "blob-data-end",
			doc:  `kind 24, request 6, offset 9, no data (a read at the blob's end)`,
			v:    relayValue{6, wire.BlobData{Offset: 9}},
		},
		{
			name: "blob-refused-expired",
			doc:  `kind 25, request 7, blob ID bytes c0.., reason 2 (blob_expired)`,
			v:    relayValue{7, wire.BlobRefused{ID: seq16(0xc0), Reason: wire.BlobExpired}},
		},
		{
			name: "blob-refused-quota",
			doc:  `kind 25, request 8, blob ID all zero (none yet), reason 5 (blob_quota)`,
			v:    relayValue{8, wire.BlobRefused{Reason: wire.BlobQuota}},
		},
	}
}

func TestRelayBlobVectors(t *testing.T) {
	checkVectors(t, relayBlobFormat, relayBlobVectors())
}

// TestRelayBlobBoundaries checks every limit just below, at and above it,
// in the encoder and, with forged bytes, in the decoder.
func TestRelayBlobBoundaries(t *testing.T) {
	id := make([]byte, 16)
	tests := []struct {
		name   string
		msg    wire.RelayMessage
		forged []byte
		want   error
	}{
		{"create size 0", wire.BlobCreate{}, relayBytes(wire.RelayBlobCreate, u64(0)), wire.ErrMalformed},
		{"create size 1", wire.BlobCreate{Size: 1}, nil, nil},
		{"create size max", wire.BlobCreate{Size: wire.MaxBlobSize}, nil, nil},
		{"create size max+1", wire.BlobCreate{Size: wire.MaxBlobSize + 1}, relayBytes(wire.RelayBlobCreate, u64(wire.MaxBlobSize+1)), wire.ErrMalformed},
		{"create size negative", wire.BlobCreate{Size: -1}, relayBytes(wire.RelayBlobCreate, u64(1<<63)), wire.ErrMalformed},
		{"put empty", wire.BlobPut{}, relayBytes(wire.RelayBlobPut, id, u64(0), u32(0)), wire.ErrMalformed},
		{"put one byte", wire.BlobPut{Data: []byte{1}}, nil, nil},
		{"put max chunk", wire.BlobPut{Data: make([]byte, wire.MaxBlobChunk)}, nil, nil},
		{"put chunk over", wire.BlobPut{Data: make([]byte, wire.MaxBlobChunk+1)},
			relayBytes(wire.RelayBlobPut, id, u64(0), u32(wire.MaxBlobChunk+1), make([]byte, wire.MaxBlobChunk+1)), nil},
		{"put offset max", wire.BlobPut{Offset: wire.MaxBlobSize, Data: []byte{1}}, nil, nil},
		{"put offset over", wire.BlobPut{Offset: wire.MaxBlobSize + 1, Data: []byte{1}},
			relayBytes(wire.RelayBlobPut, id, u64(wire.MaxBlobSize+1), u32(1), []byte{1}), wire.ErrMalformed},
		{"held equal to size", wire.BlobHeld{Held: 7, Size: 7}, nil, nil},
		{"held over size", wire.BlobHeld{Held: 8, Size: 7}, relayBytes(wire.RelayBlobHeld, id, u64(8), u64(7)), wire.ErrMalformed},
		{"held of size 0", wire.BlobHeld{}, relayBytes(wire.RelayBlobHeld, id, u64(0), u64(0)), wire.ErrMalformed},
		{"get length 0", wire.BlobGet{}, relayBytes(wire.RelayBlobGet, id, u64(0), u32(0)), wire.ErrMalformed},
		{"get length 1", wire.BlobGet{Length: 1}, nil, nil},
		{"get length max", wire.BlobGet{Length: wire.MaxBlobChunk}, nil, nil},
		{"get length over", wire.BlobGet{Length: wire.MaxBlobChunk + 1}, relayBytes(wire.RelayBlobGet, id, u64(0), u32(wire.MaxBlobChunk+1)), wire.ErrMalformed},
		{"data max chunk", wire.BlobData{Data: make([]byte, wire.MaxBlobChunk)}, nil, nil},
		{"data chunk over", wire.BlobData{Data: make([]byte, wire.MaxBlobChunk+1)},
			relayBytes(wire.RelayBlobData, u64(0), u32(wire.MaxBlobChunk+1), make([]byte, wire.MaxBlobChunk+1)), nil},
		{"refused reason 0", wire.BlobRefused{}, relayBytes(wire.RelayBlobRefused, id, []byte{0}), wire.ErrMalformed},
		{"refused reason 7", wire.BlobRefused{Reason: wire.BlobNotOwner}, nil, nil},
		{"refused reason 8", wire.BlobRefused{Reason: 8}, relayBytes(wire.RelayBlobRefused, id, []byte{8}), wire.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := relayValue{9, tt.msg}
			switch {
			case tt.want == nil && tt.forged == nil:
				b := mustEncode(encodeRelay, v)
				if len(b) > wire.MaxRelayMessageSize {
					t.Fatalf("%d bytes over MaxRelayMessageSize %d", len(b), wire.MaxRelayMessageSize)
				}
				roundTrip(t, relayBlobFormat, b)
			case tt.want == nil:
				// A chunk over the limit: too large to encode, malformed to
				// decode (it still fits the read limit).
				wantEncodeError(t, encodeRelay, v, wire.ErrMessageTooLarge)
				wantReject(t, decodeRelay, tt.forged, wire.ErrMalformed)
			default:
				wantEncodeError(t, encodeRelay, v, tt.want)
				wantReject(t, decodeRelay, tt.forged, tt.want)
			}
		})
	}
}

func TestDecodeRelayBlobRejects(t *testing.T) {
	id := make([]byte, 16)
	tests := []struct {
		name string
		in   []byte
	}{
		{"put with a forged length", relayBytes(wire.RelayBlobPut, id, u64(0), u32(-1), []byte{1})},
		{"put with a short chunk", relayBytes(wire.RelayBlobPut, id, u64(0), u32(3), []byte{1, 2})},
		{"put with a trailing byte", relayBytes(wire.RelayBlobPut, id, u64(0), u32(1), []byte{1, 2})},
		{"stat with a short ID", relayBytes(wire.RelayBlobStat, id[:15])},
		{"created cut short", relayBytes(wire.RelayBlobCreated, id, u32(1))},
		{"data with a forged length", relayBytes(wire.RelayBlobData, u64(0), u32(-1))},
		{"get with a trailing byte", relayBytes(wire.RelayBlobGet, id, u64(0), u32(1), []byte{0})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, decodeRelay, tt.in, wire.ErrMalformed)
		})
	}
}

func TestRelayBlobNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{wire.RelayBlobCreate.String(), "blob create"},
		{wire.RelayBlobRefused.String(), "blob refused"},
		{wire.RelayKind(17).String(), "sender block"},
		{wire.RelayKind(26).String(), "envelope lifetime"},
		{wire.RelayKind(30).String(), "relay kind 30"},
		{wire.BlobExpired.String(), "blob_expired"},
		{wire.BlobRefuseReason(9).String(), "blob refuse reason 9"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if s := wire.FeatureSet(5); !s.Has(wire.FeatureBlobs) || !s.Has(wire.FeatureEnvelopeStatus) || wire.FeatureEnvelopeStatus.Has(wire.FeatureBlobs) {
		t.Errorf("FeatureBlobs is bit %#x, want 1<<2 apart from the others", uint32(wire.FeatureBlobs))
	}
}

// TestBlobDataDecodesOwnCopy: a decoded chunk does not alias the input,
// which the websocket reuses.
func TestBlobDataDecodesOwnCopy(t *testing.T) {
	b := mustEncode(encodeRelay, relayValue{1, wire.BlobData{Data: []byte{1, 2, 3}}})
	_, m, err := wire.DecodeRelay(b)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] = 9
	if got := m.(wire.BlobData).Data; !bytes.Equal(got, []byte{1, 2, 3}) {
		t.Fatalf("decoded data changed with its input: %x", got)
	}
}
