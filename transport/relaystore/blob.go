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
// reads it once it is complete. Its first write sets its chunk size, which
// every later write but the last repeats (BlobLimits.CheckPut). A blob is
// charged what it holds, and at least BlobLimits.MinCharge from its
// creation: a reservation costs the quotas little until bytes arrive, and
// a write past them is refused. Errors never carry a blob's ID: the relay
// logs them, and an ID is the capability to read its blob.
type BlobStore interface {
	// CreateBlob reserves a blob of size bytes owned by from, created at
	// now and living until expires, and returns its ID: 16 random bytes.
	// It charges BlobLimits.MinCharge. It fails with ErrBlobTooLarge past
	// BlobLimits.MaxSize, and with an ErrBlobQuota (ErrBlobAddressQuota,
	// ErrBlobIPQuota, ErrBlobStoreFull, ErrBlobReserve) when the charge
	// would take the address, the IP, the store or the reserve past its
	// limit.
	CreateBlob(ctx context.Context, size int64, from BlobOwner, now, expires time.Time) (wire.BlobID, error)

	// BlobInfo tells how much of the blob the store holds.
	BlobInfo(ctx context.Context, id wire.BlobID, now time.Time) (BlobInfo, error)

	// PutBlob writes data at offset and returns what the store then holds
	// of the blob, charging what the blob holds beyond its charge. It
	// fails with ErrBlobNotOwner when owner did not create the blob, with
	// ErrBlobOffset when offset is not what the store holds or the data
	// would pass the blob's size, with ErrBlobChunk when the data breaks
	// the chunk rule, and with an ErrBlobQuota as CreateBlob.
	PutBlob(ctx context.Context, id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (BlobInfo, error)

	// PutBlobs writes chunks one after another from offset, as PutBlob
	// would each in turn, in one durable write: the group commit of the
	// puts of one upload that reached the relay together. It returns what
	// the store holds after each chunk written; at the first chunk refused
	// it stops, and returns the chunks written before it (durably) with
	// PutBlob's error for that one.
	PutBlobs(ctx context.Context, id wire.BlobID, owner string, offset int64, chunks [][]byte, now time.Time) ([]BlobInfo, error)

	// GetBlob reads at most n bytes of a complete blob from offset: fewer
	// at its end, none at or past it. It fails with ErrBlobIncomplete
	// while the upload has not finished. Whatever the upload's pattern,
	// it is one read of the backend (a bounded few requests on NATS).
	GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error)

	// ExpireBlobs deletes the data of up to max blobs whose lifetime ended
	// at now, or that are incomplete and had no write for
	// BlobLimits.IdleLifetime, freeing their charge, and keeps a record of
	// each until forget passes its expiry, so that a late reader hears
	// ErrBlobExpired rather than ErrBlobNotFound. It returns how many
	// blobs it deleted.
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
	// ReserveBytes is the part of TotalBytes kept for owners that are not
	// filling the store (a quarter): a charge that takes the store into it
	// is refused (ErrBlobReserve) when the owner's IP, or its address,
	// would then hold more than a sixteenth of it. A few IPs within their
	// shares cannot take the whole store; each fresh IP takes at most a
	// sixteenth of the reserve. Negative: none.
	ReserveBytes int64
	// MinCharge is the least a blob is charged (64 KiB), from its creation:
	// what a reservation costs until bytes arrive, and what pays for its
	// record.
	MinCharge int64
	// IdleLifetime is how long an incomplete blob lives without a write (an
	// hour): an upload abandoned half way frees its charge long before the
	// blob's lifetime.
	IdleLifetime time.Duration
	// MinChunk is the least a write holds unless it completes its blob
	// (wire.MinBlobChunk, which clients follow; tests lower it).
	MinChunk int64
}

// Default blob limits.
const (
	DefaultBlobMaxSize      = 128 << 20
	DefaultBlobAddressBytes = 256 << 20
	DefaultBlobIPBytes      = 256 << 20
	DefaultBlobTotalBytes   = 1 << 30
	DefaultBlobMinCharge    = 64 << 10
	DefaultBlobIdleLifetime = time.Hour
)

// WithDefaults returns l with every zero (or negative) field set to its
// default; the reserve defaults to a quarter of the total, and a negative
// one is none.
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
	set(&l.MinChunk, wire.MinBlobChunk)
	switch {
	case l.ReserveBytes == 0:
		l.ReserveBytes = l.TotalBytes / 4
	case l.ReserveBytes < 0:
		l.ReserveBytes = 0
	}
	l.ReserveBytes = min(l.ReserveBytes, l.TotalBytes)
	if l.IdleLifetime <= 0 {
		l.IdleLifetime = DefaultBlobIdleLifetime
	}
	l.MaxSize = min(l.MaxSize, wire.MaxBlobSize)
	l.MinChunk = min(l.MinChunk, wire.MaxBlobChunk)
	return l
}

// Charge is what a blob charged charge so far is charged once it holds
// held bytes: what it holds, never less than before (a blob created before
// charges followed uploads was charged its whole size).
func (l BlobLimits) Charge(charge, held int64) int64 { return max(charge, held, l.MinCharge) }

