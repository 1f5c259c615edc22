package relaystore

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Memory is a Store that keeps everything in the process: fast, and gone when
// the process stops.
type Memory struct {
	limits  Limits
	relayID [32]byte

	mu      sync.Mutex
	closed  bool
	next    uint64 // the last row handed out
	keys    map[string][32]byte
	bundles map[string]*memBundle
	boxes   map[string]*memBox
	total   Usage
	stored  int64 // bytes kept for envelopes, each shared payload once
	byIP    map[string]*Usage
	regIP   map[string]int            // addresses first registered from each IP
	accepts map[string]PeerList       // by owner
	blocks  map[string]PeerList       // by owner
	lists   map[string]HeldDeviceList // device lists by user (devicelist.go)
	listIP  map[string]int            // device lists started from each IP
}

type memBundle struct {
	bundle  wire.Bundle
	oneTime []wire.OneTimePreKeyPublic // oldest first
	ids     map[uint32]bool
}

type memBox struct {
	rows       []*memRow // ascending IDs: FIFO
	bytes      int64
	bySender   map[string]*Usage
	strangers  Usage             // what senders the recipient did not accept hold
	strangerIP map[string]*Usage // of that, by IP
}

type memRow struct {
	id      uint64
	env     []byte      // the whole envelope, or its head when shared is set
	shared  *memPayload // the payload that follows env, kept once
	at      time.Time
	from    Origin
	holder  string
	until   time.Time
	deleted bool
}

// memPayload is a payload that several rows share (AppendItem.Shared),
// with how many rows still point at it.
type memPayload struct {
	b    []byte
	refs int
}

// size is the row's whole envelope's size, what its quotas were charged.
func (r *memRow) size() int64 {
	if r.shared == nil {
		return int64(len(r.env))
	}
	return int64(len(r.env) + len(r.shared.b))
}

// envelope returns the row's whole envelope.
func (r *memRow) envelope() []byte {
	if r.shared == nil {
		return r.env
	}
	b := make([]byte, 0, len(r.env)+len(r.shared.b))
	return append(append(b, r.env...), r.shared.b...)
}

// drop forgets a row's bytes, and its shared payload with its last row;
// callers hold mu.
func (m *Memory) drop(r *memRow) {
	m.stored -= int64(len(r.env))
	if p := r.shared; p != nil {
		if p.refs--; p.refs == 0 {
			m.stored -= int64(len(p.b))
		}
	}
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store with a random relay ID.
//
// Rows start from the wall clock in nanoseconds rather than from 1, so that a
// relay restarted with empty memory does not hand out row numbers a client
// may still hold from before the restart and acknowledge later: that
// acknowledgement would delete an envelope the client never saw.
func NewMemory(l Limits) *Memory {
	m := &Memory{
		limits:  l.WithDefaults(),
		next:    uint64(time.Now().UnixNano()),
		keys:    make(map[string][32]byte),
		bundles: make(map[string]*memBundle),
		boxes:   make(map[string]*memBox),
		byIP:    make(map[string]*Usage),
		regIP:   make(map[string]int),
		accepts: make(map[string]PeerList),
		blocks:  make(map[string]PeerList),
		lists:   make(map[string]HeldDeviceList),
		listIP:  make(map[string]int),
	}
	rand.Read(m.relayID[:])
	return m
}

func (m *Memory) lock() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// RelayID implements Store.
func (m *Memory) RelayID(context.Context) ([32]byte, error) { return m.relayID, nil }

// Register implements Store.
func (m *Memory) Register(_ context.Context, address string, key [32]byte, replace bool, ip string) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	old, ok := m.keys[address]
	switch {
	case !ok:
		if ip != "" {
			if m.regIP[ip] >= m.limits.RegistrationsPerIP {
				return false, fmt.Errorf("register %s: %w", address, ErrRegistrationQuota)
			}
			m.regIP[ip]++
		}
		m.keys[address] = key
		return false, nil
	case old == key:
		return false, nil
	case !replace:
		return false, fmt.Errorf("register %s: %w", address, ErrAddressTaken)
	}
	m.keys[address] = key
	delete(m.bundles, address)
	return true, nil
}

// Registered implements Store.
func (m *Memory) Registered(_ context.Context, address string) ([32]byte, error) {
	if err := m.lock(); err != nil {
		return [32]byte{}, err
	}
	defer m.mu.Unlock()
	k, ok := m.keys[address]
	if !ok {
		return [32]byte{}, fmt.Errorf("%s: %w", address, ErrNotRegistered)
	}
	return k, nil
}

// PutBundle implements Store.
func (m *Memory) PutBundle(_ context.Context, address string, key [32]byte, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) (int, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if k, ok := m.keys[address]; !ok || k != key {
		return 0, fmt.Errorf("publish bundle of %s: %w", address, ErrKeyMismatch)
	}
	pb := m.bundles[address]
	if pb == nil {
		pb = &memBundle{ids: make(map[uint32]bool)}
		m.bundles[address] = pb
	}
	b.OneTimePreKey = nil
	pb.bundle = b
	added := 0
	for _, k := range oneTime {
		if len(pb.oneTime) >= m.limits.OneTimePreKeys {
			break
		}
		if pb.ids[k.ID] {
			continue
		}
		pb.ids[k.ID] = true
		pb.oneTime = append(pb.oneTime, k)
		added++
	}
	return added, nil
}

