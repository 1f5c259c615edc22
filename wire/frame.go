package wire

import (
	"encoding/binary"
	"errors"
)

// LogicalID identifies one application message from its sender, across every
// encryption of it. Any 16 bytes are a valid ID.
type LogicalID [16]byte

// FrameKind tells an application message from an acknowledgement.
type FrameKind uint8

// Frame kinds.
const (
	FrameApplication FrameKind = 1
	FrameAck         FrameKind = 2
)

// Frame is the plaintext of every ratchet message: an application message
// with its logical ID and body, or the acknowledgement of one logical ID.
type Frame struct {
	Kind FrameKind
	ID   LogicalID
	Body []byte
}

const (
	// FrameVersion is the only frame version.
	FrameVersion = 0x01
	// MaxBodySize is the largest application body: 192 KiB.
	MaxBodySize = 196608
	// MaxFrameSize is the largest encoded frame: an application frame with a
	// body of MaxBodySize.
	MaxFrameSize = 196630

	appHeaderSize = 1 + 1 + 16 + 4
	ackSize       = 1 + 1 + 16
)

// Frame and general decoding errors, matched with errors.Is.
var (
	// ErrMessageTooLarge means a body or an input exceeds its limit.
	ErrMessageTooLarge = errors.New("wire: message too large")
	// ErrUnsupportedVersion means a version byte this build does not know.
	ErrUnsupportedVersion = errors.New("wire: unsupported version")
	// ErrMalformed means truncation, an unknown type, a length over its limit,
	// trailing bytes or a field out of range.
	ErrMalformed = errors.New("wire: malformed")
)

// EncodeFrame returns the frame's bytes. Encoding is deterministic. A body
// over MaxBodySize fails with ErrMessageTooLarge; an acknowledgement must have
// no body.
func EncodeFrame(f Frame) ([]byte, error) {
	switch f.Kind {
	case FrameApplication:
		if len(f.Body) > MaxBodySize {
			return nil, ErrMessageTooLarge
		}
		b := make([]byte, appHeaderSize+len(f.Body))
		b[0], b[1] = FrameVersion, byte(FrameApplication)
		copy(b[2:18], f.ID[:])
		binary.BigEndian.PutUint32(b[18:22], uint32(len(f.Body)))
		copy(b[22:], f.Body)
		return b, nil
	case FrameAck:
		if len(f.Body) != 0 {
			return nil, ErrMalformed
		}
		b := make([]byte, ackSize)
		b[0], b[1] = FrameVersion, byte(FrameAck)
		copy(b[2:18], f.ID[:])
		return b, nil
	}
	return nil, ErrMalformed
}

// DecodeFrame parses one frame. It rejects, in this order: input longer than
// MaxFrameSize (ErrMessageTooLarge); a version other than 0x01
// (ErrUnsupportedVersion); an unknown type, truncation, a length over
// MaxBodySize or trailing bytes (ErrMalformed). The body is a copy; an empty
// body decodes as a non-nil empty slice.
func DecodeFrame(b []byte) (Frame, error) {
	if len(b) > MaxFrameSize {
		return Frame{}, ErrMessageTooLarge
	}
	if len(b) < 1 {
		return Frame{}, ErrMalformed
	}
	if b[0] != FrameVersion {
		return Frame{}, ErrUnsupportedVersion
	}
	if len(b) < 2 {
		return Frame{}, ErrMalformed
	}
	var f Frame
	switch FrameKind(b[1]) {
	case FrameApplication:
		if len(b) < appHeaderSize {
			return Frame{}, ErrMalformed
		}
		n := binary.BigEndian.Uint32(b[18:22])
		if n > MaxBodySize || uint64(len(b)-appHeaderSize) != uint64(n) {
			return Frame{}, ErrMalformed
		}
		f.Kind = FrameApplication
		copy(f.ID[:], b[2:18])
		f.Body = append(make([]byte, 0, n), b[appHeaderSize:]...)
	case FrameAck:
		if len(b) != ackSize {
			return Frame{}, ErrMalformed
		}
		f.Kind = FrameAck
		copy(f.ID[:], b[2:18])
	default:
		return Frame{}, ErrMalformed
	}
	return f, nil
}
