package relayserver

import (
	"context"
	"errors"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The blob requests of an authenticated client (wire kinds 18 to 25):
// create, put, stat and get, each answered by its reply or a BlobRefused
// naming the reason. Every request has paid its message token and its
// bytes to the connection's buckets when it was read; a get pays the bytes
// it asks for on top, since its reply is what costs.

// blob serves one blob request.
func (c *conn) blob(req uint32, m wire.RelayMessage) bool {
	s := c.s
	if s.blobs == nil {
		return c.reply(errorMsg(req, wire.ErrorBadRequest, "this relay keeps no blobs"))
	}
	now := s.now()
	switch m := m.(type) {
	case wire.BlobCreate:
		s.blobMetrics.requests.WithLabelValues(blobOpCreate).Inc()
		expires := now.Add(s.lim.BlobLifetime)
		id, err := s.blobs.CreateBlob(c.ctx, m.Size, relaystore.BlobOwner{Address: c.addr, IP: c.ip}, now, expires)
		if err != nil {
			return c.blobFailed(req, wire.BlobID{}, "create blob", err)
		}
		return c.reply(encode(req, wire.BlobCreated{ID: id, Expires: expires.Unix()}))
	case wire.BlobPut:
		s.blobMetrics.requests.WithLabelValues(blobOpPut).Inc()
		c.queuePut(req, m) // answered by the put worker (blobput.go)
		return true
	case wire.BlobStat:
		s.blobMetrics.requests.WithLabelValues(blobOpStat).Inc()
		info, err := s.blobs.BlobInfo(c.ctx, m.ID, now)
		if err != nil {
			return c.blobFailed(req, m.ID, "stat blob", err)
		}
		return c.reply(encode(req, wire.BlobHeld{ID: m.ID, Held: info.Held, Size: info.Size}))
	case wire.BlobGet:
		s.blobMetrics.requests.WithLabelValues(blobOpGet).Inc()
		if !c.bytes.AllowN(time.Now(), int(m.Length)) {
			return c.limited(bucketBytes, wire.RelayBlobGet, req, nil)
		}
		data, err := s.blobs.GetBlob(c.ctx, m.ID, m.Offset, int(m.Length), now)
		if err != nil {
			return c.blobFailed(req, m.ID, "get blob", err)
		}
		s.blobMetrics.sent.Add(float64(len(data)))
		return c.reply(encode(req, wire.BlobData{Offset: m.Offset, Data: data}))
	}
	return c.reply(errorMsg(req, wire.ErrorBadRequest, "a client does not send "+m.RelayKind().String()))
}

// blobRefusals maps the store's errors to the protocol's reasons and the
// metric's labels, the most specific first.
var blobRefusals = []struct {
	err    error
	reason wire.BlobRefuseReason
	label  string
}{
	{relaystore.ErrBlobNotFound, wire.BlobNotFound, "not_found"},
	{relaystore.ErrBlobExpired, wire.BlobExpired, "expired"},
	{relaystore.ErrBlobOffset, wire.BlobBadOffset, "offset"},
	{relaystore.ErrBlobIncomplete, wire.BlobIncomplete, "incomplete"},
	{relaystore.ErrBlobNotOwner, wire.BlobNotOwner, "not_owner"},
	{relaystore.ErrBlobTooLarge, wire.BlobTooLarge, "too_large"},
	{relaystore.ErrBlobAddressQuota, wire.BlobQuota, "address_share"},
	{relaystore.ErrBlobIPQuota, wire.BlobQuota, "ip_share"},
	{relaystore.ErrBlobStoreFull, wire.BlobQuota, "store_full"},
	{relaystore.ErrBlobReserve, wire.BlobQuota, "reserve"},
	{relaystore.ErrBlobQuota, wire.BlobQuota, "quota"},
	// No reason of the protocol: an Error{bad request} (blobFailed).
	{relaystore.ErrBlobChunk, 0, "chunk_size"},
}

// blobFailed answers a blob request the store failed: a BlobRefused for a
// refusal, an internal error for anything else.
func (c *conn) blobFailed(req uint32, id wire.BlobID, what string, err error) bool {
	for _, r := range blobRefusals {
		if !errors.Is(err, r.err) {
			continue
		}
		c.s.blobMetrics.refused.WithLabelValues(r.label).Inc()
		if r.reason == 0 {
			// A client that breaks the chunk rule is not one of ours.
			return c.reply(errorMsg(req, wire.ErrorBadRequest, err.Error()))
		}
		return c.reply(encode(req, wire.BlobRefused{ID: id, Reason: r.reason}))
	}
	c.s.log.Error(what, "err", cause(err))
	return c.reply(errorMsg(req, wire.ErrorInternal, "the relay could not "+what))
}

// sweepBlobs deletes the blobs that outlived their lifetime, and forgets
// those that expired a lifetime ago (until then a reader hears that the
// blob expired, not that it never was).
func (s *Server) sweepBlobs(ctx context.Context) {
	if s.blobs == nil {
		return
	}
	for ctx.Err() == nil {
		now := s.now()
		n, err := s.blobs.ExpireBlobs(ctx, now, now.Add(-s.lim.BlobLifetime), sweepBatch)
		s.blobMetrics.expired.Add(float64(n))
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("expire blobs", "err", cause(err))
			}
			return
		}
		if n < sweepBatch {
			return
		}
	}
}
