package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// Removing a device (issue 33, fourth layer). The device holding the
// account key signs the generation after the list held with the device's
// entry revoked (its number is never reused), has the relay take it by
// compare-and-set, and only then stores it, ending in the same transaction
// its own pending lanes to the removed device (UpdateDeviceList.Removed)
// and adopting the device's messages (UpdateDeviceList.Adopted).
// The relay then refuses the removed device outright: it cannot
// authenticate, and its open connections are closed. A peer ends its lanes
// to the device when it holds the new list (HoldPeerDeviceList.Removed).

// ErrRemoveSelf means the device holding the account key was asked to
// remove itself: the account would lose the only key that signs its lists.
var ErrRemoveSelf = errors.New("this device holds the account key and cannot remove itself")

// ErrNoSuchDevice means the device to remove is not in the account's list,
// or is removed already.
var ErrNoSuchDevice = errors.New("no such active device in the account's list")

// RemovedDeviceList returns the generation after prev in which device
// number is revoked, signed by k, checked as the relay will check it.
func RemovedDeviceList(k *AccountKey, prev wire.DeviceList, number uint32) (wire.DeviceList, error) {
	if k == nil {
		return wire.DeviceList{}, ErrNotAccountHolder
	}
	e, ok := findEntry(&prev, number)
	if !ok || e.State != wire.DeviceActive {
		return wire.DeviceList{}, fmt.Errorf("%s/%d: %w", prev.User, number, ErrNoSuchDevice)
	}
	parent, err := DeviceListDigest(prev)
	if err != nil {
		return wire.DeviceList{}, fmt.Errorf("remove device %d: %w", number, err)
	}
	next := wire.DeviceList{User: prev.User, Generation: prev.Generation + 1, Parent: parent,
		Entries: append([]wire.DeviceEntry(nil), prev.Entries...)}
	for i := range next.Entries {
		if next.Entries[i].Number == number {
			next.Entries[i].State = wire.DeviceRevoked
		}
	}
	if next, err = k.SignDeviceList(next); err != nil {
		return wire.DeviceList{}, err
	}
	if err := VerifyDeviceList(next, &prev); err != nil {
		return wire.DeviceList{}, fmt.Errorf("remove device %d: %w", number, err)
	}
	return next, nil
}

// RevokedSince returns the addresses of the devices next names as revoked
// that prev (nil: none held) does not: the devices a list change removes.
func RevokedSince(prev *wire.DeviceList, next wire.DeviceList) []Address {
	var out []Address
	for _, e := range next.Entries {
		if e.State != wire.DeviceRevoked {
			continue
		}
		if prev != nil {
			if p, ok := findEntry(prev, e.Number); ok && p.State == wire.DeviceRevoked {
				continue
			}
		}
		out = append(out, Address{User: next.User, Device: e.Number})
	}
	return out
}

// RemoveDevice removes device from this person's account: only on the
// device holding the account key (ErrNotAccountHolder), never that device
// itself (ErrRemoveSelf), only an active device of the list
// (ErrNoSuchDevice). The relay takes the new list first (compare-and-set,
// after the list held is published); then the profile stores it, ends
// its pending lanes to the device and resends the device's messages it
// knows from their sent copies (adoption.go), in one transaction. A
// failure to store after the relay took it is mended at the next
// connection, which adopts the relay's list.
func (c *Client) RemoveDevice(ctx context.Context, device Address) (wire.DeviceList, error) {
	if device.User != c.self.User {
		return wire.DeviceList{}, fmt.Errorf("remove %s: %w: a device of another person", device, ErrNoSuchDevice)
	}
	a, err := LoadAccount(ctx, c.store)
	if err != nil {
		return wire.DeviceList{}, err
	}
	if a.Key == nil {
		return wire.DeviceList{}, ErrNotAccountHolder
	}
	if device == c.self {
		return wire.DeviceList{}, ErrRemoveSelf
	}
	if _, err := RemovedDeviceList(a.Key, a.List, device.Device); err != nil {
		return wire.DeviceList{}, err
	}
	if err := c.PublishDeviceList(ctx); err != nil {
		return wire.DeviceList{}, fmt.Errorf("remove %s: %w", device, err)
	}
	if a, err = LoadAccount(ctx, c.store); err != nil {
		return wire.DeviceList{}, err
	}
	next, err := RemovedDeviceList(a.Key, a.List, device.Device)
	if err != nil {
		return wire.DeviceList{}, err
	}
	if err := c.relay.PublishDeviceList(ctx, next); err != nil {
		return wire.DeviceList{}, fmt.Errorf("remove %s: %w", device, err)
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		return wire.DeviceList{}, err
	}
	to, err := wire.EncodeDeviceList(next)
	if err != nil {
		return wire.DeviceList{}, err
	}
	removed := []Address{device}
	adopted := c.adoptedLanes(ctx, a.Key, removed)
	if adopted, err = c.storeRevokingList(ctx, UpdateDeviceList{From: from, List: to, Removed: removed, Adopted: adopted, At: c.cfg.Now()}); err != nil {
		return next, fmt.Errorf("store the device list the relay took (the next connection adopts it): %w", err)
	}
	if len(adopted) > 0 {
		// The adopted lanes go now: a running loop's pump is woken; without
		// one (the command line), they are handed off here. A failure
		// leaves them pending for the next pump, and the removal stands.
		c.wantLanesPumped()
		if err := c.pumpStoredLanes(ctx); err != nil && ctx.Err() == nil {
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "pump", Err: err})
		}
	}
	return next, nil
}

// storeRevokingList applies p, a list that revokes devices, with the lanes
// that adopt their messages; should that fail, it reports the failure and
// applies p without them: the adoption never holds the revocation back.
// It returns the lanes stored. sendMu is held around the store, as a group
// send holds it from reading the account's list to storing its lanes: no
// send planned with the list held gets a lane to the revoked device after
// this transaction ended the ones it had.
func (c *Client) storeRevokingList(ctx context.Context, p UpdateDeviceList) ([]AdoptedLane, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	_, err := c.store.Apply(ctx, p)
	if err == nil || len(p.Adopted) == 0 || ctx.Err() != nil {
		return p.Adopted, err
	}
	c.adoptFailed(fmt.Errorf("store %d adopted lanes: %w", len(p.Adopted), err))
	p.Adopted = nil
	_, err = c.store.Apply(ctx, p)
	return nil, err
}
