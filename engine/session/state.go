package session

import (
	"crypto/ed25519"
	"crypto/mlkem"
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// Persisted state records. Each begins with a version byte; decoders are
// strict (exact length, known flags, no trailing bytes) and return
// ErrMalformedState or ErrUnsupportedStateVersion, never a partial value.
const stateVersion = 1

const (
	identityRecordSize = 1 + 32 + 32
	signedPreKeySize   = 1 + 4 + 8 + 8 + 32 + 64
	kemPreKeySize      = 1 + 4 + 8 + 8 + mlkem.SeedSize + 64
	oneTimePreKeySize  = 1 + 4 + 32
	retiredSize        = 1 + 32 + 4 + 8
	initiationSize     = 32 + 32 + 64 + 32 + 4 + 4 + 1 + 4 + wire.KEMCiphertextSize
	sessionFixedSize   = 1 + 32 + 1 + 32 + 32 + 64 + 4 + 32 + 32 + 32 + 32 + 4 + 32 + 4 + 4 + 4
	skippedEntrySize   = 32 + 4 + 32 + 12
)

// Session flag bits.
const (
	flagInitiator = 1 << iota
	flagAwaitingReply
	flagHasDHR
	flagHasCKS
	flagHasCKR
	flagHasInitiation
	flagReplaces // the initiation header names a replaced initiation: 32 more bytes after it
	flagAll      = 1<<iota - 1
)

// reader decodes fixed-width fields and remembers the first error.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) u8() uint8   { return r.take(1)[0] }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) i64() int64  { return int64(binary.BigEndian.Uint64(r.take(8))) }
func (r *reader) array32() (a [32]byte) {
	copy(a[:], r.take(32))
	return
}
func (r *reader) array64() (a [64]byte) {
	copy(a[:], r.take(64))
	return
}

// done reports ErrMalformedState for a short read or trailing bytes.
func (r *reader) done(what string) error {
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("decode %s: %w", what, ErrMalformedState)
	}
	return nil
}

func checkVersion(b []byte, what string) error {
	if len(b) == 0 {
		return fmt.Errorf("decode %s: %w", what, ErrMalformedState)
	}
	if b[0] != stateVersion {
		return fmt.Errorf("decode %s: version %d: %w", what, b[0], ErrUnsupportedStateVersion)
	}
	return nil
}

// MarshalBinary encodes the identity's private keys.
func (id *Identity) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, identityRecordSize)
	b = append(b, stateVersion)
	b = append(b, id.signing.Seed()...)
	return append(b, id.dh.Bytes()...), nil
}

// UnmarshalIdentity decodes an identity record.
func UnmarshalIdentity(b []byte) (*Identity, error) {
	if err := checkVersion(b, "identity"); err != nil {
		return nil, err
	}
	r := reader{b: b[1:]}
	seed, dhKey := r.take(32), r.take(32)
	if err := r.done("identity"); err != nil {
		return nil, err
	}
	k, err := x25519From(dhKey, "identity")
	if err != nil {
		return nil, err
	}
	return identityFrom(ed25519.NewKeyFromSeed(seed), k), nil
}

// MarshalBinary encodes the signed prekey with its private key.
func (k *SignedPreKey) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, signedPreKeySize)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint32(b, k.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Created))
	b = binary.BigEndian.AppendUint64(b, uint64(k.Expires))
	b = append(b, k.key.Bytes()...)
	return append(b, k.Signature[:]...), nil
}

// UnmarshalSignedPreKey decodes a signed prekey record.
func UnmarshalSignedPreKey(b []byte) (*SignedPreKey, error) {
	if err := checkVersion(b, "signed prekey"); err != nil {
		return nil, err
	}
	r := reader{b: b[1:]}
	k := &SignedPreKey{ID: r.u32(), Created: r.i64(), Expires: r.i64()}
	priv := r.take(32)
	k.Signature = r.array64()
	if err := r.done("signed prekey"); err != nil {
		return nil, err
	}
	var err error
	if k.key, err = x25519From(priv, "signed prekey"); err != nil {
		return nil, err
	}
	return k, nil
}

// MarshalBinary encodes the KEM prekey with its seed.
func (k *KEMPreKey) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, kemPreKeySize)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint32(b, k.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Created))
	b = binary.BigEndian.AppendUint64(b, uint64(k.Expires))
	b = append(b, k.seed[:]...)
	return append(b, k.Signature[:]...), nil
}

