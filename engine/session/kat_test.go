package session

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/parley-chat/parley/engine/session/internal/x25519"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// Known answers for the primitives exactly as parley calls them.

// X25519 as dh() computes it: RFC 7748 section 5.2.
func TestKATX25519Function(t *testing.T) {
	tests := []struct{ scalar, u, want string }{
		{"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
			"e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
			"c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
		{"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
			"e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
			"95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
	}
	for i, tt := range tests {
		k, err := x25519From(unhex(t, tt.scalar), "test")
		if err != nil {
			t.Fatal(err)
		}
		got, err := dh(k, unhex(t, tt.u))
		if err != nil {
			t.Fatal(err)
		}
		if want := unhex(t, tt.want); !bytes.Equal(got, want) {
			t.Errorf("vector %d: got %x, want %x", i, got, want)
		}
	}
}

// RFC 7748 section 6.1: both public keys and the shared secret.
func TestKATX25519DH(t *testing.T) {
	alice, _ := x25519From(unhex(t, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"), "test")
	bob, _ := x25519From(unhex(t, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"), "test")
	if got, want := pubOf(alice), unhex(t, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"); !bytes.Equal(got, want) {
		t.Errorf("alice public: got %x, want %x", got, want)
	}
	if got, want := pubOf(bob), unhex(t, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"); !bytes.Equal(got, want) {
		t.Errorf("bob public: got %x, want %x", got, want)
	}
	want := unhex(t, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
	for name, k := range map[string]struct {
		priv *x25519.Key
		pub  []byte
	}{"alice": {alice, pubOf(bob)}, "bob": {bob, pubOf(alice)}} {
		got, err := dh(k.priv, k.pub)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s shared: got %x (%v), want %x", name, got, err, want)
		}
	}
	// The all-zero output of a low-order point is refused, not used.
	if _, err := dh(alice, make([]byte, 32)); err == nil {
		t.Error("DH with the zero point succeeded, want an error")
	}
}

// RFC 5869 test case 1, through crypto/hkdf as the root KDFs use it.
func TestKATHKDF(t *testing.T) {
	ikm := unhex(t, "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b")
	salt := unhex(t, "000102030405060708090a0b0c")
	info := unhex(t, "f0f1f2f3f4f5f6f7f8f9")
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"); !bytes.Equal(prk, want) {
		t.Errorf("PRK: got %x, want %x", prk, want)
	}
	okm, err := hkdf.Key(sha256.New, ikm, salt, string(info), 42)
	if err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"); !bytes.Equal(okm, want) {
		t.Errorf("OKM: got %x, want %x", okm, want)
	}
}

// AES-256-GCM, the message and at-rest AEAD: test cases 13 and 14 of the GCM
// specification (McGrew and Viega), 256-bit zero key and zero nonce.
func TestKATAESGCM(t *testing.T) {
	tests := []struct{ pt, ct string }{
		{"", "530f8afbc74536b9a963b4f1c4cb738b"},
		{"00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"},
	}
	for i, tt := range tests {
		block, _ := aes.NewCipher(make([]byte, 32))
		aead, _ := cipher.NewGCM(block)
		got := aead.Seal(nil, make([]byte, 12), unhex(t, tt.pt), nil)
		if want := unhex(t, tt.ct); !bytes.Equal(got, want) {
			t.Errorf("case %d: got %x, want %x", 13+i, got, want)
		}
		back, err := aead.Open(nil, make([]byte, 12), got, nil)
		if err != nil || !bytes.Equal(back, unhex(t, tt.pt)) {
			t.Errorf("case %d: open: %x, %v", 13+i, back, err)
		}
	}
}

// RFC 8032 section 7.1 test 1: the identity signature scheme.
func TestKATEd25519(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(unhex(t, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
	if got, want := []byte(priv.Public().(ed25519.PublicKey)), unhex(t, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"); !bytes.Equal(got, want) {
		t.Errorf("public: got %x, want %x", got, want)
	}
	sig := ed25519.Sign(priv, nil)
	want := unhex(t, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
	if !bytes.Equal(sig, want) {
		t.Errorf("signature: got %x, want %x", sig, want)
	}
}

// hmacSHA256 must be exactly HMAC-SHA256 for every message length it takes.
func TestHMACSHA256(t *testing.T) {
	for n := 0; n <= maxHMACMessage; n++ {
		var key [32]byte
		msg := make([]byte, n)
		for j := range key {
			key[j] = byte(n*31 + j*7)
		}
		for j := range msg {
			msg[j] = byte(n + j*13)
		}
		m := hmac.New(sha256.New, key[:])
		m.Write(msg)
		want := m.Sum(nil)
		if got := hmacSHA256(&key, msg); !bytes.Equal(got[:], want) {
			t.Fatalf("length %d: got %x, want %x", n, got, want)
		}
	}
}

// kdfRoot must be exactly HKDF-SHA256 with the root key as salt.
func TestKDFRoot(t *testing.T) {
	var rk [32]byte
	dhOut := make([]byte, 32)
	for i := range rk {
		rk[i], dhOut[i] = byte(i), byte(255-i)
	}
	want, err := hkdf.Key(sha256.New, dhOut, rk[:], labelRatchetRoot, 64)
	if err != nil {
		t.Fatal(err)
	}
	root, chain := kdfRoot(&rk, dhOut)
	if got := append(root[:], chain[:]...); !bytes.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}
