package session

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/parley-chat/parley/wire"
	"pgregory.net/rapid"
)

// inFlight is one envelope between the two sessions, as the receiver gets it.
type inFlight struct {
	text    string
	typ     wire.EnvelopeType
	envID   wire.EnvelopeID
	payload []byte
}

// TestRatchetProperties drives two sessions through random interleavings of
// sends in both directions, deliveries in any order (reorders stay far inside
// the skip bound), drops, duplicates, bit flips and encode/decode round trips
// of either side's state. Every delivered message decrypts exactly once to its
// text; a duplicate or a flipped envelope fails and changes no state.
func TestRatchetProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		a, b := newDevice(t, SystemRandom{}, "alice/1"), newDevice(t, SystemRandom{}, "bob/1")
		sides := [2]*Session{}
		sides[0], sides[1] = pair(t, SystemRandom{}, a, b, rapid.Bool().Draw(rt, "otk"))
		queues := [2][]inFlight{} // queues[i]: envelopes towards side i
		var delivered [2][]inFlight
		serial := 0
		// The responder cannot send before it has received once.
		bobCanSend := false

		open := func(s *Session, m inFlight) ([]byte, error) {
			var rm wire.RatchetMessage
			var err error
			if m.typ == wire.EnvelopePreKey {
				var pm wire.PreKeyMessage
				pm, err = wire.DecodePreKeyMessage(m.payload)
				if err == nil && pm.Initiation != *sides[0].initiationOrZero() {
					return nil, fmt.Errorf("initiation header changed")
				}
				rm = pm.Message
			} else {
				rm, err = wire.DecodeRatchetMessage(m.payload)
			}
			if err != nil {
				return nil, err
			}
			return s.Decrypt(SystemRandom{}, m.typ, m.envID, rm)
		}
		state := func(s *Session) []byte {
			b, err := s.MarshalBinary()
			if err != nil {
				rt.Fatal(err)
			}
			return b
		}

		rt.Repeat(map[string]func(*rapid.T){
			"send": func(rt *rapid.T) {
				from := rapid.IntRange(0, 1).Draw(rt, "from")
				if from == 1 && !bobCanSend {
					rt.Skip("bob has not received yet")
				}
				if len(queues[1-from]) > 40 {
					rt.Skip("keep reorders inside the skip bound")
				}
				serial++
				text := fmt.Sprintf("m%d from %d", serial, from)
				id := wire.EnvelopeID{byte(serial), byte(serial >> 8), byte(from)}
				typ, payload, err := sides[from].Encrypt(id, []byte(text))
				if err != nil {
					rt.Fatal(err)
				}
				queues[1-from] = append(queues[1-from], inFlight{text, typ, id, payload})
			},
			"deliver": func(rt *rapid.T) {
				to := rapid.IntRange(0, 1).Draw(rt, "to")
				if len(queues[to]) == 0 {
					rt.Skip("nothing in flight")
				}
				i := rapid.IntRange(0, len(queues[to])-1).Draw(rt, "which")
				m := queues[to][i]
				queues[to] = append(queues[to][:i], queues[to][i+1:]...)
				got, err := open(sides[to], m)
				if err != nil || string(got) != m.text {
					rt.Fatalf("deliver %q to %d: got %q, %v", m.text, to, got, err)
				}
				delivered[to] = append(delivered[to], m)
				if to == 1 {
					bobCanSend = true
				}
			},
			"drop": func(rt *rapid.T) {
				to := rapid.IntRange(0, 1).Draw(rt, "to")
				if len(queues[to]) == 0 {
					rt.Skip("nothing in flight")
				}
				i := rapid.IntRange(0, len(queues[to])-1).Draw(rt, "which")
				queues[to] = append(queues[to][:i], queues[to][i+1:]...)
			},
			"duplicate": func(rt *rapid.T) {
				to := rapid.IntRange(0, 1).Draw(rt, "to")
				if len(delivered[to]) == 0 {
					rt.Skip("nothing delivered")
				}
				m := delivered[to][rapid.IntRange(0, len(delivered[to])-1).Draw(rt, "which")]
				before := state(sides[to])
				if _, err := open(sides[to], m); err == nil {
					rt.Fatalf("duplicate %q decrypted again", m.text)
				}
				if !bytes.Equal(before, state(sides[to])) {
					rt.Fatalf("duplicate %q changed the state", m.text)
				}
			},
			"flip": func(rt *rapid.T) {
				to := rapid.IntRange(0, 1).Draw(rt, "to")
				if len(queues[to]) == 0 {
					rt.Skip("nothing in flight")
				}
				m := queues[to][rapid.IntRange(0, len(queues[to])-1).Draw(rt, "which")]
				flipped := m
				flipped.payload = bytes.Clone(m.payload)
				if rapid.Bool().Draw(rt, "flip envelope id") {
					flipped.envID[rapid.IntRange(0, 15).Draw(rt, "id byte")] ^= 1 << rapid.IntRange(0, 7).Draw(rt, "bit")
				} else {
					flipped.payload[rapid.IntRange(0, len(m.payload)-1).Draw(rt, "byte")] ^= 1 << rapid.IntRange(0, 7).Draw(rt, "bit")
				}
				before := state(sides[to])
				if _, err := open(sides[to], flipped); err == nil {
					rt.Fatalf("a flipped copy of %q decrypted", m.text)
				}
				if !bytes.Equal(before, state(sides[to])) {
					rt.Fatalf("a flipped copy of %q changed the state", m.text)
				}
			},
			"reload": func(rt *rapid.T) {
				i := rapid.IntRange(0, 1).Draw(rt, "side")
				s, err := UnmarshalSession(state(sides[i]))
				if err != nil {
					rt.Fatal(err)
				}
				sides[i] = s
			},
		})
	})
}

// initiationOrZero returns the session's pending initiation header, or a zero
// header when there is none.
func (s *Session) initiationOrZero() *wire.InitiationHeader {
	if s.Initiation == nil {
		return &wire.InitiationHeader{}
	}
	return s.Initiation
}
