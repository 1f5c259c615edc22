package natsstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Expire implements relaystore.Store. The mailbox stream holds every
// mailbox in the order the envelopes arrived, so the sweep reads it from its
// first message and stops at the first one young enough to stay. A row this
// process leased until after now is passed over; a row another relay leased
// may go, and its recipient's acknowledgement then finds nothing. Several
// relays may sweep at once: a row deleted by another is skipped, and each
// row lowers the totals once. With several shards each is swept in turn,
// within the one bound. Each call also settles the shared payloads that a
// relay which died left (sweepPayloads).
func (s *Store) Expire(ctx context.Context, now, before time.Time, max int) ([]relaystore.Removed, error) {
	var out []relaystore.Removed
	for _, sh := range s.shards {
		if len(out) >= max {
			break
		}
		got, err := s.expireShard(ctx, sh, now, before, max-len(out))
		out = append(out, got...)
		if err != nil {
			return out, err
		}
	}
	if err := s.sweepPayloads(ctx, now, before); err != nil {
		return out, fmt.Errorf("sweep shared payloads: %w", err)
	}
	return out, nil
}

func (s *Store) expireShard(ctx context.Context, sh shard, now, before time.Time, max int) ([]relaystore.Removed, error) {
	if max <= 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	info, err := sh.stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("expire envelopes: %w", err)
	}
	var out []relaystore.Removed
	// Leased rows are passed over, so bound the messages read in one call.
	for seq, read := info.State.FirstSeq, 0; len(out) < max && read < 4*max; read++ {
		m, err := sh.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(sh.root+"*"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		} else if err != nil {
			return out, fmt.Errorf("expire envelopes: %w", err)
		}
		if !m.Time.Before(before) {
			break
		}
		seq = m.Sequence + 1
		hexRecipient := strings.TrimPrefix(m.Subject, sh.root)
		r, err := hex.DecodeString(hexRecipient)
		if err != nil {
			continue
		}
		recipient := string(r)
		if l, ok := s.leases.Leased(recipient, []uint64{m.Sequence})[m.Sequence]; ok && now.Before(l.Until) {
			continue
		}
		if err := sh.stream.DeleteMsg(ctx, m.Sequence); err != nil {
			continue // deleted meanwhile
		}
		from := origin(m.Header)
		size, _, ref := stored(m.Header, m.Data)
		s.forgetHead(ctx, recipient, m.Sequence, relaystore.Lease{From: from, Size: size, Shared: ref})
		s.leases.Forget(recipient, []uint64{m.Sequence})
		out = append(out, relaystore.Removed{Recipient: recipient, Row: m.Sequence, Sender: from.Address, Envelope: from.Envelope})
		held := map[string]relaystore.Usage{}
		for _, k := range usageKeys(recipient, from) {
			held[k] = relaystore.Usage{Envelopes: 1, Bytes: int64(size)}
		}
		if err := s.freeQuotas(ctx, held); err != nil {
			return out, fmt.Errorf("expire envelopes: count it: %w", err)
		}
	}
	return out, nil
}
