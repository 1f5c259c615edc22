package natsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Lease implements relaystore.Store: the mailbox's messages in stream order,
// skipping those this process has leased, read from the recipient's cursor
// (relaystore.Leases.Begin) without holding the lease table's lock.
func (s *Store) Lease(ctx context.Context, recipient, holder string, max int, now, until time.Time) ([]relaystore.Row, error) {
	if max <= 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	sh := s.shardOf(recipient)
	subj := sh.root + hexKey(recipient)
	held, after, gen := s.leases.Begin(recipient, now)
	var rows []relaystore.Row
	var cands []relaystore.Candidate
	readTo := after
	for seq := after + 1; len(rows) < max; {
		m, err := sh.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("lease from %s: %w", recipient, err)
		}
		seq, readTo = m.Sequence+1, m.Sequence
		if _, ok := held[m.Sequence]; ok {
			continue
		}
		rows = append(rows, relaystore.Row{ID: m.Sequence, Envelope: m.Data, Accepted: m.Time})
		cands = append(cands, relaystore.Candidate{Row: m.Sequence, From: origin(m.Header), Size: len(m.Data)})
	}
	claimed := s.leases.Claim(recipient, holder, now, until, cands, gen, readTo)
	if len(claimed) == len(rows) {
		return rows, nil
	}
	// Another connection of the recipient claimed some meanwhile.
	ok := make(map[uint64]bool, len(claimed))
	for _, c := range claimed {
		ok[c.Row] = true
	}
	out := rows[:0]
	for _, r := range rows {
		if ok[r.ID] {
			out = append(out, r)
		}
	}
	return out, nil
}
