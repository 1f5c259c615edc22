package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Sender chains (migration 0019, docs/storage.md): this device's chain per
// group and generation with its members' announcements, and the chains
// other devices announced here. Every chain record is sealed.

var _ engine.ChainStore = (*DB)(nil)

const (
	kindOwnChain      = "own-chain"      // row key: group, generation
	kindReceivedChain = "received-chain" // row key: sender, chain

	sqlUpsertOwnChain = `INSERT INTO own_chain (grp, generation, chain, sealed_record) VALUES (?, ?, ?, ?)
		ON CONFLICT (grp, generation) DO UPDATE SET chain = excluded.chain, sealed_record = excluded.sealed_record`
	// sqlDropOldOwnChains forgets the chains of earlier generations: a
	// generation's messages go by its own chain only.
	sqlDropOldOwnChains = "DELETE FROM own_chain WHERE grp = ? AND generation < ?"
	// sqlDropOldChainMembers forgets the announcements of every chain of
	// the group but the live one.
	sqlDropOldChainMembers = "DELETE FROM chain_member WHERE grp = ? AND chain != ?"
	sqlInsertChainMember   = "INSERT INTO chain_member (grp, chain, member, announce_id, acked) VALUES (?, ?, ?, ?, 0)"
	sqlChainMemberAcked    = "UPDATE chain_member SET acked = 1 WHERE member = ? AND announce_id = ?"
	sqlOwnChain            = "SELECT chain, sealed_record FROM own_chain WHERE grp = ? AND generation = ?"
	sqlChainMembers        = "SELECT member, announce_id, acked FROM chain_member WHERE grp = ? AND chain = ? ORDER BY member"
	// sqlOwnChainByID finds an own chain by its ID: own_chain holds one
	// row per group kept (a rotation replaces it), so a scan is cheap.
	sqlOwnChainByID = "SELECT grp, generation FROM own_chain WHERE chain = ?"
	// sqlReannounceChain records a fresh announcement of a chain to a
	// member (a need-chain answered): it replaces the one before, so a
	// member has one announcement of a chain however often it asks.
	sqlReannounceChain = `INSERT INTO chain_member (grp, chain, member, announce_id, acked) VALUES (?, ?, ?, ?, 0)
		ON CONFLICT (grp, chain, member) DO UPDATE SET announce_id = excluded.announce_id, acked = 0`
	// sqlForgetGroupOwnChains, sqlForgetGroupChainMembers and
	// sqlForgetGroupReceivedChains forget every chain of a group this
	// device left or was removed from.
	sqlForgetGroupOwnChains      = "DELETE FROM own_chain WHERE grp = ?"
	sqlForgetGroupChainMembers   = "DELETE FROM chain_member WHERE grp = ?"
	sqlForgetGroupReceivedChains = "DELETE FROM received_chain WHERE grp = ?"

	sqlUpsertReceivedChain = `INSERT INTO received_chain (sender, chain, grp, generation, sealed_record) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (sender, chain) DO UPDATE SET sealed_record = excluded.sealed_record`
	// sqlDropOldReceivedChains forgets a sender's chains of the group at
	// earlier generations once it announced one at a later generation.
	sqlDropOldReceivedChains = "DELETE FROM received_chain WHERE sender = ? AND grp = ? AND generation < ?"
	// sqlReplaceReceivedChains keeps one chain per sender, group and
	// generation, the one just written: a sender announces a new chain
	// only when it rotates, after which its old chain's messages come
	// late if at all (their lanes' retries go pairwise), and a member that
	// announces chain after chain at one generation replaces its own
	// instead of filling the table.
	sqlReplaceReceivedChains = "DELETE FROM received_chain WHERE sender = ? AND grp = ? AND generation = ? AND chain != ?"
	sqlReceivedChain         = "SELECT grp, generation, sealed_record FROM received_chain WHERE sender = ? AND chain = ?"
	// sqlForgetChainMember and sqlForgetReceivedChains forget a peer's
	// announcements of the own chains and the chains it announced here.
	sqlForgetChainMember    = "DELETE FROM chain_member WHERE member = ?"
	sqlForgetReceivedChains = "DELETE FROM received_chain WHERE sender = ?"
)

// forgetGroupChains forgets this device's chains of group g, their
// announcements and the chains members announced here: after this device
// left g (or was removed), nothing kept here opens a later chain message
// of g.
func (t *tx) forgetGroupChains(ctx context.Context, g wire.GroupID) error {
	for _, q := range []struct{ name, sql string }{
		{"own-chain-forget", sqlForgetGroupOwnChains},
		{"chain-member-forget-group", sqlForgetGroupChainMembers},
		{"received-chain-forget-group", sqlForgetGroupReceivedChains},
	} {
		if _, err := t.run(ctx, q.name, q.sql, g[:]); err != nil {
			return fmt.Errorf("forget the chains of group %x: %w", g[:], err)
		}
	}
	return nil
}

