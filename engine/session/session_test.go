package session

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/wire"
)

// sealed is one encrypted message as the receiving session sees it.
type sealed struct {
	typ   wire.EnvelopeType
	envID wire.EnvelopeID
	m     wire.RatchetMessage
}

var envCounter byte

func send(t testing.TB, s *Session, text string) (wire.EnvelopeType, sealed) {
	t.Helper()
	envCounter++
	id := wire.EnvelopeID{envCounter}
	typ, payload, err := s.Encrypt(id, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return typ, sealed{typ, id, ratchetOf(t, typ, payload)}
}

func (m sealed) open(s *Session) ([]byte, error) {
	return s.Decrypt(SystemRandom{}, m.typ, m.envID, m.m)
}

func recv(t testing.TB, s *Session, m sealed, want string) {
	t.Helper()
	got, err := m.open(s)
	if err != nil {
		t.Fatalf("decrypt %q: %v", want, err)
	}
	if string(got) != want {
		t.Fatalf("decrypt: got %q, want %q", got, want)
	}
}

func TestSessionConversation(t *testing.T) {
	for _, withOTK := range []bool{true, false} {
		t.Run(fmt.Sprintf("otk=%v", withOTK), func(t *testing.T) {
			a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
			as, bs := pair(t, SystemRandom{}, a, b, withOTK)
			if as.ID != bs.ID {
				t.Fatalf("initiation IDs differ: %x vs %x", as.ID, bs.ID)
			}
			typ, m1 := send(t, as, "a1")
			if typ != wire.EnvelopePreKey {
				t.Fatalf("first message type %d, want PreKey", typ)
			}
			_, m2 := send(t, as, "a2")
			recv(t, bs, m2, "a2") // out of order
			recv(t, bs, m1, "a1")
			typ, m3 := send(t, bs, "b1")
			if typ != wire.EnvelopeRatchet {
				t.Fatalf("responder message type %d, want Ratchet", typ)
			}
			recv(t, as, m3, "b1")
			if as.AwaitingReply {
				t.Fatal("initiator still awaits a reply after decrypting one")
			}
			typ, m4 := send(t, as, "a3")
			if typ != wire.EnvelopeRatchet {
				t.Fatalf("after reply, type %d, want Ratchet", typ)
			}
			recv(t, bs, m4, "a3")
			for i := 0; i < 5; i++ {
				_, m := send(t, bs, fmt.Sprint("b", i))
				recv(t, as, m, fmt.Sprint("b", i))
				_, m = send(t, as, fmt.Sprint("a", i))
				recv(t, bs, m, fmt.Sprint("a", i))
			}
		})
	}
}

func TestSessionDuplicateAndForgeryChangeNothing(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	as, bs := pair(t, SystemRandom{}, a, b, true)
	_, m1 := send(t, as, "one")
	_, m3 := send(t, as, "three") // skip m2 below
	_, m2 := send(t, as, "two")
	_ = m2
	recv(t, bs, m1, "one")
	recv(t, bs, m3, "three")
	before, _ := bs.MarshalBinary()
	for name, m := range map[string]sealed{"duplicate": m1, "duplicate skipped-from": m3} {
		if _, err := m.open(bs); err == nil {
			t.Errorf("%s decrypted again", name)
		}
	}
	forged := m2
	forged.m.Ciphertext = bytes.Clone(m2.m.Ciphertext)
	forged.m.Ciphertext[0] ^= 1
	relabelled := m2
	relabelled.envID[15] ^= 1
	for name, m := range map[string]sealed{"forged": forged, "relabelled": relabelled} {
		if _, err := m.open(bs); !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: got %v, want ErrDecrypt", name, err)
		}
	}
	after, _ := bs.MarshalBinary()
	if !bytes.Equal(before, after) {
		t.Fatal("a failed decrypt changed the session")
	}
	recv(t, bs, m2, "two") // the skipped key is still there
}

