package session

import (
	"errors"
	"reflect"
	"testing"
)

// TestPastChainsBoundAndRecord: the list keeps the newest MaxPastChains
// chains of one session, starts again for another session, and its record
// decodes to what was encoded; a malformed record is refused.
func TestPastChainsBoundAndRecord(t *testing.T) {
	s1, s2 := InitiationID{1}, InitiationID{2}
	var p PastChains
	for i := 0; i < MaxPastChains+3; i++ {
		p = p.With(s1, PastChain{key: [32]byte{byte(i), 0xaa}, count: uint32(i + 1)})
	}
	if len(p.chains) != MaxPastChains {
		t.Fatalf("kept %d chains, want %d", len(p.chains), MaxPastChains)
	}
	if _, ok := p.Lookup(s1, [32]byte{2, 0xaa}); ok {
		t.Fatal("the oldest chains were kept past the bound")
	}
	if n, ok := p.Lookup(s1, [32]byte{byte(MaxPastChains + 2), 0xaa}); !ok || n != MaxPastChains+3 {
		t.Fatalf("newest chain: %d %v, want %d", n, ok, MaxPastChains+3)
	}
	if _, ok := p.Lookup(s2, [32]byte{byte(MaxPastChains + 2), 0xaa}); ok {
		t.Fatal("a chain of another session was found")
	}
	got, err := UnmarshalPastChains(p.Marshal())
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("record round trip: %+v, %v", got, err)
	}
	q := p.With(s2, PastChain{key: [32]byte{9}, count: 4})
	if q.session != s2 || len(q.chains) != 1 || len(p.chains) != MaxPastChains {
		t.Fatalf("another session's list: %+v (the old one now %d long)", q, len(p.chains))
	}
	for _, bad := range [][]byte{nil, {2}, append(p.Marshal(), 0), p.Marshal()[:40]} {
		if _, err := UnmarshalPastChains(bad); !errors.Is(err, ErrMalformedState) {
			t.Fatalf("record %x: %v, want ErrMalformedState", bad, err)
		}
	}
}
