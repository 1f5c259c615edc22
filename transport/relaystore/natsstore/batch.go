package natsstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/parley-chat/parley/transport/relaystore"
)

// AppendBatch implements relaystore.Store with the batch's publishes in
// flight together: each item's quotas are spent as Append spends them, in
// order, its copies published without waiting (JetStream's asynchronous
// publish, one connection, so the stream orders them as they were sent),
// and then every acknowledgement is awaited. An item's result is its rows
// only once the stream acknowledged each; a publish that fails gives back
// what it spent, as Append does.
func (s *Store) AppendBatch(ctx context.Context, items []relaystore.AppendItem) []relaystore.AppendResult {
	out := make([]relaystore.AppendResult, len(items))
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	type inFlight struct {
		i       int
		futures []jetstream.PubAckFuture
		err     error // a publish that could not even be sent
		refund  func()
	}
	var sent []inFlight
	// A shared payload (AppendItem.Shared) is not kept once here: each
	// mailbox's message is a whole envelope, as for an envelope of its
	// own. Keeping it once would need a stream of payloads and a count of
	// the entries left on each, which JetStream does not keep atomically
	// with the entries (docs/relay.md).
	items = slices.Clone(items)
	for i := range items {
		if items[i].Shared != nil {
			items[i].Env, items[i].Shared = items[i].Envelope(), nil
		}
	}
	for i, it := range items {
		if it.Copies < 1 {
			out[i].Err = fmt.Errorf("append to %s: %d copies", it.Recipient, it.Copies)
			continue
		}
		if _, err := s.Registered(ctx, it.Recipient); err != nil {
			out[i].Err = fmt.Errorf("append to %s: %w", it.Recipient, err)
			continue
		}
		refund, err := s.spendQuotas(ctx, it.Recipient, it.From, it.Copies, int64(len(it.Env))*int64(it.Copies))
		if err != nil {
			out[i].Err = fmt.Errorf("append to %s: %w", it.Recipient, err)
			continue
		}
		f := inFlight{i: i, refund: refund}
		for range it.Copies {
			fut, err := s.js.PublishMsgAsync(s.envelopeMsg(it.Recipient, it.Env, it.From))
			if err != nil {
				f.err = err
				break
			}
			f.futures = append(f.futures, fut)
		}
		sent = append(sent, f)
	}
	for _, f := range sent {
		it := items[f.i]
		rows := make([]uint64, 0, len(f.futures))
		err := f.err
		for _, fut := range f.futures {
			select {
			case ack := <-fut.Ok():
				rows = append(rows, ack.Sequence)
				s.noteTotal(1, int64(len(it.Env)))
				s.tails.note(it.Recipient, ack.Sequence)
			case perr := <-fut.Err():
				if err == nil {
					err = perr
				}
			case <-ctx.Done():
				if err == nil {
					err = ctx.Err()
				}
			}
		}
		if err == nil {
			out[f.i].Rows = rows
			continue
		}
		if isPerSubjectFull(err) {
			err = relaystore.ErrMailboxFull
		}
		if len(rows) == 0 {
			f.refund()
		} else {
			s.refundPart(it.Recipient, it.From, it.Copies-len(rows), int64(len(it.Env))*int64(it.Copies-len(rows)))
		}
		out[f.i].Err = fmt.Errorf("append to %s: %w", it.Recipient, err)
	}
	return out
}
