package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/parley-chat/parley/engine"
)

const (
	// sqlInsertSession inserts a peer's first session, version 1. It inserts
	// nothing when a session is there already or when no identity is pinned
	// for the peer, so that the deferred foreign key never fails at COMMIT.
	sqlInsertSession = `INSERT INTO session (peer, version, initiation_id, awaiting_reply, updated_at, sealed)
		SELECT ?1, 1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM peer WHERE address = ?1)
		ON CONFLICT (peer) DO NOTHING`
	sqlUpdateSession = `UPDATE session SET version = version + 1, initiation_id = ?, awaiting_reply = ?, updated_at = ?, sealed = ?
		WHERE peer = ? AND version = ?`
	// sqlFlushSession stores the last of several writes that one transaction
	// made to a peer's session (see writeSession).
	sqlFlushSession = `UPDATE session SET version = ?, initiation_id = ?, awaiting_reply = ?, updated_at = ?, sealed = ?
		WHERE peer = ? AND version = ?`
	sqlDeleteSession = "DELETE FROM session WHERE peer = ? AND version = ?"
	sqlSessionExists = "SELECT 1 FROM session WHERE peer = ?"
	sqlPinRead       = "SELECT pinned_identity FROM peer WHERE address = ?"
	sqlInsertPin     = "INSERT INTO peer (address, pinned_identity, pinned_at) VALUES (?, ?, ?) ON CONFLICT (address) DO NOTHING"
	sqlUpsertPin     = `INSERT INTO peer (address, pinned_identity, pinned_at) VALUES (?1, ?2, ?3)
		ON CONFLICT (address) DO UPDATE SET pinned_identity = excluded.pinned_identity, pinned_at = excluded.pinned_at,
		accepted_change_at = excluded.pinned_at, replaces = NULL`
	sqlSetReplaces   = "UPDATE peer SET replaces = ? WHERE address = ?"
	sqlInsertRetired = `INSERT INTO retired_initiation (peer, initiation_id, signed_prekey_id, retired_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (peer, initiation_id) DO NOTHING`

	sqlPeer = `SELECT p.pinned_identity, p.replaces, s.version, s.sealed FROM peer p LEFT JOIN session s ON s.peer = p.address
		WHERE p.address = ?`
	sqlRetired = "SELECT 1 FROM retired_initiation WHERE peer = ? AND initiation_id = ?"

	sqlPastChains       = "SELECT sealed FROM past_chain WHERE peer = ?"
	sqlUpsertPastChains = `INSERT INTO past_chain (peer, sealed) VALUES (?1, ?2)
		ON CONFLICT (peer) DO UPDATE SET sealed = excluded.sealed`
	sqlInsertRefusedOneTime = `INSERT INTO refused_one_time_prekey (peer, key_id, refused_at) VALUES (?, ?, ?)
		ON CONFLICT (peer, key_id) DO NOTHING`
	sqlRefusedOneTime = "SELECT key_id FROM refused_one_time_prekey WHERE peer = ? ORDER BY key_id"
)

// identityKeySize is a pinned identity in clear: signing key, DH key and
// signature, all public.
const identityKeySize = 32 + 32 + 64

func encodeIdentityKey(k engine.IdentityKey) []byte {
	b := make([]byte, 0, identityKeySize)
	b = append(b, k.SigningKey[:]...)
	b = append(b, k.DHKey[:]...)
	return append(b, k.Signature[:]...)
}

func decodeIdentityKey(b []byte) (engine.IdentityKey, error) {
	var k engine.IdentityKey
	if len(b) != identityKeySize {
		return k, fmt.Errorf("pinned identity of %d bytes: %w", len(b), engine.ErrMalformedState)
	}
	copy(k.SigningKey[:], b[:32])
	copy(k.DHKey[:], b[32:64])
	copy(k.Signature[:], b[64:])
	return k, nil
}