// UnmarshalKEMPreKey decodes a KEM prekey record.
func UnmarshalKEMPreKey(b []byte) (*KEMPreKey, error) {
	if err := checkVersion(b, "kem prekey"); err != nil {
		return nil, err
	}
	r := reader{b: b[1:]}
	k := &KEMPreKey{ID: r.u32(), Created: r.i64(), Expires: r.i64()}
	copy(k.seed[:], r.take(mlkem.SeedSize))
	k.Signature = r.array64()
	if err := r.done("kem prekey"); err != nil {
		return nil, err
	}
	dk, err := mlkem.NewDecapsulationKey768(k.seed[:])
	if err != nil {
		return nil, fmt.Errorf("decode kem prekey: %w", ErrMalformedState)
	}
	k.key = dk
	return k, nil
}

// MarshalBinary encodes the one-time prekey with its private key.
func (k *OneTimePreKey) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, oneTimePreKeySize)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint32(b, k.ID)
	return append(b, k.key.Bytes()...), nil
}

// UnmarshalOneTimePreKey decodes a one-time prekey record.
func UnmarshalOneTimePreKey(b []byte) (*OneTimePreKey, error) {
	if err := checkVersion(b, "one-time prekey"); err != nil {
		return nil, err
	}
	r := reader{b: b[1:]}
	k := &OneTimePreKey{ID: r.u32()}
	priv := r.take(32)
	if err := r.done("one-time prekey"); err != nil {
		return nil, err
	}
	var err error
	if k.key, err = x25519From(priv, "one-time prekey"); err != nil {
		return nil, err
	}
	return k, nil
}

// RetiredInitiation records an initiation that lost a collision or was
// replaced. It is kept until the signed prekey it names is deleted.
type RetiredInitiation struct {
	ID             InitiationID
	SignedPreKeyID uint32
	RetiredAt      int64 // unix seconds
}

// MarshalBinary encodes the record.
func (ri RetiredInitiation) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, retiredSize)
	b = append(b, stateVersion)
	b = append(b, ri.ID[:]...)
	b = binary.BigEndian.AppendUint32(b, ri.SignedPreKeyID)
	return binary.BigEndian.AppendUint64(b, uint64(ri.RetiredAt)), nil
}

// UnmarshalRetiredInitiation decodes a retired-initiation record.
func UnmarshalRetiredInitiation(b []byte) (RetiredInitiation, error) {
	if err := checkVersion(b, "retired initiation"); err != nil {
		return RetiredInitiation{}, err
	}
	r := reader{b: b[1:]}
	ri := RetiredInitiation{ID: r.array32(), SignedPreKeyID: r.u32(), RetiredAt: r.i64()}
	if err := r.done("retired initiation"); err != nil {
		return RetiredInitiation{}, err
	}
	return ri, nil
}

// MarshalBinary encodes the whole session: keys, chains, counters, the
// pending initiation header and the skipped message keys in the order they
// were kept.
func (s *Session) MarshalBinary() ([]byte, error) {
	r := s.r
	b := make([]byte, 0, sessionFixedSize+initiationSize+4+len(r.order)*skippedEntrySize)
	b = append(b, stateVersion)
	b = append(b, s.ID[:]...)
	var flags byte
	for _, f := range []struct {
		on  bool
		bit byte
	}{{s.Initiator, flagInitiator}, {s.AwaitingReply, flagAwaitingReply}, {r.hasDHR, flagHasDHR}, {r.hasCKS, flagHasCKS}, {r.hasCKR, flagHasCKR}, {s.Initiation != nil, flagHasInitiation},
		{s.Initiation != nil && s.Initiation.Replaces != [32]byte{}, flagReplaces}} {
		if f.on {
			flags |= f.bit
		}
	}
	b = append(b, flags)
	b = append(b, s.PeerIdentity.SigningKey[:]...)
	b = append(b, s.PeerIdentity.DHKey[:]...)
	b = append(b, s.PeerIdentity.Signature[:]...)
	b = binary.BigEndian.AppendUint32(b, s.SignedPreKeyID)
	b = append(b, r.root[:]...)
	b = append(b, r.dhs.Bytes()...)
	b = append(b, r.dhr[:]...)
	b = append(b, r.cks[:]...)
	b = binary.BigEndian.AppendUint32(b, r.ns)
	b = append(b, r.ckr[:]...)
	b = binary.BigEndian.AppendUint32(b, r.nr)
	b = binary.BigEndian.AppendUint32(b, r.pn)
	if h := s.Initiation; h != nil {
		b = append(b, h.IdentitySigningKey[:]...)
		b = append(b, h.IdentityDHKey[:]...)
		b = append(b, h.IdentitySignature[:]...)
		b = append(b, h.EphemeralKey[:]...)
		b = binary.BigEndian.AppendUint32(b, h.SignedPreKeyID)
		b = binary.BigEndian.AppendUint32(b, h.KEMPreKeyID)
		if h.HasOneTimePreKey {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.BigEndian.AppendUint32(b, h.OneTimePreKeyID)
		b = append(b, h.KEMCiphertext[:]...)
		if flags&flagReplaces != 0 {
			b = append(b, h.Replaces[:]...)
		}
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.order)))
	for _, k := range r.order {
		mk := r.skipped[k]
		b = append(b, k.ratchetKey[:]...)
		b = binary.BigEndian.AppendUint32(b, k.n)
		b = append(b, mk.key[:]...)
		b = append(b, mk.nonce[:]...) // unused since version 2 of the message keys; zero
	}
	return b, nil
}

