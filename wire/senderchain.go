package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Sender chains (docs/protocol.md, "Sender chains"): a group message
// encrypted once under a symmetric chain that its sender announced to each
// member on the pairwise session.
//
// Two frames travel inside the pairwise encryption, with the version and kind
// bytes of Frame: the announcement of a chain (kind 8), pending until its
// member acknowledges it like any message, and the request for one (kind 9),
// sent like an acknowledgement and never stored as pending. The chain message
// itself is the payload of an envelope of type EnvelopeChain, encrypted and
// signed by the chain and not by the pairwise session.
//
// PeekFrameKind reports kinds 8 and 9; the engine takes an announcement
// (engine/chainrecv.go) and answers a need-chain.

// Sender chain frame kinds.
const (
	FrameChainAnnounce FrameKind = 8
	FrameNeedChain     FrameKind = 9
)

// ChainID names one sender chain: 16 random bytes chosen by its sender.
type ChainID [16]byte

const (
	// ChainAnnounceSize is the size of a chain announcement frame.
	ChainAnnounceSize = 1 + 1 + 16 + 16 + 8 + 16 + 4 + 32 + 32
	// NeedChainSize is the size of a need-chain frame.
	NeedChainSize = 1 + 1 + 16 + 8 + 16 + 4

	// ChainMessageVersion is the version byte of a chain message.
	ChainMessageVersion = 1
	// ChainMessageHeaderSize is the size of a chain message's header: the
	// version, the chain, the position and the salt. The header is what the
	// associated data binds (ChainMessage.Header), with the group and the
	// generation the receiver keeps for the chain: neither travels in
	// clear, so nothing outside the encryption says "group".
	ChainMessageHeaderSize = 1 + 16 + 4 + 16
	// ChainTagSize is the AEAD tag a chain message's ciphertext ends with.
	ChainTagSize = 16
	// MaxChainCiphertextSize is the largest chain message ciphertext: a
	// group message frame of MaxFrameSize and its tag.
	MaxChainCiphertextSize = MaxFrameSize + ChainTagSize
	// MaxChainMessageSize is the largest chain message.
	MaxChainMessageSize = ChainMessageHeaderSize + 4 + MaxChainCiphertextSize + ed25519SignatureSize
)

// A chain message fits an envelope and a SubmitMulti.
var _ [MaxSubmitMultiPayloadSize - MaxChainMessageSize]struct{}

// ChainAnnounce gives a member device the sender's chain for a group at a
// generation, from Position on: the chain key at that position and the
// chain's Ed25519 public key. ID is the frame's logical ID, which the member
// acknowledges like any message's.
type ChainAnnounce struct {
	ID         LogicalID
	Group      GroupID
	Generation uint64
	Chain      ChainID
	Position   uint32
	ChainKey   [32]byte
	SigningKey [32]byte
}

// NeedChain asks a chain's sender for its announcement: this device holds a
// chain message at Position that it cannot open.
type NeedChain struct {
	Group      GroupID
	Generation uint64
	Chain      ChainID
	Position   uint32
}

// ChainMessage is the payload of an EnvelopeChain: the header in clear (the
// chain and the position, which name the group only to who holds the chain), the
// ciphertext of a group message frame under a key derived from the
// position's message key and the salt (random, new for every encryption, so
// that a profile restored from a copy that seals a position again never
// reuses a key and nonce), and the chain's signature over the associated
// data and the ciphertext.
type ChainMessage struct {
	Chain      ChainID
	Position   uint32
	Salt       [16]byte
	Ciphertext []byte
	Signature  [64]byte
}

// EncodeChainAnnounce returns a chain announcement frame's bytes.
func EncodeChainAnnounce(a ChainAnnounce) ([]byte, error) {
	b := make([]byte, 0, ChainAnnounceSize)
	b = append(b, FrameVersion, byte(FrameChainAnnounce))
	b = append(b, a.ID[:]...)
	b = append(b, a.Group[:]...)
	b = binary.BigEndian.AppendUint64(b, a.Generation)
	b = append(b, a.Chain[:]...)
	b = binary.BigEndian.AppendUint32(b, a.Position)
	b = append(b, a.ChainKey[:]...)
	return append(b, a.SigningKey[:]...), nil
}

