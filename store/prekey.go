package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
)

const (
	sqlInsertIdentity      = "INSERT INTO identity (singleton, sealed) VALUES (1, ?) ON CONFLICT (singleton) DO NOTHING"
	sqlInsertSignedPreKey  = "INSERT INTO signed_prekey (kind, id, created_at, expires_at, sealed) VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, id) DO NOTHING"
	sqlInsertOneTimePreKey = "INSERT INTO one_time_prekey (id, created_at, sealed) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING"
	sqlDeleteSignedPreKey  = "DELETE FROM signed_prekey WHERE kind = ? AND id = ?"
	sqlDeleteOneTimePreKey = "DELETE FROM one_time_prekey WHERE id = ?"
	// sqlKeepOneTime deletes all but the newest ? one-time prekeys.
	sqlKeepOneTime  = "DELETE FROM one_time_prekey WHERE id NOT IN (SELECT id FROM one_time_prekey ORDER BY id DESC LIMIT ?)"
	sqlPruneRetired = "DELETE FROM retired_initiation WHERE retired_at < ?"
	// sqlPruneRefused forgets refused one-time prekeys with the retired
	// initiations: by then the peer has long used up its pool past them.
	sqlPruneRefused = "DELETE FROM refused_one_time_prekey WHERE refused_at < ?"

	sqlIdentity       = "SELECT sealed FROM identity WHERE singleton = 1"
	sqlSignedPreKeys  = "SELECT kind, id, created_at, expires_at, sealed FROM signed_prekey ORDER BY kind, id"
	sqlCountOneTime   = "SELECT count(*) FROM one_time_prekey"
	sqlOneTimePreKey  = "SELECT created_at, sealed FROM one_time_prekey WHERE id = ?"
	sqlOneTimePreKeys = "SELECT id, created_at, sealed FROM one_time_prekey WHERE id > ? ORDER BY id LIMIT ?"
	signedKindX25519  = int64(engine.PreKeySigned)
	signedKindKEM     = int64(engine.PreKeyKEM)
)

func signedPreKeyKey(kind engine.PreKeyKind, id uint32) []byte {
	return rowKey(rowKeyInt(int64(kind)), rowKeyInt(int64(id)))
}

func oneTimePreKeyKey(id uint32) []byte { return rowKey(rowKeyInt(int64(id))) }

// insertPreKey stores one private prekey; its ID must be new for its kind.
func (t *tx) insertPreKey(ctx context.Context, r engine.PreKeyRecord) error {
	var err error
	if r.Kind == engine.PreKeyOneTime {
		_, err = t.runOne(ctx, "one-time-prekey-insert", engine.ErrConflict, sqlInsertOneTimePreKey,
			int64(r.ID), r.Created, t.db.seal.seal(kindOneTimePreKey, oneTimePreKeyKey(r.ID), r.Record))
	} else {
		_, err = t.runOne(ctx, "signed-prekey-insert", engine.ErrConflict, sqlInsertSignedPreKey,
			int64(r.Kind), int64(r.ID), r.Created, r.Expires, t.db.seal.seal(kindSignedPreKey, signedPreKeyKey(r.Kind, r.ID), r.Record))
	}
	if err != nil {
		return fmt.Errorf("store prekey %d of kind %d (already there?): %w", r.ID, r.Kind, err)
	}
	return nil
}

// bootstrap stores the profile's address, relay, identity and first
// prekeys. A profile that has an identity already is refused.
func (t *tx) bootstrap(ctx context.Context, p engine.Bootstrap) error {
	_, err := t.runOne(ctx, "identity-insert", engine.ErrProfileExists, sqlInsertIdentity, t.db.seal.seal(kindIdentity, nil, p.Identity))
	if err != nil {
		return fmt.Errorf("store identity: %w", err)
	}
	if _, err := t.runOne(ctx, "address-insert", engine.ErrProfileExists, sqlInsertMeta, metaAddress, []byte(p.Self.String())); err != nil {
		return fmt.Errorf("store address: %w", err)
	}
	if _, err := t.runOne(ctx, "relay-url-insert", engine.ErrProfileExists, sqlInsertMeta, metaRelayURL, []byte(p.RelayURL)); err != nil {
		return fmt.Errorf("store relay URL: %w", err)
	}
	var top uint32
	for _, r := range p.PreKeys {
		if err := t.insertPreKey(ctx, r); err != nil {
			return err
		}
		top = max(top, r.ID)
	}
	if _, err := t.runOne(ctx, "next-prekey-id-insert", engine.ErrProfileExists, sqlInsertMeta, metaNextPreKeyID, encodeUint(uint64(top)+1)); err != nil {
		return fmt.Errorf("store next prekey ID: %w", err)
	}
	return nil
}

