package enginetest

import (
	"context"
	"errors"
	"sync"

	"github.com/parley-chat/parley/engine"
)

// ErrBlockerDown is what a Blocker answers while it is set down.
var ErrBlockerDown = errors.New("enginetest: the relay cannot be reached to block")

// Blocker is an Endpoint that takes blocks of senders
// (engine.SenderBlocker) and records them, for tests of the engine's
// telling and retrying; it does not discard the blocked senders' envelopes
// (the relay's own block list does that).
type Blocker struct {
	*Endpoint
	mu      sync.Mutex
	down    bool
	blocked map[engine.Address]bool
}

var _ engine.Relay = (*Blocker)(nil)

// NewBlocker wraps e.
func NewBlocker(e *Endpoint) *Blocker {
	return &Blocker{Endpoint: e, blocked: map[engine.Address]bool{}}
}

// BlockSender implements engine.SenderBlocker; it fails with
// ErrBlockerDown while the blocker is down.
func (b *Blocker) BlockSender(ctx context.Context, sender engine.Address, blocked bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return ErrBlockerDown
	}
	b.blocked[sender] = blocked
	return nil
}

// SetDown makes BlockSender fail (true) or succeed again.
func (b *Blocker) SetDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

// Blocked reports whether sender was blocked last.
func (b *Blocker) Blocked(sender engine.Address) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.blocked[sender]
}