// DecodeChainAnnounce parses a chain announcement frame, rejecting input over
// MaxFrameSize (ErrMessageTooLarge), another version (ErrUnsupportedVersion),
// another kind, truncation and trailing bytes (ErrMalformed).
func DecodeChainAnnounce(b []byte) (ChainAnnounce, error) {
	r, err := groupReader(b, FrameChainAnnounce, MaxFrameSize)
	if err != nil {
		return ChainAnnounce{}, err
	}
	var a ChainAnnounce
	r.array(a.ID[:], "id")
	r.array(a.Group[:], "group")
	a.Generation = r.u64("generation")
	r.array(a.Chain[:], "chain")
	a.Position = r.u32("position")
	r.array(a.ChainKey[:], "chain key")
	r.array(a.SigningKey[:], "signing key")
	if err := r.end(); err != nil {
		return ChainAnnounce{}, err
	}
	return a, nil
}

// EncodeNeedChain returns a need-chain frame's bytes.
func EncodeNeedChain(n NeedChain) ([]byte, error) {
	b := make([]byte, 0, NeedChainSize)
	b = append(b, FrameVersion, byte(FrameNeedChain))
	b = append(b, n.Group[:]...)
	b = binary.BigEndian.AppendUint64(b, n.Generation)
	b = append(b, n.Chain[:]...)
	return binary.BigEndian.AppendUint32(b, n.Position), nil
}

// DecodeNeedChain parses a need-chain frame, rejecting as
// DecodeChainAnnounce does.
func DecodeNeedChain(b []byte) (NeedChain, error) {
	r, err := groupReader(b, FrameNeedChain, MaxFrameSize)
	if err != nil {
		return NeedChain{}, err
	}
	var n NeedChain
	r.array(n.Group[:], "group")
	n.Generation = r.u64("generation")
	r.array(n.Chain[:], "chain")
	n.Position = r.u32("position")
	if err := r.end(); err != nil {
		return NeedChain{}, err
	}
	return n, nil
}

// Header returns the chain message's header bytes, the first
// ChainMessageHeaderSize bytes of its encoding.
func (m ChainMessage) Header() []byte {
	b := make([]byte, 0, ChainMessageHeaderSize)
	return m.appendHeader(b)
}

func (m ChainMessage) appendHeader(b []byte) []byte {
	b = append(b, ChainMessageVersion)
	b = append(b, m.Chain[:]...)
	b = binary.BigEndian.AppendUint32(b, m.Position)
	return append(b, m.Salt[:]...)
}

// EncodeChainMessage returns a chain message's bytes. A ciphertext shorter
// than its tag fails with ErrMalformed; one over MaxChainCiphertextSize with
// ErrMessageTooLarge.
func EncodeChainMessage(m ChainMessage) ([]byte, error) {
	if len(m.Ciphertext) < ChainTagSize {
		return nil, fmt.Errorf("wire: encode chain message: ciphertext of %d bytes: %w", len(m.Ciphertext), ErrMalformed)
	}
	if len(m.Ciphertext) > MaxChainCiphertextSize {
		return nil, fmt.Errorf("wire: encode chain message: ciphertext of %d bytes over %d: %w", len(m.Ciphertext), MaxChainCiphertextSize, ErrMessageTooLarge)
	}
	b := make([]byte, 0, ChainMessageHeaderSize+4+len(m.Ciphertext)+ed25519SignatureSize)
	b = m.appendHeader(b)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Ciphertext)))
	b = append(b, m.Ciphertext...)
	return append(b, m.Signature[:]...), nil
}

// DecodeChainMessage parses a chain message, rejecting input over
// MaxChainMessageSize (ErrMessageTooLarge), another version
// (ErrUnsupportedVersion), a ciphertext length outside
// ChainTagSize..MaxChainCiphertextSize, truncation and trailing bytes
// (ErrMalformed). The ciphertext is a copy.
func DecodeChainMessage(b []byte) (ChainMessage, error) {
	if len(b) > MaxChainMessageSize {
		return ChainMessage{}, fmt.Errorf("wire: decode chain message: %d bytes over %d: %w", len(b), MaxChainMessageSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(ChainMessageVersion)
	var m ChainMessage
	r.array(m.Chain[:], "chain")
	m.Position = r.u32("position")
	r.array(m.Salt[:], "salt")
	ct := r.sized("ciphertext", ChainTagSize, MaxChainCiphertextSize)
	r.array(m.Signature[:], "signature")
	if err := r.end(); err != nil {
		return ChainMessage{}, fmt.Errorf("wire: decode chain message: %w", err)
	}
	m.Ciphertext = bytes.Clone(ct)
	return m, nil
}
