package natsstore

import (
	"context"
	"fmt"

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
//
// Items that share a payload (AppendItem.Shared) keep it once
// (payload.go): the payload is stored before the first of their heads is
// published, each mailbox's message is the item's head, and the items are
// answered only once the payload's record lists the heads stored. Quotas
// charge each head its whole envelope.
func (s *Store) AppendBatch(ctx context.Context, items []relaystore.AppendItem) []relaystore.AppendResult {
	out := make([]relaystore.AppendResult, len(items))
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	type inFlight struct {
		i       int
		futures []jetstream.PubAckFuture
		err     error // a publish that could not even be sent
		refund  func()
		sp      *shared // the payload the item's heads point at, if any
		rows    []uint64
	}
	var sent []inFlight
	kept := map[*relaystore.SharedPayload]*shared{}
	for i, it := range items {
		if it.Copies < 1 {
			out[i].Err = fmt.Errorf("append to %s: %d copies", it.Recipient, it.Copies)
			continue
		}
		if _, err := s.Registered(ctx, it.Recipient); err != nil {
			out[i].Err = fmt.Errorf("append to %s: %w", it.Recipient, err)
			continue
		}
		refund, err := s.spendQuotas(ctx, it.Recipient, it.From, it.Copies, int64(it.Size())*int64(it.Copies))
		if err != nil {
			out[i].Err = fmt.Errorf("append to %s: %w", it.Recipient, err)
			continue
		}
		f := inFlight{i: i, refund: refund}
		if it.Shared != nil {
			// The payload is stored with the first item that passed its
			// quotas, so that a batch refused whole stores none.
			if f.sp = kept[it.Shared]; f.sp == nil {
				f.sp = s.preparePayload(ctx, it.Shared.Payload)
				kept[it.Shared] = f.sp
			}
			if f.sp.err != nil {
				refund()
				out[i].Err = fmt.Errorf("append to %s: %w", it.Recipient, f.sp.err)
				continue
			}
		}
		for range it.Copies {
			msg := s.envelopeMsg(it.Recipient, it.Env, it.From)
			if f.sp != nil {
				msg.Header.Set(hdrPayload, payloadRef(f.sp.id, f.sp.size))
			}
			fut, err := s.js.PublishMsgAsync(msg)
			if err != nil {
				f.err = err
				break
			}
			f.futures = append(f.futures, fut)
		}
		sent = append(sent, f)
	}
	for j := range sent {
		f := &sent[j]
		it := items[f.i]
		err := f.err
		for _, fut := range f.futures {
			select {
			case ack := <-fut.Ok():
				f.rows = append(f.rows, ack.Sequence)
				s.noteTotal(1, int64(it.Size()), int64(len(it.Env)))
				s.tails.note(it.Recipient, ack.Sequence)
				if f.sp != nil {
					f.sp.rows = append(f.sp.rows, rowRef{shard: s.shardIndex(it.Recipient), row: ack.Sequence})
				}
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
			continue
		}
		if isPerSubjectFull(err) {
			err = relaystore.ErrMailboxFull
		}
		if len(f.rows) == 0 {
			f.refund()
		} else {
			s.refundPart(it.Recipient, it.From, it.Copies-len(f.rows), int64(it.Size())*int64(it.Copies-len(f.rows)))
		}
		out[f.i].Err = fmt.Errorf("append to %s: %w", it.Recipient, err)
	}
	// The payloads' records list their heads; a payload whose record the
	// sweep took meanwhile fails its items, whose heads are deleted. This
	// runs to its end even when the caller's context ended: the heads stored
	// are settled either way.
	ctx, cancelSettle := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancelSettle()
	failed := map[*shared]error{}
	for _, sp := range kept {
		if sp.err == nil {
			if err := s.finishPayload(ctx, sp); err != nil {
				failed[sp] = err
			}
		}
	}
	for _, f := range sent {
		switch ferr, bad := failed[f.sp]; {
		case f.sp != nil && bad && out[f.i].Err == nil:
			it := items[f.i]
			sh := s.shardOf(it.Recipient)
			for _, row := range f.rows {
				sh.stream.DeleteMsg(ctx, row) // or a lease drops it, its payload missing
				s.noteTotal(-1, -int64(it.Size()), -int64(len(it.Env)))
			}
			f.refund()
			out[f.i].Err = fmt.Errorf("append to %s: %w", it.Recipient, ferr)
		case out[f.i].Err == nil:
			out[f.i].Rows = f.rows
		}
	}
	return out
}
