package session

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/parley-chat/parley/engine/session/internal/x25519"
)

// Domain labels: every signature, digest and derivation in parley names its
// purpose, so that no value made for one use verifies or collides in another.
const (
	labelIdentityDH    = "parley/v1/identity-dh-key"
	labelFingerprint   = "parley/v1/fingerprint"
	labelSafetyNumber  = "parley/v1/safety-number"
	labelAccountSafety = "parley/v1/account-safety-number"
)

// IdentityKey is the public half of a device identity: an Ed25519 signing key
// and an X25519 Diffie-Hellman key signed by it. Peers pin it on first use.
type IdentityKey struct {
	SigningKey [32]byte
	DHKey      [32]byte
	Signature  [64]byte // Ed25519 by SigningKey over labelIdentityDH || DHKey
}

// Equal reports whether two identity keys are the same identity. The
// signature is not compared: Ed25519 signatures are deterministic, and only
// the keys name the identity.
func (k IdentityKey) Equal(o IdentityKey) bool {
	return k.SigningKey == o.SigningKey && k.DHKey == o.DHKey
}

// Verify checks that the signing key signed the DH key.
func (k IdentityKey) Verify() error {
	msg := append([]byte(labelIdentityDH), k.DHKey[:]...)
	if !ed25519.Verify(k.SigningKey[:], msg, k.Signature[:]) {
		return fmt.Errorf("verify identity: %w", ErrBadSignature)
	}
	return nil
}

// Fingerprint is a short, stable name for the identity: the first 16 bytes of
// SHA-256 over a label and both public keys, as eight groups of four hex digits.
func (k IdentityKey) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte(labelFingerprint))
	h.Write(k.SigningKey[:])
	h.Write(k.DHKey[:])
	sum := hex.EncodeToString(h.Sum(nil)[:16])
	var b strings.Builder
	for i := 0; i < len(sum); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sum[i : i+4])
	}
	return b.String()
}

// Identity is a device's own identity with its private keys.
type Identity struct {
	signing ed25519.PrivateKey
	dh      *x25519.Key
	public  IdentityKey
}

// NewIdentity makes an identity from 64 bytes of r: an Ed25519 seed and an
// X25519 private key.
func NewIdentity(r io.Reader) (*Identity, error) {
	var seed [32]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("generate identity: %w", err)
	}
	dhKey, err := x25519.New(r)
	if err != nil {
		return nil, fmt.Errorf("generate identity: %w", err)
	}
	return identityFrom(ed25519.NewKeyFromSeed(seed[:]), dhKey), nil
}

func identityFrom(signing ed25519.PrivateKey, dhKey *x25519.Key) *Identity {
	id := &Identity{signing: signing, dh: dhKey}
	copy(id.public.SigningKey[:], signing.Public().(ed25519.PublicKey))
	copy(id.public.DHKey[:], pubOf(dhKey))
	msg := append([]byte(labelIdentityDH), id.public.DHKey[:]...)
	copy(id.public.Signature[:], ed25519.Sign(signing, msg))
	return id
}

// Public returns the identity's public keys.
func (id *Identity) Public() IdentityKey { return id.public }

// Sign signs msg with the identity's Ed25519 key. Callers prefix msg with a
// domain label of their own.
func (id *Identity) Sign(msg []byte) []byte { return ed25519.Sign(id.signing, msg) }

// DeriveKey derives n bytes for one purpose (label, a domain label of the
// caller's) from the identity's private signing seed and salt with
// HKDF-SHA256, so that a key can be re-created from a record that holds
// only the salt (an upload's file key). No caller ever sees the seed.
func (id *Identity) DeriveKey(label string, salt []byte, n int) ([]byte, error) {
	return hkdf.Key(sha256.New, id.signing.Seed(), salt, label, n)
}

// SafetyNumber returns the 60-digit number that two people compare out of band
// to check that each holds the other's real identity. Each side contributes 30
// digits: SHA-512 over a label, the side's address and both of its public keys,
// whose first 30 bytes are read as six 40-bit big-endian numbers, each reduced
// modulo 100000 to five digits. The two halves are ordered by comparing them as
// strings, so both devices compute the same number. It is shown as twelve
// groups of five digits.
func SafetyNumber(a string, ak IdentityKey, b string, bk IdentityKey) string {
	return joinSafety(safetyHalf(labelSafetyNumber, a, ak.SigningKey[:], ak.DHKey[:]),
		safetyHalf(labelSafetyNumber, b, bk.SigningKey[:], bk.DHKey[:]))
}

// AccountSafetyNumber is the safety number of two people from their
// account keys (the keys that sign their device lists), computed as
// SafetyNumber is with the person's name in place of the address and the
// account key in place of the identity keys, under a label of its own. It
// stays the same when either person links or removes a device.
func AccountSafetyNumber(a string, ak [32]byte, b string, bk [32]byte) string {
	return joinSafety(safetyHalf(labelAccountSafety, a, ak[:]), safetyHalf(labelAccountSafety, b, bk[:]))
}

// joinSafety orders the two halves as strings and prints them in groups
// of five digits.
func joinSafety(x, y string) string {
	if y < x {
		x, y = y, x
	}
	all := x + y
	var out strings.Builder
	for i := 0; i < len(all); i += 5 {
		if i > 0 {
			out.WriteByte(' ')
		}
		out.WriteString(all[i : i+5])
	}
	return out.String()
}

func safetyHalf(label, name string, keys ...[]byte) string {
	h := sha512.New()
	h.Write([]byte(label))
	h.Write([]byte{byte(len(name))})
	h.Write([]byte(name))
	for _, k := range keys {
		h.Write(k)
	}
	sum := h.Sum(nil)
	var b bytes.Buffer
	for i := 0; i < 6; i++ {
		var chunk [8]byte
		copy(chunk[3:], sum[i*5:i*5+5])
		fmt.Fprintf(&b, "%05d", binary.BigEndian.Uint64(chunk[:])%100000)
	}
	return b.String()
}
