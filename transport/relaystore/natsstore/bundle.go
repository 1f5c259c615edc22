package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// Bundles and one-time prekeys on the cluster: each address's bundle is a
// value of PARLEY_BUNDLE, its pool the messages of its subject in
// PARLEY_OTK, one per prekey, taken by deleting the oldest by sequence.

// PutBundle implements relaystore.Store.
func (s *Store) PutBundle(ctx context.Context, address string, key [32]byte, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) (int, error) {
	k, err := s.Registered(ctx, address)
	if errors.Is(err, relaystore.ErrNotRegistered) || err == nil && k != key {
		return 0, fmt.Errorf("publish bundle of %s: %w", address, relaystore.ErrKeyMismatch)
	} else if err != nil {
		return 0, err
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	b.OneTimePreKey = nil
	enc, err := wire.EncodeBundle(b)
	if err != nil {
		return 0, fmt.Errorf("publish bundle of %s: %w", address, err)
	}
	hk := hexKey(address)
	if _, err := s.bundles.Put(ctx, hk, enc); err != nil {
		return 0, fmt.Errorf("publish bundle of %s: %w", address, err)
	}
	if len(oneTime) == 0 {
		return 0, nil
	}
	// Counted first (one request): a full pool takes nothing, and is not
	// read key by key to find that out.
	if n, err := s.OneTimePreKeys(ctx, address); err != nil {
		return 0, err
	} else if n >= s.limits.OneTimePreKeys {
		return 0, nil
	}
	have, err := s.poolIDs(ctx, hk)
	if err != nil {
		return 0, fmt.Errorf("publish one-time prekeys of %s: %w", address, err)
	}
	added := 0
	for _, otk := range oneTime {
		if len(have) >= s.limits.OneTimePreKeys {
			break
		}
		if have[otk.ID] {
			continue
		}
		msg := &nats.Msg{Subject: s.names.otk + hk, Data: otk.PublicKey[:], Header: nats.Header{}}
		msg.Header.Set(hdrOTK, strconv.FormatUint(uint64(otk.ID), 10))
		if _, err := s.js.PublishMsg(ctx, msg); err != nil {
			if isPerSubjectFull(err) {
				break
			}
			return added, fmt.Errorf("publish one-time prekeys of %s: %w", address, err)
		}
		have[otk.ID] = true
		added++
	}
	return added, nil
}

// poolIDs reads the IDs of the one-time prekeys in an address's pool.
func (s *Store) poolIDs(ctx context.Context, hk string) (map[uint32]bool, error) {
	ids := map[uint32]bool{}
	for seq := uint64(1); ; {
		m, err := s.otk.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(s.names.otk+hk))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return ids, nil
		} else if err != nil {
			return nil, err
		}
		if id, err := strconv.ParseUint(m.Header.Get(hdrOTK), 10, 32); err == nil {
			ids[uint32(id)] = true
		}
		seq = m.Sequence + 1
	}
}

// TakeBundle implements relaystore.Store. The oldest one-time prekey is the
// first message of the address's subject; deleting it is what hands it out,
// and only one of several relays racing for it succeeds.
func (s *Store) TakeBundle(ctx context.Context, address string, oneTime bool) (wire.Bundle, int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	hk := hexKey(address)
	e, err := s.bundles.Get(ctx, hk)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, relaystore.ErrNoBundle)
	} else if err != nil {
		return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, err)
	}
	b, err := wire.DecodeBundle(e.Value())
	if err != nil {
		return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, err)
	}
	for seq := uint64(1); oneTime; {
		m, err := s.otk.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(s.names.otk+hk))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		} else if err != nil {
			return wire.Bundle{}, 0, fmt.Errorf("fetch bundle of %s: %w", address, err)
		}
		if err := s.otk.DeleteMsg(ctx, m.Sequence); err != nil {
			seq = m.Sequence + 1 // another relay took it
			continue
		}
		id, err := strconv.ParseUint(m.Header.Get(hdrOTK), 10, 32)
		if err != nil || len(m.Data) != 32 {
			continue // not one of ours: gone now
		}
		k := wire.OneTimePreKeyPublic{ID: uint32(id)}
		copy(k.PublicKey[:], m.Data)
		b.OneTimePreKey = &k
		break
	}
	pool, err := s.OneTimePreKeys(ctx, address)
	if err != nil {
		return wire.Bundle{}, 0, err
	}
	return b, pool, nil
}

// OneTimePreKeys implements relaystore.Store.
func (s *Store) OneTimePreKeys(ctx context.Context, address string) (int, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	subj := s.names.otk + hexKey(address)
	info, err := s.otk.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return 0, fmt.Errorf("count one-time prekeys of %s: %w", address, err)
	}
	return int(info.State.Subjects[subj]), nil
}
