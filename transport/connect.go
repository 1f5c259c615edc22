package transport

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// The client's life with the relay: connecting, authenticating, and
// connecting again with backoff until Close or an error that waiting will
// not cure.

// supervise connects, waits for the connection to end, and connects again
// with backoff, until Close or a final error. With first set, the first
// attempt runs under ctx too and its outcome goes to first; a failure then
// ends the supervisor.
func (c *Conn) supervise(ctx context.Context, first chan<- error) {
	defer c.wg.Done()
	defer close(c.done)
	attempt := 0
	var last error
	for {
		c.setState(State{Conn: StateConnecting, Err: last, Attempt: attempt})
		actx, cancel := context.WithCancel(c.ctx)
		if first != nil {
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
		}
		cc, err := c.connect(actx)
		cancel()
		if err == nil {
			attempt, last = 0, nil
			c.mu.Lock()
			c.cur = cc
			c.mu.Unlock()
			c.setState(State{Conn: StateConnected})
		}
		if first != nil {
			first <- err // Dial returns: the connection is usable already
			first = nil
			if err != nil {
				return
			}
		}
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			last = err
			attempt++
			final := isFinal(err)
			c.log.Info("relay connection failed", "attempt", attempt, "err", err, "final", final)
			if final {
				c.mu.Lock()
				c.final = err
				c.mu.Unlock()
				c.setState(State{Conn: StateDisconnected, Err: err, Final: true, Attempt: attempt})
				return
			}
			c.setState(State{Conn: StateDisconnected, Err: err, Attempt: attempt})
			if !c.sleep(c.backoff(attempt)) {
				return
			}
			continue
		}
		select {
		case <-cc.done:
		case <-c.ctx.Done():
		}
		c.mu.Lock()
		c.cur = nil
		c.mu.Unlock()
		cc.close()
		if c.ctx.Err() != nil {
			return
		}
		last = cc.cause()
		c.log.Info("relay connection lost", "err", last)
		if isFinal(last) {
			// The relay closed the connection because another key took the
			// address over: coming back would take it back.
			c.mu.Lock()
			c.final = last
			c.mu.Unlock()
			c.setState(State{Conn: StateDisconnected, Err: last, Final: true})
			return
		}
		c.setState(State{Conn: StateDisconnected, Err: last})
		if !c.sleep(c.backoff(1)) {
			return
		}
	}
}

// isFinal reports the errors that waiting will not cure.
func isFinal(err error) bool {
	var se *ServerError
	if errors.As(err, &se) {
		return se.Code == wire.ErrorAddressTaken || se.Code == wire.ErrorAuthFailed || se.Code == wire.ErrorBadRequest
	}
	return errors.Is(err, ErrRelayChanged)
}

// backoff returns the delay before attempt n (1, 2, ...): MinBackoff doubled
// n-1 times, at most MaxBackoff, with its upper half drawn at random so that
// clients cut off together do not come back together.
func (c *Conn) backoff(n int) time.Duration {
	d := c.opts.MinBackoff
	for i := 1; i < n && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opts.MaxBackoff)
	return d/2 + mrand.N(d/2+1)
}

func (c *Conn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// connect dials, answers the challenge and starts the connection's reader
// and writer.
func (c *Conn) connect(ctx context.Context) (*socket, error) {
	ws, resp, err := c.opts.Dialer.DialContext(ctx, c.url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, unreachable{fmt.Errorf("dial relay %s: %s: %w", c.url, resp.Status, err)}
		}
		return nil, unreachable{fmt.Errorf("dial relay %s: %w", c.url, err)}
	}
	cc, err := c.handshake(ctx, ws)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return cc, nil
}

func (c *Conn) handshake(ctx context.Context, ws *websocket.Conn) (*socket, error) {
	ws.SetReadLimit(wire.MaxRelayMessageSize)
	deadline := time.Now().Add(c.opts.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ws.SetReadDeadline(deadline)
	ws.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { ws.NetConn().Close() })
	defer stop()
	read := func() (wire.RelayMessage, error) {
		_, data, err := ws.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("authenticate to relay: %w", ctx.Err())
			}
			return nil, fmt.Errorf("authenticate to relay: %w", err)
		}
		_, m, err := wire.DecodeRelay(data)
		if err != nil {
			return nil, fmt.Errorf("authenticate to relay: %w", err)
		}
		return m, nil
	}
	m, err := read()
	if err != nil {
		return nil, err
	}
	ch, ok := m.(wire.Challenge)
	if !ok {
		return nil, fmt.Errorf("authenticate to relay: expected a challenge, got %s", m.RelayKind())
	}
	c.mu.Lock()
	pinned := c.pinned
	c.mu.Unlock()
	if pinned != ([32]byte{}) && ch.RelayID != pinned {
		return nil, fmt.Errorf("relay %s presents ID %x, not the pinned %x (a relay replaced on purpose is accepted with: parley relay-settings --accept-new-id): %w",
			c.url, ch.RelayID[:8], pinned[:8], ErrRelayChanged)
	}
	key := c.id.Public().SigningKey
	addr := c.self.String()
	auth := wire.Auth{Address: addr, SigningKey: key, Expires: ch.Expires}
	copy(auth.Signature[:], c.id.Sign(wire.AuthMessage(ch.Nonce, ch.RelayID, addr, key, ch.Expires)))
	b, err := wire.EncodeRelay(c.nextReq(), auth)
	if err != nil {
		return nil, fmt.Errorf("authenticate to relay: %w", err)
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		return nil, fmt.Errorf("authenticate to relay: %w", err)
	}
	if m, err = read(); err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case wire.AuthOK:
	case wire.Error:
		return nil, &ServerError{Code: m.Code, Message: m.Message}
	default:
		return nil, fmt.Errorf("authenticate to relay: expected auth ok, got %s", m.RelayKind())
	}
	if !stop() {
		return nil, fmt.Errorf("authenticate to relay: %w", ctx.Err())
	}
	c.mu.Lock()
	c.relayID = ch.RelayID
	c.pinned = ch.RelayID
	store := c.opts.OnPin != nil && !c.stored
	c.mu.Unlock()
	if store && c.opts.OnPin(ch.RelayID) == nil {
		c.mu.Lock()
		c.stored = true
		c.mu.Unlock()
	}
	ws.SetWriteDeadline(time.Time{})
	ws.SetReadDeadline(time.Now().Add(c.opts.ReadTimeout))
	c.resetFeatures()
	return startSocket(c, ws), nil
}
