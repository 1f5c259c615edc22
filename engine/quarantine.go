package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// The quarantine holds the envelopes that could not be processed: each
// staged row that got a verdict other than processing (malformed, forged,
// over a bound, unreadable state) keeps its envelope there with its reason,
// within the store's bounds (the oldest evicted first), for a person to look
// at and clear. Nothing in it is ever processed again; a sender that still
// wants its message delivered retries.

// QuarantinedEnvelope is one envelope in quarantine: its staging row, when
// it arrived and was quarantined, why, its size, and the sender its
// envelope names (empty when it does not decode).
type QuarantinedEnvelope struct {
	Row           int64
	ReceivedAt    time.Time
	QuarantinedAt time.Time
	Reason        string
	Size          int
	Sender        string
}

// ClearQuarantine deletes the quarantined envelopes up to row Through (all
// of them for 0).
type ClearQuarantine struct{ Through int64 }

func (ClearQuarantine) plan() {}

// Kind implements Plan.
func (ClearQuarantine) Kind() string { return "quarantine-clear" }

// Quarantine pages the quarantined envelopes, oldest first, after row
// after, at most limit.
func (c *Client) Quarantine(ctx context.Context, after int64, limit int) ([]QuarantinedEnvelope, error) {
	rows, err := c.store.Quarantined(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i].Envelope == nil {
			continue
		}
		if env, err := wire.DecodeEnvelope(rows[i].Envelope); err == nil {
			rows[i].Sender = wire.EscapeControls(env.Sender)
		}
	}
	out := make([]QuarantinedEnvelope, len(rows))
	for i, r := range rows {
		out[i] = r.QuarantinedEnvelope
	}
	return out, nil
}

// QuarantinedRow is what a Store keeps of a quarantined envelope: the
// envelope itself when it still unseals.
type QuarantinedRow struct {
	QuarantinedEnvelope
	Envelope []byte
}

// ClearQuarantine deletes every quarantined envelope up to row through (all
// of them for 0) and reports how many it deleted.
func (c *Client) ClearQuarantine(ctx context.Context, through int64) (int, error) {
	r, err := c.store.Apply(ctx, ClearQuarantine{Through: through})
	if err != nil {
		return 0, fmt.Errorf("clear the quarantine: %w", err)
	}
	return r.Evicted, nil
}