// reannounceChain stores a need-chain's answer: the chain announced again
// to its member on a fresh pending lane, recorded as that member's
// announcement of the chain, not acknowledged.
func (t *tx) reannounceChain(ctx context.Context, e engine.NeedChainEffect) error {
	a := e.Announce
	if err := t.insertLanes(ctx, e.Group, a.ID, a.Frame, t.now, []engine.GroupLane{{Recipient: a.Recipient}}); err != nil {
		return err
	}
	if _, err := t.run(ctx, "chain-member-reannounce", sqlReannounceChain, e.Group[:], e.Chain[:], a.Recipient.String(), a.ID[:]); err != nil {
		return fmt.Errorf("record the announcement to %s: %w", a.Recipient, err)
	}
	return nil
}

// forgetChainsOf forgets which own chains peer was announced, so that the
// next group send announces them again, and with received the chains peer
// announced here (an identity change: they were the old identity's).
func (t *tx) forgetChainsOf(ctx context.Context, peer engine.Address, received bool) error {
	if _, err := t.run(ctx, "chain-member-forget", sqlForgetChainMember, peer.String()); err != nil {
		return fmt.Errorf("forget the chains announced to %s: %w", peer, err)
	}
	if !received {
		return nil
	}
	if _, err := t.run(ctx, "received-chain-forget", sqlForgetReceivedChains, peer.String()); err != nil {
		return fmt.Errorf("forget the chains %s announced: %w", peer, err)
	}
	return nil
}

func init() {
	sealedColumns["own_chain.sealed_record"] = kindOwnChain
	sealedColumns["received_chain.sealed_record"] = kindReceivedChain
}

func ownChainKey(g wire.GroupID, generation uint64) []byte {
	return rowKey(g[:], rowKeyInt(int64(generation)))
}

func receivedChainKey(sender string, chain wire.ChainID) []byte {
	return rowKey([]byte(sender), chain[:])
}

// writeOwnChain stores a group send's chain and its announcements.
func (t *tx) writeOwnChain(ctx context.Context, c *engine.OwnChainWrite, ann []engine.ChainAnnouncement, at int64) error {
	if c == nil {
		return nil
	}
	sealed := t.db.seal.seal(kindOwnChain, ownChainKey(c.Group, c.Generation), c.Record)
	if _, err := t.run(ctx, "own-chain-upsert", sqlUpsertOwnChain, c.Group[:], int64(c.Generation), c.Chain[:], sealed); err != nil {
		return fmt.Errorf("store sender chain of group %x: %w", c.Group[:], err)
	}
	if _, err := t.run(ctx, "own-chain-prune", sqlDropOldOwnChains, c.Group[:], int64(c.Generation)); err != nil {
		return fmt.Errorf("prune sender chains of group %x: %w", c.Group[:], err)
	}
	if _, err := t.run(ctx, "chain-member-prune", sqlDropOldChainMembers, c.Group[:], c.Chain[:]); err != nil {
		return fmt.Errorf("prune chain announcements of group %x: %w", c.Group[:], err)
	}
	for _, a := range ann {
		if _, err := t.runOne(ctx, "chain-member-insert", engine.ErrConflict, sqlInsertChainMember, c.Group[:], c.Chain[:], a.Recipient.String(), a.ID[:]); err != nil {
			return fmt.Errorf("record the announcement to %s: %w", a.Recipient, err)
		}
	}
	return nil
}

// chainAcked records that member acknowledged an announcement id, when id
// is one.
func (t *tx) chainAcked(ctx context.Context, member engine.Address, id wire.LogicalID) error {
	_, err := t.run(ctx, "chain-member-acked", sqlChainMemberAcked, member.String(), id[:])
	return err
}

// writeReceivedChain stores a received chain as a receive leaves it.
func (t *tx) writeReceivedChain(ctx context.Context, c *engine.ReceivedChainWrite) error {
	if c == nil {
		return nil
	}
	sender := c.Sender.String()
	sealed := t.db.seal.seal(kindReceivedChain, receivedChainKey(sender, c.Chain), c.Record)
	if _, err := t.run(ctx, "received-chain-upsert", sqlUpsertReceivedChain, sender, c.Chain[:], c.Group[:], int64(c.Generation), sealed); err != nil {
		return fmt.Errorf("store chain of %s: %w", sender, err)
	}
	if _, err := t.run(ctx, "received-chain-prune", sqlDropOldReceivedChains, sender, c.Group[:], int64(c.Generation)); err != nil {
		return fmt.Errorf("prune chains of %s: %w", sender, err)
	}
	if _, err := t.run(ctx, "received-chain-replace", sqlReplaceReceivedChains, sender, c.Group[:], int64(c.Generation), c.Chain[:]); err != nil {
		return fmt.Errorf("bound chains of %s: %w", sender, err)
	}
	return nil
}

