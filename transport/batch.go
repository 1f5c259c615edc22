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
// costs one round trip instead of one per envelope. Each result is what
// Submit would have returned for that envelope.
func (c *Conn) SubmitBatch(ctx context.Context, envs []wire.Envelope) []error {
	errs := make([]error, len(envs))
	fail := func(from int, err error) []error {
		for i := from; i < len(envs); i++ {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("submit envelope %x: %w", envs[i].ID[:4], err)
			}
		}
		return errs
	}
	cc, err := c.conn()
	if err != nil {
		return fail(0, err)
	}
	replies := make([]chan wire.RelayMessage, len(envs))
	reqs := make([]uint32, len(envs))
	defer func() {
		for i, ch := range replies {
			if ch != nil {
				cc.forget(reqs[i])
			}
		}
	}()
	sent := 0
	for i, env := range envs {
		b, err := wire.EncodeEnvelope(env)
		if err != nil {
			errs[i] = fmt.Errorf("submit: %w", err)
			continue
		}
		req := c.nextReq()
		frame, err := wire.EncodeRelay(req, wire.Submit{Envelope: b})
		if err != nil {
			errs[i] = fmt.Errorf("submit: %w", err)
			continue
		}
		reply := make(chan wire.RelayMessage, 1)
		if !cc.await(req, reply) {
			return fail(i, cc.lost())
		}
		replies[i], reqs[i] = reply, req
		select {
		case cc.out <- frame:
			sent = i + 1
		case <-cc.done:
			return fail(i, cc.lost())
		case <-ctx.Done():
			return fail(i, ctx.Err())
		}
	}
	for i := 0; i < sent; i++ {
		if replies[i] == nil {
			continue
		}
		select {
		case r := <-replies[i]:
			errs[i] = submitResult(envs[i], r)
		case <-cc.done:
			return fail(i, cc.lost())
		case <-ctx.Done():
			return fail(i, ctx.Err())
		}
	}
	return errs
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
