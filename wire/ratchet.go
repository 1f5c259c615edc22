package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
)

const (
	// RatchetHeaderSize is the size of an encoded RatchetHeader.
	RatchetHeaderSize = 32 + 4 + 4
	// MinCiphertextSize is the smallest ratchet ciphertext: the AEAD tag of
	// an empty plaintext.
	MinCiphertextSize = 16
	// MaxCiphertextSize is the largest ratchet ciphertext: what is left of
	// MaxPayloadSize after the header.
	MaxCiphertextSize = MaxPayloadSize - RatchetHeaderSize
)

// RatchetHeader is the clear header of a Double Ratchet message. Its bytes
// are part of the associated data of the message's AEAD.
type RatchetHeader struct {
	RatchetKey          [32]byte // the sender's current X25519 ratchet public key
	PreviousChainLength uint32   // messages sent on the previous sending chain
	MessageNumber       uint32   // this message's number on the current chain
}

// AppendBinary appends the RatchetHeaderSize header bytes to b, as they
// appear on the wire; the engine uses them as associated data. It never
// fails.
func (h RatchetHeader) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, h.RatchetKey[:]...)
	b = binary.BigEndian.AppendUint32(b, h.PreviousChainLength)
	b = binary.BigEndian.AppendUint32(b, h.MessageNumber)
	return b, nil
}

// RatchetMessage is one Double Ratchet message: the payload of an
// EnvelopeRatchet, and the tail of a PreKeyMessage.
type RatchetMessage struct {
	Header     RatchetHeader
	Ciphertext []byte // AEAD output, tag included
}

// EncodeRatchetMessage returns the message's bytes. A ciphertext shorter than
// MinCiphertextSize fails with ErrMalformed, one longer than
// MaxCiphertextSize with ErrMessageTooLarge.
func EncodeRatchetMessage(m RatchetMessage) ([]byte, error) {
	if err := checkCiphertext(len(m.Ciphertext), MaxCiphertextSize); err != nil {
		return nil, fmt.Errorf("wire: encode ratchet message: %w", err)
	}
	return appendRatchet(make([]byte, 0, RatchetHeaderSize+len(m.Ciphertext)), m), nil
}

// AppendRatchetMessage appends the message's bytes to dst, with the checks of
// EncodeRatchetMessage. On error it returns dst unchanged.
func AppendRatchetMessage(dst []byte, m RatchetMessage) ([]byte, error) {
	if err := checkCiphertext(len(m.Ciphertext), MaxCiphertextSize); err != nil {
		return dst, fmt.Errorf("wire: encode ratchet message: %w", err)
	}
	return appendRatchet(slices.Grow(dst, RatchetHeaderSize+len(m.Ciphertext)), m), nil
}

func appendRatchet(b []byte, m RatchetMessage) []byte {
	b, _ = m.Header.AppendBinary(b)
	return append(b, m.Ciphertext...)
}

// checkCiphertext checks a ciphertext length against MinCiphertextSize and
// the room left in a payload.
func checkCiphertext(n, room int) error {
	if n < MinCiphertextSize {
		return fmt.Errorf("ciphertext of %d bytes under %d: %w", n, MinCiphertextSize, ErrMalformed)
	}
	if n > room {
		return fmt.Errorf("ciphertext of %d bytes over %d: %w", n, room, ErrMessageTooLarge)
	}
	return nil
}

// DecodeRatchetMessage parses one ratchet message: the header, then every
// remaining byte as the ciphertext. It rejects input longer than
// MaxPayloadSize (ErrMessageTooLarge) and input too short to hold the header
// and MinCiphertextSize bytes (ErrMalformed). The ciphertext is a copy, the
// only allocation.
func DecodeRatchetMessage(b []byte) (RatchetMessage, error) {
	if len(b) > MaxPayloadSize {
		return RatchetMessage{}, fmt.Errorf("wire: decode ratchet message: %d bytes over %d: %w", len(b), MaxPayloadSize, ErrMessageTooLarge)
	}
	m, err := decodeRatchet(b)
	if err != nil {
		return RatchetMessage{}, fmt.Errorf("wire: decode ratchet message: %w", err)
	}
	return m, nil
}

// decodeRatchet parses a ratchet message whose total size is already known
// to be within MaxPayloadSize.
func decodeRatchet(b []byte) (RatchetMessage, error) {
	if len(b) < RatchetHeaderSize+MinCiphertextSize {
		return RatchetMessage{}, fmt.Errorf("%d bytes under %d: %w", len(b), RatchetHeaderSize+MinCiphertextSize, ErrMalformed)
	}
	var m RatchetMessage
	copy(m.Header.RatchetKey[:], b[:32])
	m.Header.PreviousChainLength = binary.BigEndian.Uint32(b[32:36])
	m.Header.MessageNumber = binary.BigEndian.Uint32(b[36:40])
	m.Ciphertext = append(make([]byte, 0, len(b)-RatchetHeaderSize), b[RatchetHeaderSize:]...)
	return m, nil
}
