package wire

import (
	"encoding/binary"
	"fmt"
)

// Frames between the devices of one person (issue 33, lanes per device).
// A message to a person goes on one lane per device of theirs and, as a
// sent copy (kind 14), on one lane to each other device of the sender's
// own account, so that every device's history shows both sides. A device
// that decides (commits or discards) a received message tells the other
// devices of its person with a decision frame (kind 15). Both ride the
// pairwise session between two devices of one account and are
// acknowledged as any application frame is.
const (
	FrameSentCopy FrameKind = 14
	FrameDecision FrameKind = 15
)

// MaxSentCopyBodySize is the largest body of a sent copy: a copy with it
// and the longest address is exactly MaxFrameSize bytes, so it fits the
// ratchet as an application frame does. A message to a person whose body is
// longer goes to no other device of the sender (the sender refuses it).
const MaxSentCopyBodySize = MaxFrameSize - (1 + 1 + 16 + 1 + MaxAddressSize + 4)

// SentCopy is a copy of a message this person sent from another of their
// devices: its logical ID (the one every lane of the message carries), the
// device address the message went to (the conversation it belongs to) and
// its body as the sender's history keeps it.
type SentCopy struct {
	ID   LogicalID
	To   string // a canonical device address
	Body []byte
}

// EncodeSentCopy returns a sent copy frame's bytes:
//
//	0x01 | 0x0e | id[16] | to length u8 | to | body length u32 | body
//
// A body over MaxSentCopyBodySize fails with ErrMessageTooLarge; an
// address that is not canonical with ErrMalformed.
func EncodeSentCopy(s SentCopy) ([]byte, error) {
	if len(s.Body) > MaxSentCopyBodySize {
		return nil, ErrMessageTooLarge
	}
	if err := CheckDeviceAddress(s.To); err != nil {
		return nil, fmt.Errorf("sent copy recipient: %w", err)
	}
	b := make([]byte, 0, 1+1+16+1+len(s.To)+4+len(s.Body))
	b = append(b, FrameVersion, byte(FrameSentCopy))
	b = append(b, s.ID[:]...)
	b = append(b, byte(len(s.To)))
	b = append(b, s.To...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Body)))
	return append(b, s.Body...), nil
}

// DecodeSentCopy parses a sent copy frame, rejecting as DecodeFrame does:
// input over MaxFrameSize (ErrMessageTooLarge), another version
// (ErrUnsupportedVersion), another kind, an address that is not
// canonical, a body length over MaxSentCopyBodySize, truncation or
// trailing bytes (ErrMalformed). The body is a copy.
func DecodeSentCopy(b []byte) (SentCopy, error) {
	r, err := groupReader(b, FrameSentCopy, MaxFrameSize)
	if err != nil {
		return SentCopy{}, err
	}
	var s SentCopy
	r.array(s.ID[:], "id")
	s.To = r.address("recipient")
	if r.err == nil {
		if err := CheckDeviceAddress(s.To); err != nil {
			r.fail(fmt.Errorf("sent copy recipient: %w", err))
		}
	}
	body := r.sized("body", 0, MaxSentCopyBodySize)
	if err := r.end(); err != nil {
		return SentCopy{}, err
	}
	s.Body = append(make([]byte, 0, len(body)), body...)
	return s, nil
}

// DecisionOutcome is what a device decided about a received message.
type DecisionOutcome uint8

// Decision outcomes. Commit beats discard when two devices decide at once
// (docs/protocol.md, "Decisions are the person's").
const (
	DecisionCommitted DecisionOutcome = 1
	DecisionDiscarded DecisionOutcome = 2
)

// Decision tells the other devices of a person that message ID from Sender
// was decided on the device that sends it.
type Decision struct {
	ID      LogicalID // the decision frame's own logical ID (its lane's)
	Sender  string    // the device address the message came from
	Message LogicalID // the decided message's logical ID
	Outcome DecisionOutcome
}

// EncodeDecision returns a decision frame's bytes:
//
//	0x01 | 0x0f | id[16] | sender length u8 | sender | message[16] | outcome u8
//
// An unknown outcome or an address that is not canonical fails with
// ErrMalformed.
func EncodeDecision(d Decision) ([]byte, error) {
	if d.Outcome != DecisionCommitted && d.Outcome != DecisionDiscarded {
		return nil, fmt.Errorf("decision outcome %d: %w", d.Outcome, ErrMalformed)
	}
	if err := CheckDeviceAddress(d.Sender); err != nil {
		return nil, fmt.Errorf("decision sender: %w", err)
	}
	b := make([]byte, 0, 1+1+16+1+len(d.Sender)+16+1)
	b = append(b, FrameVersion, byte(FrameDecision))
	b = append(b, d.ID[:]...)
	b = append(b, byte(len(d.Sender)))
	b = append(b, d.Sender...)
	b = append(b, d.Message[:]...)
	return append(b, byte(d.Outcome)), nil
}

// DecodeDecision parses a decision frame, rejecting as DecodeSentCopy
// does, and an unknown outcome (ErrMalformed).
func DecodeDecision(b []byte) (Decision, error) {
	r, err := groupReader(b, FrameDecision, MaxFrameSize)
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	r.array(d.ID[:], "id")
	d.Sender = r.address("sender")
	if r.err == nil {
		if err := CheckDeviceAddress(d.Sender); err != nil {
			r.fail(fmt.Errorf("decision sender: %w", err))
		}
	}
	r.array(d.Message[:], "message")
	d.Outcome = DecisionOutcome(r.u8("outcome"))
	if r.err == nil && d.Outcome != DecisionCommitted && d.Outcome != DecisionDiscarded {
		r.fail(fmt.Errorf("decision outcome %d: %w", d.Outcome, ErrMalformed))
	}
	if err := r.end(); err != nil {
		return Decision{}, err
	}
	return d, nil
}
