package engine

import (
	"context"
	"errors"

	"github.com/parley-chat/parley/wire"
)

// BlobRelay is the part of Relay that is a blob store: where an encrypted
// file's chunks wait for its recipients. A blob is written once, from its
// start, in order (the relay says how much it holds, so an upload resumes
// there), and read by anyone who knows its unguessable ID, by ranges, until
// its lifetime ends.
type BlobRelay interface {
	// CreateBlob reserves a blob of size bytes and returns its ID.
	CreateBlob(ctx context.Context, size int64) (wire.BlobID, error)
	// BlobHeld reports how many bytes of the blob the relay holds from its
	// start, and the blob's size; held == size means complete.
	BlobHeld(ctx context.Context, id wire.BlobID) (held, size int64, err error)
	// PutBlob writes data at offset, which must equal what the relay holds
	// (ErrBlobOffset otherwise).
	PutBlob(ctx context.Context, id wire.BlobID, offset int64, data []byte) error
	// GetBlob reads at most n bytes of a complete blob from offset.
	GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int) ([]byte, error)
}

// Blob errors a BlobRelay returns (wrapped) for the relay's refusals.
var (
	// ErrBlobNotFound: no such blob (never created, or removed).
	ErrBlobNotFound = errors.New("blob_not_found")
	// ErrBlobExpired: the blob's lifetime ended; its message can only be
	// discarded.
	ErrBlobExpired = errors.New("blob_expired")
	// ErrBlobOffset: a write not at the end of what the relay holds.
	ErrBlobOffset = errors.New("blob_offset")
	// ErrBlobIncomplete: a read of a blob whose upload has not finished.
	ErrBlobIncomplete = errors.New("blob_incomplete")
	// ErrBlobQuota: the relay's blob quota (per IP, per address or in
	// all) has no room for it.
	ErrBlobQuota = errors.New("blob_quota")
)