// publishPreKeys stores new prekeys, deletes expired signed ones and old
// retired initiations, and moves the prekey counters forward.
func (t *tx) publishPreKeys(ctx context.Context, p engine.PublishPreKeys) error {
	for _, r := range p.Add {
		if err := t.insertPreKey(ctx, r); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		name string
		kind int64
		ids  []uint32
	}{
		{"signed-prekey-delete", signedKindX25519, p.DeleteSigned},
		{"kem-prekey-delete", signedKindKEM, p.DeleteKEM},
	} {
		for _, id := range d.ids {
			if _, err := t.runOne(ctx, d.name, engine.ErrConflict, sqlDeleteSignedPreKey, d.kind, int64(id)); err != nil {
				return fmt.Errorf("delete prekey %d of kind %d: %w", id, d.kind, err)
			}
		}
	}
	if !p.RetiredBefore.IsZero() {
		if _, err := t.run(ctx, "retired-prune", sqlPruneRetired, p.RetiredBefore.Unix()); err != nil {
			return fmt.Errorf("delete retired initiations: %w", err)
		}
		if _, err := t.run(ctx, "refused-prune", sqlPruneRefused, p.RetiredBefore.Unix()); err != nil {
			return fmt.Errorf("delete refused one-time prekeys: %w", err)
		}
	}
	if p.NextPreKeyID != 0 {
		if err := t.raiseUint(ctx, "next-prekey-id", metaNextPreKeyID, uint64(p.NextPreKeyID)); err != nil {
			return err
		}
	}
	if p.PublishedUpTo != 0 {
		if err := t.raiseUint(ctx, "published", metaOneTimePublished, uint64(p.PublishedUpTo)); err != nil {
			return err
		}
	}
	if p.KeepOneTime > 0 {
		if _, err := t.run(ctx, "one-time-prekey-cap", sqlKeepOneTime, p.KeepOneTime); err != nil {
			return fmt.Errorf("cap one-time prekeys at %d: %w", p.KeepOneTime, err)
		}
	}
	return nil
}

// consumeOneTime deletes the one-time prekey a handshake used; it must be
// there.
func (t *tx) consumeOneTime(ctx context.Context, id uint32) error {
	if _, err := t.runOne(ctx, "one-time-prekey-delete", engine.ErrConflict, sqlDeleteOneTimePreKey, int64(id)); err != nil {
		return fmt.Errorf("consume one-time prekey %d: %w", id, err)
	}
	return nil
}

// Profile returns what the engine loads at open: the own address, relay,
// identity, signed prekeys, prekey counters and the presentation marker. A
// profile that was created but never bootstrapped has no identity:
// engine.ErrNoProfile.
func (db *DB) Profile(ctx context.Context) (engine.Profile, error) {
	if err := db.checkOpen("read profile"); err != nil {
		return engine.Profile{}, err
	}
	// One read transaction: a consistent view across the queries.
	rtx, err := db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return engine.Profile{}, db.readErr("read profile", err)
	}
	defer rtx.Rollback()
	prof, err := db.readProfile(ctx, rtx)
	if err != nil {
		return engine.Profile{}, err
	}
	return prof, nil
}

