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
// devices of its person with a decision frame (kind 15); a commit of a
// text message carries the committed body (kind 16), so that a device
// that discarded the message meanwhile takes it back (commit beats
// discard); a commit of an action received one to one carries the
// action (kind 18). They ride the pairwise session between two devices of one
// account and are acknowledged as any application frame is.
const (
	FrameSentCopy     FrameKind = 14
	FrameDecision     FrameKind = 15
	FrameDecisionBody FrameKind = 16
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

// MaxDecisionBodySize is the largest committed body a decision carries:
// a decision with it and the longest address is exactly MaxFrameSize
// bytes. A longer body is not sent; its decision goes without it (kind
// 15).
const MaxDecisionBodySize = MaxFrameSize - (1 + 1 + 16 + 1 + MaxAddressSize + 16 + 4)

// FrameDecisionAction is a commit's decision that carries the committed
// action (a reply, a reaction, an edit, a delete received one to one): a
// kind-16 body is text with no content type, so an action has a kind of
// its own (added after kind 17).
const FrameDecisionAction FrameKind = 18

// MaxDecisionActionSize is the largest action body a kind-18 decision
// carries: a decision with it and the longest address is exactly
// MaxFrameSize bytes. A longer action's decision goes without it (kind
// 15).
const MaxDecisionActionSize = MaxFrameSize - (1 + 1 + 16 + 1 + MaxAddressSize + 16 + 1 + 4)

// Decision tells the other devices of a person that message ID from Sender
// was decided on the device that sends it. Body, when not nil, is the
// committed message's text (a kind-16 frame, whose outcome is always
// committed); nil is a kind-15 frame without it. Content, when it is an
// action's content type (IsAction), makes it a kind-18 frame (always a
// commit): Body is then the committed action's body as its content frame
// carried it (EncodeAction's bytes); otherwise Content is zero.
type Decision struct {
	ID      LogicalID // the decision frame's own logical ID (its lane's)
	Sender  string    // the device address the message came from
	Message LogicalID // the decided message's logical ID
	Outcome DecisionOutcome
	Content ContentType
	Body    []byte
}

// EncodeDecision returns a decision frame's bytes, without a body:
//
//	0x01 | 0x0f | id[16] | sender length u8 | sender | message[16] | outcome u8
//
// and with one (a commit):
//
//	0x01 | 0x10 | id[16] | sender length u8 | sender | message[16] | body length u32 | body
//
// and with an action (a commit of one, Content set):
//
//	0x01 | 0x12 | id[16] | sender length u8 | sender | message[16] | content type u8 | action length u32 | action body
//
// An unknown outcome, a body with a discard, a content type that is not
// an action's, an action body DecodeAction refuses, or an address that is
// not canonical fails with ErrMalformed; a body over MaxDecisionBodySize
// (an action body over MaxDecisionActionSize) with ErrMessageTooLarge.
func EncodeDecision(d Decision) ([]byte, error) {
	if d.Content != 0 {
		return encodeDecisionAction(d)
	}
	if d.Outcome != DecisionCommitted && d.Outcome != DecisionDiscarded {
		return nil, fmt.Errorf("decision outcome %d: %w", d.Outcome, ErrMalformed)
	}
	if d.Body != nil && d.Outcome != DecisionCommitted {
		return nil, fmt.Errorf("a discard with a body: %w", ErrMalformed)
	}
	if len(d.Body) > MaxDecisionBodySize {
		return nil, ErrMessageTooLarge
	}
	if err := CheckDeviceAddress(d.Sender); err != nil {
		return nil, fmt.Errorf("decision sender: %w", err)
	}
	kind := FrameDecision
	if d.Body != nil {
		kind = FrameDecisionBody
	}
	b := make([]byte, 0, 1+1+16+1+len(d.Sender)+16+4+len(d.Body))
	b = append(b, FrameVersion, byte(kind))
	b = append(b, d.ID[:]...)
	b = append(b, byte(len(d.Sender)))
	b = append(b, d.Sender...)
	b = append(b, d.Message[:]...)
	if d.Body == nil {
		return append(b, byte(d.Outcome)), nil
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Body)))
	return append(b, d.Body...), nil
}

// encodeDecisionAction is EncodeDecision for a kind-18 frame.
func encodeDecisionAction(d Decision) ([]byte, error) {
	if d.Outcome != DecisionCommitted {
		return nil, fmt.Errorf("an action with a decision of outcome %d: %w", d.Outcome, ErrMalformed)
	}
	if len(d.Body) > MaxDecisionActionSize {
		return nil, ErrMessageTooLarge
	}
	if _, err := DecodeAction(d.Content, d.Body); err != nil {
		return nil, fmt.Errorf("decision action: %w", err)
	}
	if err := CheckDeviceAddress(d.Sender); err != nil {
		return nil, fmt.Errorf("decision sender: %w", err)
	}
	b := make([]byte, 0, 1+1+16+1+len(d.Sender)+16+1+4+len(d.Body))
	b = append(b, FrameVersion, byte(FrameDecisionAction))
	b = append(b, d.ID[:]...)
	b = append(b, byte(len(d.Sender)))
	b = append(b, d.Sender...)
	b = append(b, d.Message[:]...)
	b = append(b, byte(d.Content))
	b = binary.BigEndian.AppendUint32(b, uint32(len(d.Body)))
	return append(b, d.Body...), nil
}

