package relaystore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
)

// Faults are the probabilities (0 to 1) that an envelope a relay accepts is
// dropped (the sender is told it was accepted, nothing is stored) or stored
// twice, the second copy right after the first. Seed seeds them (0 picks a
// random seed), so that a run with the same seed and the same order of
// envelopes repeats.
type Faults struct {
	Drop, Dup float64
	Seed      uint64
}

// FaultCounter is implemented by a store that injects faults (WithFaults):
// how many envelopes it dropped and duplicated so far, for the relay's
// metrics.
type FaultCounter interface {
	FaultCounts() (dropped, duplicated uint64)
}

// WithFaults returns s with faults injected into Append, in the order the
// envelopes arrive: the relay's twin of the demo's fault relay, for tests
// and demos. A dropped envelope is still checked against the recipient's
// registration, so that an unknown recipient is refused as without faults;
// a duplicate that does not fit under a quota is stored once. Every other
// method is s's, and a Notifier stays one. With both probabilities zero it
// returns s itself.
func WithFaults(s Store, f Faults) (Store, error) {
	if f.Drop < 0 || f.Drop > 1 || f.Dup < 0 || f.Dup > 1 {
		return nil, fmt.Errorf("fault probabilities must lie in 0..1 (drop %v, dup %v)", f.Drop, f.Dup)
	}
	if f.Drop == 0 && f.Dup == 0 {
		return s, nil
	}
	seed := f.Seed
	if seed == 0 {
		var b [8]byte
		rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	fs := &faultStore{Store: s, drop: f.Drop, dup: f.Dup, rng: mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	if n, ok := s.(Notifier); ok {
		return faultNotifier{fs, n}, nil
	}
	return fs, nil
}

// faultStore is a Store whose Append drops or duplicates envelopes.
type faultStore struct {
	Store
	drop, dup float64

	mu  sync.Mutex
	rng *mrand.Rand

	dropped, duplicated atomic.Uint64
}

// faultNotifier keeps the Notifier of a shared store visible through the
// decorator.
type faultNotifier struct {
	*faultStore
	Notifier
}

var (
	_ FaultCounter = (*faultStore)(nil)
	_ Notifier     = faultNotifier{}
)

// copies returns 0 (drop), 1 or 2 (duplicate). The drop draw comes first,
// and the duplicate draw is made only for envelopes not dropped.
func (f *faultStore) copies() int {
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

// Append implements Store: it stores copies of env none, one or two times
// over, as the faults draw. A dropped envelope returns no rows and no error
// when its recipient is registered.
func (f *faultStore) Append(ctx context.Context, recipient string, env []byte, copies int, from Origin) ([]uint64, error) {
	switch f.copies() {
	case 0:
		if _, err := f.Store.Registered(ctx, recipient); err != nil {
			return nil, err
		}
		f.dropped.Add(1)
		return nil, nil
	case 2:
		rows, err := f.Store.Append(ctx, recipient, env, 2*copies, from)
		if err == nil {
			f.duplicated.Add(1)
			return rows, nil
		}
		if errors.Is(err, ErrNotRegistered) {
			return nil, err
		}
		// Over a quota twice but perhaps not once: store it once.
	}
	return f.Store.Append(ctx, recipient, env, copies, from)
}

// AppendBatch implements Store: each item goes through Append, so that
// every envelope of a batch draws its faults as a single one does.
func (f *faultStore) AppendBatch(ctx context.Context, items []AppendItem) []AppendResult {
	return appendEach(ctx, f, items)
}

// FaultCounts implements FaultCounter.
func (f *faultStore) FaultCounts() (dropped, duplicated uint64) {
	return f.dropped.Load(), f.duplicated.Load()
}
