package session

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/wire"
)

var (
	chainGroup = wire.GroupID{1, 2, 3}
	chainNow   = time.Unix(1767225600, 0)
)

const chainSender = "alice/1"

func newTestChain(t testing.TB) *SenderChain {
	t.Helper()
	c, err := NewSenderChain(SystemRandom{}, chainGroup, 4, chainNow)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sealChain(t testing.TB, c *SenderChain, body string) wire.ChainMessage {
	t.Helper()
	m, err := c.Seal(SystemRandom{}, chainSender, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	// What travels is the encoding: every message goes through it.
	b, err := wire.EncodeChainMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	m, err = wire.DecodeChainMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func openChain(t testing.TB, r *ReceiverChain, m wire.ChainMessage, want string) {
	t.Helper()
	got, err := r.Open(chainSender, m)
	if err != nil || string(got) != want {
		t.Fatalf("open position %d: %q, %v; want %q", m.Position, got, err, want)
	}
}

func wantOpenError(t testing.TB, r *ReceiverChain, sender string, m wire.ChainMessage, want error) {
	t.Helper()
	before, _ := r.MarshalBinary()
	if got, err := r.Open(sender, m); !errors.Is(err, want) || got != nil {
		t.Fatalf("open position %d: %q, %v; want %v", m.Position, got, err, want)
	}
	if after, _ := r.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatalf("a failed open (%v) changed the chain", want)
	}
}

// TestSenderChainOneMessageForEveryMember: one sealed message opens for
// every member that holds the announcement, in and out of order, and each
// position opens once.
func TestSenderChainOneMessageForEveryMember(t *testing.T) {
	c := newTestChain(t)
	a := c.Announce(wire.LogicalID{9})
	if a.Position != 0 || a.Group != chainGroup || a.Generation != 4 || a.Chain != c.ID() {
		t.Fatalf("announcement %+v", a)
	}
	members := make([]*ReceiverChain, 5)
	for i := range members {
		members[i] = NewReceiverChain(chainSender, a)
	}
	ms := make([]wire.ChainMessage, 6)
	for i := range ms {
		ms[i] = sealChain(t, c, fmt.Sprint("message ", i))
	}
	if c.Next() != 6 {
		t.Fatalf("Next() = %d after 6 seals", c.Next())
	}
	for i, r := range members {
		order := []int{0, 1, 2, 3, 4, 5}
		if i%2 == 1 {
			order = []int{5, 2, 0, 4, 1, 3} // out of order: skipped keys
		}
		for _, j := range order {
			openChain(t, r, ms[j], fmt.Sprint("message ", j))
		}
		if r.Skipped() != 0 {
			t.Errorf("member %d keeps %d skipped keys after every message", i, r.Skipped())
		}
		for _, m := range ms {
			wantOpenError(t, r, chainSender, m, ErrDuplicateMessage)
		}
	}
}

// TestSenderChainRefusesTampering: every header field, the ciphertext and
// the sender are bound; a member that knows the chain key cannot forge a
// message from the sender; a message for another chain is refused before
// its signature is checked.
func TestSenderChainRefusesTampering(t *testing.T) {
	c := newTestChain(t)
	r := NewReceiverChain(chainSender, c.Announce(wire.LogicalID{}))
	m := sealChain(t, c, "hello")
	for _, tt := range []struct {
		name   string
		sender string
		change func(*wire.ChainMessage)
		want   error
	}{
		{"another sender", "mallory/1", func(*wire.ChainMessage) {}, ErrChainMismatch},
		{"another chain", chainSender, func(m *wire.ChainMessage) { m.Chain[0] ^= 1 }, ErrChainMismatch},
		{"another position", chainSender, func(m *wire.ChainMessage) { m.Position++ }, ErrBadSignature},
		{"another salt", chainSender, func(m *wire.ChainMessage) { m.Salt[0] ^= 1 }, ErrBadSignature},
		{"a flipped ciphertext bit", chainSender, func(m *wire.ChainMessage) { m.Ciphertext[0] ^= 1 }, ErrBadSignature},
		{"a flipped signature bit", chainSender, func(m *wire.ChainMessage) { m.Signature[0] ^= 1 }, ErrBadSignature},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := m
			x.Ciphertext = bytes.Clone(m.Ciphertext)
			tt.change(&x)
			wantOpenError(t, r, tt.sender, x, tt.want)
		})
	}
	// The group and the generation are bound though they do not travel:
	// the same chain kept for another group or generation opens nothing.
	for _, change := range []func(*wire.ChainAnnounce){
		func(a *wire.ChainAnnounce) { a.Group[0] ^= 1 },
		func(a *wire.ChainAnnounce) { a.Generation++ },
	} {
		a := c.Announce(wire.LogicalID{})
		change(&a)
		wantOpenError(t, NewReceiverChain(chainSender, a), chainSender, m, ErrBadSignature)
	}
	// A member holds the chain key: it can encrypt a valid ciphertext at
	// the next position, but not sign it with the sender's key.
	forged := forge(t, c.Announce(wire.LogicalID{}), 1, ed25519.NewKeyFromSeed(make([]byte, 32)), "from alice, honest")
	wantOpenError(t, r, chainSender, forged, ErrBadSignature)
	openChain(t, r, m, "hello")
}

