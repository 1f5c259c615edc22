package session

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Sender chains (docs/protocol.md, "Sender chains"): a group message is
// encrypted once, under a symmetric chain of its sender's for the group and
// the generation, and signed with that chain's Ed25519 key. The chain is
// announced to every member device on the pairwise session
// (wire.ChainAnnounce); a member that holds it opens every later message of
// the chain without a ratchet step of its own.
//
// The chain key advances as the Double Ratchet's chains do (chainStep:
// HMAC-SHA256 under the chain key, 0x01 for the position's message key, 0x02
// for the next chain key), so a member announced the chain at position p
// cannot compute a message key below p. The AES-256-GCM key and nonce of one
// encryption come from the message key and a random salt the message
// carries (chainSealKey), as envelopeKey does with the envelope ID. Every
// member knows the chain key, so the chain key alone would let any member
// forge a message from the sender: the signature, by a key only the sender
// holds, is what makes the sender the author.

const (
	labelChainKey       = "parley/v1/chain-key"
	labelChainAD        = "parley/v1/chain-message"
	labelChainSignature = "parley/v1/chain-signature"

	// MaxChainSkip is the most message keys one chain message may skip,
	// as MaxSkip bounds a ratchet chain's.
	MaxChainSkip = MaxSkip
	// MaxChainSkippedKeys is the most skipped message keys a received chain
	// keeps; beyond it the lowest positions are dropped, and their messages
	// fail as duplicates.
	MaxChainSkippedKeys = MaxSkippedKeys
	// MaxChainPosition is the last position a chain seals: its next
	// position still fits the wire's u32.
	MaxChainPosition = 1<<32 - 2

	// ChainRotateMessages and ChainRotateAge bound a sender chain: once it
	// sealed that many messages or is that old, its sender starts a new one
	// (as it does on any roster change). A sender keeps its chain's first
	// key to announce it again to a member that asks, so the bound is also
	// what a stolen sender state reveals.
	ChainRotateMessages = 1000
	ChainRotateAge      = 7 * 24 * time.Hour

	senderChainRecordSize = 1 + 16 + 8 + 16 + 8 + 4 + 32 + 32 + 32
	chainSkippedEntrySize = 4 + 32
)

// Sender chain failures, matched with errors.Is.
var (
	// ErrChainExhausted means a chain has sealed MaxChainPosition
	// messages, or a message names a position past it.
	ErrChainExhausted = errors.New("sender chain exhausted")
	// ErrChainMismatch means a chain message or announcement names another
	// sender, group, generation or chain than the chain it was given to, or
	// an announcement gives a known chain another signing key.
	ErrChainMismatch = errors.New("chain message for another chain")
	// ErrBeforeChainStart means a chain message's position is below the
	// position at which the chain was announced to this device: it was sent
	// before this device was entitled to read the chain.
	ErrBeforeChainStart = errors.New("chain message before the announced position")
)

// SenderChain is this device's chain for one group at one generation.
type SenderChain struct {
	group      wire.GroupID
	generation uint64
	id         wire.ChainID
	created    int64    // unix seconds
	next       uint32   // the position the next Seal takes
	start      [32]byte // the chain key at position 0
	key        [32]byte // the chain key at next
	signing    ed25519.PrivateKey
}

// NewSenderChain starts a chain for the group at the generation, with a
// random ID, chain key and signing key drawn from rnd.
func NewSenderChain(rnd io.Reader, group wire.GroupID, generation uint64, now time.Time) (*SenderChain, error) {
	c := &SenderChain{group: group, generation: generation, created: now.Unix()}
	var seed [32]byte
	for _, b := range [][]byte{c.id[:], c.start[:], seed[:]} {
		if _, err := io.ReadFull(rnd, b); err != nil {
			return nil, fmt.Errorf("new sender chain: %w", err)
		}
	}
	c.key = c.start
	c.signing = ed25519.NewKeyFromSeed(seed[:])
	return c, nil
}

// ID returns the chain's ID.
func (c *SenderChain) ID() wire.ChainID { return c.id }

// Next returns the position the next Seal takes, which is also how many
// messages the chain has sealed.
func (c *SenderChain) Next() uint32 { return c.next }

// Due reports whether the chain should be replaced: it sealed
// ChainRotateMessages messages or is ChainRotateAge old at now.
func (c *SenderChain) Due(now time.Time) bool {
	return c.next >= ChainRotateMessages || now.Sub(time.Unix(c.created, 0)) >= ChainRotateAge
}