func (db *DB) readProfile(ctx context.Context, q *sql.Tx) (engine.Profile, error) {
	var prof engine.Profile
	var sealed []byte
	err := q.QueryRowContext(ctx, sqlIdentity).Scan(&sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return prof, fmt.Errorf("store: read profile: no identity: %w", engine.ErrNoProfile)
	case err != nil:
		return prof, db.readErr("read identity", err)
	}
	if prof.Identity, err = db.seal.open(kindIdentity, nil, sealed); err != nil {
		return prof, fmt.Errorf("store: read identity: %w", err)
	}
	if err := db.readAccount(ctx, q, &prof); err != nil {
		return prof, err
	}

	meta := map[string][]byte{}
	for _, k := range []string{metaAddress, metaRelayURL, metaRelayID, metaRelayCA, metaNextPreKeyID, metaOneTimePublished, metaMarkerWritten, metaMarkerPresented} {
		v, err := getMeta(ctx, q, k)
		if err != nil {
			return prof, err
		}
		meta[k] = v
	}
	if prof.Self, err = engine.ParseAddress(string(meta[metaAddress])); err != nil {
		return prof, fmt.Errorf("store: read address: %w: %w", engine.ErrMalformedState, err)
	}
	prof.Relay.URL = string(meta[metaRelayURL])
	switch id := meta[metaRelayID]; len(id) {
	case 0:
	case 32:
		copy(prof.Relay.ID[:], id)
	default:
		return prof, fmt.Errorf("store: read relay ID of %d bytes: %w", len(id), engine.ErrMalformedState)
	}
	if ca := meta[metaRelayCA]; len(ca) > 0 {
		prof.Relay.CA = ca
	}
	var next, published uint64
	for _, c := range []struct {
		k   string
		dst *uint64
	}{
		{metaNextPreKeyID, &next}, {metaOneTimePublished, &published},
		{metaMarkerWritten, &prof.MarkerWritten}, {metaMarkerPresented, &prof.MarkerPresented},
	} {
		if *c.dst, err = decodeUint(c.k, meta[c.k]); err != nil {
			return prof, err
		}
	}
	prof.NextPreKeyID, prof.OneTimePublished = uint32(next), uint32(published)

	rows, err := q.QueryContext(ctx, sqlSignedPreKeys)
	if err != nil {
		return prof, db.readErr("read signed prekeys", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r engine.PreKeyRecord
		var kind, id int64
		if err := rows.Scan(&kind, &id, &r.Created, &r.Expires, &sealed); err != nil {
			return prof, db.readErr("read signed prekeys", err)
		}
		r.Kind, r.ID = engine.PreKeyKind(kind), uint32(id)
		if r.Record, err = db.seal.open(kindSignedPreKey, signedPreKeyKey(r.Kind, r.ID), sealed); err != nil {
			return prof, fmt.Errorf("store: read signed prekey %d: %w", r.ID, err)
		}
		prof.SignedPreKeys = append(prof.SignedPreKeys, r)
	}
	if err := rows.Err(); err != nil {
		return prof, db.readErr("read signed prekeys", err)
	}
	if err := q.QueryRowContext(ctx, sqlCountOneTime).Scan(&prof.OneTimeCount); err != nil {
		return prof, db.readErr("count one-time prekeys", err)
	}
	return prof, nil
}

// OneTimePreKey returns the record of a one-time prekey held, or
// engine.ErrUnknownPreKey.
func (db *DB) OneTimePreKey(ctx context.Context, id uint32) ([]byte, error) {
	if err := db.checkOpen("read one-time prekey"); err != nil {
		return nil, err
	}
	var created int64
	var sealed []byte
	err := db.queryRow(ctx, sqlOneTimePreKey, int64(id)).Scan(&created, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("store: read one-time prekey %d: %w", id, engine.ErrUnknownPreKey)
	case err != nil:
		return nil, db.readErr("read one-time prekey", err)
	}
	rec, err := db.seal.open(kindOneTimePreKey, oneTimePreKeyKey(id), sealed)
	if err != nil {
		return nil, fmt.Errorf("store: read one-time prekey %d: %w", id, err)
	}
	return rec, nil
}

// OneTimePreKeys pages the one-time prekeys held with IDs above after, in
// ID order.
func (db *DB) OneTimePreKeys(ctx context.Context, after uint32, limit int) ([]engine.PreKeyRecord, error) {
	if err := db.checkOpen("read one-time prekeys"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlOneTimePreKeys, int64(after), pageLimit(limit))
	if err != nil {
		return nil, db.readErr("read one-time prekeys", err)
	}
	defer rows.Close()
	var out []engine.PreKeyRecord
	for rows.Next() {
		var id int64
		var sealed []byte
		r := engine.PreKeyRecord{Kind: engine.PreKeyOneTime}
		if err := rows.Scan(&id, &r.Created, &sealed); err != nil {
			return nil, db.readErr("read one-time prekeys", err)
		}
		r.ID = uint32(id)
		if r.Record, err = db.seal.open(kindOneTimePreKey, oneTimePreKeyKey(r.ID), sealed); err != nil {
			return nil, fmt.Errorf("store: read one-time prekey %d: %w", r.ID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read one-time prekeys", err)
	}
	return out, nil
}
