package demo

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// errUnplugged is what a demo-unplugged link returns.
var errUnplugged = fmt.Errorf("demo: link unplugged: %w", engine.ErrRelayUnreachable)

// faultRelay is a demo profile's relay connection with the demo's
// switches, wrapped around the real connection: hold delivery (Receive
// returns nothing, so envelopes wait at the relay), lose the next envelope
// or the next ACK the device sends to a peer (the relay accepts it, then it
// is gone), and unplug the link (every call fails, so a send is stored and
// reported not sent). The engine says what each hand-off carries
// (engine.HandoffOf), so "the next ACK" is exact although envelopes are
// opaque. It embeds the connection it wraps, so that every part of
// engine.Relay it does not change (the pool's count, blobs) reaches the
// connection, except that it does not announce envelope status
// (RelayFeatures), nor device lists until the demo keeps them (world.lists).
type faultRelay struct {
	engine.Relay
	noStatuses bool         // envelope statuses stop here (world.noDeviceWord)
	lists      *atomic.Bool // the relay's device lists are announced (world.lists)
	self       engine.Address
	notes      chan<- eventlog.Entry
	now        func() time.Time

	mu        sync.Mutex
	dropMsg   map[engine.Address]int
	dropAck   map[engine.Address]int
	held      bool
	unplugged bool
	// kill is the download kill armed (file.go); released is closed when
	// the profile is closed.
	kill       *killPoint
	released   chan struct{}
	isReleased bool
}

var _ engine.Relay = (*faultRelay)(nil)

func newFaultRelay(inner engine.Relay, self engine.Address, notes chan<- eventlog.Entry, now func() time.Time) *faultRelay {
	return &faultRelay{Relay: inner, self: self, notes: notes, now: now, dropMsg: map[engine.Address]int{}, dropAck: map[engine.Address]int{},
		released: make(chan struct{})}
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
	return f.Relay.FetchBundle(ctx, peer)
}

// PublishPreKeys implements engine.Relay.
func (f *faultRelay) PublishPreKeys(ctx context.Context, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	if f.down() {
		return errUnplugged
	}
	return f.Relay.PublishPreKeys(ctx, b, oneTime)
}

// Submit implements engine.Relay, losing the envelope when a loss is armed
// for what it carries.
func (f *faultRelay) Submit(ctx context.Context, env wire.Envelope) error {
	lost, err := f.lose(ctx, env)
	if lost || err != nil {
		return err
	}
	return f.Relay.Submit(ctx, env)
}

// SubmitBatch implements engine.BatchSubmitter: the switches apply to each
// envelope; what is left goes to the connection in one batch.
func (f *faultRelay) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	errs := make([]error, len(envs))
	var pass []wire.Envelope
	var idx []int
	for i, env := range envs {
		lost, err := f.lose(ctx, env)
		if lost || err != nil {
			errs[i] = err
			continue
		}
		pass, idx = append(pass, env), append(idx, i)
	}
	if len(pass) == 0 {
		return errs
	}
	res := f.Relay.SubmitBatch(ctx, pass)
	for k, i := range idx {
		errs[i] = res[k]
	}
	return errs
}

// lose reports whether env is lost to an armed switch (the relay "accepted"
// it), or fails while unplugged.
func (f *faultRelay) lose(ctx context.Context, env wire.Envelope) (bool, error) {
	to, _ := engine.ParseAddress(env.Recipient)
	f.mu.Lock()
	if f.unplugged {
		f.mu.Unlock()
		return false, errUnplugged
	}
	armed, what, name := f.dropMsg, "envelope", "demo_lost_envelope"
	if engine.HandoffOf(ctx) == engine.HandoffAck {
		armed, what, name = f.dropAck, "ACK", "demo_lost_ack"
	}
	if armed[to] == 0 {
		f.mu.Unlock()
		return false, nil
	}
	armed[to]--
	f.mu.Unlock()
	e := eventlog.Entry{At: f.now(), Name: name, Text: fmt.Sprintf("the relay accepted an %s (envelope %x) %s → %s and lost it", what, env.ID[:4], f.self, to), Level: eventlog.Demo}
	select {
	case f.notes <- e:
	default:
	}
	return true, nil
}

// Receive implements engine.Relay: nothing while delivery is held (the
// envelopes stay at the relay, leased to this connection and not
// released, until delivery resumes).
func (f *faultRelay) Receive(ctx context.Context) ([]engine.Leased, error) {
	f.mu.Lock()
	held, down := f.held, f.unplugged
	f.mu.Unlock()
	switch {
	case down:
		return nil, errUnplugged
	case held:
		return nil, nil
	}
	return f.Relay.Receive(ctx)
}

// Release implements engine.Relay by forwarding to the connection.
func (f *faultRelay) Release(ctx context.Context, rows []uint64) error {
	if f.down() {
		return errUnplugged
	}
	return f.Relay.Release(ctx, rows)
}

// Link implements engine.RelayLink: down while unplugged.
func (f *faultRelay) Link() engine.Link {
	if f.down() {
		return engine.Link{Err: errUnplugged}
	}
	return f.Relay.Link()
}

// BlockSender implements engine.SenderBlocker: the block reaches the relay,
// unless the link is unplugged (then the engine tells it again later).
func (f *faultRelay) BlockSender(ctx context.Context, sender engine.Address, blocked bool) error {
	if f.down() {
		return errUnplugged
	}
	return f.Relay.BlockSender(ctx, sender, blocked)
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

// set changes the hold and unplug switches (nil: unchanged).
func (f *faultRelay) set(held, unplugged *bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if held != nil {
		f.held = *held
	}
	if unplugged != nil {
		f.unplugged = *unplugged
	}
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

// disarm forgets every armed loss and a download's kill; it reports
// whether one was armed.
func (f *faultRelay) disarm() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	any := f.kill != nil
	for _, m := range []map[engine.Address]int{f.dropMsg, f.dropAck} {
		for to, n := range m {
			any = any || n > 0
			delete(m, to)
		}
	}
	f.kill = nil
	return any
}

// RelayFeatures implements engine.EnvelopeNews: the connection's, without
// envelope status. The statuses themselves pass on (so a timeline shows a
// message on the peer's device), but the engine does not time its retries
// by them: the losses this relay stages happen after the engine was told
// the relay took the envelope, where no status could ever report them, and
// the demo retries them on its own short backoff.
//
// Nor does it announce the relay's device lists until the demo keeps them
// (bob's laptop): before, no profile publishes or fetches a list, and a
// reinstall (a new identity, and a new account) meets no list naming the
// old key.
func (f *faultRelay) RelayFeatures() (wire.FeatureSet, bool) {
	fs, known := f.Relay.RelayFeatures()
	if f.lists == nil || !f.lists.Load() {
		fs &^= wire.FeatureDeviceLists | wire.FeatureDeviceListCheck | wire.FeatureProvisioning
	}
	return fs &^ wire.FeatureEnvelopeStatus, known
}

// EnvelopeStatuses implements engine.EnvelopeNews: the connection's, unless
// they are stopped here.
func (f *faultRelay) EnvelopeStatuses() []wire.EnvelopeStatus {
	sts := f.Relay.EnvelopeStatuses()
	if f.noStatuses {
		return nil
	}
	return sts
}