func TestSessionSkipBounds(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	as, bs := pair(t, SystemRandom{}, a, b, true)
	_, first := send(t, as, "first")
	recv(t, bs, first, "first")
	var last sealed
	for i := 0; i <= MaxSkip+1; i++ {
		_, last = send(t, as, "x")
	}
	before, _ := bs.MarshalBinary()
	if _, err := last.open(bs); !errors.Is(err, ErrTooManySkipped) {
		t.Fatalf("jump of %d: got %v, want ErrTooManySkipped", MaxSkip+1, err)
	}
	after, _ := bs.MarshalBinary()
	if !bytes.Equal(before, after) {
		t.Fatal("a rejected jump changed the session")
	}
	// Exactly MaxSkip is fine.
	as2, bs2 := pair(t, SystemRandom{}, a, b, false)
	for i := 0; i < MaxSkip; i++ {
		send(t, as2, "x")
	}
	_, m := send(t, as2, "edge")
	recv(t, bs2, m, "edge")
	if got := len(bs2.r.skipped); got != MaxSkip {
		t.Fatalf("kept %d skipped keys, want %d", got, MaxSkip)
	}
}

func TestSkippedKeysAreCapped(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	as, bs := pair(t, SystemRandom{}, a, b, false)
	// Three chains of MaxSkip skipped keys each exceed MaxSkippedKeys.
	var firstSkipped sealed
	for round := 0; round < 3; round++ {
		for i := 0; i < MaxSkip; i++ {
			_, m := send(t, as, "skipped")
			if round == 0 && i == 0 {
				firstSkipped = m
			}
		}
		_, m := send(t, as, "delivered")
		recv(t, bs, m, "delivered")
		_, reply := send(t, bs, "reply")
		recv(t, as, reply, "reply")
	}
	if got := len(bs.r.skipped); got != MaxSkippedKeys {
		t.Fatalf("kept %d skipped keys, want the cap %d", got, MaxSkippedKeys)
	}
	if _, err := firstSkipped.open(bs); err == nil {
		t.Fatal("the oldest skipped key survived the cap")
	}
}

func TestExpiredSignedPreKey(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	late := testNow.Add(SignedPreKeyLifetime)
	if _, err := Initiate(SystemRandom{}, a.addr, a.id, b.bundle(true), late); !errors.Is(err, ErrExpiredSignedPreKey) {
		t.Fatalf("initiate at expiry: got %v, want ErrExpiredSignedPreKey", err)
	}
	if _, err := Initiate(SystemRandom{}, a.addr, a.id, b.bundle(true), late.Add(-time.Second)); err != nil {
		t.Fatalf("initiate a second before expiry: %v", err)
	}
	as, _ := pair(t, SystemRandom{}, a, b, true)
	if _, err := Respond(b.addr, b.id, a.addr, as.Initiation, b.keysFor(as.Initiation), late); !errors.Is(err, ErrExpiredSignedPreKey) {
		t.Fatalf("respond at expiry: got %v, want ErrExpiredSignedPreKey", err)
	}
}

func TestBundleSignatures(t *testing.T) {
	b := newDevice(t, SystemRandom{}, "bob/1")
	a := newDevice(t, SystemRandom{}, "alice/1")
	mutations := map[string]func(*wire.Bundle){
		"identity dh key":   func(x *wire.Bundle) { x.IdentityDHKey[0] ^= 1 },
		"signed prekey":     func(x *wire.Bundle) { x.SignedPreKey.PublicKey[0] ^= 1 },
		"signed expiry":     func(x *wire.Bundle) { x.SignedPreKey.Expires++ },
		"kem prekey":        func(x *wire.Bundle) { x.KEMPreKey.PublicKey[0] ^= 1 },
		"kem id":            func(x *wire.Bundle) { x.KEMPreKey.ID++ },
		"signing key":       func(x *wire.Bundle) { x.IdentitySigningKey = a.id.Public().SigningKey },
		"identity of other": func(x *wire.Bundle) { x.IdentityDHKey = a.id.Public().DHKey },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			bundle := b.bundle(true)
			mutate(&bundle)
			if _, _, err := VerifyBundle(bundle, testNow); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("got %v, want ErrBadSignature", err)
			}
		})
	}
	bundle := b.bundle(true)
	bundle.Address = "Bob/1"
	if _, _, err := VerifyBundle(bundle, testNow); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("bad address: got %v, want wire.ErrMalformed", err)
	}
}