func sessionKey(peer engine.Address) []byte { return rowKey([]byte(peer.String())) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeSession stores a session write: the first session with a peer
// (version 0: none may be there, and an identity must be pinned) or the next
// version of the one the plan was prepared from.
//
// Within one transaction only the first write per peer reaches the table at
// once; later plans of a batch that advance the same session again are
// checked against the version in memory and only the last record is written,
// by flushSessions before the commit. A batch of 64 messages to one peer then
// seals and writes its session once, not 64 times.
func (t *tx) writeSession(ctx context.Context, w engine.SessionWrite) error {
	peer := w.Peer.String()
	if c, ok := t.sessions[peer]; ok {
		if int64(w.Version) != c.version {
			return fmt.Errorf("store session with %s after version %d: the transaction is at version %d: %w", peer, w.Version, c.version, engine.ErrConflict)
		}
		c.version, c.w, c.plan = int64(w.Version)+1, w, t.plan
		return nil
	}
	sealed := t.db.seal.seal(kindSession, sessionKey(w.Peer), w.Record)
	if w.Version == 0 {
		_, err := t.runOne(ctx, "session-insert", engine.ErrConflict, sqlInsertSession,
			peer, w.ID[:], boolInt(w.AwaitingReply), t.now.UnixNano(), sealed)
		if err != nil {
			return fmt.Errorf("store first session with %s (is one there, or no identity pinned?): %w", peer, err)
		}
	} else {
		_, err := t.runOne(ctx, "session-update", engine.ErrConflict, sqlUpdateSession,
			w.ID[:], boolInt(w.AwaitingReply), t.now.UnixNano(), sealed, peer, int64(w.Version))
		if err != nil {
			return fmt.Errorf("store session with %s after version %d: %w", peer, w.Version, err)
		}
	}
	if t.sessions == nil {
		t.sessions = make(map[string]*sessionWrites)
	}
	t.sessions[peer] = &sessionWrites{stored: int64(w.Version) + 1, version: int64(w.Version) + 1}
	return nil
}

// sessionWrites is what a transaction wrote to one peer's session: the
// version in the table, and the version and record of its last write.
type sessionWrites struct {
	stored, version int64
	w               engine.SessionWrite
	plan            int // index in the batch of the plan that wrote w
}

// flushSessions writes the last record of every session that a transaction
// advanced more than once, in peer order. A failure is charged to the plan
// whose write it was (failedPlan).
func (t *tx) flushSessions(ctx context.Context) (failedPlan int, _ error) {
	peers := make([]string, 0, len(t.sessions))
	for p, c := range t.sessions {
		if c.version > c.stored {
			peers = append(peers, p)
		}
	}
	sort.Strings(peers)
	for _, p := range peers {
		c := t.sessions[p]
		sealed := t.db.seal.seal(kindSession, sessionKey(c.w.Peer), c.w.Record)
		_, err := t.runOne(ctx, "session-flush", engine.ErrConflict, sqlFlushSession,
			c.version, c.w.ID[:], boolInt(c.w.AwaitingReply), t.now.UnixNano(), sealed, p, c.stored)
		if err != nil {
			return c.plan, fmt.Errorf("store session with %s at version %d: %w", p, c.version, err)
		}
		c.stored = c.version
	}
	return -1, nil
}

// insertPin pins a peer's identity on first use; another must not be
// pinned. The same identity pinned already (a group state or a link's
// archive stored it since the engine read the peer) is kept as it is.
func (t *tx) insertPin(ctx context.Context, peer engine.Address, k engine.IdentityKey, at time.Time) error {
	b := encodeIdentityKey(k)
	n, err := t.run(ctx, "pin-insert", sqlInsertPin, peer.String(), b, at.UnixNano())
	if err == nil && n == 0 {
		var held []byte
		if _, err = t.scan(ctx, "pin-read", sqlPinRead, []any{peer.String()}, &held); err == nil && !bytes.Equal(held, b) {
			err = fmt.Errorf("pin-insert: another identity pinned: %w", engine.ErrConflict)
		}
	}
	if err != nil {
		return fmt.Errorf("pin identity of %s (already pinned?): %w", peer, err)
	}
	return nil
}

// insertRetired records a retired initiation; it must not be there.
func (t *tx) insertRetired(ctx context.Context, peer engine.Address, r engine.RetiredInitiation) error {
	_, err := t.runOne(ctx, "retired-insert", engine.ErrConflict, sqlInsertRetired, peer.String(), r.ID[:], int64(r.SignedPreKeyID), r.RetiredAt)
	if err != nil {
		return fmt.Errorf("retire initiation %x with %s: %w", r.ID[:4], peer, err)
	}
	return nil
}

// acceptIdentity pins the accepted identity, removes the session the plan
// names (or checks that there is none), retires its initiation and records
// which initiation the next own one names as replaced. Pending messages and
// finalized records stay.
func (t *tx) acceptIdentity(ctx context.Context, p engine.AcceptIdentity) (engine.Receipt, error) {
	if _, err := t.flushSessions(ctx); err != nil {
		return engine.Receipt{}, err
	}
	delete(t.sessions, p.Peer.String())
	peer := p.Peer.String()
	if p.SessionVersion > 0 {
		if _, err := t.runOne(ctx, "session-delete", engine.ErrConflict, sqlDeleteSession, peer, int64(p.SessionVersion)); err != nil {
			return engine.Receipt{}, fmt.Errorf("remove session with %s at version %d: %w", peer, p.SessionVersion, err)
		}
	} else {
		var one int
		found, err := t.scan(ctx, "session-absent", sqlSessionExists, []any{peer}, &one)
		if err != nil {
			return engine.Receipt{}, err
		}
		if found {
			return engine.Receipt{}, fmt.Errorf("a session with %s is there, the plan knows none: %w", peer, engine.ErrConflict)
		}
	}
	if r := p.Retire; r != nil {
		// Retired already (a collision, a reset): the insert does nothing.
		if _, err := t.run(ctx, "retired-insert", sqlInsertRetired, peer, r.ID[:], int64(r.SignedPreKeyID), r.RetiredAt); err != nil {
			return engine.Receipt{}, fmt.Errorf("retire initiation %x with %s: %w", r.ID[:4], peer, err)
		}
	}
	if _, err := t.runOne(ctx, "pin-upsert", engine.ErrConflict, sqlUpsertPin, peer, encodeIdentityKey(p.Identity), p.At.UnixNano()); err != nil {
		return engine.Receipt{}, fmt.Errorf("pin identity of %s: %w", peer, err)
	}
	var replaces any
	if p.Replaces != (engine.InitiationID{}) {
		replaces = p.Replaces[:]
	}
	if _, err := t.runOne(ctx, "replaces-update", engine.ErrConflict, sqlSetReplaces, replaces, peer); err != nil {
		return engine.Receipt{}, fmt.Errorf("record the initiation that replaces the session with %s: %w", peer, err)
	}
	// The chains the old identity announced here are not the new one's,
	// and the new one holds none of the own: it is announced them again.
	if err := t.forgetChainsOf(ctx, p.Peer, true); err != nil {
		return engine.Receipt{}, err
	}
	return t.visible(ctx)
}

// resetSession removes the session a valid recovery request named, retires
// its initiation and the peer's current one, records which initiation the
// next own initiation names, and consumes the request's staged row. The
// peer must be pinned (the request was verified against the pin).
func (t *tx) resetSession(ctx context.Context, p engine.ResetSession) (engine.Receipt, error) {
	if _, err := t.flushSessions(ctx); err != nil {
		return engine.Receipt{}, err
	}
	peer := p.Peer.String()
	delete(t.sessions, peer)
	if p.StagedRow != 0 {
		if err := t.deleteStagedRow(ctx, p.StagedRow); err != nil {
			return engine.Receipt{}, err
		}
	}
	if _, err := t.runOne(ctx, "session-delete", engine.ErrConflict, sqlDeleteSession, peer, int64(p.SessionVersion)); err != nil {
		return engine.Receipt{}, fmt.Errorf("remove session with %s at version %d: %w", peer, p.SessionVersion, err)
	}
	for _, r := range p.Retire {
		// Either may be retired already: the insert then does nothing.
		if _, err := t.run(ctx, "retired-insert", sqlInsertRetired, peer, r.ID[:], int64(r.SignedPreKeyID), r.RetiredAt); err != nil {
			return engine.Receipt{}, fmt.Errorf("retire initiation %x with %s: %w", r.ID[:4], peer, err)
		}
	}
	for _, id := range p.RefusedOneTime {
		if _, err := t.run(ctx, "refused-one-time-insert", sqlInsertRefusedOneTime, peer, int64(id), p.At.Unix()); err != nil {
			return engine.Receipt{}, fmt.Errorf("record one-time prekey %d refused by %s: %w", id, peer, err)
		}
	}
	// A peer that lost its session may have lost the chains announced to
	// it too: it is announced them again (a repeat it still holds is
	// checked and acknowledged).
	if err := t.forgetChainsOf(ctx, p.Peer, false); err != nil {
		return engine.Receipt{}, err
	}
	var replaces any
	if p.Replaces != (engine.InitiationID{}) {
		replaces = p.Replaces[:]
	}
	if _, err := t.runOne(ctx, "replaces-update", engine.ErrConflict, sqlSetReplaces, replaces, peer); err != nil {
		return engine.Receipt{}, fmt.Errorf("record the initiation that replaces the session with %s (no pin?): %w", peer, err)
	}
	return t.visible(ctx)
}

// Peer returns the identity pinned for peer and the session with it; zero
// values when there are none.
func (db *DB) Peer(ctx context.Context, peer engine.Address) (engine.PeerState, error) {
	if err := db.checkOpen("read peer"); err != nil {
		return engine.PeerState{}, err
	}
	var (
		pinned   []byte
		replaces []byte
		version  sql.NullInt64
		sealed   []byte
	)
	err := db.queryRow(ctx, sqlPeer, peer.String()).Scan(&pinned, &replaces, &version, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.PeerState{}, nil
	case err != nil:
		return engine.PeerState{}, db.readErr("read peer "+peer.String(), err)
	}
	k, err := decodeIdentityKey(pinned)
	if err != nil {
		return engine.PeerState{}, fmt.Errorf("store: read peer %s: %w", peer, err)
	}
	st := engine.PeerState{Pinned: &k}
	if replaces != nil {
		if len(replaces) != len(st.Replaces) {
			return engine.PeerState{}, fmt.Errorf("store: read peer %s: replaced initiation of %d bytes: %w", peer, len(replaces), engine.ErrMalformedState)
		}
		copy(st.Replaces[:], replaces)
	}
	if version.Valid {
		rec, err := db.seal.open(kindSession, sessionKey(peer), sealed)
		if err != nil {
			return engine.PeerState{}, fmt.Errorf("store: read session with %s: %w", peer, err)
		}
		st.Session, st.SessionVersion = rec, uint64(version.Int64)
		var past []byte
		err = db.queryRow(ctx, sqlPastChains, peer.String()).Scan(&past)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return engine.PeerState{}, db.readErr("read past chains of "+peer.String(), err)
		default:
			if st.PastChains, err = db.seal.open(kindPastChains, sessionKey(peer), past); err != nil {
				return engine.PeerState{}, fmt.Errorf("store: read past chains of %s: %w", peer, err)
			}
		}
	}
	if st.RefusedOneTime, err = db.refusedOneTime(ctx, peer); err != nil {
		return engine.PeerState{}, err
	}
	return st, nil
}

