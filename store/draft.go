package store

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

var _ engine.DraftStore = (*DB)(nil)

const (
	sqlPutDraft    = "INSERT INTO draft (address, sealed_text) VALUES (?, ?) ON CONFLICT (address) DO UPDATE SET sealed_text = excluded.sealed_text"
	sqlDeleteDraft = "DELETE FROM draft WHERE address = ?"
	sqlDrafts      = "SELECT address, sealed_text FROM draft"
)

// setDraft keeps the draft to a device, or forgets it.
func (t *tx) setDraft(ctx context.Context, p engine.SetDraft) error {
	addr := p.Peer.String()
	if p.Text == "" {
		if _, err := t.run(ctx, "draft-delete", sqlDeleteDraft, addr); err != nil {
			return fmt.Errorf("forget the draft to %s: %w", addr, err)
		}
		return nil
	}
	if _, err := t.run(ctx, "draft-put", sqlPutDraft, addr, t.db.seal.seal(kindDraft, []byte(addr), []byte(p.Text))); err != nil {
		return fmt.Errorf("keep the draft to %s: %w", addr, err)
	}
	return nil
}

// Drafts returns the draft of each conversation that has one.
func (db *DB) Drafts(ctx context.Context) (map[engine.Address]string, error) {
	if err := db.checkOpen("read drafts"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlDrafts)
	if err != nil {
		return nil, db.readErr("read drafts", err)
	}
	defer rows.Close()
	out := map[engine.Address]string{}
	for rows.Next() {
		var addr string
		var sealed []byte
		if err := rows.Scan(&addr, &sealed); err != nil {
			return nil, db.readErr("read drafts", err)
		}
		a, err := engine.ParseAddress(addr)
		if err != nil {
			return nil, fmt.Errorf("store: draft %q: %w", addr, err)
		}
		text, err := db.seal.open(kindDraft, []byte(addr), sealed)
		if err != nil {
			return nil, fmt.Errorf("store: draft to %s: %w", addr, err)
		}
		out[a] = string(text)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read drafts", err)
	}
	return out, nil
}
