package relaystore

import (
	"context"
	"errors"
	"fmt"
)

// Device lists (issue 33): the relay keeps the latest list of each account,
// keyed by the user part of its addresses, and moves it forward only by
// compare-and-set. The server checks signatures and the chain's rules
// (engine.VerifyDeviceList) before it asks the store; the store keeps the
// chain itself whole against racing publishers, on every backend.

// HeldDeviceList is a device list as the relay keeps it: its place in the
// chain and its bytes (wire.EncodeDeviceList).
type HeldDeviceList struct {
	Generation uint64
	Parent     [32]byte // the digest of the list at Generation-1; zero at 1
	Digest     [32]byte // its own (engine.DeviceListDigest)
	Encoded    []byte
}

// DeviceLists is the part of Store that keeps device lists.
type DeviceLists interface {
	// DeviceList returns the list held for user, or ErrNoDeviceList.
	DeviceList(ctx context.Context, user string) (HeldDeviceList, error)

	// PutDeviceList holds l as user's list if it follows the one held:
	// generation 1 when none is held; otherwise the held generation plus
	// one, naming the held digest as its parent. Anything else fails with
	// ErrDeviceListStale and changes nothing, so that of two publishers
	// racing from the same list exactly one wins. A first list is charged
	// to ip (when not empty): it fails with ErrDeviceListQuota when ip
	// started Limits.DeviceListsPerIP lists already.
	PutDeviceList(ctx context.Context, user string, l HeldDeviceList, ip string) error
}

// DefaultDeviceListsPerIP bounds the accounts one IP starts a device list
// for: as many as the addresses it may register (DefaultRegistrationsPerIP),
// since each first list needs a device of its own.
const DefaultDeviceListsPerIP = DefaultRegistrationsPerIP

var (
	// ErrNoDeviceList means the relay holds no device list for the user.
	ErrNoDeviceList = errors.New("no device list held")
	// ErrDeviceListStale means a list does not follow the one held.
	ErrDeviceListStale = errors.New("device list does not follow the one held")
	// ErrDeviceListQuota means the remote IP started all the device lists
	// it may.
	ErrDeviceListQuota = errors.New("too many device lists started from this IP")
)

// follows reports whether l may replace held (nil: none held).
func (l HeldDeviceList) follows(held *HeldDeviceList) error {
	switch {
	case held == nil && l.Generation == 1:
		return nil
	case held != nil && l.Generation == held.Generation+1 && l.Parent == held.Digest:
		return nil
	case held == nil:
		return fmt.Errorf("generation %d with none held: %w", l.Generation, ErrDeviceListStale)
	}
	return fmt.Errorf("generation %d after %d: %w", l.Generation, held.Generation, ErrDeviceListStale)
}

// deviceListRecord is a HeldDeviceList as the SQLite and NATS backends
// store it: generation (8 bytes), parent, digest, then the list.
func (l HeldDeviceList) record() []byte {
	b := make([]byte, 0, 8+32+32+len(l.Encoded))
	b = append(b, byte(l.Generation>>56), byte(l.Generation>>48), byte(l.Generation>>40), byte(l.Generation>>32),
		byte(l.Generation>>24), byte(l.Generation>>16), byte(l.Generation>>8), byte(l.Generation))
	b = append(b, l.Parent[:]...)
	b = append(b, l.Digest[:]...)
	return append(b, l.Encoded...)
}

// DeviceListRecord is what a backend outside this package (natsstore)
// stores for l.
func DeviceListRecord(l HeldDeviceList) []byte { return l.record() }

// ParseDeviceListRecord reads what DeviceListRecord wrote.
func ParseDeviceListRecord(b []byte) (HeldDeviceList, error) {
	if len(b) < 8+32+32+1 {
		return HeldDeviceList{}, fmt.Errorf("device list record of %d bytes", len(b))
	}
	var l HeldDeviceList
	for _, c := range b[:8] {
		l.Generation = l.Generation<<8 | uint64(c)
	}
	copy(l.Parent[:], b[8:40])
	copy(l.Digest[:], b[40:72])
	l.Encoded = append([]byte(nil), b[72:]...)
	return l, nil
}

// Follows reports, for a backend outside this package, whether l may
// replace held (nil: none held): nil or an ErrDeviceListStale.
func Follows(l HeldDeviceList, held *HeldDeviceList) error { return l.follows(held) }

// DeviceList implements Store.
func (m *Memory) DeviceList(_ context.Context, user string) (HeldDeviceList, error) {
	if err := m.lock(); err != nil {
		return HeldDeviceList{}, err
	}
	defer m.mu.Unlock()
	l, ok := m.lists[user]
	if !ok {
		return HeldDeviceList{}, fmt.Errorf("%s: %w", user, ErrNoDeviceList)
	}
	l.Encoded = append([]byte(nil), l.Encoded...)
	return l, nil
}

// PutDeviceList implements Store.
func (m *Memory) PutDeviceList(_ context.Context, user string, l HeldDeviceList, ip string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	var held *HeldDeviceList
	if h, ok := m.lists[user]; ok {
		held = &h
	}
	if err := l.follows(held); err != nil {
		return fmt.Errorf("device list of %s: %w", user, err)
	}
	if held == nil && ip != "" {
		if m.listIP[ip] >= m.limits.DeviceListsPerIP {
			return fmt.Errorf("device list of %s: %w", user, ErrDeviceListQuota)
		}
		m.listIP[ip]++
	}
	l.Encoded = append([]byte(nil), l.Encoded...)
	m.lists[user] = l
	return nil
}
