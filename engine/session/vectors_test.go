package session

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-chat/parley/wire"
)

var update = flag.Bool("update", false, "rewrite frozen vectors (only for a new vector, never to change one)")

// sessionVector pins the whole key schedule: from fixed seeds, the bundle, the
// initiation, the first PreKeyMessage, the reply that turns the ratchet and
// the message after it. Any change to a derivation, a label or a layout
// changes at least one of these.
type sessionVector struct {
	Note           string `json:"note"`
	AliceIdentity  string `json:"alice_identity_record"`
	BobIdentity    string `json:"bob_identity_record"`
	BobBundle      string `json:"bob_bundle"`
	InitiationID   string `json:"initiation_id"`
	First          string `json:"first_prekey_message"`
	Reply          string `json:"reply_ratchet_message"`
	Third          string `json:"third_ratchet_message"`
	AliceSession   string `json:"alice_session_record"`
	BobSession     string `json:"bob_session_record"`
	SafetyNumber   string `json:"safety_number"`
	BobFingerprint string `json:"bob_fingerprint"`
}

func buildSessionVector(t *testing.T) sessionVector {
	a, b := newDevice(t, newDetRand(0xa1), "alice/1"), newDevice(t, newDetRand(0xb0), "bob/1")
	r := newDetRand(0x5e)
	bundle := b.bundle(true)
	as, err := Initiate(r, a.addr, a.id, bundle, testNow)
	if err != nil {
		t.Fatal(err)
	}
	_, first, err := as.Encrypt(wire.EnvelopeID{1}, []byte("hello bob"))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := Respond(b.addr, b.id, a.addr, as.Initiation, b.keysFor(as.Initiation), testNow)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := wire.DecodePreKeyMessage(first)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := bs.Decrypt(r, wire.EnvelopePreKey, wire.EnvelopeID{1}, pm.Message); err != nil || string(got) != "hello bob" {
		t.Fatalf("bob decrypts %q, %v", got, err)
	}
	_, reply, err := bs.Encrypt(wire.EnvelopeID{2}, []byte("hi alice"))
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := wire.DecodeRatchetMessage(reply)
	if got, err := as.Decrypt(r, wire.EnvelopeRatchet, wire.EnvelopeID{2}, rm); err != nil || string(got) != "hi alice" {
		t.Fatalf("alice decrypts %q, %v", got, err)
	}
	_, third, err := as.Encrypt(wire.EnvelopeID{3}, []byte("how are you"))
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v interface{ MarshalBinary() ([]byte, error) }) string {
		b, err := v.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(b)
	}
	bb, err := wire.EncodeBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return sessionVector{
		Note:           "engine/vectors_test.go: ChaCha8 seeds a1 (alice), b0 (bob), 5e (session); now 2026-11-02T12:00:00Z; envelope IDs 01.., 02.., 03..",
		AliceIdentity:  enc(a.id),
		BobIdentity:    enc(b.id),
		BobBundle:      hex.EncodeToString(bb),
		InitiationID:   hex.EncodeToString(as.ID[:]),
		First:          hex.EncodeToString(first),
		Reply:          hex.EncodeToString(reply),
		Third:          hex.EncodeToString(third),
		AliceSession:   enc(as),
		BobSession:     enc(bs),
		SafetyNumber:   SafetyNumber(a.addr, a.id.Public(), b.addr, b.id.Public()),
		BobFingerprint: b.id.Public().Fingerprint(),
	}
}

// TestFrozenSessionVector pins version 2 of the key schedule (PreKeyMessage
// version 2, message keys bound to the envelope ID).
func TestFrozenSessionVector(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "engine", "session_vector_v2.json")
	got := buildSessionVector(t)
	if *update {
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s exists: frozen vectors never change", path)
		}
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want sessionVector
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		gb, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("the key schedule changed; frozen vector %s differs from:\n%s", path, gb)
	}
}

// TestRetiredSessionVector: the version-1 vector stays in testdata. Its
// PreKeyMessage is refused with ErrUnsupportedVersion, its ratchet messages
// (keyed by the chain position alone) differ from what version 2 makes of
// the same states, and its state records, whose format did not change, still
// decode.
func TestRetiredSessionVector(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "engine", "session_vector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v1 sessionVector
	if err := json.Unmarshal(raw, &v1); err != nil {
		t.Fatal(err)
	}
	dec := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := wire.DecodePreKeyMessage(dec(v1.First)); !errors.Is(err, wire.ErrUnsupportedVersion) {
		t.Fatalf("version-1 PreKeyMessage: %v, want ErrUnsupportedVersion", err)
	}
	for name, rec := range map[string]string{"alice": v1.AliceSession, "bob": v1.BobSession} {
		if _, err := UnmarshalSession(dec(rec)); err != nil {
			t.Errorf("version-1 session record of %s: %v", name, err)
		}
	}
	// The same seeds and states encrypt the reply and the third message to
	// other bytes: their keys now depend on the envelope ID.
	if got := buildSessionVector(t); got.Reply == v1.Reply || got.Third == v1.Third {
		t.Fatal("version 2 encrypts the reply as version 1 did")
	}
}
