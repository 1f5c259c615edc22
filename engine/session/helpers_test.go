package session

import (
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/parley-chat/parley/wire"
)

// detRand is a deterministic Randomness for known-answer tests: a ChaCha8
// stream from a fixed seed, and derandomized ML-KEM encapsulation.
type detRand struct{ c *rand.ChaCha8 }

func newDetRand(seed byte) *detRand {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return &detRand{rand.NewChaCha8(s)}
}

func (d *detRand) Read(p []byte) (int, error) { return d.c.Read(p) }

func (d *detRand) Encapsulate(ek *mlkem.EncapsulationKey768) ([]byte, []byte, error) {
	var m [32]byte
	d.c.Read(m[:])
	return mlkemtest.Encapsulate768(ek, m[:])
}

var testNow = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// device is one side's keys for session tests.
type device struct {
	addr string
	id   *Identity
	spk  *SignedPreKey
	kem  *KEMPreKey
	otk  *OneTimePreKey
}

func newDevice(t testing.TB, r Randomness, addr string) *device {
	t.Helper()
	d := &device{addr: addr}
	var err error
	if d.id, err = NewIdentity(r); err != nil {
		t.Fatal(err)
	}
	if d.spk, err = NewSignedPreKey(r, d.id, 1, testNow); err != nil {
		t.Fatal(err)
	}
	if d.kem, err = NewKEMPreKey(r, d.id, 2, testNow); err != nil {
		t.Fatal(err)
	}
	if d.otk, err = NewOneTimePreKey(r, 3); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *device) bundle(withOTK bool) wire.Bundle {
	b := BuildBundle(d.addr, d.id, d.spk, d.kem)
	if withOTK {
		p := d.otk.Public()
		b.OneTimePreKey = &p
	}
	return b
}

func (d *device) keysFor(h *wire.InitiationHeader) ResponderKeys {
	k := ResponderKeys{SignedPreKey: d.spk, KEMPreKey: d.kem}
	if h.HasOneTimePreKey {
		k.OneTimePreKey = d.otk
	}
	return k
}

// pair sets up a session from a to b and returns both sides; b's session is
// made from a's initiation header but has received nothing yet.
func pair(t testing.TB, r Randomness, a, b *device, withOTK bool) (as, bs *Session) {
	t.Helper()
	as, err := Initiate(r, a.addr, a.id, b.bundle(withOTK), testNow)
	if err != nil {
		t.Fatal(err)
	}
	bs, err = Respond(b.addr, b.id, a.addr, as.Initiation, b.keysFor(as.Initiation), testNow)
	if err != nil {
		t.Fatal(err)
	}
	return as, bs
}

// ratchetOf decodes the ratchet message inside a payload of either type.
func ratchetOf(t testing.TB, typ wire.EnvelopeType, payload []byte) wire.RatchetMessage {
	t.Helper()
	if typ == wire.EnvelopePreKey {
		m, err := wire.DecodePreKeyMessage(payload)
		if err != nil {
			t.Fatal(err)
		}
		return m.Message
	}
	m, err := wire.DecodeRatchetMessage(payload)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