// DecodeDecision parses a decision frame of any of its kinds (15, 16,
// 18), rejecting as DecodeSentCopy does, an unknown outcome (ErrMalformed)
// and a body length over MaxDecisionBodySize; a kind-18 frame's content
// type that is no action's, or whose action body DecodeAction refuses,
// too (ErrMalformed, or ErrMessageTooLarge). The body is a copy, never nil
// for a kind-16 or kind-18 frame.
func DecodeDecision(b []byte) (Decision, error) {
	kind := FrameDecision
	if len(b) > 1 && (FrameKind(b[1]) == FrameDecisionBody || FrameKind(b[1]) == FrameDecisionAction) {
		kind = FrameKind(b[1])
	}
	r, err := groupReader(b, kind, MaxFrameSize)
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
	switch kind {
	case FrameDecisionAction:
		d.Outcome = DecisionCommitted
		d.Content = ContentType(r.u8("content type"))
		body := r.sized("action", 0, MaxDecisionActionSize)
		if r.err == nil {
			d.Body = append(make([]byte, 0, len(body)), body...)
		}
	case FrameDecisionBody:
		d.Outcome = DecisionCommitted
		body := r.sized("body", 0, MaxDecisionBodySize)
		if r.err == nil {
			d.Body = append(make([]byte, 0, len(body)), body...)
		}
	default:
		d.Outcome = DecisionOutcome(r.u8("outcome"))
		if r.err == nil && d.Outcome != DecisionCommitted && d.Outcome != DecisionDiscarded {
			r.fail(fmt.Errorf("decision outcome %d: %w", d.Outcome, ErrMalformed))
		}
	}
	if err := r.end(); err != nil {
		return Decision{}, err
	}
	if kind == FrameDecisionAction {
		if _, err := DecodeAction(d.Content, d.Body); err != nil {
			return Decision{}, fmt.Errorf("decision action: %w", err)
		}
	}
	return d, nil
}

// FrameSentActionCopy is a sent copy of an action (a reply, a reaction,
// an edit, a delete) this person sent one to one from another of their
// devices: kind 14 carries text only, so the action has a kind of its own.
const FrameSentActionCopy FrameKind = 17

// MaxSentActionBodySize is the largest action body a sent action copy
// carries: a copy with it and the longest address is exactly MaxFrameSize
// bytes. A reply or an edit whose text makes its body longer goes to no
// other device of the sender (the sender refuses it, as a text over
// MaxSentCopyBodySize).
const MaxSentActionBodySize = MaxFrameSize - (1 + 1 + 16 + 1 + MaxAddressSize + 1 + 4)

// MaxSentActionTextSize is the longest text of a reply or an edit whose
// sent action copy fits MaxSentActionBodySize (an edit's header is the
// larger): a little under MaxActionTextSize. A person's reply or edit to
// another person goes to their own other devices as such a copy, so this
// is the longest such text a person with several devices can send.
const MaxSentActionTextSize = MaxSentActionBodySize - actionEditHeader

// SentActionCopy is a copy of an action this person sent from another of
// their devices: the action message's logical ID (the one its lanes to the
// peer carry), the device address it went to (the conversation it belongs
// to) and the action itself (its target, text, reaction or edit number).
type SentActionCopy struct {
	ID     LogicalID
	To     string // a canonical device address
	Action Action
}

// EncodeSentActionCopy returns a sent action copy frame's bytes:
//
//	0x01 | 0x11 | id[16] | to length u8 | to | content type u8 | action length u32 | action body
//
// where the action body is EncodeAction's. An action EncodeAction refuses
// fails as it does; an action body over MaxSentActionBodySize (a reply or
// an edit near MaxActionTextSize) with ErrMessageTooLarge; an address that
// is not canonical with ErrMalformed.
func EncodeSentActionCopy(s SentActionCopy) ([]byte, error) {
	body, err := EncodeAction(s.Action)
	if err != nil {
		return nil, err
	}
	if len(body) > MaxSentActionBodySize {
		return nil, ErrMessageTooLarge
	}
	if err := CheckDeviceAddress(s.To); err != nil {
		return nil, fmt.Errorf("sent action copy recipient: %w", err)
	}
	b := make([]byte, 0, 1+1+16+1+len(s.To)+1+4+len(body))
	b = append(b, FrameVersion, byte(FrameSentActionCopy))
	b = append(b, s.ID[:]...)
	b = append(b, byte(len(s.To)))
	b = append(b, s.To...)
	b = append(b, byte(s.Action.Content))
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...), nil
}

// DecodeSentActionCopy parses a sent action copy frame, rejecting as
// DecodeSentCopy does, and a content type that is no action or an action
// body DecodeAction refuses (ErrMalformed, or ErrMessageTooLarge).
func DecodeSentActionCopy(b []byte) (SentActionCopy, error) {
	r, err := groupReader(b, FrameSentActionCopy, MaxFrameSize)
	if err != nil {
		return SentActionCopy{}, err
	}
	var s SentActionCopy
	r.array(s.ID[:], "id")
	s.To = r.address("recipient")
	if r.err == nil {
		if err := CheckDeviceAddress(s.To); err != nil {
			r.fail(fmt.Errorf("sent action copy recipient: %w", err))
		}
	}
	content := ContentType(r.u8("content type"))
	body := r.sized("action", 0, MaxSentActionBodySize)
	if err := r.end(); err != nil {
		return SentActionCopy{}, err
	}
	a, err := DecodeAction(content, body)
	if err != nil {
		return SentActionCopy{}, fmt.Errorf("sent action copy: %w", err)
	}
	s.Action = a
	return s, nil
}
