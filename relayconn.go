package main

import (
	"context"
	"sync"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// relayConn is a connection to a relay.
type relayConn interface {
	engine.Relay
	Close() error
}

// lazyRelay connects to the relay on first use, so that commands that never
// touch the network (inbox, history...) work offline, and a failed connection
// surfaces as the failed hand-off it is.
type lazyRelay struct {
	url  string
	self engine.Address
	id   *engine.Identity

	mu   sync.Mutex
	conn relayConn
}

func (l *lazyRelay) get(ctx context.Context) (relayConn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		return l.conn, nil
	}
	c, err := dialRelay(ctx, l.url, l.self, l.id)
	if err != nil {
		return nil, err
	}
	l.conn = c
	return c, nil
}

// FetchBundle implements engine.Relay.
func (l *lazyRelay) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	c, err := l.get(ctx)
	if err != nil {
		return wire.Bundle{}, err
	}
	return c.FetchBundle(ctx, peer)
}

// PublishPreKeys implements engine.Relay.
func (l *lazyRelay) PublishPreKeys(ctx context.Context, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.PublishPreKeys(ctx, b, oneTime)
}

// Submit implements engine.Relay.
func (l *lazyRelay) Submit(ctx context.Context, env wire.Envelope) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.Submit(ctx, env)
}

// Receive implements engine.Relay.
func (l *lazyRelay) Receive(ctx context.Context) ([]engine.Leased, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.Receive(ctx)
}

// Acknowledge implements engine.Relay.
func (l *lazyRelay) Acknowledge(ctx context.Context, rows []uint64) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.Acknowledge(ctx, rows)
}

// Close closes the connection if one was made.
func (l *lazyRelay) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close()
	l.conn = nil
	return err
}
