package session

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// stateCodecs lists every persisted state decoder with a function that
// re-encodes what it decoded.
var stateCodecs = map[string]func([]byte) ([]byte, error){
	"identity": func(b []byte) ([]byte, error) {
		v, err := UnmarshalIdentity(b)
		if err != nil {
			return nil, err
		}
		return v.MarshalBinary()
	},
	"signed prekey": func(b []byte) ([]byte, error) {
		v, err := UnmarshalSignedPreKey(b)
		if err != nil {
			return nil, err
		}
		return v.MarshalBinary()
	},
	"kem prekey": func(b []byte) ([]byte, error) {
		v, err := UnmarshalKEMPreKey(b)
		if err != nil {
			return nil, err
		}
		return v.MarshalBinary()
	},
	"one-time prekey": func(b []byte) ([]byte, error) {
		v, err := UnmarshalOneTimePreKey(b)
		if err != nil {
			return nil, err
		}
		return v.MarshalBinary()
	},
	"retired initiation": func(b []byte) ([]byte, error) {
		v, err := UnmarshalRetiredInitiation(b)
		if err != nil {
			return nil, err
		}
		return v.MarshalBinary()
	},
	"session": func(b []byte) ([]byte, error) {
		v, err := UnmarshalSession(b)
		if err != nil {
			return nil, err
		}
		return v.MarshalBinary()
	},
}

// stateSamples returns one encoded record of each kind, with a session that
// holds skipped keys and a pending initiation.
func stateSamples(t testing.TB) map[string][]byte {
	a, b := newDevice(t, newDetRand(1), "alice/1"), newDevice(t, newDetRand(2), "bob/1")
	as, bs := pair(t, newDetRand(3), a, b, true)
	send(t, as, "skipped")
	_, m := send(t, as, "seen")
	recv(t, bs, m, "seen")
	enc := func(v interface{ MarshalBinary() ([]byte, error) }) []byte {
		out, err := v.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return map[string][]byte{
		"identity":           enc(a.id),
		"signed prekey":      enc(a.spk),
		"kem prekey":         enc(a.kem),
		"one-time prekey":    enc(a.otk),
		"retired initiation": enc(RetiredInitiation{ID: as.ID, SignedPreKeyID: 7, RetiredAt: testNow.Unix()}),
		"session":            enc(as),
		"session/responder":  enc(bs),
	}
}

func codecFor(name string) func([]byte) ([]byte, error) {
	if name == "session/responder" {
		name = "session"
	}
	return stateCodecs[name]
}

func TestStateRoundTrip(t *testing.T) {
	for name, b := range stateSamples(t) {
		t.Run(name, func(t *testing.T) {
			codec := codecFor(name)
			again, err := codec(b)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("round trip: %v, equal=%v", err, bytes.Equal(again, b))
			}
			for n := 0; n < len(b); n++ {
				if _, err := codec(b[:n]); !errors.Is(err, ErrMalformedState) && !(n == 0 && err != nil) {
					t.Fatalf("truncated to %d: got %v, want ErrMalformedState", n, err)
				}
			}
			if _, err := codec(append(bytes.Clone(b), 0)); !errors.Is(err, ErrMalformedState) {
				t.Fatalf("trailing byte: got %v, want ErrMalformedState", err)
			}
			wrong := bytes.Clone(b)
			wrong[0] = 2
			if _, err := codec(wrong); !errors.Is(err, ErrUnsupportedStateVersion) {
				t.Fatalf("version 2: got %v, want ErrUnsupportedStateVersion", err)
			}
		})
	}
}

// A session encoded and decoded mid-conversation continues exactly like the
// original: both produce the same ciphertext from the same randomness.
func TestSessionStateContinues(t *testing.T) {
	a, b := newDevice(t, newDetRand(1), "alice/1"), newDevice(t, newDetRand(2), "bob/1")
	as, bs := pair(t, newDetRand(3), a, b, true)
	_, m := send(t, as, "hello")
	recv(t, bs, m, "hello")
	send(t, bs, "lost") // leaves a skipped key on alice's side later
	_, m = send(t, bs, "reply")
	recv(t, as, m, "reply")

	enc, _ := as.MarshalBinary()
	copyOf, err := UnmarshalSession(enc)
	if err != nil {
		t.Fatal(err)
	}
	_, p1, _ := as.Encrypt(wire.EnvelopeID{9}, []byte("next"))
	_, p2, _ := copyOf.Encrypt(wire.EnvelopeID{9}, []byte("next"))
	if !bytes.Equal(p1, p2) {
		t.Fatal("a decoded session encrypts differently from the original")
	}
}

func FuzzUnmarshalState(f *testing.F) {
	samples := stateSamples(f)
	names := []string{"identity", "signed prekey", "kem prekey", "one-time prekey", "retired initiation", "session"}
	for i, name := range names {
		f.Add(uint8(i), samples[name]) // a valid record of each kind
	}
	f.Add(uint8(5), samples["session/responder"]) // a responder session
	f.Add(uint8(0), []byte{1})                    // version only
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		codec := stateCodecs[names[int(kind)%len(names)]]
		again, err := codec(b)
		if err != nil {
			if again != nil {
				t.Fatal("an error returned a value")
			}
			return
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%x decodes but re-encodes as %x", b, again)
		}
	})
}