// writePastChains replaces the record of a peer's past receiving chains.
func (t *tx) writePastChains(ctx context.Context, peer engine.Address, rec []byte) error {
	if _, err := t.run(ctx, "past-chain-upsert", sqlUpsertPastChains, peer.String(),
		t.db.seal.seal(kindPastChains, sessionKey(peer), rec)); err != nil {
		return fmt.Errorf("store past chains of %s: %w", peer, err)
	}
	return nil
}

// refusedOneTime reads the peer's one-time prekeys that it refused.
func (db *DB) refusedOneTime(ctx context.Context, peer engine.Address) ([]uint32, error) {
	rows, err := db.query(ctx, sqlRefusedOneTime, peer.String())
	if err != nil {
		return nil, db.readErr("read refused one-time prekeys of "+peer.String(), err)
	}
	defer rows.Close()
	var ids []uint32
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, db.readErr("read refused one-time prekeys of "+peer.String(), err)
		}
		ids = append(ids, uint32(id))
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read refused one-time prekeys of "+peer.String(), err)
	}
	return ids, nil
}

// Retired reports whether the initiation id with peer was retired.
func (db *DB) Retired(ctx context.Context, peer engine.Address, id engine.InitiationID) (bool, error) {
	if err := db.checkOpen("read retired initiation"); err != nil {
		return false, err
	}
	var one int
	err := db.queryRow(ctx, sqlRetired, peer.String(), id[:]).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.readErr("read retired initiation", err)
	}
	return true, nil
}
