package profile

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

// lazyRelay connects to the relay on first use, so that commands that never
// touch the network (inbox, history...) work offline, and a failed
// connection surfaces as the failed hand-off it is.
type lazyRelay struct {
	url  string
	self engine.Address
	id   *engine.Identity
	opts transport.ClientOptions

	mu   sync.Mutex
	conn *transport.Conn
}

var _ engine.Relay = (*lazyRelay)(nil)

// RelayFeatures implements engine.EnvelopeNews: unknown until the first
// connection, then the connection's.
func (l *lazyRelay) RelayFeatures() (wire.FeatureSet, bool) {
	if c := l.current(); c != nil {
		return c.RelayFeatures()
	}
	return 0, false
}

// EnvelopeStatuses implements engine.EnvelopeNews.
func (l *lazyRelay) EnvelopeStatuses() []wire.EnvelopeStatus {
	if c := l.current(); c != nil {
		return c.EnvelopeStatuses()
	}
	return nil
}

// EnvelopeLifetime implements engine.EnvelopeNews.
func (l *lazyRelay) EnvelopeLifetime() (time.Duration, bool) {
	if c := l.current(); c != nil {
		return c.EnvelopeLifetime()
	}
	return 0, false
}

// OneTimePreKeyPool implements engine.PreKeyPool: unknown until the first
// connection.
func (l *lazyRelay) OneTimePreKeyPool() (int, bool) {
	if c := l.current(); c != nil {
		return c.OneTimePreKeyPool()
	}
	return 0, false
}

func (l *lazyRelay) get(ctx context.Context) (*transport.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		return l.conn, nil
	}
	c, err := transport.Dial(ctx, l.url, l.self, l.id, l.opts)
	if err != nil {
		return nil, err
	}
	l.conn = c
	return c, nil
}

// reconfigure makes the next connection go to url with opts (a new pin, a
// new CA), dropping a connection made under the old settings.
func (l *lazyRelay) reconfigure(url string, opts transport.ClientOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.url, l.opts = url, opts
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
}

func (l *lazyRelay) current() *transport.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
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

// SubmitBatch implements engine.BatchSubmitter.
func (l *lazyRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	c, err := l.get(ctx)
	if err != nil {
		errs := make([]error, len(envs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return c.SubmitBatch(ctx, envs)
}

// SubmitMulti implements engine.MultiSubmitter.
func (l *lazyRelay) SubmitMulti(ctx context.Context, m wire.SubmitMulti) []error {
	c, err := l.get(ctx)
	if err != nil {
		errs := make([]error, len(m.Mailboxes))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return c.SubmitMulti(ctx, m)
}

// Receive implements engine.Relay.
func (l *lazyRelay) Receive(ctx context.Context) ([]engine.Leased, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.Receive(ctx)
}

// Release implements engine.Relay by forwarding to the connection.
func (l *lazyRelay) Release(ctx context.Context, rows []uint64) error {
	c, err := l.get(ctx)
	if err != nil {
		return err
	}
	return c.Release(ctx, rows)
}

// Wake implements engine.RelayLink: nil until the first connection.
func (l *lazyRelay) Wake() <-chan struct{} {
	if c := l.current(); c != nil {
		return c.Wake()
	}
	return nil
}

// Link implements engine.RelayLink: down until the first connection.
func (l *lazyRelay) Link() engine.Link {
	if c := l.current(); c != nil {
		return c.Link()
	}
	return engine.Link{}
}

// State reports the connection in words; "not connected" before first use.
func (l *lazyRelay) State() transport.State {
	if c := l.current(); c != nil {
		return c.State()
	}
	return transport.State{Conn: transport.StateDisconnected}
}

// RelayID returns the ID of the relay last authenticated to (zero before).
func (l *lazyRelay) RelayID() [32]byte {
	if c := l.current(); c != nil {
		return c.RelayID()
	}
	return [32]byte{}
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
