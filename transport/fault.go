package transport

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"sync"
)

// faults decides, for each accepted envelope in the order they are accepted,
// whether to store it once, twice or not at all. A nil *faults stores
// everything once.
type faults struct {
	mu        sync.Mutex
	rng       *mrand.Rand
	drop, dup float64
}

func newFaults(drop, dup float64, seed uint64) *faults {
	if drop <= 0 && dup <= 0 {
		return nil
	}
	if seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	return &faults{rng: mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), drop: drop, dup: dup}
}

// copies returns 0 (drop), 1 or 2 (duplicate). The drop draw comes first, and
// the duplicate draw is made only for envelopes not dropped.
func (f *faults) copies() int {
	if f == nil {
		return 1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.Float64() < f.drop {
		return 0
	}
	if f.rng.Float64() < f.dup {
		return 2
	}
	return 1
}
