package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The client's requests: each is written on the current connection and
// answered by the relay under its request ID.

func (c *Conn) nextReq() uint32 {
	for {
		if r := c.reqID.Add(1); r != 0 {
			return r
		}
	}
}

// conn returns the live connection, or why there is none.
func (c *Conn) conn() (*socket, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, fmt.Errorf("relay client: %w", engine.ErrClosed)
	case c.final != nil:
		return nil, c.final
	case c.cur != nil:
		return c.cur, nil
	case c.state.Err != nil:
		return nil, fmt.Errorf("%w: %v", ErrNotConnected, c.state.Err)
	}
	return nil, ErrNotConnected
}

// call sends one request and waits for its reply.
func (c *Conn) call(ctx context.Context, m wire.RelayMessage) (wire.RelayMessage, error) {
	cc, err := c.conn()
	if err != nil {
		return nil, err
	}
	req := c.nextReq()
	b, err := wire.EncodeRelay(req, m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.RelayKind(), err)
	}
	reply := make(chan wire.RelayMessage, 1)
	if !cc.await(req, reply) {
		return nil, cc.lost()
	}
	defer cc.forget(req)
	select {
	case cc.out <- b:
	case <-cc.done:
		return nil, cc.lost()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-reply:
		return callReply(r)
	case <-cc.done:
		// A reply the reader handed over before the connection ended
		// (a refusal the relay sends just before it closes) wins over
		// the loss.
		select {
		case r := <-reply:
			return callReply(r)
		default:
		}
		return nil, cc.lost()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// callReply turns a relay's reply into call's result.
func callReply(r wire.RelayMessage) (wire.RelayMessage, error) {
	if e, ok := r.(wire.Error); ok {
		return nil, &ServerError{Code: e.Code, Message: e.Message}
	}
	return r, nil
}

func unexpected(req wire.RelayKind, got wire.RelayMessage) error {
	return fmt.Errorf("relay answered %s with %s", req, got.RelayKind())
}

// FetchBundle implements engine.Relay. A peer without a bundle is an
// engine.ErrPeerNotRegistered (the relay's *ServerError with code
// wire.ErrorNotFound wrapped in it).
func (c *Conn) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	r, err := c.call(ctx, wire.FetchBundle{Address: peer.String()})
	var se *ServerError
	if errors.As(err, &se) && se.Code == wire.ErrorNotFound {
		return wire.Bundle{}, &notRegistered{peer: peer, err: se}
	}
	if err != nil {
		return wire.Bundle{}, err
	}
	br, ok := r.(wire.BundleReply)
	if !ok {
		return wire.Bundle{}, unexpected(wire.RelayFetchBundle, r)
	}
	return br.Bundle, nil
}

// PublishPreKeys implements engine.Relay: the bundle (its one-time prekey
// field is ignored) and the one-time prekeys, in batches of
// wire.MaxPublishOneTimePreKeys.
func (c *Conn) PublishPreKeys(ctx context.Context, bundle wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	bundle.OneTimePreKey = nil
	for first := true; first || len(oneTime) > 0; first = false {
		n := min(len(oneTime), wire.MaxPublishOneTimePreKeys)
		r, err := c.call(ctx, wire.PublishBundle{Bundle: bundle, OneTimePreKeys: oneTime[:n]})
		if err != nil {
			return fmt.Errorf("publish prekeys: %w", err)
		}
		if _, ok := r.(wire.Done); !ok {
			return unexpected(wire.RelayPublishBundle, r)
		}
		oneTime = oneTime[n:]
	}
	return nil
}

// Submit implements engine.Relay: nil once the relay accepted the envelope,
// a *RefusedError when it refused it (nothing stored), and another error
// when the outcome is unknown or the request never left.
func (c *Conn) Submit(ctx context.Context, env wire.Envelope) error {
	b, err := wire.EncodeEnvelope(env)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	r, err := c.call(ctx, wire.Submit{Envelope: b})
	if err != nil {
		return fmt.Errorf("submit envelope %x: %w", env.ID[:4], err)
	}
	return submitResult(env, r)
}

// Receive implements engine.Relay: it returns the envelopes the relay has
// delivered since the last call, oldest first, at most MaxReceive, without
// waiting (Wake says when there may be more). Each stays leased until
// released; after a reconnect or the relay's lease timeout it may be
// delivered again. After Close, or once the client gave up for good, it
// fails.
func (c *Conn) Receive(ctx context.Context) ([]engine.Leased, error) {
	c.recvMu.Lock()
	if len(c.buf) > 0 {
		n := min(len(c.buf), c.opts.MaxReceive)
		out := make([]engine.Leased, n)
		copy(out, c.buf)
		c.buf = c.buf[n:]
		if len(c.buf) == 0 {
			c.buf = nil
		} else {
			c.signal() // more to take
		}
		for _, l := range out {
			delete(c.bufRows, l.Row)
		}
		c.recvMu.Unlock()
		return out, nil
	}
	c.recvMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		c.mu.Lock()
		err := c.final
		c.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("relay client: %w", engine.ErrClosed)
		}
		return nil, fmt.Errorf("receive: %w", err)
	default:
		return nil, nil
	}
}

// deliver buffers a pushed envelope for Receive, once per row.
func (c *Conn) deliver(d wire.Deliver) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	if _, ok := c.bufRows[d.Row]; ok {
		return
	}
	if len(c.buf) >= c.opts.ReceiveBuffer {
		c.log.Warn("receive buffer full: dropping a delivery until the relay repeats it", "row", d.Row)
		return
	}
	c.bufRows[d.Row] = struct{}{}
	c.buf = append(c.buf, engine.Leased{Row: d.Row, Envelope: d.Envelope})
	c.signal()
}

// Release implements engine.Relay: the relay deletes the rows, in
// batches of wire.MaxAckRows.
func (c *Conn) Release(ctx context.Context, rows []uint64) error {
	for len(rows) > 0 {
		n := min(len(rows), wire.MaxAckRows)
		r, err := c.call(ctx, wire.AckRows{Rows: rows[:n]})
		if err != nil {
			return fmt.Errorf("release %d rows: %w", n, err)
		}
		if _, ok := r.(wire.Done); !ok {
			return unexpected(wire.RelayAckRows, r)
		}
		rows = rows[n:]
	}
	return nil
}