// Announce returns the chain's announcement from position 0, for a member
// entitled to every message of the chain. id is the frame's logical ID.
func (c *SenderChain) Announce(id wire.LogicalID) wire.ChainAnnounce {
	return c.announce(id, 0, c.start)
}

// AnnounceFromNext returns the chain's announcement from the next position,
// for a device entitled only to what the chain seals from now on.
func (c *SenderChain) AnnounceFromNext(id wire.LogicalID) wire.ChainAnnounce {
	return c.announce(id, c.next, c.key)
}

func (c *SenderChain) announce(id wire.LogicalID, pos uint32, key [32]byte) wire.ChainAnnounce {
	a := wire.ChainAnnounce{ID: id, Group: c.group, Generation: c.generation, Chain: c.id, Position: pos, ChainKey: key}
	copy(a.SigningKey[:], c.signing.Public().(ed25519.PublicKey))
	return a
}

// Seal encrypts plaintext (a group message frame) at the chain's next
// position and signs it, then advances the chain. sender is this device's
// address, bound into the associated data.
func (c *SenderChain) Seal(rnd io.Reader, sender string, plaintext []byte) (wire.ChainMessage, error) {
	if c.next > MaxChainPosition {
		return wire.ChainMessage{}, ErrChainExhausted
	}
	if len(plaintext)+wire.ChainTagSize > wire.MaxChainCiphertextSize {
		return wire.ChainMessage{}, fmt.Errorf("seal chain message: %w", wire.ErrMessageTooLarge)
	}
	m := wire.ChainMessage{Chain: c.id, Position: c.next}
	if _, err := io.ReadFull(rnd, m.Salt[:]); err != nil {
		return wire.ChainMessage{}, fmt.Errorf("seal chain message: %w", err)
	}
	mk, next := chainStep(&c.key)
	ad := chainAD(sender, c.group, c.generation, m)
	key, nonce := chainSealKey(&mk, m.Salt)
	m.Ciphertext = newAEAD(&key).Seal(nil, nonce[:], plaintext, ad)
	copy(m.Signature[:], ed25519.Sign(c.signing, chainSignedBody(ad, m.Ciphertext)))
	c.key, c.next = next, c.next+1
	return m, nil
}

// ReceiverChain is a chain another device announced to this one.
type ReceiverChain struct {
	sender     string
	group      wire.GroupID
	generation uint64
	id         wire.ChainID
	start      uint32 // the announced position: nothing below it opens
	next       uint32 // the position whose chain key is key
	key        [32]byte
	signingKey [32]byte
	skipped    []chainSkipped // by increasing position, at most MaxChainSkippedKeys
}

type chainSkipped struct {
	pos uint32
	key messageKey
}

// NewReceiverChain keeps the chain that sender announced.
func NewReceiverChain(sender string, a wire.ChainAnnounce) *ReceiverChain {
	return &ReceiverChain{sender: sender, group: a.Group, generation: a.Generation, id: a.Chain,
		start: a.Position, next: a.Position, key: a.ChainKey, signingKey: a.SigningKey}
}

// Sender returns the address of the chain's sender.
func (r *ReceiverChain) Sender() string { return r.sender }

// Group returns the chain's group.
func (r *ReceiverChain) Group() wire.GroupID { return r.group }

// Generation returns the chain's generation.
func (r *ReceiverChain) Generation() uint64 { return r.generation }

// ID returns the chain's ID.
func (r *ReceiverChain) ID() wire.ChainID { return r.id }

// Skipped returns how many skipped message keys the chain keeps.
func (r *ReceiverChain) Skipped() int { return len(r.skipped) }

// Check tells whether an announcement sender made again is the chain this
// one keeps: the same chain with another signing key, group or generation
// is ErrChainMismatch. An announcement from a position at or past this one's
// adds nothing; one from an earlier position is not merged either (a sender
// announces a chain from one position per device), so Check only guards
// against a forged second key.
func (r *ReceiverChain) Check(sender string, a wire.ChainAnnounce) error {
	if sender != r.sender || a.Chain != r.id || a.Group != r.group || a.Generation != r.generation || a.SigningKey != r.signingKey {
		return ErrChainMismatch
	}
	return nil
}