// UnmarshalSession decodes a session record.
func UnmarshalSession(b []byte) (*Session, error) {
	const what = "session"
	if err := checkVersion(b, what); err != nil {
		return nil, err
	}
	rd := reader{b: b[1:]}
	s := &Session{}
	id := InitiationID(rd.array32())
	flags := rd.u8()
	s.PeerIdentity = IdentityKey{SigningKey: rd.array32(), DHKey: rd.array32(), Signature: rd.array64()}
	s.SignedPreKeyID = rd.u32()
	r := &ratchet{root: rd.array32()}
	dhs := rd.take(32)
	r.dhr = rd.array32()
	r.cks, r.ns = rd.array32(), rd.u32()
	r.ckr, r.nr = rd.array32(), rd.u32()
	r.pn = rd.u32()
	if flags&^flagAll != 0 {
		return nil, fmt.Errorf("decode %s: unknown flags: %w", what, ErrMalformedState)
	}
	s.Initiator = flags&flagInitiator != 0
	s.AwaitingReply = flags&flagAwaitingReply != 0
	r.hasDHR, r.hasCKS, r.hasCKR = flags&flagHasDHR != 0, flags&flagHasCKS != 0, flags&flagHasCKR != 0
	if flags&flagHasInitiation != 0 {
		h := &wire.InitiationHeader{}
		h.IdentitySigningKey, h.IdentityDHKey, h.IdentitySignature = rd.array32(), rd.array32(), rd.array64()
		h.EphemeralKey = rd.array32()
		h.SignedPreKeyID, h.KEMPreKeyID = rd.u32(), rd.u32()
		switch rd.u8() {
		case 0:
		case 1:
			h.HasOneTimePreKey = true
		default:
			return nil, fmt.Errorf("decode %s: one-time flag: %w", what, ErrMalformedState)
		}
		h.OneTimePreKeyID = rd.u32()
		copy(h.KEMCiphertext[:], rd.take(wire.KEMCiphertextSize))
		if flags&flagReplaces != 0 {
			h.Replaces = rd.array32()
			if h.Replaces == ([32]byte{}) {
				return nil, fmt.Errorf("decode %s: zero replaced initiation: %w", what, ErrMalformedState)
			}
		}
		s.Initiation = h
	} else if flags&flagReplaces != 0 {
		return nil, fmt.Errorf("decode %s: replaced initiation without an initiation: %w", what, ErrMalformedState)
	}
	n := rd.u32()
	if n > MaxSkippedKeys || uint64(n)*skippedEntrySize != uint64(len(rd.b)) {
		return nil, fmt.Errorf("decode %s: skipped keys: %w", what, ErrMalformedState)
	}
	for i := uint32(0); i < n; i++ {
		k := skippedKey{ratchetKey: rd.array32(), n: rd.u32()}
		var mk messageKey
		mk.key = rd.array32()
		copy(mk.nonce[:], rd.take(12))
		if _, dup := r.skipped[k]; dup {
			return nil, fmt.Errorf("decode %s: duplicate skipped key: %w", what, ErrMalformedState)
		}
		r.remember(k, mk)
	}
	if err := rd.done(what); err != nil {
		return nil, err
	}
	k, err := x25519From(dhs, what)
	if err != nil {
		return nil, err
	}
	r.setDHS(k)
	s.r = r
	s.setID(id)
	return s, nil
}
