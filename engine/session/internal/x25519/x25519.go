// Package x25519 is the X25519 function as the ratchet needs it: keys whose
// public half is computed once, by a fixed-base multiplication, and the RFC
// 7748 ladder for Diffie-Hellman. It knows nothing of sessions; package
// session is its only user.
package x25519

import (
	"crypto/subtle"
	"fmt"
	"io"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// X25519 as the ratchet needs it. A DH ratchet step costs one key generation
// and two Diffie-Hellman operations. crypto/ecdh can only make a usable
// private key by running a full Montgomery ladder on the base point, so a
// step would cost three ladders; here a new key's public half comes from
// filippo.io/edwards25519's fixed-base multiplication (precomputed tables,
// about 40% of a ladder), and the Diffie-Hellman operations run the RFC 7748
// ladder over that library's field arithmetic. Both are checked against the
// RFC 7748 vectors and against crypto/ecdh on random keys (x25519_test.go).

// Key is an X25519 private key with its public key, computed once.
type Key struct {
	scalar [32]byte // as generated; clamped when used, as RFC 7748 says
	pub    [32]byte
}

// New makes an X25519 key from 32 bytes of r.
func New(r io.Reader) (*Key, error) {
	var seed [32]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("generate X25519 key: %w", err)
	}
	return FromScalar(seed), nil
}

// FromScalar makes the key of a private scalar (as generated: it is
// clamped when used).
func FromScalar(seed [32]byte) *Key {
	s, err := new(edwards25519.Scalar).SetBytesWithClamping(seed[:])
	if err != nil {
		panic("x25519: clamping 32 bytes failed: " + err.Error())
	}
	k := &Key{scalar: seed}
	copy(k.pub[:], new(edwards25519.Point).ScalarBaseMult(s).BytesMontgomery())
	return k
}

// Bytes returns the private scalar as generated.
func (k *Key) Bytes() []byte { return append([]byte(nil), k.scalar[:]...) }

// Public returns the public key.
func (k *Key) Public() [32]byte { return k.pub }

// DH computes X25519(k, pub). A public key of the wrong length, or a point
// of small order, whose output is all zero, is refused (false).
func DH(k *Key, pub []byte) ([]byte, bool) {
	if len(pub) != 32 {
		return nil, false
	}
	out := Ladder(&k.scalar, (*[32]byte)(pub))
	var zero [32]byte
	if subtle.ConstantTimeCompare(out[:], zero[:]) == 1 {
		return nil, false
	}
	return out[:], true
}

// Ladder is the X25519 function of RFC 7748 section 5: the Montgomery ladder
// over the u-coordinate, in constant time (conditional swaps, no branch or
// index on secret bits).
func Ladder(scalar, u *[32]byte) [32]byte {
	k := *scalar
	k[0] &= 248
	k[31] &= 127
	k[31] |= 64
	var x1, x2, z2, x3, z3, t0, t1 field.Element
	if _, err := x1.SetBytes(u[:]); err != nil { // ignores the top bit, as the RFC asks
		panic("x25519: 32-byte field element refused: " + err.Error())
	}
	x2.One()
	z2.Zero()
	x3.Set(&x1)
	z3.One()
	swap := 0
	for pos := 254; pos >= 0; pos-- {
		bit := int(k[pos/8]>>uint(pos&7)) & 1
		swap ^= bit
		x2.Swap(&x3, swap)
		z2.Swap(&z3, swap)
		swap = bit
		// One ladder step: (x2:z2) doubles, (x3:z3) becomes the sum.
		t0.Subtract(&x3, &z3)  // D = x3 - z3
		t1.Subtract(&x2, &z2)  // B = x2 - z2
		x2.Add(&x2, &z2)       // A = x2 + z2
		z2.Add(&x3, &z3)       // C = x3 + z3
		z3.Multiply(&t0, &x2)  // DA
		z2.Multiply(&z2, &t1)  // CB
		t0.Square(&t1)         // BB
		t1.Square(&x2)         // AA
		x3.Add(&z3, &z2)       // DA + CB
		z2.Subtract(&z3, &z2)  // DA - CB
		x2.Multiply(&t1, &t0)  // x2 = AA * BB
		t1.Subtract(&t1, &t0)  // E = AA - BB
		z2.Square(&z2)         // (DA - CB)^2
		z3.Mult32(&t1, 121666) // a24' * E, with a24' = (A + 2) / 4 = 121666
		x3.Square(&x3)         // x3 = (DA + CB)^2
		t0.Add(&t0, &z3)       // BB + a24' * E
		z3.Multiply(&x1, &z2)  // z3 = u * (DA - CB)^2
		z2.Multiply(&t1, &t0)  // z2 = E * (BB + a24' * E)
	}
	x2.Swap(&x3, swap)
	z2.Swap(&z3, swap)
	z2.Invert(&z2)
	x2.Multiply(&x2, &z2)
	var out [32]byte
	copy(out[:], x2.Bytes())
	return out
}
