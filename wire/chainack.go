package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// Cumulative acknowledgements of chain messages (docs/protocol.md, "Sender
// chains", "Cumulative acknowledgements"). A member that decided several
// chain messages of one group from one sender device in one receive pass
// acknowledges them in one pairwise frame of kind 10 naming their logical
// IDs, instead of one ACK frame (kind 2) each. The IDs are listed in
// ascending byte order without repeats, so that a list has exactly one
// encoding. Kind 11 is reserved for a later form of it and refused today.

// Cumulative acknowledgement frame kinds.
const (
	FrameChainAcks FrameKind = 10
	// FrameChainAcksReserved is reserved for a later cumulative
	// acknowledgement; no build sends it, and PeekFrameKind refuses it.
	FrameChainAcksReserved FrameKind = 11
)

const (
	// MaxChainAckIDs is the most logical IDs one cumulative acknowledgement
	// names. A receive pass that decided more sends several.
	MaxChainAckIDs = 512
	// chainAcksHeaderSize is the version, the kind, the group and the count.
	chainAcksHeaderSize = 1 + 1 + 16 + 2
	// MaxChainAcksSize is the size of a cumulative acknowledgement naming
	// MaxChainAckIDs messages.
	MaxChainAcksSize = chainAcksHeaderSize + MaxChainAckIDs*16
)

// ChainAcks acknowledges chain messages of one group to their sender device:
// each logical ID in IDs (1 to MaxChainAckIDs, strictly ascending) ends the
// acknowledging member's lane of that message, as an ACK frame of that ID
// would.
type ChainAcks struct {
	Group GroupID
	IDs   []LogicalID
}

// ChainAcksSize returns the size of a cumulative acknowledgement naming n
// messages.
func ChainAcksSize(n int) int { return chainAcksHeaderSize + 16*n }

// checkChainAckIDs refuses an empty list, one over MaxChainAckIDs and one
// not strictly ascending.
func checkChainAckIDs(ids []LogicalID) error {
	if len(ids) == 0 || len(ids) > MaxChainAckIDs {
		return fmt.Errorf("%d IDs, not 1 to %d: %w", len(ids), MaxChainAckIDs, ErrMalformed)
	}
	for i := 1; i < len(ids); i++ {
		if string(ids[i-1][:]) >= string(ids[i][:]) {
			return fmt.Errorf("ID %d not above the one before: %w", i, ErrMalformed)
		}
	}
	return nil
}

// EncodeChainAcks returns a cumulative acknowledgement frame's bytes. A list
// that is empty, over MaxChainAckIDs or not strictly ascending fails with
// ErrMalformed (SortChainAckIDs orders one).
func EncodeChainAcks(a ChainAcks) ([]byte, error) {
	if err := checkChainAckIDs(a.IDs); err != nil {
		return nil, fmt.Errorf("wire: encode chain acks: %w", err)
	}
	b := make([]byte, 0, ChainAcksSize(len(a.IDs)))
	b = append(b, FrameVersion, byte(FrameChainAcks))
	b = append(b, a.Group[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(a.IDs)))
	for _, id := range a.IDs {
		b = append(b, id[:]...)
	}
	return b, nil
}

// DecodeChainAcks parses a cumulative acknowledgement frame, rejecting input
// over MaxFrameSize (ErrMessageTooLarge), another version
// (ErrUnsupportedVersion), another kind, a count of 0 or over
// MaxChainAckIDs, IDs not strictly ascending, truncation and trailing bytes
// (ErrMalformed).
func DecodeChainAcks(b []byte) (ChainAcks, error) {
	r, err := groupReader(b, FrameChainAcks, MaxFrameSize)
	if err != nil {
		return ChainAcks{}, err
	}
	var a ChainAcks
	r.array(a.Group[:], "group")
	n := int(r.u16("count"))
	if r.err == nil && (n == 0 || n > MaxChainAckIDs) {
		r.fail(fmt.Errorf("count %d, not 1 to %d: %w", n, MaxChainAckIDs, ErrMalformed))
	}
	if p := r.take(16*n, "ids"); p != nil {
		a.IDs = make([]LogicalID, n)
		for i := range a.IDs {
			copy(a.IDs[i][:], p[16*i:])
		}
	}
	if err := r.end(); err != nil {
		return ChainAcks{}, err
	}
	if err := checkChainAckIDs(a.IDs); err != nil {
		return ChainAcks{}, fmt.Errorf("wire: decode chain acks: %w", err)
	}
	return a, nil
}

// SortChainAckIDs sorts ids in ascending byte order and drops repeats, in
// place, as EncodeChainAcks wants them.
func SortChainAckIDs(ids []LogicalID) []LogicalID {
	slices.SortFunc(ids, func(a, b LogicalID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}