// Open verifies and decrypts a chain message from sender. On success the
// chain advances past the message's position (keeping the skipped keys
// below it, bounded), so the same position never opens twice; on any
// failure the chain is unchanged. It refuses, in this order: another
// sender, group, generation or chain (ErrChainMismatch); a bad signature
// (ErrBadSignature); a position past MaxChainPosition (ErrChainExhausted),
// below the announced one (ErrBeforeChainStart), already opened or whose
// key was dropped (ErrDuplicateMessage), or more than MaxChainSkip past the
// next (ErrTooManySkipped); a ciphertext that fails to authenticate
// (ErrDecrypt).
func (r *ReceiverChain) Open(sender string, m wire.ChainMessage) ([]byte, error) {
	if sender != r.sender || m.Chain != r.id {
		return nil, ErrChainMismatch
	}
	ad := chainAD(sender, r.group, r.generation, m)
	if !ed25519.Verify(r.signingKey[:], chainSignedBody(ad, m.Ciphertext), m.Signature[:]) {
		return nil, ErrBadSignature
	}
	switch {
	case m.Position > MaxChainPosition:
		return nil, ErrChainExhausted
	case m.Position < r.start:
		return nil, ErrBeforeChainStart
	case m.Position < r.next:
		i, found := slices.BinarySearchFunc(r.skipped, m.Position, func(s chainSkipped, p uint32) int { return cmpU32(s.pos, p) })
		if !found {
			return nil, ErrDuplicateMessage
		}
		pt, err := chainOpen(&r.skipped[i].key, m, ad)
		if err != nil {
			return nil, err
		}
		r.skipped = slices.Delete(r.skipped, i, i+1)
		return pt, nil
	case m.Position-r.next > MaxChainSkip:
		return nil, ErrTooManySkipped
	}
	ck := r.key
	var skipped []chainSkipped
	for p := r.next; p < m.Position; p++ {
		var mk messageKey
		mk, ck = chainStep(&ck)
		skipped = append(skipped, chainSkipped{pos: p, key: mk})
	}
	mk, ck := chainStep(&ck)
	pt, err := chainOpen(&mk, m, ad)
	if err != nil {
		return nil, err
	}
	r.skipped = append(r.skipped, skipped...)
	if over := len(r.skipped) - MaxChainSkippedKeys; over > 0 {
		r.skipped = slices.Delete(r.skipped, 0, over)
	}
	r.key, r.next = ck, m.Position+1
	return pt, nil
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chainOpen decrypts m under a position's message key.
func chainOpen(mk *messageKey, m wire.ChainMessage, ad []byte) ([]byte, error) {
	key, nonce := chainSealKey(mk, m.Salt)
	pt, err := newAEAD(&key).Open(nil, nonce[:], m.Ciphertext, ad)
	if err != nil {
		return nil, ErrDecrypt
	}
	if pt == nil {
		pt = []byte{}
	}
	return pt, nil
}

// chainSealKey derives the AES-256-GCM key and nonce of one chain
// encryption: HMAC-SHA256 under the message key of labelChainKey, 0x01
// (key) or 0x02 (nonce, the first 12 bytes), and the salt.
func chainSealKey(mk *messageKey, salt [16]byte) (key [32]byte, nonce [12]byte) {
	var msg [len(labelChainKey) + 1 + len(salt)]byte
	n := copy(msg[:], labelChainKey)
	copy(msg[n+1:], salt[:])
	msg[n] = 1
	key = hmacSHA256(&mk.key, msg[:])
	msg[n] = 2
	full := hmacSHA256(&mk.key, msg[:])
	copy(nonce[:], full[:12])
	return
}

// chainAD is a chain message's associated data: the label, the sender's
// address (u8 length and bytes), the chain's group and generation (which
// the receiver keeps from the announcement; they do not travel in clear)
// and the message's header (version, chain, position and salt). The
// logical ID is inside the plaintext, a group message frame, which the
// engine checks names the chain's group and generation.
func chainAD(sender string, group wire.GroupID, generation uint64, m wire.ChainMessage) []byte {
	b := make([]byte, 0, len(labelChainAD)+1+len(sender)+16+8+wire.ChainMessageHeaderSize)
	b = append(b, labelChainAD...)
	b = append(b, byte(len(sender)))
	b = append(b, sender...)
	b = append(b, group[:]...)
	b = binary.BigEndian.AppendUint64(b, generation)
	return append(b, m.Header()...)
}

// chainSignedBody is what a chain's key signs: a label, the associated data
// and the ciphertext, each after its length.
func chainSignedBody(ad, ct []byte) []byte {
	b := make([]byte, 0, len(labelChainSignature)+2+len(ad)+4+len(ct))
	b = append(b, labelChainSignature...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(ad)))
	b = append(b, ad...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ct)))
	return append(b, ct...)
}

