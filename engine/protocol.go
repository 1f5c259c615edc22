package engine

import (
	"io"
	"time"

	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// The cryptographic protocol lives in package session (identities, prekeys,
// bundles, session set-up, the ratchet and their records); the engine uses
// its small API and never a field of its state. The names below are those of
// session that the engine's own API carries, so that its callers need not
// import both.

// Types of the protocol the engine's API carries.
type (
	// IdentityKey is the public half of a device identity (session.IdentityKey).
	IdentityKey = session.IdentityKey
	// Identity is a device's own identity with its private keys.
	Identity = session.Identity
	// InitiationID identifies one session initiation.
	InitiationID = session.InitiationID
	// RetiredInitiation is a retired initiation's record.
	RetiredInitiation = session.RetiredInitiation
	// Randomness is where the engine takes random bytes and ML-KEM
	// encapsulations.
	Randomness = session.Randomness
	// SystemRandom draws from crypto/rand.
	SystemRandom = session.SystemRandom
)

// Bounds and lifetimes of the protocol.
const (
	// MaxSkip is the most message keys one message may skip on a chain.
	MaxSkip = session.MaxSkip
	// SignedPreKeyRotation is how often the signed prekeys are made anew.
	SignedPreKeyRotation = session.SignedPreKeyRotation
	// SignedPreKeyLifetime is how long a signed prekey lives.
	SignedPreKeyLifetime = session.SignedPreKeyLifetime
)

// Prekey pool policy: how many one-time prekeys this device publishes and
// keeps.
const (
	// OneTimePreKeyBatch is how many one-time prekeys a device publishes at a
	// time; it publishes another batch when the relay holds fewer than
	// OneTimePreKeyLow.
	OneTimePreKeyBatch = 100
	OneTimePreKeyLow   = 20
	// OneTimePreKeyMax is the most one-time prekeys a device keeps. When
	// the relay keeps handing its keys out (to initiators that may never
	// use them), the oldest go first; an initiation that names one deleted
	// is answered with a recovery request.
	OneTimePreKeyMax = 1000
)

// NewIdentity makes an identity from 64 bytes of r.
func NewIdentity(r io.Reader) (*Identity, error) { return session.NewIdentity(r) }

// SafetyNumber returns the safety number of two devices' identities.
func SafetyNumber(a Address, ak IdentityKey, b Address, bk IdentityKey) string {
	return session.SafetyNumber(a.String(), ak, b.String(), bk)
}

// BuildBundle assembles the bundle a device publishes.
func BuildBundle(self Address, id *Identity, spk *session.SignedPreKey, kem *session.KEMPreKey) wire.Bundle {
	return session.BuildBundle(self.String(), id, spk, kem)
}

// VerifyBundle checks a fetched bundle (session.VerifyBundle) and returns
// its device address and identity.
func VerifyBundle(b wire.Bundle, now time.Time) (Address, IdentityKey, error) {
	a, k, err := session.VerifyBundle(b, now)
	if err != nil {
		return Address{}, IdentityKey{}, err
	}
	addr, err := ParseAddress(a)
	if err != nil {
		return Address{}, IdentityKey{}, err
	}
	return addr, k, nil
}