// OwnChain implements engine.ChainStore.
func (db *DB) OwnChain(ctx context.Context, g wire.GroupID, generation uint64) (engine.OwnChain, bool, error) {
	if err := db.checkOpen("read sender chain"); err != nil {
		return engine.OwnChain{}, false, err
	}
	var chain, sealed []byte
	err := db.queryRow(ctx, sqlOwnChain, g[:], int64(generation)).Scan(&chain, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.OwnChain{}, false, nil
	case err != nil:
		return engine.OwnChain{}, false, db.readErr("read sender chain", err)
	}
	out := engine.OwnChain{Group: g, Generation: generation}
	if len(chain) != len(out.Chain) {
		return engine.OwnChain{}, false, fmt.Errorf("store: sender chain of %d bytes: %w", len(chain), engine.ErrMalformedState)
	}
	copy(out.Chain[:], chain)
	if out.Record, err = db.seal.open(kindOwnChain, ownChainKey(g, generation), sealed); err != nil {
		return engine.OwnChain{}, false, err
	}
	rows, err := db.query(ctx, sqlChainMembers, g[:], chain)
	if err != nil {
		return engine.OwnChain{}, false, db.readErr("read chain announcements", err)
	}
	defer rows.Close()
	for rows.Next() {
		var member string
		var id []byte
		var acked bool
		if err := rows.Scan(&member, &id, &acked); err != nil {
			return engine.OwnChain{}, false, db.readErr("read chain announcements", err)
		}
		a, err := engine.ParseAddress(member)
		if err != nil || len(id) != 16 {
			return engine.OwnChain{}, false, fmt.Errorf("store: chain announcement to %q: %w", member, engine.ErrMalformedState)
		}
		m := engine.ChainMember{Member: a, Acked: acked}
		copy(m.AnnounceID[:], id)
		out.Members = append(out.Members, m)
	}
	if err := rows.Err(); err != nil {
		return engine.OwnChain{}, false, db.readErr("read chain announcements", err)
	}
	return out, true, nil
}

// OwnChainByID implements engine.ChainStore.
func (db *DB) OwnChainByID(ctx context.Context, chain wire.ChainID) (engine.OwnChain, bool, error) {
	if err := db.checkOpen("read sender chain"); err != nil {
		return engine.OwnChain{}, false, err
	}
	var grp []byte
	var gen int64
	err := db.queryRow(ctx, sqlOwnChainByID, chain[:]).Scan(&grp, &gen)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.OwnChain{}, false, nil
	case err != nil:
		return engine.OwnChain{}, false, db.readErr("read sender chain", err)
	}
	var g wire.GroupID
	if len(grp) != len(g) || gen < 0 {
		return engine.OwnChain{}, false, fmt.Errorf("store: sender chain %x: %w", chain[:4], engine.ErrMalformedState)
	}
	copy(g[:], grp)
	return db.OwnChain(ctx, g, uint64(gen))
}

// ReceivedChain implements engine.ChainStore.
func (db *DB) ReceivedChain(ctx context.Context, sender engine.Address, chain wire.ChainID) (engine.ReceivedChain, bool, error) {
	if err := db.checkOpen("read received chain"); err != nil {
		return engine.ReceivedChain{}, false, err
	}
	var g, sealed []byte
	var gen int64
	err := db.queryRow(ctx, sqlReceivedChain, sender.String(), chain[:]).Scan(&g, &gen, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.ReceivedChain{}, false, nil
	case err != nil:
		return engine.ReceivedChain{}, false, db.readErr("read received chain", err)
	}
	var out engine.ReceivedChain
	if len(g) != len(out.Group) || gen < 0 {
		return engine.ReceivedChain{}, false, fmt.Errorf("store: received chain of %s: %w", sender, engine.ErrMalformedState)
	}
	copy(out.Group[:], g)
	out.Generation = uint64(gen)
	if out.Record, err = db.seal.open(kindReceivedChain, receivedChainKey(sender.String(), chain), sealed); err != nil {
		return engine.ReceivedChain{}, false, err
	}
	return out, true, nil
}
