package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var chainAcksFormat = format[wire.ChainAcks]{
	file:   "chain-acks.txt",
	title:  "cumulative acknowledgement of chain messages (frame kind 10)",
	fuzz:   "FuzzDecodeChainAcks",
	encode: wire.EncodeChainAcks,
	decode: wire.DecodeChainAcks,
}

func chainAcksVectors() []vector[wire.ChainAcks] {
	return []vector[wire.ChainAcks]{
		{
			name: "chain-acks-one",
			doc:  `kind 10, group bytes 10.., 1 ID: bytes 00..`,
			v:    wire.ChainAcks{Group: seq16(0x10), IDs: []wire.LogicalID{seq16(0x00)}},
		},
		{
			name: "chain-acks-three",
			doc:  `kind 10, group bytes 10.., 3 IDs: bytes 00.., bytes 20.., bytes f0..`,
			v:    wire.ChainAcks{Group: seq16(0x10), IDs: []wire.LogicalID{seq16(0x00), seq16(0x20), seq16(0xf0)}},
		},
	}
}

func TestChainAcksVectors(t *testing.T) {
	checkVectors(t, chainAcksFormat, chainAcksVectors())
}

// TestChainAcksBounds: a list of 1 and of MaxChainAckIDs IDs encodes to its
// documented size and decodes; an empty list, one over the bound, a repeat
// and a descending pair are refused by both sides; SortChainAckIDs makes
// any list encodable.
func TestChainAcksBounds(t *testing.T) {
	ids := func(n int) []wire.LogicalID {
		out := make([]wire.LogicalID, n)
		for i := range out {
			out[i][0], out[i][1] = byte(i>>8), byte(i)
		}
		return out
	}
	for _, n := range []int{1, 2, wire.MaxChainAckIDs} {
		a := wire.ChainAcks{Group: seq16(1), IDs: ids(n)}
		b := mustEncode(wire.EncodeChainAcks, a)
		if len(b) != wire.ChainAcksSize(n) {
			t.Errorf("%d IDs: %d bytes, want %d", n, len(b), wire.ChainAcksSize(n))
		}
		roundTrip(t, chainAcksFormat, b)
	}
	if got := wire.ChainAcksSize(wire.MaxChainAckIDs); got != wire.MaxChainAcksSize || got > wire.MaxFrameSize {
		t.Errorf("MaxChainAcksSize = %d, size of the largest %d (MaxFrameSize %d)", wire.MaxChainAcksSize, got, wire.MaxFrameSize)
	}
	repeat := ids(3)
	repeat[2] = repeat[1]
	down := ids(3)
	down[0], down[2] = down[2], down[0]
	for name, list := range map[string][]wire.LogicalID{
		"empty":     nil,
		"over":      ids(wire.MaxChainAckIDs + 1),
		"repeat":    repeat,
		"desceding": down,
	} {
		wantEncodeError(t, wire.EncodeChainAcks, wire.ChainAcks{IDs: list}, wire.ErrMalformed)
		if len(list) > 0 && len(list) <= wire.MaxChainAckIDs {
			// Forge the bytes the encoder refuses.
			b := mustEncode(wire.EncodeChainAcks, wire.ChainAcks{IDs: ids(len(list))})
			for i, id := range list {
				copy(b[20+16*i:], id[:])
			}
			wantReject(t, wire.DecodeChainAcks, b, wire.ErrMalformed)
		}
		sorted := wire.SortChainAckIDs(flat(list))
		if len(sorted) > 0 && len(sorted) <= wire.MaxChainAckIDs {
			if _, err := wire.EncodeChainAcks(wire.ChainAcks{IDs: sorted}); err != nil {
				t.Errorf("%s: sorted list refused: %v", name, err)
			}
		}
	}
	b := mustEncode(wire.EncodeChainAcks, chainAcksVectors()[1].v)
	with := func(i int, c byte) []byte { b := bytes.Clone(b); b[i] = c; return b }
	wantReject(t, wire.DecodeChainAcks, with(0, 2), wire.ErrUnsupportedVersion)
	wantReject(t, wire.DecodeChainAcks, with(1, byte(wire.FrameAck)), wire.ErrMalformed)
	wantReject(t, wire.DecodeChainAcks, with(19, 0), wire.ErrMalformed)    // count 0
	wantReject(t, wire.DecodeChainAcks, with(19, 4), wire.ErrMalformed)    // count past the IDs
	wantReject(t, wire.DecodeChainAcks, with(18, 0xff), wire.ErrMalformed) // count over the bound
	wantReject(t, wire.DecodeChainAcks, make([]byte, wire.MaxFrameSize+1), wire.ErrMessageTooLarge)
	if k, err := wire.PeekFrameKind(b); err != nil || k != wire.FrameChainAcks {
		t.Errorf("PeekFrameKind(chain acks) = %d, %v", k, err)
	}
	if _, err := wire.PeekFrameKind(with(1, byte(wire.FrameChainAcksReserved))); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("PeekFrameKind(kind 11) = %v, want ErrMalformed (reserved)", err)
	}
}

// flat returns a copy of ids.
func flat(ids []wire.LogicalID) []wire.LogicalID { return append([]wire.LogicalID(nil), ids...) }

func FuzzDecodeChainAcks(f *testing.F) {
	for _, v := range chainAcksVectors() {
		b := mustEncode(wire.EncodeChainAcks, v.v)
		f.Add(b)             // a frozen vector
		f.Add(b[:len(b)-1])  // one byte short
		f.Add(append(b, 0))  // a trailing byte
		f.Add(b[:len(b)-16]) // one ID short of its count
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeChainAcks, wire.EncodeChainAcks)
	})
}
