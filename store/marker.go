package store

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

// Keys of the meta table that hold counters, each 8 bytes big-endian.
const (
	metaNextPreKeyID     = "next_prekey_id"     // the next unused prekey ID
	metaOneTimePublished = "one_time_published" // the highest one-time prekey ID the relay has
	metaMarkerWritten    = "marker_written"     // raised by every visible transition
	metaMarkerPresented  = "marker_presented"   // raised by MarkPresented
)

const (
	// sqlInsertMeta writes a key that must not be there yet.
	sqlInsertMeta = "INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING"
	// sqlSwapMeta writes v under k only if k holds ?3 (NULL: k is absent).
	sqlSwapMeta = "INSERT INTO meta (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v WHERE meta.v IS ?3"
)

func encodeUint(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func decodeUint(k string, b []byte) (uint64, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("store: read %s: %d bytes: %w", k, len(b), engine.ErrMalformedState)
	}
	return binary.BigEndian.Uint64(b), nil
}

// readUint reads a counter of meta in a plan (0 when absent) and returns its
// stored bytes for swapUint.
func (t *tx) readUint(ctx context.Context, name, k string) (uint64, []byte, error) {
	var b []byte
	if _, err := t.scan(ctx, name, sqlGetMeta, []any{k}, &b); err != nil {
		return 0, nil, err
	}
	v, err := decodeUint(k, b)
	return v, b, err
}

// swapUint writes a counter of meta if it still holds old (nil: absent).
func (t *tx) swapUint(ctx context.Context, name, k string, old []byte, v uint64) error {
	var oldArg any // NULL for an absent key
	if old != nil {
		oldArg = old
	}
	if _, err := t.runOne(ctx, name, engine.ErrConflict, sqlSwapMeta, k, encodeUint(v), oldArg); err != nil {
		return fmt.Errorf("write %s: %w", k, err)
	}
	return nil
}

// raiseUint sets a counter of meta to v, which must be above its value.
func (t *tx) raiseUint(ctx context.Context, name, k string, v uint64) error {
	cur, old, err := t.readUint(ctx, name+"-read", k)
	if err != nil {
		return err
	}
	if v <= cur {
		return fmt.Errorf("%s would go from %d to %d: %w", k, cur, v, engine.ErrConflict)
	}
	return t.swapUint(ctx, name+"-write", k, old, v)
}

// visible raises the presentation marker for a visible transition and
// returns its receipt.
func (t *tx) visible(ctx context.Context) (engine.Receipt, error) {
	m, err := t.bumpMarker(ctx)
	return engine.Receipt{Marker: m}, err
}

// bumpMarker raises marker_written by one, in the transaction of the visible
// transition it marks, and returns the new value.
//
// The transaction reads the marker once, raises it in memory for each plan
// and writes it once, before the commit (flushMarker): a batch of 64 plans
// costs two statements, not 128.
func (t *tx) bumpMarker(ctx context.Context) (uint64, error) {
	m := &t.marker
	if !m.loaded {
		cur, old, err := t.readUint(ctx, "marker-read", metaMarkerWritten)
		if err != nil {
			return 0, err
		}
		m.loaded, m.cur, m.old = true, cur, old
	}
	m.cur++
	m.plan, m.kind = t.plan, t.kind
	return m.cur, nil
}

// markerWritten is marker_written as this transaction sees it.
func (t *tx) markerWritten(ctx context.Context) (uint64, error) {
	if t.marker.loaded {
		return t.marker.cur, nil
	}
	v, _, err := t.readUint(ctx, "marker-written-read", metaMarkerWritten)
	return v, err
}

// flushMarker writes the marker the transaction raised; it fails the batch
// in the name of the last plan that raised it.
func (t *tx) flushMarker(ctx context.Context) (failedPlan int, _ error) {
	m := &t.marker
	if m.kind == "" {
		return -1, nil
	}
	t.kind = m.kind
	if err := t.swapUint(ctx, "marker-write", metaMarkerWritten, m.old, m.cur); err != nil {
		return m.plan, err
	}
	m.old, m.kind = encodeUint(m.cur), ""
	return -1, nil
}

// markPresented raises marker_presented to p.Seq; it never goes down, nor
// above the marker written.
func (t *tx) markPresented(ctx context.Context, p engine.MarkPresented) error {
	written, err := t.markerWritten(ctx)
	if err != nil {
		return err
	}
	if p.Seq > written {
		return fmt.Errorf("presented up to %d, written up to %d: %w", p.Seq, written, engine.ErrConflict)
	}
	cur, old, err := t.readUint(ctx, "marker-presented-read", metaMarkerPresented)
	if err != nil {
		return err
	}
	if p.Seq <= cur {
		return nil
	}
	return t.swapUint(ctx, "marker-presented-write", metaMarkerPresented, old, p.Seq)
}