// forge seals a message at pos from the announced chain key, signed with
// key: what a member that holds the chain could make.
func forge(t *testing.T, a wire.ChainAnnounce, pos uint32, key ed25519.PrivateKey, body string) wire.ChainMessage {
	t.Helper()
	if pos-a.Position > 4*MaxChainSkip {
		t.Fatalf("forge: position %d too far for a test", pos)
	}
	ck := a.ChainKey
	var mk messageKey
	for p := a.Position; p <= pos; p++ {
		mk, ck = chainStep(&ck)
	}
	m := wire.ChainMessage{Chain: a.Chain, Position: pos}
	ad := chainAD(chainSender, a.Group, a.Generation, m)
	k, nonce := chainSealKey(&mk, m.Salt)
	m.Ciphertext = newAEAD(&k).Seal(nil, nonce[:], []byte(body), ad)
	copy(m.Signature[:], ed25519.Sign(key, chainSignedBody(ad, m.Ciphertext)))
	return m
}

// TestSenderChainSignedButUndecryptable: a message the sender signed whose
// ciphertext does not open under the position's key is ErrDecrypt, and the
// chain does not move.
func TestSenderChainSignedButUndecryptable(t *testing.T) {
	c := newTestChain(t)
	a := c.Announce(wire.LogicalID{})
	r := NewReceiverChain(chainSender, a)
	wrong := a
	wrong.ChainKey[0] ^= 1
	wantOpenError(t, r, chainSender, forge(t, wrong, 0, c.signing, "x"), ErrDecrypt)
	wantOpenError(t, r, chainSender, forge(t, wrong, 3, c.signing, "x"), ErrDecrypt)
	openChain(t, r, sealChain(t, c, "first"), "first")
}

// TestSenderChainMidChain: a device announced the chain at the next
// position opens what follows and nothing before (the chain key cannot be
// run backwards).
func TestSenderChainMidChain(t *testing.T) {
	c := newTestChain(t)
	early := []wire.ChainMessage{sealChain(t, c, "a"), sealChain(t, c, "b")}
	a := c.AnnounceFromNext(wire.LogicalID{})
	if a.Position != 2 {
		t.Fatalf("announced from %d, want 2", a.Position)
	}
	late := NewReceiverChain(chainSender, a)
	for _, m := range early {
		wantOpenError(t, late, chainSender, m, ErrBeforeChainStart)
	}
	openChain(t, late, sealChain(t, c, "c"), "c")
	// Its key at position 2 derives nothing of positions 0 and 1.
	first := c.Announce(wire.LogicalID{})
	if k := first.ChainKey; k == a.ChainKey {
		t.Fatal("the key at position 2 is the key at position 0")
	}
}

// TestSenderChainSkipBounds: a message may skip MaxChainSkip keys and not
// one more; the skipped keys kept are bounded, the lowest dropped first.
func TestSenderChainSkipBounds(t *testing.T) {
	c := newTestChain(t)
	a := c.Announce(wire.LogicalID{})
	r := NewReceiverChain(chainSender, a)
	signer := c.signing
	wantOpenError(t, r, chainSender, forge(t, a, MaxChainSkip+1, signer, "too far"), ErrTooManySkipped)
	openChain(t, r, forge(t, a, MaxChainSkip, signer, "far"), "far")
	if r.Skipped() != MaxChainSkip {
		t.Fatalf("keeps %d skipped keys, want %d", r.Skipped(), MaxChainSkip)
	}
	for _, pos := range []uint32{2*MaxChainSkip + 1, 3*MaxChainSkip + 2} {
		openChain(t, r, forge(t, a, pos, signer, "on"), "on")
	}
	if r.Skipped() != MaxChainSkippedKeys {
		t.Fatalf("keeps %d skipped keys, want the cap %d", r.Skipped(), MaxChainSkippedKeys)
	}
	// The lowest were dropped: position 0 fails as a duplicate, the
	// highest skipped one still opens.
	wantOpenError(t, r, chainSender, forge(t, a, 0, signer, "old"), ErrDuplicateMessage)
	openChain(t, r, forge(t, a, 3*MaxChainSkip+1, signer, "kept"), "kept")
	// Past the last position: signed, so the position is what is refused.
	last := wire.ChainMessage{Chain: a.Chain, Position: MaxChainPosition + 1, Ciphertext: make([]byte, wire.ChainTagSize)}
	copy(last.Signature[:], ed25519.Sign(signer, chainSignedBody(chainAD(chainSender, a.Group, a.Generation, last), last.Ciphertext)))
	wantOpenError(t, r, chainSender, last, ErrChainExhausted)
}

