package natsstore

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parley-chat/parley/transport/relaystore"
)

// Requests counts the messages the store's connection sent (each request to
// the cluster is one), for tests of what an operation costs.
func (s *Store) Requests() uint64 { return s.nc.Stats().OutMsgs }

// ReturnGrants returns every grant this relay holds of the usage counts, as
// it does once they fall idle.
func (s *Store) ReturnGrants() {
	l := s.ledger
	l.mu.Lock()
	var keys []string
	for k, c := range l.counts {
		if c.granted != (relaystore.Usage{}) {
			keys = append(keys, k)
		}
	}
	l.mu.Unlock()
	l.each(keys, func(k string) { l.tend(k, true) })
}

// SenderGrant is what this relay holds granted of sender's count in
// recipient's mailbox, spent or not.
func (s *Store) SenderGrant(recipient, sender string) relaystore.Usage {
	s.ledger.mu.Lock()
	defer s.ledger.mu.Unlock()
	if c := s.ledger.counts[senderKey(recipient, sender)]; c != nil {
		return c.granted
	}
	return relaystore.Usage{}
}

// Crash ends the store without returning its grants, as a relay killed
// with SIGKILL would: they stay in the records until they expire.
func (s *Store) Crash() {
	s.ledger.sub.Unsubscribe()
	close(s.ledger.stop)
	<-s.ledger.done
	s.ledger.sub = nil // Close returns nothing then
	s.Close()
}

// Kept is what the store's streams keep, read from the cluster now: the
// mailbox streams', the payload stream's and the payload records' bytes
// (subjects, headers and JetStream's own overhead included).
func (s *Store) Kept(ctx context.Context) (int64, error) {
	streams := []jetstream.Stream{s.payloads, s.payrefs}
	for _, sh := range s.shards {
		streams = append(streams, sh.stream)
	}
	var n int64
	for _, st := range streams {
		info, err := st.Info(ctx)
		if err != nil {
			return 0, err
		}
		n += int64(info.State.Bytes)
	}
	return n, nil
}

// Payloads counts the shared payloads and their records the cluster
// holds.
func (s *Store) Payloads(ctx context.Context) (payloads, records uint64, err error) {
	p, err := s.payloads.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	r, err := s.payrefs.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return p.State.Msgs, r.State.Msgs, nil
}

// PayloadGrace is how long a pending record waits for the sweep.
const PayloadGrace = payloadGrace

// StorePayloadOnly does what an AppendBatch of items sharing p does before
// it publishes their heads, as a relay that died there would leave it.
func (s *Store) StorePayloadOnly(ctx context.Context, p []byte) error {
	return s.preparePayload(ctx, p).err
}

// AppendUnfinished stores the payload the items share and their heads,
// charged to no quota, but leaves the payload's record pending, as a
// relay that died before it answered would; finish does what that relay
// would have done next (a relay that was only slow).
func (s *Store) AppendUnfinished(ctx context.Context, items []relaystore.AppendItem) (finish func() error, err error) {
	sp := s.preparePayload(ctx, items[0].Shared.Payload)
	if sp.err != nil {
		return nil, sp.err
	}
	for _, it := range items {
		msg := s.envelopeMsg(it.Recipient, it.Env, it.From)
		msg.Header.Set(hdrPayload, payloadRef(sp.id, sp.size))
		ack, err := s.js.PublishMsg(ctx, msg)
		if err != nil {
			return nil, err
		}
		sp.rows = append(sp.rows, rowRef{shard: s.shardIndex(it.Recipient), row: ack.Sequence})
	}
	return func() error { return s.finishPayload(ctx, sp) }, nil
}

// ErrRecordGone is errRecordGone.
var ErrRecordGone = errRecordGone

// DeleteRowOnly deletes a row of recipient's mailbox without taking it
// off its payload's record, as a relay that died between the two would.
func (s *Store) DeleteRowOnly(ctx context.Context, recipient string, row uint64) error {
	return s.shardOf(recipient).stream.DeleteMsg(ctx, row)
}
