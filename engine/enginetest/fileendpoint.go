package enginetest

import (
	"context"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// FileEndpoint is an Endpoint of a network kept in a file: it saves the
// network after every call that changes it, so that a process killed right
// after a hand-off leaves the envelope with the relay, as a real relay would.
type FileEndpoint struct {
	*Endpoint
	path string
}

// OpenFileEndpoint loads the network at path and returns self's endpoint.
func OpenFileEndpoint(path string, self engine.Address) (*FileEndpoint, error) {
	n, err := LoadNetwork(path)
	if err != nil {
		return nil, err
	}
	return &FileEndpoint{Endpoint: n.Endpoint(self), path: path}, nil
}

// Network returns the loaded network.
func (e *FileEndpoint) Network() *Network { return e.n }

// Save writes the network back to its file.
func (e *FileEndpoint) Save() error { return e.n.SaveFile(e.path) }

// FetchBundle implements engine.Relay (a one-time prekey handed out is gone).
func (e *FileEndpoint) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	b, err := e.Endpoint.FetchBundle(ctx, peer)
	if err != nil {
		return b, err
	}
	return b, e.Save()
}

// PublishPreKeys implements engine.Relay.
func (e *FileEndpoint) PublishPreKeys(ctx context.Context, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	if err := e.Endpoint.PublishPreKeys(ctx, b, oneTime); err != nil {
		return err
	}
	return e.Save()
}

// Submit implements engine.Relay.
func (e *FileEndpoint) Submit(ctx context.Context, env wire.Envelope) error {
	if err := e.Endpoint.Submit(ctx, env); err != nil {
		return err
	}
	return e.Save()
}

// Release implements engine.Relay.
func (e *FileEndpoint) Release(ctx context.Context, rows []uint64) error {
	if err := e.Endpoint.Release(ctx, rows); err != nil {
		return err
	}
	return e.Save()
}
