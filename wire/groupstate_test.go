package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var groupStateFormat = format[wire.GroupState]{
	file:   "group-state.txt",
	title:  "group state (frame kind 19)",
	fuzz:   "FuzzDecodeGroupState",
	encode: wire.EncodeGroupState,
	decode: wire.DecodeGroupState,
}

func groupStateVectors() []vector[wire.GroupState] {
	start := wire.LogicalID(seq16(0x40))
	return []vector[wire.GroupState]{
		{name: "group-and-pins", doc: `kind 19, id bytes 00.., group bytes 10.. "team" created at 5, start bytes 40.., one change bytes 40.. by "alice/1" generation 1 at 6 frame "f", pins "alice/1" (identity "k1", at 7) and "bob/1" (identity "k2", at 8)`,
			v: wire.GroupState{ID: seq16(0x00),
				Group: wire.ArchiveGroup{ID: wire.GroupID(seq16(0x10)), Name: "team", CreatedAt: 5, Start: &start,
					Changes: []wire.ArchiveChange{{ID: start, Author: "alice/1", Generation: 1, At: 6, Frame: []byte("f")}}},
				Pins: []wire.ArchivePin{{Address: "alice/1", Identity: []byte("k1"), PinnedAt: 7}, {Address: "bob/1", Identity: []byte("k2"), PinnedAt: 8}}}},
		{name: "group-alone", doc: `kind 19, id all ff, group bytes 20.. "g" created at 0, no start, no changes, no pins`,
			v: wire.GroupState{ID: wire.LogicalID(bytes.Repeat([]byte{0xff}, 16)),
				Group: wire.ArchiveGroup{ID: wire.GroupID(seq16(0x20)), Name: "g", Changes: nil}}},
	}
}

func TestGroupStateVectors(t *testing.T) {
	checkVectors(t, groupStateFormat, groupStateVectors())
}

// TestGroupStateRefuses: the frame's limits and rules, at the encoder and
// at the decoder.
func TestGroupStateRefuses(t *testing.T) {
	good := groupStateVectors()[0].v
	big := good
	big.Group.Changes = []wire.ArchiveChange{{ID: seq16(1), Author: "alice/1", Generation: 1, Frame: make([]byte, wire.MaxFrameSize)}}
	unordered := good
	unordered.Pins = []wire.ArchivePin{good.Pins[1], good.Pins[0]}
	many := good
	many.Pins = make([]wire.ArchivePin, wire.MaxGroupStatePins+1)
	badPin := good
	badPin.Pins = []wire.ArchivePin{{Address: "bob/1", Identity: nil, PinnedAt: 1}}
	for _, tt := range []struct {
		name string
		s    wire.GroupState
		want error
	}{
		{"over the frame size", big, wire.ErrMessageTooLarge},
		{"pins out of order", unordered, wire.ErrMalformed},
		{"too many pins", many, wire.ErrMessageTooLarge},
		{"a pin with no identity", badPin, wire.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := wire.EncodeGroupState(tt.s); !errors.Is(err, tt.want) {
				t.Fatalf("EncodeGroupState = %v, want %v", err, tt.want)
			}
		})
	}

	b := mustEncode(wire.EncodeGroupState, good)
	pinRec := mustEncode(wire.EncodeArchiveRecord, wire.ArchiveRecord(good.Pins[0]))
	groupRec := mustEncode(wire.EncodeArchiveRecord, wire.ArchiveRecord(good.Group))
	frame := func(group []byte, pins ...[]byte) []byte {
		out := append([]byte{wire.FrameVersion, byte(wire.FrameGroupState)}, make([]byte, 16)...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(group)))
		out = append(out, group...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(pins)))
		for _, p := range pins {
			out = binary.BigEndian.AppendUint32(out, uint32(len(p)))
			out = append(out, p...)
		}
		return out
	}
	if _, err := wire.DecodeGroupState(frame(groupRec, pinRec)); err != nil {
		t.Fatalf("a hand-built frame: %v", err)
	}
	for _, tt := range []struct {
		name string
		b    []byte
		want error
	}{
		{"another kind", append([]byte{wire.FrameVersion, byte(wire.FrameSentCopy)}, b[2:]...), wire.ErrMalformed},
		{"another version", append([]byte{0x02}, b[1:]...), wire.ErrUnsupportedVersion},
		{"over the frame size", make([]byte, wire.MaxFrameSize+1), wire.ErrMessageTooLarge},
		{"a pin where the group is", frame(pinRec), wire.ErrMalformed},
		{"a group where a pin is", frame(groupRec, groupRec), wire.ErrMalformed},
		{"pins twice", frame(groupRec, pinRec, pinRec), wire.ErrMalformed},
		{"an empty group record", frame(nil), wire.ErrMalformed},
		{"truncated", b[:len(b)-3], wire.ErrMalformed},
		{"trailing", append(append([]byte(nil), b...), 0), wire.ErrMalformed},
		{"a pin count over the bound", append(frame(groupRec)[:len(frame(groupRec))-2], 0xff, 0xff), wire.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := wire.DecodeGroupState(tt.b); !errors.Is(err, tt.want) {
				t.Fatalf("DecodeGroupState = %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzDecodeGroupState(f *testing.F) {
	for _, v := range groupStateVectors() {
		b := mustEncode(wire.EncodeGroupState, v.v)
		f.Add(b)            // a frozen vector
		f.Add(b[:len(b)-1]) // one byte short
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRoundTrip(t, b, wire.DecodeGroupState, wire.EncodeGroupState)
	})
}