// TakeBundle implements Store.
func (m *Memory) TakeBundle(_ context.Context, address string, oneTime bool) (wire.Bundle, int, error) {
	if err := m.lock(); err != nil {
		return wire.Bundle{}, 0, err
	}
	defer m.mu.Unlock()
	pb := m.bundles[address]
	if pb == nil {
		return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, ErrNoBundle)
	}
	b := pb.bundle
	if oneTime && len(pb.oneTime) > 0 {
		k := pb.oneTime[0]
		pb.oneTime = pb.oneTime[1:]
		delete(pb.ids, k.ID)
		b.OneTimePreKey = &k
	}
	return b, len(pb.oneTime), nil
}

// OneTimePreKeys implements Store.
func (m *Memory) OneTimePreKeys(_ context.Context, address string) (int, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if pb := m.bundles[address]; pb != nil {
		return len(pb.oneTime), nil
	}
	return 0, nil
}

// Append implements Store.
func (m *Memory) Append(_ context.Context, recipient string, env []byte, copies int, from Origin) ([]uint64, error) {
	return m.append(recipient, env, copies, from, nil)
}

// append appends copies of env, or of the head env followed by shared's
// payload, to recipient's mailbox, as Append describes.
func (m *Memory) append(recipient string, env []byte, copies int, from Origin, shared *memPayload) ([]uint64, error) {
	if copies < 1 {
		return nil, fmt.Errorf("append to %s: %d copies", recipient, copies)
	}
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if _, ok := m.keys[recipient]; !ok {
		return nil, fmt.Errorf("append to %s: %w", recipient, ErrNotRegistered)
	}
	box := m.boxes[recipient]
	if box == nil {
		box = &memBox{bySender: make(map[string]*Usage), strangerIP: make(map[string]*Usage)}
	}
	whole := int64(len(env))
	if shared != nil {
		whole += int64(len(shared.b))
	}
	size := whole * int64(copies)
	var sender, ip Usage
	if u := box.bySender[from.Address]; u != nil {
		sender = *u
	}
	if u := m.byIP[from.IP]; u != nil {
		ip = *u
	}
	if err := m.limits.QuotaError(Usage{len(box.rows), box.bytes}, sender, ip, m.total, from, copies, size); err != nil {
		return nil, fmt.Errorf("append to %s: %w", recipient, err)
	}
	var strangerIP Usage
	if u := box.strangerIP[from.IP]; u != nil {
		strangerIP = *u
	}
	if err := m.limits.StrangerError(box.strangers, strangerIP, from, copies, size); err != nil {
		return nil, fmt.Errorf("append to %s: %w", recipient, err)
	}
	m.boxes[recipient] = box
	env = slices.Clone(env)
	now := time.Now()
	rows := make([]uint64, copies)
	for i := range rows {
		m.next++
		rows[i] = m.next
		box.rows = append(box.rows, &memRow{id: m.next, env: env, shared: shared, from: from, at: now})
	}
	m.stored += int64(len(env)) * int64(copies)
	if shared != nil {
		if shared.refs == 0 {
			m.stored += int64(len(shared.b))
		}
		shared.refs += copies
	}
	box.bytes += size
	m.charge(box, from, copies, size)
	return rows, nil
}

// AppendBatch implements Store: Append of each item, in order (nothing
// in memory is made durable, so there is nothing to group). The items that
// share a payload keep it once, with their heads.
func (m *Memory) AppendBatch(ctx context.Context, items []AppendItem) []AppendResult {
	out := make([]AppendResult, len(items))
	kept := make(map[*SharedPayload]*memPayload)
	for i, it := range items {
		var p *memPayload
		if it.Shared != nil {
			if p = kept[it.Shared]; p == nil {
				p = &memPayload{b: slices.Clone(it.Shared.Payload)}
				kept[it.Shared] = p
			}
		}
		out[i].Rows, out[i].Err = m.append(it.Recipient, it.Env, it.Copies, it.From, p)
	}
	return out
}

// charge adds (or, with negative amounts, removes) what from holds in box,
// for its IP and in all; callers hold mu.
func (m *Memory) charge(box *memBox, from Origin, n int, size int64) {
	add := func(tab map[string]*Usage, k string) {
		u := tab[k]
		if u == nil {
			u = &Usage{}
			tab[k] = u
		}
		u.Envelopes += n
		u.Bytes += size
		if u.Envelopes <= 0 {
			delete(tab, k)
		}
	}
	add(box.bySender, from.Address)
	if from.IP != "" {
		add(m.byIP, from.IP)
	}
	if from.Stranger {
		box.strangers.Envelopes += n
		box.strangers.Bytes += size
		if from.IP != "" {
			add(box.strangerIP, from.IP)
		}
	}
	m.total.Envelopes += n
	m.total.Bytes += size
}

