package engine

import (
	"crypto/ecdh"
	"crypto/mlkem"
	"crypto/rand"
	"fmt"
	"io"
)

// Randomness is where the engine takes its random bytes and its ML-KEM
// encapsulations. Production code uses SystemRandom; known-answer tests
// substitute a deterministic source so that a whole initiation can be frozen
// as a vector.
type Randomness interface {
	io.Reader
	// Encapsulate returns a fresh shared secret and its ciphertext for ek.
	Encapsulate(ek *mlkem.EncapsulationKey768) (shared, ciphertext []byte, err error)
}

// SystemRandom draws from crypto/rand and encapsulates with crypto/mlkem.
type SystemRandom struct{}

func (SystemRandom) Read(p []byte) (int, error) { return rand.Read(p) }

// Encapsulate encapsulates with crypto/mlkem's own randomness.
func (SystemRandom) Encapsulate(ek *mlkem.EncapsulationKey768) ([]byte, []byte, error) {
	shared, ct := ek.Encapsulate()
	return shared, ct, nil
}

// newX25519 makes an X25519 key from 32 bytes of r. Parsing computes the
// public key once; callers keep the *ecdh.PrivateKey rather than its bytes so
// that later Diffie-Hellman operations cost one scalar multiplication each.
func newX25519(r io.Reader) (*ecdh.PrivateKey, error) {
	var seed [32]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("generate X25519 key: %w", err)
	}
	return ecdh.X25519().NewPrivateKey(seed[:])
}

// dh computes X25519(priv, pub). Low-order points, which yield the all-zero
// output, are refused by crypto/ecdh and reported as a decryption failure.
func dh(priv *ecdh.PrivateKey, pub []byte) ([]byte, error) {
	p, err := ecdh.X25519().NewPublicKey(pub)
	if err != nil {
		return nil, ErrDecrypt
	}
	out, err := priv.ECDH(p)
	if err != nil {
		return nil, ErrDecrypt
	}
	return out, nil
}
