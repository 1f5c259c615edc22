package relaystore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// BlobStore is where a relay keeps blobs: encrypted files that clients
// upload in chunks and their recipients download by ranges. It is separate
// from Store (another size of data, other quotas, a lifetime of its own);
// every method is safe for concurrent use and atomic on its own. Times come
// from the caller, so that a test can move them.
//
// A blob is written once, from its start, in order: a write lands at the end
// of what the store holds, so an interrupted upload resumes there. Its owner
// (the address that created it) alone writes it; anyone who knows its ID
// reads it once it is complete. Its quota charge is taken whole at creation,
// so that an upload that started always has room to finish. Errors never
// carry a blob's ID: the relay logs them, and an ID is the capability to
// read its blob.
type BlobStore interface {
	// CreateBlob reserves a blob of size bytes owned by from, living until
	// expires, and returns its ID: 16 random bytes. It fails with
	// ErrBlobTooLarge past BlobLimits.MaxSize, and with an ErrBlobQuota
	// (ErrBlobAddressQuota, ErrBlobIPQuota, ErrBlobStoreFull) when the
	// charge would take the address, the IP or the store past its limit.
	CreateBlob(ctx context.Context, size int64, from BlobOwner, expires time.Time) (wire.BlobID, error)

	// BlobInfo tells how much of the blob the store holds.
	BlobInfo(ctx context.Context, id wire.BlobID, now time.Time) (BlobInfo, error)

	// PutBlob writes data at offset and returns what the store then holds
	// of the blob. It fails with ErrBlobNotOwner when owner did not create the
	// blob, and with ErrBlobOffset when offset is not what the store holds
	// or the data would pass the blob's size.
	PutBlob(ctx context.Context, id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (BlobInfo, error)

	// GetBlob reads at most n bytes of a complete blob from offset: fewer
	// at its end, none at or past it. It fails with ErrBlobIncomplete
	// while the upload has not finished.
	GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error)

	// ExpireBlobs deletes the data of up to max blobs whose lifetime ended
	// at now, freeing their charge, and keeps a record of each until forget
	// passes its expiry, so that a late reader hears ErrBlobExpired rather
	// than ErrBlobNotFound. It returns how many blobs it deleted.
	ExpireBlobs(ctx context.Context, now, forget time.Time, max int) (int, error)

	// BlobStats counts what the store holds, for the relay's metrics.
	BlobStats(ctx context.Context) (BlobStats, error)
}

// BlobOwner is who creates a blob, and is charged for it: the authenticated
// address and the remote IP of its connection (empty: charged to no IP).
type BlobOwner struct {
	Address string
	IP      string
}

// BlobInfo is what the store holds of one blob. Every method of BlobStore
// that names a blob fails with ErrBlobNotFound for an unknown ID and with
// ErrBlobExpired once its expiry passed (swept or not).
type BlobInfo struct {
	Held    int64
	Size    int64
	Expires time.Time
}

// BlobStats is what a blob store holds in all.
type BlobStats struct {
	Blobs   int   // live blobs, complete or not
	Charged int64 // bytes charged against the total quota
	Held    int64 // bytes uploaded
}

// BlobLimits bound what a blob store keeps. A zero field takes its default.
type BlobLimits struct {
	// MaxSize is the largest blob (128 MiB: a 100 MiB file with its
	// encryption overhead, and room to spare).
	MaxSize int64
	// AddressBytes, IPBytes and TotalBytes bound the charges of the blobs
	// one address created, of those created from one remote IP, and of
	// all (256 MiB, 256 MiB, 1 GiB). They are separate from the envelope
	// quotas.
	AddressBytes int64
	IPBytes      int64
	TotalBytes   int64
	// MinCharge is the least a blob is charged (64 KiB), so that small
	// blobs cannot fill the store's records for free.
	MinCharge int64
}

// Default blob limits.
const (
	DefaultBlobMaxSize      = 128 << 20
	DefaultBlobAddressBytes = 256 << 20
	DefaultBlobIPBytes      = 256 << 20
	DefaultBlobTotalBytes   = 1 << 30
	DefaultBlobMinCharge    = 64 << 10
)

