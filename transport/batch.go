package transport

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

var _ engine.BatchSubmitter = (*Conn)(nil)

// SubmitBatch implements engine.BatchSubmitter: it writes every envelope in
// order on the one connection before waiting for any answer, so a batch
// costs one round trip instead of one per envelope. When the relay
// announced wire.FeatureSubmitBatch the envelopes go in SubmitBatch
// messages of up to wire.MaxSubmitBatchEnvelopes and wire.MaxSubmitBatchBytes
// (an envelope too large for one goes alone in a Submit); otherwise one
// Submit each. Each result is what Submit would have returned for that
// envelope.
func (c *Conn) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	errs := make([]error, len(envs))
	cc, err := c.conn()
	if err != nil {
		return failFrom(envs, errs, 0, err)
	}
	features, _ := c.RelayFeatures()
	batched := features.Has(wire.FeatureSubmitBatch)
	var reqs []batchReq
	for i, env := range envs {
		b, err := wire.EncodeEnvelope(env)
		if err != nil {
			errs[i] = fmt.Errorf("submit: %w", err)
			continue
		}
		if n := len(reqs); batched && n > 0 && reqs[n-1].fits(len(b)) {
			reqs[n-1].add(i, b)
			continue
		}
		r := batchReq{}
		r.add(i, b)
		reqs = append(reqs, r)
	}
	sent := 0
	defer func() {
		for _, r := range reqs[:sent] {
			cc.forget(r.req)
		}
	}()
	for k := range reqs {
		r := &reqs[k]
		var m wire.RelayMessage = wire.Submit{Envelope: r.envs[0]}
		if batched && len(r.envs) > 1 {
			m = wire.SubmitBatch{Envelopes: r.envs}
		}
		r.req = c.nextReq()
		frame, err := wire.EncodeRelay(r.req, m)
		if err != nil {
			for _, i := range r.idx {
				errs[i] = fmt.Errorf("submit: %w", err)
			}
			r.idx = nil
			continue
		}
		r.reply = make(chan wire.RelayMessage, 1)
		if !cc.await(r.req, r.reply) {
			return failFrom(envs, errs, r.idx[0], cc.lost())
		}
		sent = k + 1
		select {
		case cc.out <- frame:
		case <-cc.done:
			return failFrom(envs, errs, r.idx[0], cc.lost())
		case <-ctx.Done():
			return failFrom(envs, errs, r.idx[0], ctx.Err())
		}
	}
	for _, r := range reqs[:sent] {
		if len(r.idx) == 0 {
			continue
		}
		select {
		case m := <-r.reply:
			r.results(envs, errs, m)
		case <-cc.done:
			return failFrom(envs, errs, r.idx[0], cc.lost())
		case <-ctx.Done():
			return failFrom(envs, errs, r.idx[0], ctx.Err())
		}
	}
	return errs
}

// failFrom sets err on every envelope from the from'th on that has no
// result yet.
func failFrom(envs []wire.Envelope, errs []error, from int, err error) []error {
	for i := from; i < len(envs); i++ {
		if errs[i] == nil {
			errs[i] = fmt.Errorf("submit envelope %x: %w", envs[i].ID[:4], err)
		}
	}
	return errs
}

// batchReq is one request of a SubmitBatch call: a Submit, or a
// SubmitBatch of consecutive envelopes.
type batchReq struct {
	idx   []int // the envelopes' indexes in the call
	envs  [][]byte
	size  int
	req   uint32
	reply chan wire.RelayMessage
}

func (r *batchReq) add(i int, env []byte) {
	r.idx, r.envs, r.size = append(r.idx, i), append(r.envs, env), r.size+len(env)
}

// fits reports whether an encoded envelope of n bytes can join the batch.
func (r *batchReq) fits(n int) bool {
	return len(r.envs) < wire.MaxSubmitBatchEnvelopes && r.size+n <= wire.MaxSubmitBatchBytes
}

// results sets the errors of the request's envelopes from the relay's
// answer m.
func (r *batchReq) results(envs []wire.Envelope, errs []error, m wire.RelayMessage) {
	if len(r.envs) == 1 {
		errs[r.idx[0]] = submitResult(envs[r.idx[0]], m)
		return
	}
	switch m := m.(type) {
	case wire.BatchResults:
		if len(m.Results) != len(r.idx) {
			for _, i := range r.idx {
				errs[i] = fmt.Errorf("submit envelope %x: relay answered a batch of %d with %d results", envs[i].ID[:4], len(r.idx), len(m.Results))
			}
			return
		}
		for k, i := range r.idx {
			errs[i] = batchResult(envs[i], m.Results[k])
		}
	case wire.Error:
		for _, i := range r.idx {
			errs[i] = &ServerError{Code: m.Code, Message: m.Message}
		}
	default:
		for _, i := range r.idx {
			errs[i] = unexpected(wire.RelaySubmitBatch, m)
		}
	}
}

// batchResult interprets the relay's result for one envelope of a
// SubmitBatch as submitResult does the answer to a Submit.
func batchResult(env wire.Envelope, r wire.SubmitResult) error {
	if r.EnvelopeID != env.ID {
		return fmt.Errorf("submit envelope %x: relay answered for %x", env.ID[:4], r.EnvelopeID[:4])
	}
	if reason, ok := r.Outcome.Refused(); ok {
		return &RefusedError{EnvelopeID: r.EnvelopeID, Reason: reason}
	}
	if r.Outcome == wire.SubmitFailed {
		return &ServerError{Code: wire.ErrorInternal, Message: "the relay could not store the envelope"}
	}
	return nil
}

// submitResult interprets the relay's answer to one Submit.
func submitResult(env wire.Envelope, r wire.RelayMessage) error {
	switch r := r.(type) {
	case wire.Accepted:
		if r.EnvelopeID != env.ID {
			return fmt.Errorf("submit envelope %x: relay accepted %x", env.ID[:4], r.EnvelopeID[:4])
		}
		return nil
	case wire.Refused:
		return &RefusedError{EnvelopeID: r.EnvelopeID, Reason: r.Reason}
	case wire.Error:
		return &ServerError{Code: r.Code, Message: r.Message}
	}
	return unexpected(wire.RelaySubmit, r)
}
