package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// EnvelopeType tells the recipient how to open an envelope's payload. It is
// visible to the relay, like the addresses, the envelope ID and the size.
type EnvelopeType uint8

// Envelope types.
const (
	// EnvelopePreKey carries a PreKeyMessage: a session initiation and its
	// first ratchet message.
	EnvelopePreKey EnvelopeType = 1
	// EnvelopeRatchet carries a RatchetMessage on an established session.
	EnvelopeRatchet EnvelopeType = 2
	// EnvelopeRecovery carries a RecoveryRequest: the recipient's session
	// with the sender cannot work, and the sender asks it to start afresh.
	EnvelopeRecovery EnvelopeType = 3
	// EnvelopeChain carries a ChainMessage: a group message encrypted once
	// under its sender's chain (senderchain.go), the same payload for every
	// member.
	EnvelopeChain EnvelopeType = 4
)

// String returns "prekey", "ratchet", "recovery" or "chain".
func (t EnvelopeType) String() string {
	switch t {
	case EnvelopePreKey:
		return "prekey"
	case EnvelopeRatchet:
		return "ratchet"
	case EnvelopeRecovery:
		return "recovery"
	case EnvelopeChain:
		return "chain"
	}
	return fmt.Sprintf("envelope type %d", uint8(t))
}

func (t EnvelopeType) valid() bool {
	return t >= EnvelopePreKey && t <= EnvelopeChain
}

// EnvelopeID is the random ID of one encryption: new for the first send, for
// every retry and for every acknowledgement, so that the relay cannot link a
// retry to its original or an acknowledgement to its message.
type EnvelopeID [16]byte

// Envelope is what the relay stores and forwards: who sends to whom, and an
// opaque payload (a PreKeyMessage or a RatchetMessage, as Type says).
type Envelope struct {
	Type      EnvelopeType
	ID        EnvelopeID
	Sender    string
	Recipient string
	Payload   []byte
}

const (
	// EnvelopeVersion is the envelope version this package reads and
	// writes. Version 1 carried PreKeyMessages of version 1 and ratchet
	// messages keyed by their chain position alone; a version-1 envelope is
	// refused with ErrUnsupportedVersion. The version is not authenticated:
	// it only lets a reader refuse what it cannot parse.
	EnvelopeVersion = 2
	// MaxPayloadSize is the largest envelope payload (256 KiB), and so the
	// largest RatchetMessage and PreKeyMessage.
	MaxPayloadSize = 262144
	// MaxEnvelopeSize is the largest encoded envelope: both addresses at
	// MaxAddressSize and a payload of MaxPayloadSize.
	MaxEnvelopeSize = envelopeFixedSize + 2*(1+MaxAddressSize) + 4 + MaxPayloadSize

	envelopeFixedSize = 1 + 1 + 16 // version, type, id
)

// EncodeEnvelope returns the envelope's bytes. An unknown type, an invalid
// address or an empty payload fail with ErrMalformed; a payload over
// MaxPayloadSize with ErrMessageTooLarge.
func EncodeEnvelope(e Envelope) ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, fmt.Errorf("wire: encode envelope: %w", err)
	}
	n := envelopeFixedSize + 1 + len(e.Sender) + 1 + len(e.Recipient) + 4 + len(e.Payload)
	b := make([]byte, 0, n)
	b = append(b, EnvelopeVersion, byte(e.Type))
	b = append(b, e.ID[:]...)
	b = appendAddress(b, e.Sender)
	b = appendAddress(b, e.Recipient)
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Payload)))
	b = append(b, e.Payload...)
	return b, nil
}

func (e *Envelope) check() error {
	if !e.Type.valid() {
		return fmt.Errorf("unknown type %d: %w", e.Type, ErrMalformed)
	}
	if err := checkAddress(e.Sender); err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	if err := checkAddress(e.Recipient); err != nil {
		return fmt.Errorf("recipient: %w", err)
	}
	if len(e.Payload) == 0 {
		return fmt.Errorf("empty payload: %w", ErrMalformed)
	}
	if len(e.Payload) > MaxPayloadSize {
		return fmt.Errorf("payload of %d bytes over %d: %w", len(e.Payload), MaxPayloadSize, ErrMessageTooLarge)
	}
	return nil
}

// DecodeEnvelope parses one envelope. It rejects, in this order: input longer
// than MaxEnvelopeSize (ErrMessageTooLarge); a version other than
// EnvelopeVersion (ErrUnsupportedVersion); an unknown type, truncation, an
// invalid address, a payload length outside 1..MaxPayloadSize or trailing
// bytes (ErrMalformed). The payload is a copy; the payload itself is not
// parsed.
func DecodeEnvelope(b []byte) (Envelope, error) {
	if len(b) > MaxEnvelopeSize {
		return Envelope{}, fmt.Errorf("wire: decode envelope: %d bytes over %d: %w", len(b), MaxEnvelopeSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(EnvelopeVersion)
	var e Envelope
	e.Type = EnvelopeType(r.u8("type"))
	if r.err == nil && !e.Type.valid() {
		r.fail(fmt.Errorf("unknown type %d: %w", e.Type, ErrMalformed))
	}
	r.array(e.ID[:], "id")
	e.Sender = r.address("sender")
	e.Recipient = r.address("recipient")
	p := r.sized("payload", 1, MaxPayloadSize)
	if err := r.end(); err != nil {
		return Envelope{}, fmt.Errorf("wire: decode envelope: %w", err)
	}
	e.Payload = bytes.Clone(p)
	return e, nil
}
