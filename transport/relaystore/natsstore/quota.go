package natsstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
)

// The quotas of an append, spent from this relay's grants of the counts
// (grant.go), and the frees of an acknowledgement or an expiry. The
// relay-wide totals are the mailbox streams' own, cached.

// spendQuotas charges copies envelopes of size bytes in all from from to
// recipient's counts, in the order of relaystore.Limits.QuotaError (the
// mailbox, the sender within it, the IP, the totals and the reserve) and
// then StrangerError's, each refusal with its error, and returns what
// gives it all back when the envelope is not stored after all. A refusal
// gives back what it spent before it returns.
func (s *Store) spendQuotas(ctx context.Context, recipient string, from relaystore.Origin, copies int, size int64) (func(), error) {
	l := s.limits
	amt := relaystore.Usage{Envelopes: copies, Bytes: size}
	var spent []string
	refund := func() {
		for _, k := range spent {
			s.ledger.refund(k, amt)
		}
	}
	try := func(key string, lim relaystore.Usage, full error) error {
		if err := s.ledger.spend(ctx, key, amt, lim, full); err != nil {
			refund()
			return err
		}
		spent = append(spent, key)
		return nil
	}
	if err := try(mailboxKey(recipient), relaystore.Usage{Envelopes: l.MailboxEnvelopes, Bytes: l.MailboxBytes}, relaystore.ErrMailboxFull); err != nil {
		return nil, err
	}
	if err := try(senderKey(recipient, from.Address), relaystore.Usage{Envelopes: l.SenderEnvelopes, Bytes: l.SenderBytes}, relaystore.ErrSenderQuota); err != nil {
		return nil, err
	}
	if from.IP != "" {
		if err := try(ipKey(from.IP), relaystore.Usage{Envelopes: l.IPEnvelopes, Bytes: l.IPBytes}, relaystore.ErrIPQuota); err != nil {
			return nil, err
		}
	}
	total, err := s.total(ctx)
	if err != nil {
		refund()
		return nil, err
	}
	after := plus(total, amt)
	if !within(after, relaystore.Usage{Envelopes: l.TotalEnvelopes, Bytes: l.TotalBytes}) {
		refund()
		return nil, relaystore.ErrStoreFull
	}
	if !within(after, relaystore.Usage{Envelopes: l.TotalEnvelopes - l.ReserveEnvelopes, Bytes: l.TotalBytes - l.ReserveBytes}) {
		// Into the reserve: only readers' mail, from an IP holding less
		// than a sixteenth of it, counted exactly.
		share := relaystore.Usage{Envelopes: l.ReserveEnvelopes / 16, Bytes: l.ReserveBytes / 16}
		if !from.ToReader || from.IP == "" {
			refund()
			return nil, relaystore.ErrReserve
		}
		if err := s.ledger.check(ctx, ipKey(from.IP), share, relaystore.ErrReserve); err != nil {
			refund()
			return nil, err
		}
	}
	if !from.Stranger {
		return refund, nil
	}
	keys := strangerKeys(recipient, from)
	if err := try(keys[0], relaystore.Usage{Envelopes: l.StrangerEnvelopes, Bytes: l.StrangerBytes}, relaystore.ErrStrangerRoom); err != nil {
		return nil, err
	}
	if len(keys) > 1 {
		if err := try(keys[1], relaystore.Usage{Envelopes: l.StrangerIPEnvelopes, Bytes: l.StrangerIPBytes}, relaystore.ErrStrangerIPShare); err != nil {
			return nil, err
		}
	}
	return refund, nil
}

// freeQuotas takes what held says off each count and returns once every
// count that needed a write is written: what this relay's grants take
// back costs nothing, the rest is written at once, a goroutine per count.
func (s *Store) freeQuotas(ctx context.Context, held map[string]relaystore.Usage) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for k, u := range held {
		rest := s.ledger.freeHere(k, u)
		if rest == (relaystore.Usage{}) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.ledger.free(ctx, k, rest); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// totalEvery is how old the cached totals of the mailbox stream may be:
// every append checks them, and reading them is a request to the stream's
// leader.
const totalEvery = 250 * time.Millisecond

// total returns what the mailbox streams hold in all (their messages and
// bytes, headers included) with the payload stream's bytes, from a cache
// at most totalEvery old. The total quota is a bound on the cluster, not
// an exact count: a counter updated by every append would make every
// relay contend on one key. It charges a shared payload (payload.go) as
// this relay appends its heads, once per head, but a refresh reads what
// the streams keep, the payload once: the relay-wide bound then holds what
// the cluster keeps, while every other count charges whole envelopes.
func (s *Store) total(ctx context.Context) (relaystore.Usage, error) {
	u, _, err := s.totals(ctx)
	return u, err
}

// totals returns total's figures and the bytes kept (Stats.Stored).
func (s *Store) totals(ctx context.Context) (relaystore.Usage, int64, error) {
	s.totalMu.Lock()
	if time.Since(s.totalAt) < totalEvery {
		defer s.totalMu.Unlock()
		return s.totalUse, s.totalKept, nil
	}
	s.totalMu.Unlock()
	// Not under the lock: a slow cluster must not stall the appends that
	// would find the cache fresh meanwhile.
	var all relaystore.Usage
	for _, sh := range s.shards {
		info, err := sh.stream.Info(ctx)
		if err != nil {
			return relaystore.Usage{}, 0, err
		}
		all.Envelopes += int(info.State.Msgs)
		all.Bytes += int64(info.State.Bytes)
	}
	info, err := s.payloads.Info(ctx)
	if err != nil {
		return relaystore.Usage{}, 0, err
	}
	all.Bytes += int64(info.State.Bytes)
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	s.totalUse, s.totalKept = all, all.Bytes
	s.totalAt = time.Now()
	return s.totalUse, s.totalKept, nil
}

// noteTotal adds what this relay just appended or deleted to the cached
// totals, so that its own changes count at once; the other relays' count at
// the next refresh. charged is what quotas charge (whole envelopes), kept
// what the streams hold of it.
func (s *Store) noteTotal(n int, charged, kept int64) {
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	s.totalUse.Envelopes = max(s.totalUse.Envelopes+n, 0)
	s.totalUse.Bytes = max(s.totalUse.Bytes+charged, 0)
	s.totalKept = max(s.totalKept+kept, 0)
}

// noteKept adds a shared payload's bytes, stored or deleted, to the
// cached bytes kept.
func (s *Store) noteKept(size int64) { s.noteTotal(0, 0, size) }
