package store

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

const (
	sqlPutContact    = "INSERT INTO contact (address, sealed_name) VALUES (?, ?) ON CONFLICT (address) DO UPDATE SET sealed_name = excluded.sealed_name"
	sqlDeleteContact = "DELETE FROM contact WHERE address = ?"
	sqlContacts      = "SELECT address, sealed_name FROM contact"
)

// setContact names a device, or forgets its name.
func (t *tx) setContact(ctx context.Context, p engine.SetContact) error {
	addr := p.Peer.String()
	if p.Name == "" {
		if _, err := t.run(ctx, "contact-delete", sqlDeleteContact, addr); err != nil {
			return fmt.Errorf("forget the name of %s: %w", addr, err)
		}
		return nil
	}
	if _, err := t.run(ctx, "contact-put", sqlPutContact, addr, t.db.seal.seal(kindContactName, []byte(addr), []byte(p.Name))); err != nil {
		return fmt.Errorf("name %s: %w", addr, err)
	}
	return nil
}

// Contacts returns the names given to devices.
func (db *DB) Contacts(ctx context.Context) (map[engine.Address]string, error) {
	if err := db.checkOpen("read contacts"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlContacts)
	if err != nil {
		return nil, db.readErr("read contacts", err)
	}
	defer rows.Close()
	out := map[engine.Address]string{}
	for rows.Next() {
		var addr string
		var sealed []byte
		if err := rows.Scan(&addr, &sealed); err != nil {
			return nil, db.readErr("read contacts", err)
		}
		a, err := engine.ParseAddress(addr)
		if err != nil {
			return nil, fmt.Errorf("store: contact %q: %w", addr, err)
		}
		name, err := db.seal.open(kindContactName, []byte(addr), sealed)
		if err != nil {
			return nil, fmt.Errorf("store: contact %s: %w", addr, err)
		}
		out[a] = string(name)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read contacts", err)
	}
	return out, nil
}
