package enginetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Blobs is an in-process blob store, kept in a directory so that several
// processes of one test (a sender killed mid-upload and its restart, a
// receiver killed mid-download) share it: each blob is a file of its bytes
// and a file of its size. It implements engine.BlobRelay; Hostile wraps it
// to corrupt what it serves.
type Blobs struct {
	dir string
	mu  sync.Mutex
}

var _ engine.BlobRelay = (*Blobs)(nil)

// NewBlobs returns a blob store kept in dir (created if missing).
func NewBlobs(dir string) (*Blobs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	return &Blobs{dir: dir}, nil
}

func (b *Blobs) path(id wire.BlobID, ext string) string {
	return filepath.Join(b.dir, hex.EncodeToString(id[:])+ext)
}

// size reads a blob's size: ErrBlobNotFound when it has none, ErrBlobExpired
// when Expire ended it.
func (b *Blobs) size(id wire.BlobID) (int64, error) {
	if _, err := os.Stat(b.path(id, ".expired")); err == nil {
		return 0, engine.ErrBlobExpired
	}
	s, err := os.ReadFile(b.path(id, ".size"))
	if err != nil {
		return 0, engine.ErrBlobNotFound
	}
	return strconv.ParseInt(string(s), 10, 64)
}

// CreateBlob reserves a blob of size bytes.
func (b *Blobs) CreateBlob(ctx context.Context, size int64) (wire.BlobID, error) {
	var id wire.BlobID
	if _, err := rand.Read(id[:]); err != nil {
		return id, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := os.WriteFile(b.path(id, ""), nil, 0o600); err != nil {
		return id, err
	}
	return id, os.WriteFile(b.path(id, ".size"), []byte(strconv.FormatInt(size, 10)), 0o600)
}

// BlobHeld reports how many bytes of the blob are held from its start.
func (b *Blobs) BlobHeld(ctx context.Context, id wire.BlobID) (held, size int64, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size, err = b.size(id); err != nil {
		return 0, 0, err
	}
	fi, err := os.Stat(b.path(id, ""))
	if err != nil {
		return 0, 0, engine.ErrBlobNotFound
	}
	return fi.Size(), size, nil
}

// PutBlob appends data at offset, which must be what is held.
func (b *Blobs) PutBlob(ctx context.Context, id wire.BlobID, offset int64, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	size, err := b.size(id)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(b.path(id, ""), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return engine.ErrBlobNotFound
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != offset || offset+int64(len(data)) > size {
		return fmt.Errorf("put %d bytes at %d, %d held of %d: %w", len(data), offset, fi.Size(), size, engine.ErrBlobOffset)
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// GetBlob reads at most n bytes of a complete blob from offset.
func (b *Blobs) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	size, err := b.size(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(b.path(id, ""))
	if err != nil {
		return nil, engine.ErrBlobNotFound
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != size {
		return nil, engine.ErrBlobIncomplete
	}
	if offset < 0 || offset > size || n < 0 {
		return nil, fmt.Errorf("read at %d of %d: %w", offset, size, engine.ErrBlobOffset)
	}
	buf := make([]byte, min(int64(n), size-offset))
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// Expire ends a blob's lifetime: every later call on it fails with
// ErrBlobExpired.
func (b *Blobs) Expire(id wire.BlobID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return os.WriteFile(b.path(id, ".expired"), nil, 0o600)
}

// IDs lists the blobs in the store.
func (b *Blobs) IDs() ([]wire.BlobID, error) {
	names, err := filepath.Glob(filepath.Join(b.dir, "*.size"))
	if err != nil {
		return nil, err
	}
	var ids []wire.BlobID
	for _, n := range names {
		var id wire.BlobID
		raw, err := hex.DecodeString(filepath.Base(n)[:32])
		if err != nil {
			return nil, err
		}
		copy(id[:], raw)
		ids = append(ids, id)
	}
	return ids, nil
}

// Corruption is one way a hostile relay changes what it serves.
type Corruption int

// Corruptions of a chunk in a read (from a multiple of stride, as a
// download reads a chunk or a window of chunks).
const (
	CorruptFlip     Corruption = iota + 1 // flip one bit of the chunk
	CorruptTruncate                       // serve the chunk without its last byte, and nothing after it
	CorruptSwap                           // serve the next chunk instead (the previous for the last)
	CorruptReorder                        // serve the first chunk for every later one
	CorruptDropLast                       // serve nothing from the last chunk on
	CorruptExtend                         // serve a byte more after the chunk, and nothing after that
)

// Hostile is a BlobRelay that corrupts the reads of one chunk index (At)
// the next Times times, and is honest otherwise. Stride is a chunk's
// ciphertext size (chunk size plus the 16-byte tag).
type Hostile struct {
	*Blobs
	Stride int64
	At     int64 // chunk index to corrupt (-1: the last chunk)
	Mode   Corruption
	mu     sync.Mutex
	times  int
}

var _ engine.BlobRelay = (*Hostile)(nil)

// Arm makes the next times reads of the chosen chunk corrupt.
func (h *Hostile) Arm(times int) {
	h.mu.Lock()
	h.times = times
	h.mu.Unlock()
}

// Served reports whether every armed corruption was served.
func (h *Hostile) Served() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.times == 0
}

// GetBlob serves the range, with the chosen chunk in it corrupted when
// armed: a read of that chunk alone, or of several chunks from one before
// it (a download reads a window of chunks at a time).
func (h *Hostile) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int) ([]byte, error) {
	_, size, err := h.Blobs.BlobHeld(ctx, id)
	if err != nil {
		return nil, err
	}
	chunks := (size + h.Stride - 1) / h.Stride
	at := h.At
	if at < 0 {
		at = chunks - 1
	}
	start := at * h.Stride
	h.mu.Lock()
	hit := h.times > 0 && offset <= start && start < offset+int64(n)
	if hit {
		h.times--
	}
	h.mu.Unlock()
	b, err := h.Blobs.GetBlob(ctx, id, offset, n)
	if !hit || err != nil {
		return b, err
	}
	rel := int(start - offset)
	end := min(rel+int(h.Stride), len(b)) // the chunk is b[rel:end]
	switch h.Mode {
	case CorruptFlip:
		b[(rel+end)/2] ^= 0x10
	case CorruptTruncate:
		b = b[:end-1]
	case CorruptSwap:
		other := start + h.Stride
		if at == chunks-1 {
			other = start - h.Stride
		}
		o, err := h.Blobs.GetBlob(ctx, id, other, end-rel)
		if err != nil {
			return nil, err
		}
		copy(b[rel:end], o)
	case CorruptReorder:
		o, err := h.Blobs.GetBlob(ctx, id, 0, end-rel)
		if err != nil {
			return nil, err
		}
		copy(b[rel:end], o)
	case CorruptDropLast:
		b = b[:rel]
	case CorruptExtend:
		b = append(b[:end:end], 0)
	}
	return b, nil
}