func TestRespondRejectsForgedInitiation(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	as, _ := pair(t, SystemRandom{}, a, b, true)
	_, m := send(t, as, "hello")
	cases := map[string]func(h *wire.InitiationHeader){
		"identity signature": func(h *wire.InitiationHeader) { h.IdentitySignature[0] ^= 1 },
		"ephemeral key":      func(h *wire.InitiationHeader) { h.EphemeralKey[0] ^= 1 },
		"kem ciphertext":     func(h *wire.InitiationHeader) { h.KEMCiphertext[0] ^= 1 },
		"one-time prekey":    func(h *wire.InitiationHeader) { h.HasOneTimePreKey = false; h.OneTimePreKeyID = 0 },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			h := *as.Initiation
			mutate(&h)
			bs, err := Respond(b.addr, b.id, a.addr, &h, b.keysFor(&h), testNow)
			if err != nil {
				return // refused outright
			}
			if _, err := m.open(bs); err == nil {
				t.Fatal("a tampered initiation decrypted")
			}
		})
	}
}

func TestSafetyNumber(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	x := SafetyNumber(a.addr, a.id.Public(), b.addr, b.id.Public())
	y := SafetyNumber(b.addr, b.id.Public(), a.addr, a.id.Public())
	if x != y {
		t.Fatalf("sides differ: %q vs %q", x, y)
	}
	digits := 0
	for _, c := range x {
		if c >= '0' && c <= '9' {
			digits++
		} else if c != ' ' {
			t.Fatalf("unexpected character %q in %q", c, x)
		}
	}
	if digits != 60 {
		t.Fatalf("%d digits in %q, want 60", digits, x)
	}
	c := newDevice(t, SystemRandom{}, "bob/1")
	if z := SafetyNumber(a.addr, a.id.Public(), c.addr, c.id.Public()); z == x {
		t.Fatal("another identity gave the same safety number")
	}
}

// TestAccountSafetyNumber: both people compute the same number from the
// two account keys, whatever device asks; it is frozen (a vector), and
// another account key changes it.
func TestAccountSafetyNumber(t *testing.T) {
	var a, b [32]byte
	for i := range a {
		a[i], b[i] = byte(i), byte(0xff-i)
	}
	const want = "60781 45318 65333 12223 60693 01783 73936 92078 36663 33359 36417 47231"
	if x, y := AccountSafetyNumber("alice", a, "bob", b), AccountSafetyNumber("bob", b, "alice", a); x != want || y != want {
		t.Fatalf("account safety numbers %q and %q, want %q on both sides", x, y, want)
	}
	b[0] ^= 1
	if z := AccountSafetyNumber("alice", a, "bob", b); z == want {
		t.Fatal("another account key gave the same safety number")
	}
}

// Session.Encrypt builds a ratchet message's encoding itself; it must be
// exactly what wire encodes.
func TestEncryptMatchesWireEncoding(t *testing.T) {
	a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
	as, bs := pair(t, SystemRandom{}, a, b, false)
	_, m := send(t, as, "hi")
	recv(t, bs, m, "hi")
	for _, size := range []int{0, 1, 1024, wire.MaxBodySize} {
		typ, payload, err := bs.Encrypt(wire.EnvelopeID{7}, make([]byte, size))
		if err != nil || typ != wire.EnvelopeRatchet {
			t.Fatalf("size %d: %v, type %d", size, err, typ)
		}
		dec, err := wire.DecodeRatchetMessage(payload)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		again, err := wire.EncodeRatchetMessage(dec)
		if err != nil || !bytes.Equal(again, payload) {
			t.Fatalf("size %d: wire encodes the message differently", size)
		}
	}
}
