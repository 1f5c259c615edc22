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
// bytes goes in puts of wire.MaxBlobChunk bytes (the last shorter), each at
// the end of the one before, blobWindow of them in flight: the relay
// commits the puts it holds together in one durable write. It returns once
// every put was answered. A refusal is returned as it came; from the
// first put the relay's rate limits turned away the rest go one at a time,
// as blobCall sends them (a put sent after one that was turned away was
// refused for its offset, and is sent again).
func (c *Conn) PutBlob(ctx context.Context, id wire.BlobID, offset int64, data []byte) error {
	var puts []wire.RelayMessage
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), wire.MaxBlobChunk)
		puts = append(puts, wire.BlobPut{ID: id, Offset: offset, Data: data[:n]})
		offset += int64(n)
		data = data[n:]
	}
	check := func(p wire.BlobPut, r wire.RelayMessage) error {
		h, ok := r.(wire.BlobHeld)
		if !ok || h.ID != id || h.Held != p.Offset+int64(len(p.Data)) {
			return unexpected(wire.RelayBlobPut, r)
		}
		return nil
	}
	failed, refused := len(puts), error(nil)
	err := c.pipeline(ctx, puts, func(i int, r wire.RelayMessage, err error) bool {
		p := puts[i].(wire.BlobPut)
		switch f, ok := r.(wire.BlobRefused); {
		case err != nil:
		case ok:
			err = &BlobRefusedError{ID: f.ID, Reason: f.Reason}
		default:
			err = check(p, r)
		}
		if err != nil {
			failed, refused = i, fmt.Errorf("put %d bytes of blob %x at %d: %w", len(p.Data), id[:4], p.Offset, err)
			var se *ServerError
			if errors.As(err, &se) && se.Code == wire.ErrorRateLimited {
				refused = nil // sent again below
			}
		}
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("put blob %x: %w", id[:4], err)
	}
	if refused != nil {
		return refused
	}
	for _, m := range puts[failed:] {
		p := m.(wire.BlobPut)
		r, err := c.blobCall(ctx, p)
		if err != nil {
			return fmt.Errorf("put %d bytes of blob %x at %d: %w", len(p.Data), id[:4], p.Offset, err)
		}
		if err := check(p, r); err != nil {
			return err
		}
	}
	return nil
}

// blobWindow is how many blob requests one PutBlob or GetBlob keeps in
// flight: enough that the relay has the next puts in hand while it commits
// (it commits the puts that arrived together at once), and that a get's
// reply is on its way while the next is read from the store; few enough
// that a transfer has 1 MiB in flight at most (and the process's memory
// stays flat: 8 in flight grew a 1 GiB transfer's RSS past 32 MiB).
const blobWindow = 4

// pipeline sends ms in order, at most blobWindow of them unanswered, and
// calls each with every reply (or the request's own error, a relay's
// Error as a *ServerError) in order, until each returns false; then it
// stops sending and returns nil once the requests sent are answered. An
// error is returned only when the connection could not take a request or
// ctx ended.
func (c *Conn) pipeline(ctx context.Context, ms []wire.RelayMessage, each func(i int, r wire.RelayMessage, err error) bool) error {
	cc, err := c.conn()
	if err != nil {
		return err
	}
	type sent struct {
		req   uint32
		reply chan wire.RelayMessage
	}
	var inFlight []sent
	defer func() {
		for _, s := range inFlight {
			cc.forget(s.req)
		}
	}()
	next, stop := 0, false
	for i := range ms {
		for !stop && next < len(ms) && len(inFlight) < blobWindow {
			req := c.nextReq()
			b, err := wire.EncodeRelay(req, ms[next])
			if err != nil {
				return fmt.Errorf("encode %s: %w", ms[next].RelayKind(), err)
			}
			s := sent{req: req, reply: make(chan wire.RelayMessage, 1)}
			if !cc.await(req, s.reply) {
				return cc.lost()
			}
			inFlight = append(inFlight, s)
			select {
			case cc.out <- b:
			case <-cc.done:
				return cc.lost()
			case <-ctx.Done():
				return ctx.Err()
			}
			next++
		}
		if len(inFlight) == 0 {
			return nil
		}
		s := inFlight[0]
		var r wire.RelayMessage
		select {
		case r = <-s.reply:
		case <-cc.done:
			return cc.lost()
		case <-ctx.Done():
			return ctx.Err()
		}
		cc.forget(s.req)
		inFlight = inFlight[1:]
		var rerr error
		if e, ok := r.(wire.Error); ok {
			r, rerr = nil, &ServerError{Code: e.Code, Message: e.Message}
		}
		if !stop && !each(i, r, rerr) {
			stop = true
		}
		if stop && len(inFlight) == 0 {
			return nil
		}
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
	if n == 0 {
		return nil, nil
	}
	var gets []wire.RelayMessage
	for at := 0; at < n; at += wire.MaxBlobChunk {
		gets = append(gets, wire.BlobGet{ID: id, Offset: offset + int64(at), Length: uint32(min(n-at, wire.MaxBlobChunk))})
	}
	if len(gets) == 1 {
		return c.getOne(ctx, gets[0].(wire.BlobGet))
	}
	// blobWindow gets in flight; from the first that fails (the relay's
	// rate limits, most likely) one at a time, as blobCall sends them.
	out := make([]byte, 0, n)
	failed, end := len(gets), false
	var refused error
	err := c.pipeline(ctx, gets, func(i int, r wire.RelayMessage, err error) bool {
		g := gets[i].(wire.BlobGet)
		if err == nil {
			if f, ok := r.(wire.BlobRefused); ok {
				err = &BlobRefusedError{ID: f.ID, Reason: f.Reason}
			}
		}
		d, ok := r.(wire.BlobData)
		if err == nil && (!ok || d.Offset != g.Offset || len(d.Data) > int(g.Length)) {
			err = unexpected(wire.RelayBlobGet, r)
		}
		if err != nil {
			failed, refused = i, fmt.Errorf("get %d bytes of blob %x at %d: %w", g.Length, id[:4], g.Offset, err)
			var se *ServerError
			if errors.As(err, &se) && se.Code == wire.ErrorRateLimited {
				refused = nil // sent again below
			}
			return false
		}
		out = append(out, d.Data...)
		if len(d.Data) < int(g.Length) {
			end = true // the blob's end
			return false
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("get %d bytes of blob %x at %d: %w", n, id[:4], offset, err)
	}
	if refused != nil {
		return nil, refused
	}
	for _, m := range gets[min(failed, len(gets)):] {
		if end {
			break
		}
		g := m.(wire.BlobGet)
		d, err := c.getOne(ctx, g)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
		end = len(d) < int(g.Length)
	}
	return out, nil
}

// getOne makes one get of at most wire.MaxBlobChunk bytes.
func (c *Conn) getOne(ctx context.Context, g wire.BlobGet) ([]byte, error) {
	r, err := c.blobCall(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("get %d bytes of blob %x at %d: %w", g.Length, g.ID[:4], g.Offset, err)
	}
	d, ok := r.(wire.BlobData)
	if !ok || d.Offset != g.Offset || len(d.Data) > int(g.Length) {
		return nil, unexpected(wire.RelayBlobGet, r)
	}
	return d.Data, nil
}
