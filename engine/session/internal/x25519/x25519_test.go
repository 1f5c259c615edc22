package x25519

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// RFC 7748 section 5.2, the iterated test: k = u = 9, then repeatedly
// k, u = X25519(k, u), k. After 1 and 1,000 iterations k has the given values.
func TestKATX25519Iterated(t *testing.T) {
	var k, u [32]byte
	k[0], u[0] = 9, 9
	want := map[int]string{
		1:    "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079",
		1000: "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51",
	}
	for i := 1; i <= 1000; i++ {
		out := Ladder(&k, &u)
		u, k = k, out
		if w, ok := want[i]; ok {
			if got := unhex(t, w); !bytes.Equal(k[:], got) {
				t.Fatalf("after %d iterations: got %x, want %s", i, k, w)
			}
		}
	}
}

// The ladder and the fixed-base public key agree with crypto/ecdh on random
// keys, including scalars and points with the bits that clamping and the
// field encoding ignore.
func TestX25519MatchesECDH(t *testing.T) {
	for i := 0; i < 500; i++ {
		var a, b [32]byte
		rand.Read(a[:])
		rand.Read(b[:])
		ka, kb := FromScalar(a), FromScalar(b)
		ea, _ := ecdh.X25519().NewPrivateKey(a[:])
		eb, _ := ecdh.X25519().NewPrivateKey(b[:])
		if !bytes.Equal(ka.pub[:], ea.PublicKey().Bytes()) {
			t.Fatalf("public key of %x: got %x, want %x", a, ka.pub, ea.PublicKey().Bytes())
		}
		got, ok := DH(ka, kb.pub[:])
		if !ok {
			t.Fatal("DH refused a random point")
		}
		want, _ := ea.ECDH(eb.PublicKey())
		if !bytes.Equal(got, want) {
			t.Fatalf("DH(%x, %x): got %x, want %x", a, kb.pub, got, want)
		}
		// A u-coordinate with the top bit set is taken modulo that bit.
		var u [32]byte
		rand.Read(u[:])
		hi := u
		hi[31] |= 0x80
		lo := u
		lo[31] &= 0x7f
		if Ladder(&a, &hi) != Ladder(&a, &lo) {
			t.Fatal("the top bit of u changed the result")
		}
	}
}

// Points of small order give the all-zero output, which DH refuses.
func TestX25519RefusesSmallOrder(t *testing.T) {
	k := FromScalar([32]byte{1, 2, 3})
	small := [][]byte{
		make([]byte, 32),                       // 0
		append([]byte{1}, make([]byte, 31)...), // 1
		unhex(t, "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"), // order 8
	}
	for _, p := range small {
		if _, ok := DH(k, p); ok {
			t.Errorf("DH with small-order point %x succeeded", p)
		}
	}
	if _, ok := DH(k, make([]byte, 31)); ok {
		t.Error("DH with a 31-byte point succeeded")
	}
}

func FuzzX25519(f *testing.F) {
	f.Add(make([]byte, 32), make([]byte, 32)) // zero scalar, zero point
	f.Add(bytes.Repeat([]byte{0xff}, 32), bytes.Repeat([]byte{0xff}, 32))
	f.Fuzz(func(t *testing.T, s, u []byte) {
		if len(s) != 32 || len(u) != 32 {
			return
		}
		got, ok := DH(FromScalar([32]byte(s)), u)
		e, _ := ecdh.X25519().NewPrivateKey(s)
		p, perr := ecdh.X25519().NewPublicKey(u)
		if perr != nil {
			t.Skip()
		}
		want, werr := e.ECDH(p)
		if ok != (werr == nil) || ok && !bytes.Equal(got, want) {
			t.Fatalf("X25519(%x, %x): got %x, %v; crypto/ecdh %x, %v", s, u, got, ok, want, werr)
		}
	})
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