// CheckSize checks a new blob's size.
func (l BlobLimits) CheckSize(size int64) error {
	if size < 1 || size > l.MaxSize {
		return fmt.Errorf("%w: %d bytes, the largest is %d", ErrBlobTooLarge, size, l.MaxSize)
	}
	return nil
}

// QuotaError names the limit that a further charge of delta bytes would
// pass, given what the owner's address, its IP (when known) and the store
// are charged; nil when it passes none.
func (l BlobLimits) QuotaError(address, ip, total int64, from BlobOwner, delta int64) error {
	if delta <= 0 {
		return nil
	}
	switch {
	case address+delta > l.AddressBytes:
		return ErrBlobAddressQuota
	case from.IP != "" && ip+delta > l.IPBytes:
		return ErrBlobIPQuota
	case total+delta > l.TotalBytes:
		return ErrBlobStoreFull
	case l.reaching(total, delta) && l.inReserve(address, ip, from, delta):
		return ErrBlobReserve
	}
	return nil
}

// inReserve reports whether the owner would hold more than its share of the
// reserve after a charge of delta: its IP's sixteenth, or its address's
// when the IP is unknown.
func (l BlobLimits) inReserve(address, ip int64, from BlobOwner, delta int64) bool {
	share := l.ReserveBytes / 16
	if from.IP != "" {
		return ip+delta > share
	}
	return address+delta > share
}

// reaching reports whether a charge of delta, the store being charged
// total, reaches into the reserve (and not past the total, which is
// ErrBlobStoreFull whatever the owner holds).
func (l BlobLimits) reaching(total, delta int64) bool {
	return l.ReserveBytes > 0 && total+delta > l.TotalBytes-l.ReserveBytes && total+delta <= l.TotalBytes
}

// IPLimitAt is what the owner's IP may be charged in all when the store is
// charged total and a charge of delta is asked for: its share, or its
// share of the reserve when the charge reaches into it. NATS checks each
// count on its own key; this is the IP's bound there. The address's is
// AddressLimitAt.
func (l BlobLimits) IPLimitAt(total, delta int64) int64 {
	if l.reaching(total, delta) {
		return min(l.IPBytes, l.ReserveBytes/16)
	}
	return l.IPBytes
}

// AddressLimitAt is IPLimitAt for the owner's address, which the reserve
// bounds only when the IP is unknown.
func (l BlobLimits) AddressLimitAt(total, delta int64, from BlobOwner) int64 {
	if from.IP == "" && l.reaching(total, delta) {
		return min(l.AddressBytes, l.ReserveBytes/16)
	}
	return l.AddressBytes
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
	// ErrBlobReserve means the store is into its reserve and the owner
	// holds its share of it; it is an ErrBlobQuota.
	ErrBlobReserve = fmt.Errorf("%w: the rest is kept for those not filling the store", ErrBlobQuota)
	// ErrBlobChunk means a write of another size than the blob's chunks
	// (BlobLimits.CheckPut).
	ErrBlobChunk = errors.New("write breaks the blob's chunk size")
)

// NewBlobID returns a new blob ID: 16 random bytes.
func NewBlobID() wire.BlobID {
	var id wire.BlobID
	rand.Read(id[:]) // never fails (crypto/rand)
	return id
}

// CheckBlob is the check every blob method of a backend starts with: a
// blob that expired at now (swept or not, gone), or that is incomplete and
// had no write since progress for IdleLifetime, is ErrBlobExpired.
func (l BlobLimits) CheckBlob(expires, progress time.Time, held, size int64, gone bool, now time.Time) error {
	if gone || !now.Before(expires) || held < size && !now.Before(progress.Add(l.IdleLifetime)) {
		return ErrBlobExpired
	}
	return nil
}

// CheckPut checks a write by owner at offset of n bytes against what the
// store holds of a blob of size that creator made, whose chunks are chunk
// bytes (0: none written yet). The chunk rule: a write that does not
// complete the blob holds at least MinChunk bytes, and exactly chunk once
// the blob has one; the last write holds at most chunk. It returns the
// blob's chunk size after the write.
func (l BlobLimits) CheckPut(owner, creator string, offset, held, size, chunk int64, n int) (int64, error) {
	switch {
	case owner != creator:
		return 0, ErrBlobNotOwner
	case offset != held || n < 1 || offset+int64(n) > size:
		return 0, fmt.Errorf("%w: %d bytes at %d, the relay holds %d of %d", ErrBlobOffset, n, offset, held, size)
	}
	last := offset+int64(n) == size
	switch {
	case chunk == 0 && (last || int64(n) >= l.MinChunk):
		return int64(n), nil
	case chunk == 0:
		return 0, fmt.Errorf("%w: a first write of %d bytes, want at least %d", ErrBlobChunk, n, l.MinChunk)
	case int64(n) == chunk || last && int64(n) < chunk:
		return chunk, nil
	}
	return 0, fmt.Errorf("%w: %d bytes, the blob's chunks are %d", ErrBlobChunk, n, chunk)
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
