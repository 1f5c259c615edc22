package tui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// Network is what the demo needs from the relay its profiles talk through:
// a connection per device, where a new identity for an address already
// registered replaces it (the demo's reinstall). Holding delivery, losing an
// envelope or an ACK and unplugging a link are done by the demo itself on
// top of any Network (see faultRelay and gate), so a Network is only the
// relay: network_embedded.go is the one file that says which.
type Network interface {
	// Dial connects and authenticates a device.
	Dial(ctx context.Context, self engine.Address, id *engine.Identity) (Conn, error)
	// URL is the relay's address, stored in the demo's profiles.
	URL() string
	// Close stops the relay.
	Close() error
}

// Conn is one device's connection to a Network.
type Conn interface {
	engine.Relay
	// State is the connection state in words ("connected", "connecting",
	// "offline"...), shown in the status bar.
	State() string
	// Close drops the connection; envelopes leased and not acknowledged are
	// delivered again on the next connection.
	Close() error
}

// errUnplugged is what a demo-unplugged link returns.
var errUnplugged = errors.New("relay unreachable (demo: link unplugged)")

// faultRelay is a device's relay connection with the demo's switches: lose
// the next envelope or the next ACK the device sends to a peer (the relay
// accepts it, then it is gone), and unplug the link (every call fails, so a
// send is stored and reported not sent).
type faultRelay struct {
	Conn
	self  engine.Address
	notes chan<- eventlog.Entry
	now   func() time.Time

	mu        sync.Mutex
	dropMsg   map[engine.Address]int
	dropAck   map[engine.Address]int
	unplugged bool
}

func newFaultRelay(c Conn, self engine.Address, notes chan<- eventlog.Entry, now func() time.Time) *faultRelay {
	return &faultRelay{Conn: c, self: self, notes: notes, now: now, dropMsg: map[engine.Address]int{}, dropAck: map[engine.Address]int{}}
}

func (f *faultRelay) down() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unplugged
}

// FetchBundle implements engine.Relay.
func (f *faultRelay) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	if f.down() {
		return wire.Bundle{}, errUnplugged
	}
	return f.Conn.FetchBundle(ctx, peer)
}

// PublishPreKeys implements engine.Relay.
func (f *faultRelay) PublishPreKeys(ctx context.Context, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	if f.down() {
		return errUnplugged
	}
	return f.Conn.PublishPreKeys(ctx, b, oneTime)
}

// Submit implements engine.Relay, losing an envelope when one is armed.
func (f *faultRelay) Submit(ctx context.Context, env wire.Envelope) error {
	to, _ := engine.ParseAddress(env.Recipient)
	kind := kindOf(ctx)
	f.mu.Lock()
	if f.unplugged {
		f.mu.Unlock()
		return errUnplugged
	}
	armed := f.dropMsg
	what := "envelope"
	if kind == kindAck {
		armed, what = f.dropAck, "ACK"
	}
	if armed[to] > 0 {
		armed[to]--
		f.mu.Unlock()
		e := eventlog.Entry{At: f.now(), Name: "demo_lost_" + map[string]string{"envelope": "envelope", "ACK": "ack"}[what],
			Text: fmt.Sprintf("the relay accepted an %s %s → %s and lost it", what, f.self, to), Level: eventlog.Demo}
		select {
		case f.notes <- e:
		default:
		}
		return nil
	}
	f.mu.Unlock()
	return f.Conn.Submit(ctx, env)
}

// Receive implements engine.Relay.
func (f *faultRelay) Receive(ctx context.Context) ([]engine.Leased, error) {
	if f.down() {
		return nil, errUnplugged
	}
	return f.Conn.Receive(ctx)
}

// Acknowledge implements engine.Relay.
func (f *faultRelay) Acknowledge(ctx context.Context, rows []uint64) error {
	if f.down() {
		return errUnplugged
	}
	return f.Conn.Acknowledge(ctx, rows)
}

// State reports the connection state, "offline" while unplugged.
func (f *faultRelay) State() string {
	if f.down() {
		return "offline"
	}
	return f.Conn.State()
}

func (f *faultRelay) arm(to engine.Address, ack bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ack {
		f.dropAck[to]++
	} else {
		f.dropMsg[to]++
	}
}

func (f *faultRelay) setUnplugged(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unplugged = on
}

func (f *faultRelay) armed() (msg, ack int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.dropMsg {
		msg += n
	}
	for _, n := range f.dropAck {
		ack += n
	}
	return msg, ack
}
