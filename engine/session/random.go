package session

import (
	"crypto/mlkem"
	"crypto/rand"
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