// Lease implements Store.
func (m *Memory) Lease(_ context.Context, recipient, holder string, max int, now, until time.Time) ([]Row, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	box := m.boxes[recipient]
	if box == nil || max <= 0 {
		return nil, nil
	}
	var out []Row
	for _, r := range box.rows {
		if r.holder != "" && now.Before(r.until) {
			continue
		}
		r.holder, r.until = holder, until
		out = append(out, Row{ID: r.id, Envelope: r.envelope(), Accepted: r.at})
		if len(out) == max {
			break
		}
	}
	return out, nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, recipient, holder string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if box := m.boxes[recipient]; box != nil {
		for _, r := range box.rows {
			if r.holder == holder {
				r.holder, r.until = "", time.Time{}
			}
		}
	}
	return nil
}

// Ack implements Store.
func (m *Memory) Ack(_ context.Context, recipient string, rows []uint64) ([]Removed, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	box := m.boxes[recipient]
	if box == nil {
		return nil, nil
	}
	var out []Removed
	for _, id := range rows {
		i, ok := slices.BinarySearchFunc(box.rows, id, func(r *memRow, id uint64) int {
			switch {
			case r.id < id:
				return -1
			case r.id > id:
				return 1
			}
			return 0
		})
		if ok && !box.rows[i].deleted {
			r := box.rows[i]
			r.deleted = true
			box.bytes -= r.size()
			m.charge(box, r.from, -1, -r.size())
			m.drop(r)
			out = append(out, Removed{Recipient: recipient, Row: r.id, Sender: r.from.Address, Envelope: r.from.Envelope})
		}
	}
	if len(out) > 0 {
		box.rows = slices.DeleteFunc(box.rows, func(r *memRow) bool { return r.deleted })
	}
	if len(box.rows) == 0 {
		delete(m.boxes, recipient)
	}
	return out, nil
}

// Expire implements Store. It scans every mailbox and takes the lowest
// rows, which are the oldest.
func (m *Memory) Expire(_ context.Context, now, before time.Time, max int) ([]Removed, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	type old struct {
		recipient string
		row       *memRow
	}
	var cands []old
	for recipient, box := range m.boxes {
		for _, r := range box.rows {
			if !r.at.Before(before) {
				break
			}
			if r.holder == "" || !now.Before(r.until) {
				cands = append(cands, old{recipient, r})
			}
		}
	}
	slices.SortFunc(cands, func(a, b old) int { return cmp.Compare(a.row.id, b.row.id) })
	out := make([]Removed, 0, min(max, len(cands)))
	touched := map[string]bool{}
	for _, c := range cands[:min(max, len(cands))] {
		box, r := m.boxes[c.recipient], c.row
		r.deleted = true
		box.bytes -= r.size()
		m.charge(box, r.from, -1, -r.size())
		m.drop(r)
		out = append(out, Removed{Recipient: c.recipient, Row: r.id, Sender: r.from.Address, Envelope: r.from.Envelope})
		touched[c.recipient] = true
	}
	for recipient := range touched {
		box := m.boxes[recipient]
		box.rows = slices.DeleteFunc(box.rows, func(r *memRow) bool { return r.deleted })
		if len(box.rows) == 0 {
			delete(m.boxes, recipient)
		}
	}
	return out, nil
}

// Accept implements Store.
func (m *Memory) Accept(_ context.Context, owner, peer string, now time.Time) (int, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var forgot int
	m.accepts[owner], forgot = m.accepts[owner].Record(peer, now, m.limits.AcceptedPeers)
	return forgot, nil
}

// Block implements Store.
func (m *Memory) Block(_ context.Context, owner, sender string, blocked bool) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	l, err := m.blocks[owner].SetBlocked(sender, blocked, time.Now(), m.limits.BlockedSenders)
	if err != nil {
		return fmt.Errorf("block %s for %s: %w", sender, owner, err)
	}
	if len(l) == 0 {
		delete(m.blocks, owner)
	} else {
		m.blocks[owner] = l
	}
	return nil
}

// Relation implements Store.
func (m *Memory) Relation(_ context.Context, owner, sender string, now time.Time) (Relation, error) {
	if err := m.lock(); err != nil {
		return Relation{}, err
	}
	defer m.mu.Unlock()
	since := now.Add(-m.limits.AcceptedLifetime)
	return Relation{Accepted: m.accepts[owner].HasSince(sender, since), Blocked: m.blocks[owner].Has(sender)}, nil
}

// ForgetAccepted implements Store.
func (m *Memory) ForgetAccepted(_ context.Context, before time.Time) (int, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	all := 0
	for owner, l := range m.accepts {
		l, n := l.Forget(before)
		all += n
		if len(l) == 0 {
			delete(m.accepts, owner)
		} else {
			m.accepts[owner] = l
		}
	}
	return all, nil
}

// Stats implements Store.
func (m *Memory) Stats(context.Context) (Stats, error) {
	if err := m.lock(); err != nil {
		return Stats{}, err
	}
	defer m.mu.Unlock()
	// The running totals: no scan, whatever the store holds.
	return Stats{Registrations: len(m.keys), Envelopes: m.total.Envelopes, Bytes: m.total.Bytes, Stored: m.stored}, nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
