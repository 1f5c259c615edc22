// Package enginetest provides an in-process relay for tests of the engine and
// of what is built on it: FIFO per sender and recipient, with switches to
// hold, drop and duplicate envelopes and to make hand-offs fail.
package enginetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// ErrRelayDown is what the relay's calls return while a device is cut off;
// it matches engine.ErrRelayUnreachable, as the real transport's errors do.
var ErrRelayDown = fmt.Errorf("fake relay: %w", engine.ErrRelayUnreachable)

type row struct {
	id  uint64
	env []byte
}

type pair struct{ from, to string }

type published struct {
	bundle  wire.Bundle
	oneTime []wire.OneTimePreKeyPublic
}

// Network is an in-process relay shared by several endpoints.
type Network struct {
	mu       sync.Mutex
	next     uint64
	boxes    map[string][]row // recipient -> FIFO mailbox
	leased   map[string]map[uint64]bool
	held     map[string][]row // recipient -> envelopes held back, in order
	holding  map[string]bool
	bundles  map[string]*published
	drop     map[pair]int // drop the next n envelopes of a pair
	dup      map[pair]int // duplicate the next n envelopes of a pair
	down     map[string]bool
	accepted int
	// The adversary's view (not kept by SaveFile): every envelope ever
	// accepted, and the devices whose next one-time prekey goes out twice.
	seen       [][]byte
	repeatOTPK map[string]bool
	// replayOTPK holds, per device, the one-time prekey handed out again
	// on every fetch (ReplayOneTime); nil until the first fetch after.
	replayOTPK map[string]*wire.OneTimePreKeyPublic
	// lists are the device lists a test set (SetDeviceList), by user: the
	// network serves them and keeps no others.
	lists map[string][]byte
}

// SetDeviceList makes the network serve l as its user's device list
// (FetchDeviceList). Without one, the network keeps no lists.
func (n *Network) SetDeviceList(l wire.DeviceList) error {
	b, err := wire.EncodeDeviceList(l)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lists == nil {
		n.lists = map[string][]byte{}
	}
	n.lists[l.User] = b
	return nil
}

// NewNetwork returns an empty network.
func NewNetwork() *Network {
	return &Network{boxes: map[string][]row{}, leased: map[string]map[uint64]bool{}, held: map[string][]row{},
		holding: map[string]bool{}, bundles: map[string]*published{}, drop: map[pair]int{}, dup: map[pair]int{},
		down: map[string]bool{}}
}

// Endpoint returns the relay connection of one device.
func (n *Network) Endpoint(self engine.Address) *Endpoint {
	return &Endpoint{n: n, self: self.String()}
}

// Hold keeps envelopes for recipient back until Release, in order.
func (n *Network) Hold(recipient engine.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.holding[recipient.String()] = true
}

// Release delivers what was held for recipient, in order.
func (n *Network) Release(recipient engine.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := recipient.String()
	n.holding[r] = false
	n.boxes[r] = append(n.boxes[r], n.held[r]...)
	n.held[r] = nil
}

// DropNext silently drops the next count envelopes from one device to another
// (the sender still sees them accepted).
func (n *Network) DropNext(from, to engine.Address, count int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop[pair{from.String(), to.String()}] += count
}

// DuplicateNext delivers the next count envelopes from one device to another
// twice.
func (n *Network) DuplicateNext(from, to engine.Address, count int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dup[pair{from.String(), to.String()}] += count
}

// SetDown makes hand-offs from a device fail (true) or work again (false).
func (n *Network) SetDown(a engine.Address, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down[a.String()] = down
}

// Pending returns how many envelopes wait for recipient (held ones included).
func (n *Network) Pending(recipient engine.Address) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.boxes[recipient.String()]) + len(n.held[recipient.String()])
}

// Accepted counts the envelopes the relay accepted in all.
func (n *Network) Accepted() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.accepted
}

// Endpoint is one device's connection to a Network; it implements
// engine.Relay.
type Endpoint struct {
	n    *Network
	self string
}

var _ engine.Relay = (*Endpoint)(nil)

// FetchBundle returns the peer's bundle with one one-time prekey, handed out
// once.
func (e *Endpoint) FetchBundle(ctx context.Context, peer engine.Address) (wire.Bundle, error) {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if e.n.down[e.self] {
		return wire.Bundle{}, ErrRelayDown
	}
	p := e.n.bundles[peer.String()]
	if p == nil {
		return wire.Bundle{}, fmt.Errorf("fake relay: no bundle for %s", peer)
	}
	b := p.bundle
	if k, ok := e.n.replayOTPK[peer.String()]; ok && k != nil {
		b.OneTimePreKey = k
		return b, nil
	}
	if len(p.oneTime) > 0 {
		k := p.oneTime[0]
		if _, ok := e.n.replayOTPK[peer.String()]; ok {
			e.n.replayOTPK[peer.String()] = &k // handed out from now on, for ever
		}
		if e.n.repeatOTPK[peer.String()] {
			delete(e.n.repeatOTPK, peer.String()) // this one goes out again
		} else {
			p.oneTime = p.oneTime[1:]
		}
		b.OneTimePreKey = &k
	}
	return b, nil
}

// PublishPreKeys replaces the own bundle and adds one-time prekeys.
func (e *Endpoint) PublishPreKeys(ctx context.Context, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) error {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if e.n.down[e.self] {
		return ErrRelayDown
	}
	p := e.n.bundles[b.Address]
	if p == nil || p.bundle.IdentitySigningKey != b.IdentitySigningKey {
		p = &published{}
		e.n.bundles[b.Address] = p
	}
	p.bundle = b
	p.oneTime = append(p.oneTime, oneTime...)
	return nil
}

