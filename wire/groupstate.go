package wire

import (
	"encoding/binary"
	"fmt"
)

// FrameGroupState carries one group of this person's, as the device that
// holds the account key holds it, to a device it linked (issue 33): the
// group's record and the pins of its members and of its changes'
// authors, each in its archive record encoding (archive.go), so that a
// device whose link left its archive out holds its person's groups all
// the same. It rides the pairwise session between two devices of one
// account and is acknowledged as any application frame is.
const FrameGroupState FrameKind = 19

// MaxGroupStatePins bounds the pins one group state carries.
const MaxGroupStatePins = 1024

// GroupState is one group of this person's, with the identities the
// sending device pinned for the group's members and its changes'
// authors.
type GroupState struct {
	ID    LogicalID // the lane's logical ID
	Group ArchiveGroup
	Pins  []ArchivePin // in strictly increasing address order
}

// EncodeGroupState returns a group state frame's bytes:
//
//	0x01 | 0x13 | id[16] | u32 length + group record (archive kind 6) |
//	u16 count of pins, each u32 length + pin record (archive kind 3)
//
// A frame over MaxFrameSize, or more than MaxGroupStatePins pins, fails
// with ErrMessageTooLarge; a record its archive encoding refuses, or pins
// not in strictly increasing address order, with ErrMalformed.
func EncodeGroupState(s GroupState) ([]byte, error) {
	if len(s.Pins) > MaxGroupStatePins {
		return nil, fmt.Errorf("wire: group state: %d pins over %d: %w", len(s.Pins), MaxGroupStatePins, ErrMessageTooLarge)
	}
	if err := checkGroupStatePins(s.Pins); err != nil {
		return nil, err
	}
	g, err := EncodeArchiveRecord(s.Group)
	if err != nil {
		return nil, fmt.Errorf("wire: group state: %w", err)
	}
	b := make([]byte, 0, 1+1+16+4+len(g)+2)
	b = append(b, FrameVersion, byte(FrameGroupState))
	b = append(b, s.ID[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(g)))
	b = append(b, g...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Pins)))
	for _, p := range s.Pins {
		pb, err := EncodeArchiveRecord(p)
		if err != nil {
			return nil, fmt.Errorf("wire: group state pin: %w", err)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(pb)))
		b = append(b, pb...)
		if len(b) > MaxFrameSize {
			break
		}
	}
	if len(b) > MaxFrameSize {
		return nil, fmt.Errorf("wire: group state of %x over %d bytes: %w", s.Group.ID[:], MaxFrameSize, ErrMessageTooLarge)
	}
	return b, nil
}

func checkGroupStatePins(ps []ArchivePin) error {
	for i := 1; i < len(ps); i++ {
		if ps[i].Address <= ps[i-1].Address {
			return fmt.Errorf("wire: group state pins %q then %q, not in increasing order: %w", ps[i-1].Address, ps[i].Address, ErrMalformed)
		}
	}
	return nil
}

// DecodeGroupState parses a group state frame, rejecting as DecodeFrame
// does: input over MaxFrameSize (ErrMessageTooLarge), another version
// (ErrUnsupportedVersion); another kind, a record of another kind than
// its place's or one its archive decoding refuses, more than
// MaxGroupStatePins pins, pins out of order, truncation or trailing bytes
// (ErrMalformed). Every byte slice is a copy.
func DecodeGroupState(b []byte) (GroupState, error) {
	r, err := groupReader(b, FrameGroupState, MaxFrameSize)
	if err != nil {
		return GroupState{}, err
	}
	var s GroupState
	r.array(s.ID[:], "id")
	if g := r.sized("group record", 1, MaxFrameSize); r.err == nil {
		rec, err := DecodeArchiveRecord(g)
		switch gr, ok := rec.(ArchiveGroup); {
		case err != nil:
			r.fail(fmt.Errorf("group state group record: %w", err))
		case !ok:
			r.fail(fmt.Errorf("group state: a record of kind %d where a group is: %w", rec.ArchiveKind(), ErrMalformed))
		default:
			s.Group = gr
		}
	}
	n := r.u16("pin count")
	if r.err == nil && n > MaxGroupStatePins {
		r.fail(fmt.Errorf("group state: %d pins over %d: %w", n, MaxGroupStatePins, ErrMalformed))
	}
	for i := 0; r.err == nil && i < int(n); i++ {
		pb := r.sized("pin record", 1, MaxFrameSize)
		if r.err != nil {
			break
		}
		rec, err := DecodeArchiveRecord(pb)
		p, ok := rec.(ArchivePin)
		switch {
		case err != nil:
			r.fail(fmt.Errorf("group state pin record: %w", err))
		case !ok:
			r.fail(fmt.Errorf("group state: a record of kind %d where a pin is: %w", rec.ArchiveKind(), ErrMalformed))
		default:
			s.Pins = append(s.Pins, p)
		}
	}
	if err := r.end(); err != nil {
		return GroupState{}, err
	}
	if err := checkGroupStatePins(s.Pins); err != nil {
		return GroupState{}, err
	}
	return s, nil
}