// WithDefaults returns l with every zero (or negative) field set to its
// default.
func (l BlobLimits) WithDefaults() BlobLimits {
	set := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.MaxSize, DefaultBlobMaxSize)
	set(&l.AddressBytes, DefaultBlobAddressBytes)
	set(&l.IPBytes, DefaultBlobIPBytes)
	set(&l.TotalBytes, DefaultBlobTotalBytes)
	set(&l.MinCharge, DefaultBlobMinCharge)
	l.MaxSize = min(l.MaxSize, wire.MaxBlobSize)
	return l
}

// Charge is what a blob of size bytes is charged.
func (l BlobLimits) Charge(size int64) int64 { return max(size, l.MinCharge) }

// QuotaError names the limit a blob of size bytes would pass, given what
// the owner's address, its IP (when known) and the store are charged; nil
// when it passes none.
func (l BlobLimits) QuotaError(address, ip, total int64, from BlobOwner, size int64) error {
	c := l.Charge(size)
	switch {
	case size < 1 || size > l.MaxSize:
		return fmt.Errorf("%w: %d bytes, the largest is %d", ErrBlobTooLarge, size, l.MaxSize)
	case address+c > l.AddressBytes:
		return ErrBlobAddressQuota
	case from.IP != "" && ip+c > l.IPBytes:
		return ErrBlobIPQuota
	case total+c > l.TotalBytes:
		return ErrBlobStoreFull
	}
	return nil
}

// Blob errors, which the relay turns into BlobRefused reasons.
var (
	// ErrBlobNotFound means no blob has the ID.
	ErrBlobNotFound = errors.New("blob not found")
	// ErrBlobExpired means the blob's lifetime ended.
	ErrBlobExpired = errors.New("blob expired")
	// ErrBlobOffset means a write not at the end of what the store holds,
	// or past the blob's size.
	ErrBlobOffset = errors.New("write not at the blob's end")
	// ErrBlobIncomplete means a read of a blob not completely uploaded.
	ErrBlobIncomplete = errors.New("blob not completely uploaded")
	// ErrBlobNotOwner means a write by another address than the creator.
	ErrBlobNotOwner = errors.New("blob created by another address")
	// ErrBlobTooLarge means a size over BlobLimits.MaxSize.
	ErrBlobTooLarge = errors.New("blob too large")
	// ErrBlobQuota means a quota has no room for the blob.
	ErrBlobQuota = errors.New("blob quota reached")
	// ErrBlobAddressQuota means the owner's address holds its share; it is
	// an ErrBlobQuota.
	ErrBlobAddressQuota = fmt.Errorf("%w: the address holds its share", ErrBlobQuota)
	// ErrBlobIPQuota means the owner's IP holds its share; it is an
	// ErrBlobQuota.
	ErrBlobIPQuota = fmt.Errorf("%w: the IP holds its share", ErrBlobQuota)
	// ErrBlobStoreFull means the store holds all it may; it is an
	// ErrBlobQuota.
	ErrBlobStoreFull = fmt.Errorf("%w: the relay's blob storage is full", ErrBlobQuota)
)

// NewBlobID returns a new blob ID: 16 random bytes.
func NewBlobID() wire.BlobID {
	var id wire.BlobID
	rand.Read(id[:]) // never fails (crypto/rand)
	return id
}

// CheckBlob is the check every blob method of a backend starts with: a
// blob that expired at now (swept or not, gone) is ErrBlobExpired.
func CheckBlob(expires time.Time, gone bool, now time.Time) error {
	if gone || !now.Before(expires) {
		return ErrBlobExpired
	}
	return nil
}

// CheckPut checks a write by owner at offset of n bytes against what the
// store holds of a blob of size that creator made.
func CheckPut(owner, creator string, offset, held, size int64, n int) error {
	switch {
	case owner != creator:
		return ErrBlobNotOwner
	case offset != held || n < 1 || offset+int64(n) > size:
		return fmt.Errorf("%w: %d bytes at %d, the relay holds %d of %d", ErrBlobOffset, n, offset, held, size)
	}
	return nil
}

// CheckGet checks a read of n bytes at offset against what the store holds
// of a blob of size, and returns how many bytes it reads.
func CheckGet(offset int64, n int, held, size int64) (int, error) {
	switch {
	case held < size:
		return 0, ErrBlobIncomplete
	case offset < 0 || n < 0:
		return 0, fmt.Errorf("%w: read of %d bytes at %d", ErrBlobOffset, n, offset)
	case offset >= size:
		return 0, nil
	}
	return int(min(int64(n), size-offset)), nil
}