// MarshalBinary encodes the sender chain with its keys.
func (c *SenderChain) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, senderChainRecordSize)
	b = append(b, stateVersion)
	b = append(b, c.group[:]...)
	b = binary.BigEndian.AppendUint64(b, c.generation)
	b = append(b, c.id[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.created))
	b = binary.BigEndian.AppendUint32(b, c.next)
	b = append(b, c.start[:]...)
	b = append(b, c.key[:]...)
	return append(b, c.signing.Seed()...), nil
}

// UnmarshalSenderChain decodes a sender chain record.
func UnmarshalSenderChain(b []byte) (*SenderChain, error) {
	if err := checkVersion(b, "sender chain"); err != nil {
		return nil, err
	}
	r := reader{b: b[1:]}
	c := &SenderChain{}
	copy(c.group[:], r.take(16))
	c.generation = uint64(r.i64())
	copy(c.id[:], r.take(16))
	c.created = r.i64()
	c.next = r.u32()
	c.start = r.array32()
	c.key = r.array32()
	seed := r.take(32)
	if err := r.done("sender chain"); err != nil {
		return nil, err
	}
	c.signing = ed25519.NewKeyFromSeed(seed)
	return c, nil
}

// MarshalBinary encodes the received chain with its skipped keys.
func (r *ReceiverChain) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 1+1+len(r.sender)+16+8+16+4+4+32+32+2+len(r.skipped)*chainSkippedEntrySize)
	b = append(b, stateVersion, byte(len(r.sender)))
	b = append(b, r.sender...)
	b = append(b, r.group[:]...)
	b = binary.BigEndian.AppendUint64(b, r.generation)
	b = append(b, r.id[:]...)
	b = binary.BigEndian.AppendUint32(b, r.start)
	b = binary.BigEndian.AppendUint32(b, r.next)
	b = append(b, r.key[:]...)
	b = append(b, r.signingKey[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.skipped)))
	for _, s := range r.skipped {
		b = binary.BigEndian.AppendUint32(b, s.pos)
		b = append(b, s.key.key[:]...)
	}
	return b, nil
}

// UnmarshalReceiverChain decodes a received chain record. Skipped keys out
// of order, at or past the next position or below the start, or more than
// MaxChainSkippedKeys of them, are ErrMalformedState.
func UnmarshalReceiverChain(b []byte) (*ReceiverChain, error) {
	if err := checkVersion(b, "receiver chain"); err != nil {
		return nil, err
	}
	rd := reader{b: b[1:]}
	rc := &ReceiverChain{}
	rc.sender = string(rd.take(int(rd.u8())))
	copy(rc.group[:], rd.take(16))
	rc.generation = uint64(rd.i64())
	copy(rc.id[:], rd.take(16))
	rc.start = rd.u32()
	rc.next = rd.u32()
	rc.key = rd.array32()
	rc.signingKey = rd.array32()
	n := int(binary.BigEndian.Uint16(rd.take(2)))
	if rd.bad || n > MaxChainSkippedKeys || rc.next < rc.start || len(rd.b) != n*chainSkippedEntrySize {
		return nil, fmt.Errorf("decode receiver chain: %w", ErrMalformedState)
	}
	rc.skipped = make([]chainSkipped, n)
	for i := range rc.skipped {
		rc.skipped[i].pos = rd.u32()
		rc.skipped[i].key.key = rd.array32()
		p := rc.skipped[i].pos
		if p < rc.start || p >= rc.next || (i > 0 && rc.skipped[i-1].pos >= p) {
			return nil, fmt.Errorf("decode receiver chain: skipped key %d: %w", i, ErrMalformedState)
		}
	}
	if err := rd.done("receiver chain"); err != nil {
		return nil, err
	}
	return rc, nil
}

// Clone returns a deep copy of the chain, to open a message on while the
// chain as kept stays unchanged until the open commits.
func (r *ReceiverChain) Clone() *ReceiverChain {
	c := *r
	c.skipped = slices.Clone(r.skipped)
	return &c
}
