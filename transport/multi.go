package transport

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// SubmitMulti hands the relay one payload for several mailboxes: one
// wire.SubmitMulti when the relay announced wire.FeatureSubmitMulti,
// otherwise (or when the relay refused every mailbox as too large, which a
// relay that keeps one envelope per mailbox does past its copy bound) one
// envelope per mailbox through SubmitBatch. It returns one result per
// mailbox, in m's order, each what Submit would have returned for that
// mailbox's envelope (m.Envelope(i)).
func (c *Conn) SubmitMulti(ctx context.Context, m wire.SubmitMulti) []error {
	envs := make([]wire.Envelope, len(m.Mailboxes))
	for i := range envs {
		envs[i] = m.Envelope(i)
	}
	if features, _ := c.RelayFeatures(); !features.Has(wire.FeatureSubmitMulti) {
		return c.SubmitBatch(ctx, envs)
	}
	errs := make([]error, len(envs))
	r, err := c.call(ctx, m)
	if err != nil {
		return failFrom(envs, errs, 0, err)
	}
	res, ok := r.(wire.BatchResults)
	if !ok {
		return failFrom(envs, errs, 0, unexpected(wire.RelaySubmitMulti, r))
	}
	if len(res.Results) != len(envs) {
		return failFrom(envs, errs, 0, fmt.Errorf("relay answered %d mailboxes with %d results", len(envs), len(res.Results)))
	}
	tooLarge := 0
	for i := range envs {
		if reason, ok := res.Results[i].Outcome.Refused(); ok && reason == wire.RefuseTooLarge {
			tooLarge++
		}
		errs[i] = batchResult(envs[i], res.Results[i])
	}
	if tooLarge == len(envs) {
		return c.SubmitBatch(ctx, envs)
	}
	return errs
}
