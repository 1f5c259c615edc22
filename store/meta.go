package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

// Keys of the meta table.
const (
	metaKDF        = "kdf"         // kdfRecord: Argon2id parameters and salt
	metaStorageKey = "storage_key" // the storage key sealed under the passphrase key
	metaAddress    = "address"     // own device address, user/device
	metaRelayURL   = "relay_url"   // the relay this device uses
	metaRelayID    = "relay_id"    // the relay's pinned ID (32 bytes), absent until pinned
	metaRelayCA    = "relay_ca"    // PEM certificates of a private CA, absent for the system roots
	metaLinkedBy   = "linked_by"   // u32 big-endian: the device that linked this one, absent when not named
)

// pinRelay pins the relay ID when the URL is still the one the connection
// used and no other ID is pinned.
func (t *tx) pinRelay(ctx context.Context, p engine.PinRelay) error {
	url, err := getMeta(ctx, t.tx, metaRelayURL)
	if err != nil {
		return err
	}
	if string(url) != p.URL {
		return fmt.Errorf("pin relay: the relay URL changed to %q meanwhile: %w", url, engine.ErrConflict)
	}
	id, err := getMeta(ctx, t.tx, metaRelayID)
	if err != nil {
		return err
	}
	switch {
	case id == nil:
		return t.putMeta(ctx, metaRelayID, p.ID[:])
	case string(id) != string(p.ID[:]):
		return fmt.Errorf("pin relay: another relay ID is pinned: %w", engine.ErrConflict)
	}
	return nil
}

// setRelay replaces the relay settings.
func (t *tx) setRelay(ctx context.Context, p engine.SetRelay) error {
	if err := t.putMeta(ctx, metaRelayURL, []byte(p.Relay.URL)); err != nil {
		return err
	}
	for _, kv := range []struct {
		k string
		v []byte
	}{{metaRelayID, p.Relay.ID[:]}, {metaRelayCA, p.Relay.CA}} {
		if kv.k == metaRelayID && p.Relay.ID == ([32]byte{}) || len(kv.v) == 0 {
			if _, err := t.exec(ctx, sqlDeleteMeta, kv.k); err != nil {
				return fmt.Errorf("store: write %s: %w", kv.k, err)
			}
			continue
		}
		if err := t.putMeta(ctx, kv.k, kv.v); err != nil {
			return err
		}
	}
	return nil
}

const (
	sqlGetMeta    = "SELECT v FROM meta WHERE k = ?"
	sqlPutMeta    = "INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
	sqlDeleteMeta = "DELETE FROM meta WHERE k = ?"
)

// getMeta returns the value under k, or nil if there is none.
func getMeta(ctx context.Context, q querier, k string) ([]byte, error) {
	var v []byte
	err := q.QueryRowContext(ctx, sqlGetMeta, k).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: read %s: %w", k, mapErr(err))
	}
	if v == nil {
		v = []byte{} // present but empty
	}
	return v, nil
}

// putMeta sets the value under k.
func (t *tx) putMeta(ctx context.Context, k string, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	if _, err := t.exec(ctx, sqlPutMeta, k, v); err != nil {
		return fmt.Errorf("store: write %s: %w", k, err)
	}
	return nil
}

// settings is the profile's own address and relay URL, the part of
// engine.Profile kept in meta.
type settings struct {
	// address is this device's address; zero until the profile is
	// initialised.
	address engine.Address
	// relayURL is the relay this device uses; empty until initialised.
	relayURL string
}

// settings reads the profile's own address and relay URL.
func (db *DB) settings(ctx context.Context) (settings, error) {
	if db.closed.Load() {
		return settings{}, fmt.Errorf("store: read settings: %w", engine.ErrClosed)
	}
	var st settings
	addr, err := getMeta(ctx, db.sql, metaAddress)
	if err != nil {
		return settings{}, err
	}
	if addr != nil {
		st.address, err = engine.ParseAddress(string(addr))
		if err != nil {
			return settings{}, fmt.Errorf("store: read settings: %w: %w", engine.ErrMalformedState, err)
		}
	}
	relay, err := getMeta(ctx, db.sql, metaRelayURL)
	if err != nil {
		return settings{}, err
	}
	st.relayURL = string(relay)
	return st, nil
}

// putSettings writes the profile's own address and relay URL, for the
// bootstrap transition.
func (t *tx) putSettings(ctx context.Context, st settings) error {
	if st.address.IsZero() {
		return fmt.Errorf("store: write settings: %w: no address", engine.ErrInvalidAddress)
	}
	if err := t.putMeta(ctx, metaAddress, []byte(st.address.String())); err != nil {
		return err
	}
	return t.putMeta(ctx, metaRelayURL, []byte(st.relayURL))
}
