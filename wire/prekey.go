package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
)

const (
	// PreKeyMessageVersion is the PreKeyMessage version this package reads
	// and writes. Version 2 added Replaces; version 1 is refused with
	// ErrUnsupportedVersion.
	PreKeyMessageVersion = 2
	// KEMCiphertextSize is the size of an ML-KEM-768 ciphertext.
	KEMCiphertextSize = 1088

	// initiationSize is the encoded InitiationHeader without a one-time
	// prekey; one adds oneTimePreKeyIDSize.
	initiationSize      = 1 + 32 + 32 + 64 + 32 + 4 + 4 + 1 + KEMCiphertextSize + 32
	oneTimePreKeyIDSize = 4
)

// InitiationHeader is the clear part of a PreKeyMessage: the initiator's
// identity, its ephemeral key, the responder's prekeys it used and the
// ML-KEM encapsulation to the responder's KEM prekey. The engine defines what
// is signed and how these feed the key derivation.
type InitiationHeader struct {
	IdentitySigningKey [32]byte // Ed25519
	IdentityDHKey      [32]byte // X25519
	IdentitySignature  [64]byte // Ed25519 signature by the signing key over the DH key (engine defines the message)
	EphemeralKey       [32]byte // X25519
	SignedPreKeyID     uint32
	KEMPreKeyID        uint32
	HasOneTimePreKey   bool
	OneTimePreKeyID    uint32 // zero unless HasOneTimePreKey
	KEMCiphertext      [KEMCiphertextSize]byte
	// Replaces names the session initiation (a 32-byte initiation ID) that
	// this one deliberately replaces: the responder's session that the
	// initiator learned was broken. Zero for none.
	Replaces [32]byte
}

// AppendBinary appends the header's bytes, as they open a PreKeyMessage
// (version byte included), to b. A header without a one-time prekey but with
// a OneTimePreKeyID other than zero fails with ErrMalformed, since it could
// not decode back to itself; on error b is returned unchanged.
func (h InitiationHeader) AppendBinary(b []byte) ([]byte, error) {
	if err := h.check(); err != nil {
		return b, fmt.Errorf("wire: encode initiation header: %w", err)
	}
	return h.append(slices.Grow(b, h.size())), nil
}

func (h *InitiationHeader) check() error {
	if !h.HasOneTimePreKey && h.OneTimePreKeyID != 0 {
		return fmt.Errorf("one-time prekey ID %d without a one-time prekey: %w", h.OneTimePreKeyID, ErrMalformed)
	}
	return nil
}

func (h *InitiationHeader) size() int {
	if h.HasOneTimePreKey {
		return initiationSize + oneTimePreKeyIDSize
	}
	return initiationSize
}

func (h *InitiationHeader) append(b []byte) []byte {
	b = append(b, PreKeyMessageVersion)
	b = append(b, h.IdentitySigningKey[:]...)
	b = append(b, h.IdentityDHKey[:]...)
	b = append(b, h.IdentitySignature[:]...)
	b = append(b, h.EphemeralKey[:]...)
	b = binary.BigEndian.AppendUint32(b, h.SignedPreKeyID)
	b = binary.BigEndian.AppendUint32(b, h.KEMPreKeyID)
	if h.HasOneTimePreKey {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, h.OneTimePreKeyID)
	} else {
		b = append(b, 0)
	}
	b = append(b, h.KEMCiphertext[:]...)
	return append(b, h.Replaces[:]...)
}

// PreKeyMessage is the payload of an EnvelopePreKey: a session initiation
// and the first ratchet message on that session.
type PreKeyMessage struct {
	Initiation InitiationHeader
	Message    RatchetMessage
}

// EncodePreKeyMessage returns the message's bytes. A header that fails
// AppendBinary or a ciphertext under MinCiphertextSize fail with
// ErrMalformed; a message over MaxPayloadSize with ErrMessageTooLarge.
func EncodePreKeyMessage(m PreKeyMessage) ([]byte, error) {
	if err := m.Initiation.check(); err != nil {
		return nil, fmt.Errorf("wire: encode prekey message: %w", err)
	}
	hs := m.Initiation.size()
	if err := checkCiphertext(len(m.Message.Ciphertext), MaxPayloadSize-hs-RatchetHeaderSize); err != nil {
		return nil, fmt.Errorf("wire: encode prekey message: %w", err)
	}
	b := make([]byte, 0, hs+RatchetHeaderSize+len(m.Message.Ciphertext))
	b = m.Initiation.append(b)
	return appendRatchet(b, m.Message), nil
}

// DecodePreKeyMessage parses one PreKeyMessage. It rejects, in this order:
// input longer than MaxPayloadSize (ErrMessageTooLarge); a version other than
// PreKeyMessageVersion (ErrUnsupportedVersion); truncation, a one-time prekey
// flag other than 0 or 1, or a ratchet message that DecodeRatchetMessage
// rejects (ErrMalformed). The ciphertext is a copy.
func DecodePreKeyMessage(b []byte) (PreKeyMessage, error) {
	if len(b) > MaxPayloadSize {
		return PreKeyMessage{}, fmt.Errorf("wire: decode prekey message: %d bytes over %d: %w", len(b), MaxPayloadSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(PreKeyMessageVersion)
	var m PreKeyMessage
	h := &m.Initiation
	r.array(h.IdentitySigningKey[:], "identity signing key")
	r.array(h.IdentityDHKey[:], "identity DH key")
	r.array(h.IdentitySignature[:], "identity signature")
	r.array(h.EphemeralKey[:], "ephemeral key")
	h.SignedPreKeyID = r.u32("signed prekey ID")
	h.KEMPreKeyID = r.u32("KEM prekey ID")
	if h.HasOneTimePreKey = r.flag("one-time prekey flag"); h.HasOneTimePreKey {
		h.OneTimePreKeyID = r.u32("one-time prekey ID")
	}
	r.array(h.KEMCiphertext[:], "KEM ciphertext")
	r.array(h.Replaces[:], "replaced initiation")
	if r.err != nil {
		return PreKeyMessage{}, fmt.Errorf("wire: decode prekey message: %w", r.err)
	}
	msg, err := decodeRatchet(r.b)
	if err != nil {
		return PreKeyMessage{}, fmt.Errorf("wire: decode prekey message: ratchet message: %w", err)
	}
	m.Message = msg
	return m, nil
}
