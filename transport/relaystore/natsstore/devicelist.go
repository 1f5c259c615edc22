package natsstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Device lists live in a key-value bucket, one key per user, like the
// registrations: a list moves forward by a compare-and-set on the key's
// revision, so that of two relays racing to store the next generation one
// wins and the other reads the winner's. The lists started from each IP
// are counted in a second bucket, as registrations are.

// DeviceList implements relaystore.Store.
func (s *Store) DeviceList(ctx context.Context, user string) (relaystore.HeldDeviceList, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	e, err := s.lists.Get(ctx, hexKey(user))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return relaystore.HeldDeviceList{}, fmt.Errorf("%s: %w", user, relaystore.ErrNoDeviceList)
	case err != nil:
		return relaystore.HeldDeviceList{}, fmt.Errorf("device list of %s: %w", user, err)
	}
	l, err := relaystore.ParseDeviceListRecord(e.Value())
	if err != nil {
		return relaystore.HeldDeviceList{}, fmt.Errorf("device list of %s: %w", user, err)
	}
	return l, nil
}

// PutDeviceList implements relaystore.Store.
func (s *Store) PutDeviceList(ctx context.Context, user string, l relaystore.HeldDeviceList, ip string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if err := s.putDeviceList(ctx, user, l, ip); err != nil {
		return fmt.Errorf("device list of %s: %w", user, err)
	}
	return nil
}

func (s *Store) putDeviceList(ctx context.Context, user string, l relaystore.HeldDeviceList, ip string) error {
	k := hexKey(user)
	e, err := s.lists.Get(ctx, k)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if err := relaystore.Follows(l, nil); err != nil {
			return err
		}
		if ip != "" {
			if err := s.countDeviceList(ctx, ip); err != nil {
				return err
			}
		}
		if _, err := s.lists.Create(ctx, k, relaystore.DeviceListRecord(l)); err != nil {
			if isConflict(err) {
				// Another relay stored a first list meanwhile: this one
				// no longer follows what is held.
				return fmt.Errorf("generation %d raced: %w", l.Generation, relaystore.ErrDeviceListStale)
			}
			return err
		}
		return nil
	case err != nil:
		return err
	}
	held, err := relaystore.ParseDeviceListRecord(e.Value())
	if err != nil {
		return err
	}
	if err := relaystore.Follows(l, &held); err != nil {
		return err
	}
	if _, err := s.lists.Update(ctx, k, relaystore.DeviceListRecord(l), e.Revision()); err != nil {
		if isConflict(err) {
			return fmt.Errorf("generation %d raced: %w", l.Generation, relaystore.ErrDeviceListStale)
		}
		return err
	}
	return nil
}

// countDeviceList charges a first device list to ip, within its limit.
func (s *Store) countDeviceList(ctx context.Context, ip string) error {
	return s.update(ctx, s.listIP, hexKey(ip), func(v []byte) ([]byte, error) {
		n := 0
		if len(v) == 8 {
			n = int(binary.BigEndian.Uint64(v))
		}
		if n >= s.limits.DeviceListsPerIP {
			return nil, relaystore.ErrDeviceListQuota
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n+1)), nil
	})
}