// Submit accepts an envelope into the recipient's mailbox.
func (e *Endpoint) Submit(ctx context.Context, env wire.Envelope) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := wire.EncodeEnvelope(env)
	if err != nil {
		return err
	}
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if e.n.down[e.self] {
		return ErrRelayDown
	}
	e.n.accepted++
	e.n.seen = append(e.n.seen, raw)
	k := pair{env.Sender, env.Recipient}
	if e.n.drop[k] > 0 {
		e.n.drop[k]--
		return nil
	}
	copies := 1
	if e.n.dup[k] > 0 {
		e.n.dup[k]--
		copies = 2
	}
	for i := 0; i < copies; i++ {
		e.n.next++
		r := row{id: e.n.next, env: raw}
		if e.n.holding[env.Recipient] {
			e.n.held[env.Recipient] = append(e.n.held[env.Recipient], r)
		} else {
			e.n.boxes[env.Recipient] = append(e.n.boxes[env.Recipient], r)
		}
	}
	return nil
}

// MaxReceive is the most envelopes one Receive returns, as a real relay
// connection pages them.
const MaxReceive = 256

// Receive leases the envelopes waiting for this device that are not leased
// yet, in order, at most MaxReceive. It does not block.
func (e *Endpoint) Receive(ctx context.Context) ([]engine.Leased, error) {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if e.n.leased[e.self] == nil {
		e.n.leased[e.self] = map[uint64]bool{}
	}
	var out []engine.Leased
	for _, r := range e.n.boxes[e.self] {
		if len(out) == MaxReceive {
			break
		}
		if !e.n.leased[e.self][r.id] {
			e.n.leased[e.self][r.id] = true
			out = append(out, engine.Leased{Row: r.id, Envelope: r.env})
		}
	}
	return out, nil
}

// Release removes leased rows of this device's mailbox.
func (e *Endpoint) Release(ctx context.Context, rows []uint64) error {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	ack := map[uint64]bool{}
	for _, r := range rows {
		ack[r] = true
	}
	box := e.n.boxes[e.self][:0]
	for _, r := range e.n.boxes[e.self] {
		if !ack[r.id] {
			box = append(box, r)
		}
	}
	e.n.boxes[e.self] = box
	for r := range ack {
		delete(e.n.leased[e.self], r)
	}
	return nil
}

// Reconnect drops this device's leases, so that envelopes not released are
// delivered again (as after a reconnect).
func (e *Endpoint) Reconnect() {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	delete(e.n.leased, e.self)
}

// Inject appends raw bytes to recipient's mailbox as if a sender had
// submitted them (for malformed-envelope tests).
func (n *Network) Inject(recipient engine.Address, raw []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	n.boxes[recipient.String()] = append(n.boxes[recipient.String()], row{id: n.next, env: raw})
}

// Heal cancels every pending drop, duplication and cut-off, and releases
// everything held.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop, n.dup, n.down = map[pair]int{}, map[pair]int{}, map[string]bool{}
	for r, rows := range n.held {
		n.boxes[r] = append(n.boxes[r], rows...)
	}
	n.held, n.holding = map[string][]row{}, map[string]bool{}
}

// The adversary's controls: what a hostile relay, or anyone on the path of a
// plain connection, can do to envelopes.

// RepeatOneTime makes the relay hand device's next one-time prekey out twice.
func (n *Network) RepeatOneTime(device engine.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.repeatOTPK == nil {
		n.repeatOTPK = map[string]bool{}
	}
	n.repeatOTPK[device.String()] = true
}

// ReplayOneTime makes the relay hand out device's next one-time prekey on
// that fetch and on every later one, for ever: a relay replaying a consumed
// key.
func (n *Network) ReplayOneTime(device engine.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.replayOTPK == nil {
		n.replayOTPK = map[string]*wire.OneTimePreKeyPublic{}
	}
	n.replayOTPK[device.String()] = nil
}

// Seen returns every envelope the relay ever accepted, in order (copies may
// be replayed with Inject).
func (n *Network) Seen() [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([][]byte(nil), n.seen...)
}

// Held returns the envelopes held back for recipient, in order.
func (n *Network) Held(recipient engine.Address) [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out [][]byte
	for _, r := range n.held[recipient.String()] {
		out = append(out, r.env)
	}
	return out
}

// DeliverHeld moves the i-th envelope held for recipient into its mailbox,
// ahead of those held before it (a reorder).
func (n *Network) DeliverHeld(recipient engine.Address, i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := recipient.String()
	if i < 0 || i >= len(n.held[r]) {
		return
	}
	n.boxes[r] = append(n.boxes[r], n.held[r][i])
	n.held[r] = append(n.held[r][:i:i], n.held[r][i+1:]...)
}

// DropHeld discards the i-th envelope held for recipient.
func (n *Network) DropHeld(recipient engine.Address, i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := recipient.String()
	if i < 0 || i >= len(n.held[r]) {
		return
	}
	n.held[r] = append(n.held[r][:i:i], n.held[r][i+1:]...)
}

// TakeHeld removes and returns what is held for recipient: the adversary
// keeps those envelopes, to Inject later or never.
func (n *Network) TakeHeld(recipient engine.Address) [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := recipient.String()
	var out [][]byte
	for _, row := range n.held[r] {
		out = append(out, row.env)
	}
	n.held[r] = nil
	return out
}

// TamperLast flips the last byte of the newest envelope in recipient's
// mailbox (its ciphertext's tag): a forgery that fails to authenticate.
func (n *Network) TamperLast(recipient engine.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	box := n.boxes[recipient.String()]
	if len(box) == 0 {
		return
	}
	last := &box[len(box)-1]
	env := append([]byte(nil), last.env...)
	env[len(env)-1] ^= 1
	last.env = env
}