// TestSenderChainRecords: both chains survive their records, skipped keys
// included, and a broken record is refused.
func TestSenderChainRecords(t *testing.T) {
	c := newTestChain(t)
	r := NewReceiverChain(chainSender, c.Announce(wire.LogicalID{}))
	ms := []wire.ChainMessage{sealChain(t, c, "0"), sealChain(t, c, "1"), sealChain(t, c, "2")}
	openChain(t, r, ms[2], "2")

	cb, err := c.MarshalBinary()
	if err != nil || len(cb) != senderChainRecordSize {
		t.Fatalf("sender record: %d bytes, %v", len(cb), err)
	}
	c2, err := UnmarshalSenderChain(cb)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := r.MarshalBinary()
	r2, err := UnmarshalReceiverChain(rb)
	if err != nil {
		t.Fatal(err)
	}
	openChain(t, r2, ms[0], "0")
	openChain(t, r2, sealChain(t, c2, "3"), "3")
	openChain(t, r2, ms[1], "1")
	if c2.Announce(wire.LogicalID{}) != c.Announce(wire.LogicalID{}) {
		t.Error("the restored sender chain announces another chain")
	}

	for _, tt := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformedState},
		{"version 2", append([]byte{2}, rb[1:]...), ErrUnsupportedStateVersion},
		{"short", rb[:len(rb)-1], ErrMalformedState},
		{"trailing", append(bytes.Clone(rb), 0), ErrMalformedState},
		{"skipped at next", withSkipped(rb, 3), ErrMalformedState},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := UnmarshalReceiverChain(tt.b); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := UnmarshalSenderChain(cb[:len(cb)-1]); !errors.Is(err, ErrMalformedState) {
		t.Errorf("short sender record: %v", err)
	}
}

// withSkipped returns a receiver record whose last skipped key names pos.
func withSkipped(rb []byte, pos uint32) []byte {
	b := bytes.Clone(rb)
	off := len(b) - chainSkippedEntrySize
	b[off], b[off+1], b[off+2], b[off+3] = byte(pos>>24), byte(pos>>16), byte(pos>>8), byte(pos)
	return b
}

// TestSenderChainCheckAndDue: an announcement again is the same chain; one
// with another signing key is not. A chain is due after
// ChainRotateMessages seals or ChainRotateAge.
func TestSenderChainCheckAndDue(t *testing.T) {
	c := newTestChain(t)
	a := c.Announce(wire.LogicalID{1})
	r := NewReceiverChain(chainSender, a)
	if err := r.Check(chainSender, c.Announce(wire.LogicalID{2})); err != nil {
		t.Errorf("the same chain again: %v", err)
	}
	b := a
	b.SigningKey[0] ^= 1
	if err := r.Check(chainSender, b); !errors.Is(err, ErrChainMismatch) {
		t.Errorf("another signing key: %v", err)
	}
	if c.Due(chainNow.Add(ChainRotateAge - time.Second)) {
		t.Error("a new chain is due")
	}
	if !c.Due(chainNow.Add(ChainRotateAge)) {
		t.Error("a chain of ChainRotateAge is not due")
	}
	for range ChainRotateMessages {
		sealChain(t, c, "x")
	}
	if !c.Due(chainNow) {
		t.Errorf("a chain of %d messages is not due", ChainRotateMessages)
	}
}

// BenchmarkChainSealGroup50 is the sender chain's cost of one 1 KiB message
// to a group of 50: one seal, then one open at each of 49 members.
func BenchmarkChainSealGroup50(b *testing.B) {
	c := newTestChain(b)
	a := c.Announce(wire.LogicalID{})
	members := make([]*ReceiverChain, 49)
	for i := range members {
		members[i] = NewReceiverChain(chainSender, a)
	}
	body := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		m, err := c.Seal(SystemRandom{}, chainSender, body)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range members {
			if _, err := r.Open(chainSender, m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRatchetGroup50 is the pairwise cost of the same message: 49
// ratchet encryptions and decryptions, one per member.
func BenchmarkRatchetGroup50(b *testing.B) {
	type pair struct{ from, to *Session }
	pairs := make([]pair, 49)
	for i := range pairs {
		pairs[i].from, pairs[i].to = benchPair(b)
	}
	body := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pairs {
			step(b, p.from, p.to, wire.EnvelopeID{1}, body)
		}
	}
}
