package relayserver

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// The connection's reader: every message a client sends, checked against
// the token buckets and dispatched to its request.

// readLoop reads and handles messages until the connection ends, and
// returns why it ended.
func (c *conn) readLoop() dropReason {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, websocket.ErrReadLimit):
				return dropReadLimit // gorilla has sent the 1009 close
			case errors.Is(err, errOverBudget):
				c.overBudget(0)
				return dropOverBudget
			case errors.As(err, &ne) && ne.Timeout():
				return dropTimeout
			}
			return dropPeer
		}
		c.ws.SetReadDeadline(time.Now().Add(c.s.lim.ReadTimeout))
		if typ != websocket.BinaryMessage {
			c.finish(dropProtocol, errorMsg(0, wire.ErrorBadRequest, "binary messages only"), websocket.CloseUnsupportedData, "binary messages only")
			return dropProtocol
		}
		if !c.handle(data) {
			return dropProtocol
		}
	}
}

// handle serves one message; false ends the connection.
func (c *conn) handle(data []byte) bool {
	kind, req := peek(data)
	if !c.msgs.Allow() {
		return c.limited(bucketMessages, kind, req, data)
	}
	if !c.bytes.AllowN(time.Now(), len(data)) {
		return c.limited(bucketBytes, kind, req, data)
	}
	req, m, err := wire.DecodeRelay(data)
	if err != nil {
		_, req = peek(data)
		return c.reply(errorMsg(req, wire.ErrorBadRequest, "malformed message: "+err.Error()))
	}
	if c.joining {
		switch m.(type) {
		case wire.PublishDeviceList, wire.FetchDeviceList:
		default:
			return c.reply(errorMsg(req, wire.ErrorAuthFailed, c.addr+" is not in its account's device list yet: it may only publish the list that adds it"))
		}
	}
	// A request that makes the store work once per item pays per item
	// beyond the one token it paid to be read (a SubmitBatch item by item:
	// submitBatch).
	if extra := cost(m) - 1; extra > 0 && !c.msgs.AllowN(time.Now(), extra) {
		return c.limited(bucketMessages, kind, req, data)
	}
	// Every put and every envelope before this request is answered first,
	// but for a put after puts and an envelope after envelopes, which
	// their workers take in order (blobput.go, submit.go).
	switch m.(type) {
	case wire.BlobPut:
		c.waitSubmits()
	case wire.Submit, wire.SubmitBatch, wire.SubmitMulti:
		c.waitPuts()
	default:
		c.waitPuts()
		c.waitSubmits()
	}
	switch m := m.(type) {
	case wire.Submit:
		c.queueSubmit(queuedSubmit{req: req, envs: [][]byte{m.Envelope}})
		return true
	case wire.SubmitBatch:
		if c.s.cfg.withoutSubmitBatch {
			break
		}
		return c.submitBatch(req, m)
	case wire.SubmitMulti:
		if c.s.cfg.NoSubmitMulti {
			break
		}
		return c.submitMulti(req, m)
	case wire.AckRows:
		return c.ack(req, m)
	case wire.FetchBundle:
		return c.fetch(req, m)
	case wire.PublishBundle:
		return c.publish(req, m)
	case wire.BlobCreate, wire.BlobPut, wire.BlobStat, wire.BlobGet:
		return c.blob(req, m)
	case wire.SenderBlock:
		return c.block(req, m)
	case wire.PublishDeviceList:
		if c.s.cfg.DeviceLists {
			return c.publishDeviceList(req, m)
		}
	case wire.FetchDeviceList:
		if c.s.cfg.DeviceLists {
			return c.fetchDeviceList(req, m)
		}
	case wire.CheckDeviceList:
		if c.s.cfg.DeviceLists {
			return c.checkDeviceList(req, m)
		}
	case wire.Auth:
		c.finish(dropProtocol, errorMsg(req, wire.ErrorAuthFailed, "already authenticated: a challenge is answered once"), websocket.ClosePolicyViolation, "already authenticated")
		return false
	}
	return c.reply(errorMsg(req, wire.ErrorBadRequest, fmt.Sprintf("a client does not send %s", m.RelayKind())))
}

// cost is what a request costs in message tokens: one, and for a request
// the store serves item by item (each row of an AckRows is a lookup and a
// delete, each one-time prekey of a PublishBundle a write), one per item.
func cost(m wire.RelayMessage) int {
	switch m := m.(type) {
	case wire.AckRows:
		return max(1, len(m.Rows))
	case wire.PublishBundle:
		return 1 + len(m.OneTimePreKeys)
	}
	return 1
}

// limited answers a message over a token bucket without acting on it, or
// ends the connection once its refusal allowance is spent.
func (c *conn) limited(bucket string, kind wire.RelayKind, req uint32, data []byte) bool {
	c.s.metrics.rateLimitedIn(bucket)
	if c.refusedFrame(time.Now()) != nil {
		c.overBudget(req)
		return false
	}
	if kind == wire.RelaySubmit {
		c.s.metrics.refused.WithLabelValues(refuseLabel(wire.RefuseRateLimited)).Inc()
		return c.reply(encode(req, wire.Refused{EnvelopeID: peekEnvelopeID(data), Reason: wire.RefuseRateLimited}))
	}
	return c.reply(errorMsg(req, wire.ErrorRateLimited, "rate limited: slow down"))
}

// limitedBy answers a request that a rate limit of the requester's own
// (its address's or its IP's) refused with Error{rate limited}: a refused
// frame like one over the buckets, which ends the connection once its
// refusal allowance is spent.
func (c *conn) limitedBy(req uint32, msg string) bool {
	if c.refusedFrame(time.Now()) != nil {
		c.overBudget(req)
		return false
	}
	return c.reply(errorMsg(req, wire.ErrorRateLimited, msg))
}

// overBudget ends a connection that kept sending over its buckets: an
// Error{rate limited}, then a close frame (1008). The reader stops at once;
// nothing more it sent is read.
func (c *conn) overBudget(req uint32) {
	c.finish(dropOverBudget, errorMsg(req, wire.ErrorRateLimited, "over budget: too many messages refused, closing"),
		websocket.ClosePolicyViolation, "over budget")
}

// push queues a message the relay sends on its own (not a reply): when the
// queue is full it is dropped, since the client learns the same again later.
func (c *conn) push(b []byte) { c.enqueue(b) }

// reply queues a message for the writer. A full queue means the client does
// not read what it asked for: it is disconnected rather than buffered for.
func (c *conn) reply(b []byte) bool {
	if c.enqueue(b) {
		return true
	}
	c.s.log.Info("send queue full: disconnecting a client")
	c.abort(dropSlow)
	return false
}
