package tui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
)

// demoLease is how long the demo's relay waits for the acknowledgement of
// a delivered envelope before delivering it again. Holding delivery keeps a
// lease open until release, so it is long; a crash gives leases back at
// once (the connection closes).
const demoLease = 10 * time.Minute

// embeddedNetwork is the demo's relay: a transport.Server on 127.0.0.1:0
// with re-registration allowed (the reinstall control), and a
// transport.Client per device. This is the one file that says which relay
// the demo runs on.
type embeddedNetwork struct {
	srv  *transport.Server
	url  string
	log  *slog.Logger
	done chan error
}

func newEmbeddedNetwork(log *slog.Logger, now func() time.Time) (Network, error) {
	srv, err := transport.NewServer(transport.ServerConfig{
		AllowReregister: true,
		Limits:          transport.Limits{LeaseTimeout: demoLease},
		Logger:          log.With("part", "relay"),
		Now:             now,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n := &embeddedNetwork{srv: srv, url: "ws://" + ln.Addr().String(), log: log, done: make(chan error, 1)}
	go func() { n.done <- srv.Serve(ln) }()
	return n, nil
}

func (n *embeddedNetwork) URL() string { return n.url }

func (n *embeddedNetwork) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := n.srv.Shutdown(ctx)
	return errors.Join(err, <-n.done)
}

func (n *embeddedNetwork) Dial(ctx context.Context, self engine.Address, id *engine.Identity) (Conn, error) {
	c, err := transport.Dial(ctx, n.url, self, id, transport.ClientOptions{
		Logger:     n.log.With("part", "relay-client", "self", self.String()),
		MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("dial the embedded relay: %w", err)
	}
	return relayConn{c}, nil
}

type relayConn struct{ *transport.Client }

func (r relayConn) State() string { return r.Client.State().Conn.String() }
