package session

import (
	"crypto/ed25519"
	"crypto/mlkem"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/parley-chat/parley/engine/session/internal/x25519"
	"github.com/parley-chat/parley/wire"
)

// Prekey lifetimes. A device makes a new signed X25519 prekey and a new signed
// ML-KEM-768 prekey every SignedPreKeyRotation and publishes them; each expires
// SignedPreKeyLifetime after its creation, which leaves SignedPreKeyGrace for
// initiations made from a bundle fetched just before a rotation. At expiry the
// private key is deleted, and with it every retired initiation that names it.
const (
	SignedPreKeyRotation = 7 * 24 * time.Hour
	SignedPreKeyGrace    = 7 * 24 * time.Hour
	SignedPreKeyLifetime = SignedPreKeyRotation + SignedPreKeyGrace
)

const (
	labelSignedPreKey = "parley/v1/signed-prekey"
	labelKEMPreKey    = "parley/v1/kem-prekey"
)

// SignedPreKey is a medium-term X25519 prekey signed by the identity.
type SignedPreKey struct {
	ID        uint32
	Created   int64 // unix seconds
	Expires   int64 // unix seconds
	key       *x25519.Key
	Signature [64]byte
}

// KEMPreKey is a medium-term ML-KEM-768 prekey signed by the identity.
type KEMPreKey struct {
	ID        uint32
	Created   int64
	Expires   int64
	seed      [mlkem.SeedSize]byte
	key       *mlkem.DecapsulationKey768
	Signature [64]byte
}

// OneTimePreKey is an X25519 prekey that the relay hands out at most once.
type OneTimePreKey struct {
	ID  uint32
	key *x25519.Key
}

func prekeySigningMessage(label string, id uint32, created, expires int64, pub []byte) []byte {
	m := make([]byte, 0, len(label)+20+len(pub))
	m = append(m, label...)
	m = binary.BigEndian.AppendUint32(m, id)
	m = binary.BigEndian.AppendUint64(m, uint64(created))
	m = binary.BigEndian.AppendUint64(m, uint64(expires))
	return append(m, pub...)
}

// NewSignedPreKey makes and signs an X25519 prekey valid from now for
// SignedPreKeyLifetime.
func NewSignedPreKey(r io.Reader, id *Identity, keyID uint32, now time.Time) (*SignedPreKey, error) {
	k, err := x25519.New(r)
	if err != nil {
		return nil, fmt.Errorf("generate signed prekey: %w", err)
	}
	spk := &SignedPreKey{ID: keyID, Created: now.Unix(), Expires: now.Add(SignedPreKeyLifetime).Unix(), key: k}
	copy(spk.Signature[:], id.Sign(prekeySigningMessage(labelSignedPreKey, keyID, spk.Created, spk.Expires, pubOf(k))))
	return spk, nil
}

// Public returns the prekey as published in a bundle.
func (k *SignedPreKey) Public() wire.SignedPreKeyPublic {
	p := wire.SignedPreKeyPublic{ID: k.ID, Created: k.Created, Expires: k.Expires, Signature: k.Signature}
	copy(p.PublicKey[:], pubOf(k.key))
	return p
}

// NewKEMPreKey makes and signs an ML-KEM-768 prekey valid from now for
// SignedPreKeyLifetime.
func NewKEMPreKey(r io.Reader, id *Identity, keyID uint32, now time.Time) (*KEMPreKey, error) {
	k := &KEMPreKey{ID: keyID, Created: now.Unix(), Expires: now.Add(SignedPreKeyLifetime).Unix()}
	if _, err := io.ReadFull(r, k.seed[:]); err != nil {
		return nil, fmt.Errorf("generate kem prekey: %w", err)
	}
	dk, err := mlkem.NewDecapsulationKey768(k.seed[:])
	if err != nil {
		return nil, fmt.Errorf("generate kem prekey: %w", err)
	}
	k.key = dk
	copy(k.Signature[:], id.Sign(prekeySigningMessage(labelKEMPreKey, keyID, k.Created, k.Expires, dk.EncapsulationKey().Bytes())))
	return k, nil
}

// Public returns the prekey as published in a bundle.
func (k *KEMPreKey) Public() wire.KEMPreKeyPublic {
	p := wire.KEMPreKeyPublic{ID: k.ID, Created: k.Created, Expires: k.Expires, Signature: k.Signature}
	copy(p.PublicKey[:], k.key.EncapsulationKey().Bytes())
	return p
}

// NewOneTimePreKey makes a one-time X25519 prekey.
func NewOneTimePreKey(r io.Reader, keyID uint32) (*OneTimePreKey, error) {
	k, err := x25519.New(r)
	if err != nil {
		return nil, fmt.Errorf("generate one-time prekey: %w", err)
	}
	return &OneTimePreKey{ID: keyID, key: k}, nil
}

// Public returns the prekey as published.
func (k *OneTimePreKey) Public() wire.OneTimePreKeyPublic {
	p := wire.OneTimePreKeyPublic{ID: k.ID}
	copy(p.PublicKey[:], pubOf(k.key))
	return p
}

// BuildBundle assembles the bundle a device publishes (without a one-time
// prekey: the relay adds one per fetch).
func BuildBundle(self string, id *Identity, spk *SignedPreKey, kem *KEMPreKey) wire.Bundle {
	pub := id.Public()
	return wire.Bundle{
		Address:            self,
		IdentitySigningKey: pub.SigningKey,
		IdentityDHKey:      pub.DHKey,
		IdentitySignature:  pub.Signature,
		SignedPreKey:       spk.Public(),
		KEMPreKey:          kem.Public(),
	}
}

// BundleIdentity returns the identity key a bundle carries.
func BundleIdentity(b wire.Bundle) IdentityKey {
	return IdentityKey{SigningKey: b.IdentitySigningKey, DHKey: b.IdentityDHKey, Signature: b.IdentitySignature}
}

// VerifyBundle checks a fetched bundle: its address (a canonical device
// address, wire.CheckDeviceAddress), the identity's signature over its DH
// key, and both signed prekeys' signatures and expiry times. A signed prekey
// that expired at now fails with ErrExpiredSignedPreKey.
func VerifyBundle(b wire.Bundle, now time.Time) (string, IdentityKey, error) {
	addr := b.Address
	if err := wire.CheckDeviceAddress(addr); err != nil {
		return "", IdentityKey{}, fmt.Errorf("verify bundle: %w", err)
	}
	ik := BundleIdentity(b)
	if err := ik.Verify(); err != nil {
		return "", IdentityKey{}, fmt.Errorf("verify bundle of %s: %w", addr, err)
	}
	s := b.SignedPreKey
	if !ed25519.Verify(ik.SigningKey[:], prekeySigningMessage(labelSignedPreKey, s.ID, s.Created, s.Expires, s.PublicKey[:]), s.Signature[:]) {
		return "", IdentityKey{}, fmt.Errorf("verify signed prekey of %s: %w", addr, ErrBadSignature)
	}
	k := b.KEMPreKey
	if !ed25519.Verify(ik.SigningKey[:], prekeySigningMessage(labelKEMPreKey, k.ID, k.Created, k.Expires, k.PublicKey[:]), k.Signature[:]) {
		return "", IdentityKey{}, fmt.Errorf("verify kem prekey of %s: %w", addr, ErrBadSignature)
	}
	if now.Unix() >= s.Expires || now.Unix() >= k.Expires {
		return "", IdentityKey{}, fmt.Errorf("bundle of %s: %w", addr, ErrExpiredSignedPreKey)
	}
	return addr, ik, nil
}
