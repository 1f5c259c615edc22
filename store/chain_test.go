package store

import (
	"bytes"
	"context"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestReceivedChainsOnePerGeneration: a sender has one received chain per
// group and generation. A member announcing chain after chain at one
// generation replaces its own, a later generation takes the place of the
// earlier ones, and another sender's chain of the same group is left
// alone.
func TestReceivedChainsOnePerGeneration(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	g := wire.GroupID{1}
	mallory, bob := engine.MustParseAddress("mallory/1"), engine.MustParseAddress("bob/1")
	write := func(sender engine.Address, chain byte, generation uint64) {
		t.Helper()
		tx, err := db.beginImmediate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.rollback()
		w := &engine.ReceivedChainWrite{Sender: sender, Chain: wire.ChainID{chain}, Group: g, Generation: generation, Record: []byte{chain}}
		if err := tx.writeReceivedChain(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := tx.persist(); err != nil {
			t.Fatal(err)
		}
	}
	count := func(sender engine.Address) int {
		t.Helper()
		var n int
		if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM received_chain WHERE sender = ?", sender.String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	write(bob, 200, 3)
	for i := range 50 {
		write(mallory, byte(i+1), 3)
	}
	if n := count(mallory); n != 1 {
		t.Fatalf("mallory has %d chains after announcing 50 at one generation, want 1", n)
	}
	if _, ok, err := db.ReceivedChain(ctx, mallory, wire.ChainID{50}); err != nil || !ok {
		t.Fatalf("the newest chain: %v %v, want kept", ok, err)
	}
	write(mallory, 50, 3) // the same chain advanced: still one
	write(mallory, 51, 4)
	if n := count(mallory); n != 1 {
		t.Fatalf("mallory has %d chains after a later generation, want 1", n)
	}
	if n := count(bob); n != 1 {
		t.Fatalf("bob has %d chains, want his one untouched", n)
	}
}

// TestIdentityChangeForgetsChains: accepting a peer's new identity forgets
// the chains its old identity announced here and which own chains it was
// announced (the next group send announces them again); another member's
// are kept.
func TestIdentityChangeForgetsChains(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	withInbound(t, f)
	g := wire.GroupID{7}
	tx, err := f.db.beginImmediate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.rollback()
	for _, peer := range []engine.Address{bob, carol} {
		w := &engine.ReceivedChainWrite{Sender: peer, Chain: wire.ChainID{peer.String()[0]}, Group: g, Generation: 1, Record: []byte{1}}
		if err := tx.writeReceivedChain(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.tx.ExecContext(ctx, sqlInsertChainMember, g[:], make([]byte, 16), peer.String(), bytes.Repeat([]byte{peer.String()[0]}, 16)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.persist(); err != nil {
		t.Fatal(err)
	}
	f.apply(t, engine.AcceptIdentity{Peer: bob, Identity: identityKey('x'), SessionVersion: 2, At: planAt,
		Retire: &engine.RetiredInitiation{ID: initiation(7), SignedPreKeyID: 1, RetiredAt: planAt.Unix()}, Replaces: initiation(7)})
	count := func(q string, peer engine.Address) int {
		t.Helper()
		var n int
		if err := f.db.sql.QueryRowContext(ctx, q, peer.String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tt := range []struct {
		peer engine.Address
		want int
	}{{bob, 0}, {carol, 1}} {
		if got := count("SELECT count(*) FROM received_chain WHERE sender = ?", tt.peer); got != tt.want {
			t.Errorf("%s's received chains after bob's identity change: %d, want %d", tt.peer, got, tt.want)
		}
		if got := count("SELECT count(*) FROM chain_member WHERE member = ?", tt.peer); got != tt.want {
			t.Errorf("%s's announcements after bob's identity change: %d, want %d", tt.peer, got, tt.want)
		}
	}
}
