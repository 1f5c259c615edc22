package session

import (
	"encoding/binary"
	"fmt"
)

// MaxPastChains bounds the peer's past receiving chains a session remembers
// (its ratchet key and how far it went), oldest dropped first. They exist to
// recognise a relay's redelivery of messages already opened on a chain the
// session has since left: a redelivered page spans the chains the peer
// turned while its lease was outstanding, and the peer turns a chain at most
// once per reply from this device, so a page (at most a few hundred
// envelopes of a busy back-and-forth) rarely spans more than a handful.
// 64 entries of 36 bytes keep the record small and leave a wide margin; a
// copy from a chain older than that is dropped as a failure on a chain the
// session cannot place, as before.
const MaxPastChains = 64

// PastChain is one receiving chain the session left: the peer's ratchet key
// and the number of messages the chain held (every position below it was
// opened or kept as a skipped key).
type PastChain struct {
	key   [32]byte
	count uint32
}

// PastChains is what a peer's session remembers of its past receiving
// chains. It belongs to one session (its initiation ID) and is kept in its
// own sealed record, so that the session record keeps its frozen layout. It
// is never changed in place: with returns a new value, so that copies of a
// peer's state share it safely.
type PastChains struct {
	session InitiationID
	chains  []PastChain // oldest first
}

// Session is the initiation ID of the session the chains belong to.
func (p PastChains) Session() InitiationID { return p.session }

// Lookup returns how many messages the past chain of key held, for the
// session id.
func (p PastChains) Lookup(id InitiationID, key [32]byte) (uint32, bool) {
	if p.session != id {
		return 0, false
	}
	for i := len(p.chains) - 1; i >= 0; i-- {
		if p.chains[i].key == key {
			return p.chains[i].count, true
		}
	}
	return 0, false
}

// With returns p with c added for session id (a list of another session is
// dropped), bounded to MaxPastChains.
func (p PastChains) With(id InitiationID, c PastChain) PastChains {
	var old []PastChain
	if p.session == id {
		old = p.chains
	}
	if len(old) >= MaxPastChains {
		old = old[len(old)-MaxPastChains+1:]
	}
	chains := make([]PastChain, 0, len(old)+1)
	chains = append(append(chains, old...), c)
	return PastChains{session: id, chains: chains}
}

const pastChainsVersion = 1

// Marshal encodes the record: a version byte, the session's initiation ID,
// a big-endian uint16 count, then each chain's ratchet key and big-endian
// uint32 count, oldest first.
func (p PastChains) Marshal() []byte {
	b := make([]byte, 0, 1+32+2+len(p.chains)*36)
	b = append(b, pastChainsVersion)
	b = append(b, p.session[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.chains)))
	for _, c := range p.chains {
		b = append(b, c.key[:]...)
		b = binary.BigEndian.AppendUint32(b, c.count)
	}
	return b
}

// UnmarshalPastChains decodes a record Marshal wrote; anything else is
// ErrMalformedState.
func UnmarshalPastChains(b []byte) (PastChains, error) {
	var p PastChains
	if len(b) < 35 || b[0] != pastChainsVersion {
		return p, fmt.Errorf("past chains record: %w", ErrMalformedState)
	}
	copy(p.session[:], b[1:33])
	n := int(binary.BigEndian.Uint16(b[33:35]))
	rest := b[35:]
	if n > MaxPastChains || len(rest) != n*36 {
		return p, fmt.Errorf("past chains record of %d chains in %d bytes: %w", n, len(rest), ErrMalformedState)
	}
	p.chains = make([]PastChain, n)
	for i := range p.chains {
		copy(p.chains[i].key[:], rest[:32])
		p.chains[i].count = binary.BigEndian.Uint32(rest[32:36])
		rest = rest[36:]
	}
	return p, nil
}

// receivingChain returns the peer's ratchet key of the receiving chain and
// how many of its messages the session passed (opened or skipped); ok is
// false before the session received anything.
func (s *Session) receivingChain() (key [32]byte, n uint32, ok bool) {
	if !s.r.hasDHR {
		return key, 0, false
	}
	return s.r.dhr, s.r.nr, true
}

// LeftChain reports the receiving chain that opening a message with header
// h on before moved past: the peer turned its ratchet, so the chain before
// held max(what was passed, the header's previous chain length) messages.
func LeftChain(before, after *Session, previousLength uint32) (PastChain, bool) {
	oldKey, nr, ok := before.receivingChain()
	if !ok || before.ID != after.ID {
		return PastChain{}, false
	}
	newKey, _, _ := after.receivingChain()
	if newKey == oldKey {
		return PastChain{}, false
	}
	return PastChain{key: oldKey, count: max(nr, previousLength)}, true
}
