package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The client's blob requests (engine.BlobRelay), one relay round trip each.
// A refusal is a *BlobRefusedError, which matches the engine's sentinel of
// its reason with errors.Is.

var _ engine.BlobRelay = (*Conn)(nil)

// BlobRefusedError is the relay's refusal of a blob request: nothing
// changed. errors.Is matches it against the engine's sentinel of its
// reason (engine.ErrBlobExpired for wire.BlobExpired, ...).
type BlobRefusedError struct {
	ID     wire.BlobID
	Reason wire.BlobRefuseReason
}

// Error names the request's blob and the relay's reason.
func (e *BlobRefusedError) Error() string {
	if e.ID == (wire.BlobID{}) {
		return "relay refused the blob: " + e.Reason.String()
	}
	return fmt.Sprintf("relay refused blob %x: %s", e.ID[:4], e.Reason)
}

// Unwrap returns the engine's sentinel of the reason, or nil for a reason
// the engine does not name.
func (e *BlobRefusedError) Unwrap() error {
	switch e.Reason {
	case wire.BlobNotFound:
		return engine.ErrBlobNotFound
	case wire.BlobExpired:
		return engine.ErrBlobExpired
	case wire.BlobBadOffset:
		return engine.ErrBlobOffset
	case wire.BlobIncomplete:
		return engine.ErrBlobIncomplete
	case wire.BlobQuota, wire.BlobTooLarge:
		// A blob over the relay's largest fits no quota either.
		return engine.ErrBlobQuota
	}
	return nil
}

// Pauses before a blob request the relay's rate limits turned away is sent
// again: the first, then doubled each time up to the longest. A put of the
// largest chunk needs 8 ms of the default byte bucket's refill (32 MiB/s).
const (
	blobRetryPause    = 10 * time.Millisecond
	blobRetryMaxPause = time.Second
)

// blobCall makes one blob request and returns its reply, or the relay's
// refusal as a *BlobRefusedError. A request the relay turned away over its
// rate limits (it did nothing with it) is sent again after a pause, for as
// long as ctx lasts: a transfer faster than the relay's byte bucket is
// slowed down to it, not failed. When ctx ends first, the error is the
// relay's rate limiting (a *ServerError) and ctx's.
func (c *Conn) blobCall(ctx context.Context, m wire.RelayMessage) (wire.RelayMessage, error) {
	pause := blobRetryPause
	var limited error
	for {
		r, err := c.call(ctx, m)
		var se *ServerError
		if errors.As(err, &se) && se.Code == wire.ErrorRateLimited {
			limited = err
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("%w (%w)", limited, ctx.Err())
			}
			pause = min(2*pause, blobRetryMaxPause)
			continue
		}
		if err != nil && limited != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", limited, ctx.Err())
		}
		if err != nil {
			return nil, err
		}
		if f, ok := r.(wire.BlobRefused); ok {
			return nil, &BlobRefusedError{ID: f.ID, Reason: f.Reason}
		}
		return r, nil
	}
}

// CreateBlob implements engine.BlobRelay.
func (c *Conn) CreateBlob(ctx context.Context, size int64) (wire.BlobID, error) {
	r, err := c.blobCall(ctx, wire.BlobCreate{Size: size})
	if err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob of %d bytes: %w", size, err)
	}
	cr, ok := r.(wire.BlobCreated)
	if !ok {
		return wire.BlobID{}, unexpected(wire.RelayBlobCreate, r)
	}
	return cr.ID, nil
}

// BlobHeld implements engine.BlobRelay.
func (c *Conn) BlobHeld(ctx context.Context, id wire.BlobID) (held, size int64, err error) {
	r, err := c.blobCall(ctx, wire.BlobStat{ID: id})
	if err != nil {
		return 0, 0, fmt.Errorf("stat blob %x: %w", id[:4], err)
	}
	h, ok := r.(wire.BlobHeld)
	if !ok || h.ID != id {
		return 0, 0, unexpected(wire.RelayBlobStat, r)
	}
	return h.Held, h.Size, nil
}

// PutBlob implements engine.BlobRelay: data of more than wire.MaxBlobChunk
// bytes goes in several requests, each at the end of the one before.
func (c *Conn) PutBlob(ctx context.Context, id wire.BlobID, offset int64, data []byte) error {
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), wire.MaxBlobChunk)
		r, err := c.blobCall(ctx, wire.BlobPut{ID: id, Offset: offset, Data: data[:n]})
		if err != nil {
			return fmt.Errorf("put %d bytes of blob %x at %d: %w", n, id[:4], offset, err)
		}
		h, ok := r.(wire.BlobHeld)
		if !ok || h.ID != id || h.Held != offset+int64(n) {
			return unexpected(wire.RelayBlobPut, r)
		}
		offset += int64(n)
		data = data[n:]
	}
	return nil
}

// GetBlob implements engine.BlobRelay: more than wire.MaxBlobChunk bytes
// take several requests. Fewer than n bytes come back only at the blob's
// end.
func (c *Conn) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int) ([]byte, error) {
	if n < 0 || offset < 0 {
		return nil, fmt.Errorf("get blob %x: %d bytes at %d: %w", id[:4], n, offset, engine.ErrBlobOffset)
	}
	var out []byte
	for len(out) < n {
		ask := min(n-len(out), wire.MaxBlobChunk)
		r, err := c.blobCall(ctx, wire.BlobGet{ID: id, Offset: offset, Length: uint32(ask)})
		if err != nil {
			return nil, fmt.Errorf("get %d bytes of blob %x at %d: %w", ask, id[:4], offset, err)
		}
		d, ok := r.(wire.BlobData)
		if !ok || d.Offset != offset || len(d.Data) > ask {
			return nil, unexpected(wire.RelayBlobGet, r)
		}
		if out == nil && len(d.Data) == ask && ask == n {
			return d.Data, nil // one request: no copy
		}
		out = append(out, d.Data...)
		offset += int64(len(d.Data))
		if len(d.Data) < ask {
			break // the blob's end
		}
	}
	return out, nil
}
