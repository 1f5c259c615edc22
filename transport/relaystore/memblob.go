package relaystore

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/wire"
)

// MemoryBlobs is a BlobStore in memory: the demo's, the benchmark's and
// most tests'. Chunks are kept as written, each a slice of its own; since
// all of a blob's chunks but the last have one size, the chunk holding an
// offset is found by a division.
type MemoryBlobs struct {
	limits BlobLimits

	mu      sync.Mutex
	blobs   map[wire.BlobID]*memBlob
	byAddr  map[string]int64 // charged per owner address
	byIP    map[string]int64 // charged per owner IP
	charged int64
	held    int64
}

type memBlob struct {
	owner    BlobOwner
	size     int64
	charge   int64
	expires  time.Time
	progress time.Time // creation or last write
	gone     bool      // expired and swept: a record alone
	chunk    int64     // the size of every chunk but the last; 0 before the first
	chunks   [][]byte
	held     int64
}

var _ BlobStore = (*MemoryBlobs)(nil)

// NewMemoryBlobs returns an empty blob store with the limits l.
func NewMemoryBlobs(l BlobLimits) *MemoryBlobs {
	return &MemoryBlobs{limits: l.WithDefaults(), blobs: make(map[wire.BlobID]*memBlob),
		byAddr: make(map[string]int64), byIP: make(map[string]int64)}
}

// CreateBlob implements BlobStore.
func (m *MemoryBlobs) CreateBlob(_ context.Context, size int64, from BlobOwner, now, expires time.Time) (wire.BlobID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.limits.CheckSize(size); err != nil {
		return wire.BlobID{}, err
	}
	b := &memBlob{owner: from, size: size, charge: m.limits.Charge(0, 0), expires: expires, progress: now}
	if err := m.charge(b, b.charge); err != nil {
		return wire.BlobID{}, err
	}
	id := NewBlobID()
	for m.blobs[id] != nil {
		id = NewBlobID()
	}
	m.blobs[id] = b
	return id, nil
}

// charge charges b's owner delta more bytes, or names the limit that
// refuses them.
func (m *MemoryBlobs) charge(b *memBlob, delta int64) error {
	if err := m.limits.QuotaError(m.byAddr[b.owner.Address], m.byIP[b.owner.IP], m.charged, b.owner, delta); err != nil {
		return err
	}
	m.byAddr[b.owner.Address] += delta
	if b.owner.IP != "" {
		m.byIP[b.owner.IP] += delta
	}
	m.charged += delta
	return nil
}

// find returns the live blob id, or why there is none.
func (m *MemoryBlobs) find(id wire.BlobID, now time.Time) (*memBlob, error) {
	b := m.blobs[id]
	if b == nil {
		return nil, ErrBlobNotFound
	}
	return b, m.limits.CheckBlob(b.expires, b.progress, b.held, b.size, b.gone, now)
}

// BlobInfo implements BlobStore.
func (m *MemoryBlobs) BlobInfo(_ context.Context, id wire.BlobID, now time.Time) (BlobInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.find(id, now)
	if err != nil {
		return BlobInfo{}, err
	}
	return BlobInfo{Held: b.held, Size: b.size, Expires: b.expires}, nil
}

// PutBlob implements BlobStore.
func (m *MemoryBlobs) PutBlob(_ context.Context, id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (BlobInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.put(id, owner, offset, data, now)
}

// PutBlobs implements BlobStore.
func (m *MemoryBlobs) PutBlobs(_ context.Context, id wire.BlobID, owner string, offset int64, chunks [][]byte, now time.Time) ([]BlobInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []BlobInfo
	for _, c := range chunks {
		info, err := m.put(id, owner, offset, c, now)
		if err != nil {
			return out, err
		}
		out = append(out, info)
		offset += int64(len(c))
	}
	return out, nil
}

// put is PutBlob under m.mu.
func (m *MemoryBlobs) put(id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (BlobInfo, error) {
	b, err := m.find(id, now)
	if err != nil {
		return BlobInfo{}, err
	}
	chunk, err := m.limits.CheckPut(owner, b.owner.Address, offset, b.held, b.size, b.chunk, len(data))
	if err != nil {
		return BlobInfo{}, err
	}
	held := b.held + int64(len(data))
	charge := m.limits.Charge(b.charge, held)
	if err := m.charge(b, charge-b.charge); err != nil {
		return BlobInfo{}, err
	}
	b.charge, b.chunk, b.progress = charge, chunk, now
	b.chunks = append(b.chunks, append([]byte(nil), data...))
	b.held = held
	m.held += int64(len(data))
	return BlobInfo{Held: b.held, Size: b.size, Expires: b.expires}, nil
}

// GetBlob implements BlobStore.
func (m *MemoryBlobs) GetBlob(_ context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.find(id, now)
	if err != nil {
		return nil, err
	}
	n, err = CheckGet(offset, n, b.held, b.size)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]byte, 0, n)
	for i := offset / b.chunk; len(out) < n; i++ {
		c := b.chunks[i][offset-i*b.chunk:]
		c = c[:min(len(c), n-len(out))]
		out = append(out, c...)
		offset += int64(len(c))
	}
	return out, nil
}

// ExpireBlobs implements BlobStore.
func (m *MemoryBlobs) ExpireBlobs(_ context.Context, now, forget time.Time, max int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, b := range m.blobs {
		if !b.gone && n < max && m.limits.CheckBlob(b.expires, b.progress, b.held, b.size, false, now) != nil {
			m.release(b)
			n++
		}
		if b.gone && b.expires.Before(forget) {
			delete(m.blobs, id)
		}
	}
	return n, nil
}

// release deletes b's data and frees its charge, keeping its record.
func (m *MemoryBlobs) release(b *memBlob) {
	b.gone = true
	m.held -= b.held
	b.chunks, b.held = nil, 0
	m.charged -= b.charge
	unchargeMap(m.byAddr, b.owner.Address, b.charge)
	if b.owner.IP != "" {
		unchargeMap(m.byIP, b.owner.IP, b.charge)
	}
}

func unchargeMap(m map[string]int64, k string, v int64) {
	if m[k] <= v {
		delete(m, k)
		return
	}
	m[k] -= v
}

// BlobStats implements BlobStore.
func (m *MemoryBlobs) BlobStats(context.Context) (BlobStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := 0
	for _, b := range m.blobs {
		if !b.gone {
			live++
		}
	}
	return BlobStats{Blobs: live, Charged: m.charged, Held: m.held}, nil
}
