package session

import (
	"testing"

	"github.com/parley-chat/parley/wire"
)

// benchPair returns two established sessions (one message each way already
// exchanged), so that the benchmarks measure steady-state messages only.
func benchPair(b *testing.B) (as, bs *Session) {
	a, bd := newDevice(b, SystemRandom{}, "alice/1"), newDevice(b, SystemRandom{}, "bob/1")
	as, bs = pair(b, SystemRandom{}, a, bd, true)
	_, m := send(b, as, "hello")
	recv(b, bs, m, "hello")
	_, m = send(b, bs, "hi")
	recv(b, as, m, "hi")
	return as, bs
}

// step encrypts body on from, decodes the payload as the receiver would, and
// decrypts it on to.
func step(b *testing.B, from, to *Session, id wire.EnvelopeID, body []byte) {
	typ, payload, err := from.Encrypt(id, body)
	if err != nil {
		b.Fatal(err)
	}
	m, err := wire.DecodeRatchetMessage(payload)
	if err != nil {
		b.Fatal(err)
	}
	out, err := to.Decrypt(SystemRandom{}, typ, id, m)
	if err != nil || len(out) != len(body) {
		b.Fatalf("decrypt: %v", err)
	}
}

// BenchmarkRatchetOneWay: 1 KiB messages in one direction (symmetric chain
// steps only), encrypt plus decrypt per op.
func BenchmarkRatchetOneWay(b *testing.B) {
	as, bs := benchPair(b)
	body := make([]byte, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(b, as, bs, wire.EnvelopeID{byte(i)}, body)
	}
}

// BenchmarkRatchetPingPong: 1 KiB messages alternating direction, so every
// message carries a new ratchet key and costs a DH ratchet step.
func BenchmarkRatchetPingPong(b *testing.B) {
	as, bs := benchPair(b)
	body := make([]byte, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			step(b, as, bs, wire.EnvelopeID{byte(i)}, body)
		} else {
			step(b, bs, as, wire.EnvelopeID{byte(i)}, body)
		}
	}
}
