package engine_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// count runs a counting query on d's profile database, read only.
func (d *device) count(query string, args ...any) int {
	d.w.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db")+"?mode=ro")
	if err != nil {
		d.w.t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		d.w.t.Fatalf("%s: %s: %v", d.addr, query, err)
	}
	return n
}

// loseChains deletes the chains announced to d, as a device restored from
// an old copy, or one whose state was damaged, has lost them.
func (d *device) loseChains() {
	d.w.t.Helper()
	if err := d.c.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db"))
	if err != nil {
		d.w.t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM received_chain"); err != nil {
		d.w.t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		d.w.t.Fatal(err)
	}
	d.open()
}

// ownChainID reads d's live chain of group g.
func (d *device) ownChainID(g wire.GroupID) wire.ChainID {
	d.w.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(d.dir, "parley.db")+"?mode=ro")
	if err != nil {
		d.w.t.Fatal(err)
	}
	defer db.Close()
	var b []byte
	if err := db.QueryRow("SELECT chain FROM own_chain WHERE grp = ?", g[:]).Scan(&b); err != nil {
		d.w.t.Fatalf("%s's chain of %x: %v", d.addr, g[:4], err)
	}
	var id wire.ChainID
	copy(id[:], b)
	return id
}

// chainGroup makes a group of alice and four members and sends "one",
// which announces alice's chain to every member; once settled, every
// member holds it.
func chainGroup(t *testing.T) (w *world, g wire.GroupID, alice *device, members []*device) {
	w = newWorld(t)
	alice = w.device("alice/1")
	members = []*device{w.device("bob/1"), w.device("carol/1"), w.device("dave/1"), w.device("erin/1")}
	all := append([]*device{alice}, members...)
	addrs := make([]engine.Address, len(members))
	for i, d := range members {
		addrs[i] = d.addr
	}
	info, _, err := alice.c.CreateGroup(w.ctx, "team", addrs)
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	if _, err := alice.c.SendGroup(w.ctx, info.ID, []byte("one")); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	return w, info.ID, alice, members
}

func resultsOf(res []engine.ReceiveResult, kind engine.ResultKind) int {
	n := 0
	for _, r := range res {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// TestNeedChainFreshAnnouncement: a member that acknowledged the chain and
// lost it holds the next chain message and asks for the chain once; the
// sender answers at once with a fresh announcement lane, the member opens
// the held message, and the message's lane ends acknowledged with no
// pairwise retry (its only attempt is the chain's).
func TestNeedChainFreshAnnouncement(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, members := chainGroup(t)
	erin := members[3]
	erin.loseChains()
	res, err := alice.c.SendGroup(w.ctx, g, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	if typ := firstAttempt(t, alice, erin, res.ID); typ != wire.EnvelopeChain {
		t.Fatalf("two went to erin as %v, want by the chain", typ)
	}
	erin.sync() // held; the need-chain goes
	if got := erin.groupHistory(g); len(got) != 1 {
		t.Fatalf("erin's history %v before the chain came back, want only the first", got)
	}
	erin.sync() // still held: no second request within NeedChainRepeat
	before := alice.count("SELECT count(*) FROM outbound")
	got := alice.sync()
	if n := resultsOf(got, engine.ResultNeedChain); n != 1 {
		t.Fatalf("alice took %d need-chain requests, want 1 (erin asks once per NeedChainRepeat): %v", n, got)
	}
	if after := alice.count("SELECT count(*) FROM outbound"); after != before+1 {
		t.Fatalf("alice's pending rows %d -> %d, want one fresh announcement lane", before, after)
	}
	erin.sync() // the announcement
	erin.sync() // the held message opens
	erin.commitAll()
	if got, want := erin.groupHistory(g), []string{"alice/1:one", "alice/1:two"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("erin's history %v, want %v", got, want)
	}
	alice.sync()
	if got := alice.lanes(g, res.ID); got["erin/1"] != "acknowledged" {
		t.Fatalf("lanes of two %v, want erin's acknowledged", got)
	}
	as, err := alice.c.Attempts(w.ctx, erin.addr, res.ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("alice's attempts of two to erin: %v, %v; want the chain's only", as, err)
	}
	if n := alice.count("SELECT count(*) FROM chain_member WHERE member = 'erin/1' AND acked = 1"); n != 1 {
		t.Fatalf("erin's chain_member rows acknowledged: %d, want 1", n)
	}
}

// TestNeedChainResendsPendingAnnouncement: a request from a member whose
// announcement is still pending is answered at once by that lane's retry
// (a second attempt), with no new lane.
func TestNeedChainResendsPendingAnnouncement(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol, dave := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1")
	all := []*device{alice, bob, carol, dave}
	info, _, err := alice.c.CreateGroup(w.ctx, "team", []engine.Address{bob.addr, carol.addr, dave.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	if _, err := alice.c.SendGroup(w.ctx, info.ID, []byte("one")); err != nil {
		t.Fatal(err)
	}
	chain := alice.ownChainID(info.ID)
	before := alice.count("SELECT count(*) FROM outbound")
	f, err := wire.EncodeNeedChain(wire.NeedChain{Chain: chain})
	if err != nil {
		t.Fatal(err)
	}
	bob.raw(alice, f)
	got := alice.sync()
	var ann wire.LogicalID
	for _, r := range got {
		if r.Kind == engine.ResultNeedChain {
			ann = r.ID
		}
	}
	if ann == (wire.LogicalID{}) {
		t.Fatalf("alice's results %v, want the need-chain answered", got)
	}
	if after := alice.count("SELECT count(*) FROM outbound"); after != before {
		t.Fatalf("alice's pending rows %d -> %d, want no new lane for a pending announcement", before, after)
	}
	as, err := alice.c.Attempts(w.ctx, bob.addr, ann)
	if err != nil || len(as) != 2 {
		t.Fatalf("alice's attempts of bob's announcement: %v, %v; want two (the answer sent it at once)", as, err)
	}
	settle(t, 5, all...)
	for _, d := range []*device{bob, carol, dave} {
		if got := d.groupHistory(info.ID); !reflect.DeepEqual(got, []string{"alice/1:one"}) {
			t.Fatalf("%s's history %v", d.addr, got)
		}
	}
}

// TestNeedChainFloodBounded: a hostile member floods the sender with
// need-chain requests for its live chain and for made-up chains, and a
// stranger with a session does the same: the sender answers the member
// once (one fresh announcement lane, one chain_member row), answers the
// stranger and the made-up chains never, and goes on as before: the next
// message goes by the chain and every member acknowledges it.
func TestNeedChainFloodBounded(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, members := chainGroup(t)
	bob := members[0]
	mallory := w.device("mallory/1")
	mallory.send(alice, "hello")
	alice.sync()
	mallory.sync()
	chain := alice.ownChainID(g)
	before := alice.count("SELECT count(*) FROM outbound")
	live, err := wire.EncodeNeedChain(wire.NeedChain{Chain: chain})
	if err != nil {
		t.Fatal(err)
	}
	const flood = 40
	for i := 0; i < flood; i++ {
		var made wire.ChainID
		made[0], made[1] = byte(i), 0xee
		other, err := wire.EncodeNeedChain(wire.NeedChain{Chain: made, Position: uint32(i)})
		if err != nil {
			t.Fatal(err)
		}
		bob.raw(alice, live)
		bob.raw(alice, other)
		mallory.raw(alice, live)
	}
	got := alice.sync()
	answered := 0
	for _, r := range got {
		if r.Kind == engine.ResultNeedChain && r.ID != (wire.LogicalID{}) {
			answered++
		}
	}
	if answered != 1 {
		t.Fatalf("alice answered %d need-chain requests, want 1 (bob's first)", answered)
	}
	if after := alice.count("SELECT count(*) FROM outbound"); after > before+1 {
		t.Fatalf("alice's pending rows %d -> %d after the flood, want at most one more", before, after)
	}
	if n := alice.count("SELECT count(*) FROM chain_member"); n != len(members) {
		t.Fatalf("alice's chain_member rows %d, want %d", n, len(members))
	}
	if n := alice.count("SELECT count(*) FROM outbound WHERE recipient = 'mallory/1'"); n != 0 {
		t.Fatalf("alice keeps %d rows for the stranger", n)
	}
	all := append([]*device{alice}, members...)
	settle(t, 5, all...)
	res, err := alice.c.SendGroup(w.ctx, g, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range members {
		if typ := firstAttempt(t, alice, d, res.ID); typ != wire.EnvelopeChain {
			t.Fatalf("two went to %s as %v after the flood, want by the chain", d.addr, typ)
		}
	}
	settle(t, 5, all...)
	for _, d := range members {
		if got := alice.lanes(g, res.ID); got[d.addr.String()] != "acknowledged" {
			t.Fatalf("lanes of two %v, want every one acknowledged", got)
		}
		if got, want := d.groupHistory(g), []string{"alice/1:one", "alice/1:two"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s's history %v, want %v", d.addr, got, want)
		}
	}
}

// TestLeaveForgetsChains: a member that leaves a group, and one that is
// removed, keep no chain of the group (neither announced to them nor
// their own) once the change is recorded, in the transaction that records
// it; the members that stay keep theirs.
func TestLeaveForgetsChains(t *testing.T) {
	oneGoroutine(t)
	w, g, alice, members := chainGroup(t)
	bob, dave, erin := members[0], members[2], members[3]
	all := append([]*device{alice}, members...)
	// Dave and erin send once, so that they have chains of their own (one
	// after the other: two first contacts at once collide, and the loser's
	// lanes wait for a retry).
	for _, d := range []*device{dave, erin} {
		if _, err := d.c.SendGroup(w.ctx, g, []byte("from "+d.addr.User)); err != nil {
			t.Fatal(err)
		}
		settle(t, 10, all...)
	}
	chains := func(d *device) (own, received int) {
		return d.count("SELECT count(*) FROM own_chain WHERE grp = ?", g[:]) + d.count("SELECT count(*) FROM chain_member WHERE grp = ?", g[:]),
			d.count("SELECT count(*) FROM received_chain WHERE grp = ?", g[:])
	}
	for _, d := range []*device{dave, erin} {
		if own, received := chains(d); own == 0 || received == 0 {
			t.Fatalf("%s keeps %d own and %d received chain rows before leaving, want some of each", d.addr, own, received)
		}
	}
	if _, err := dave.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "dave/1"}}); err != nil {
		t.Fatal(err)
	}
	if own, received := chains(dave); own != 0 || received != 0 {
		t.Fatalf("dave keeps %d own and %d received chain rows after leaving, want none", own, received)
	}
	settle(t, 10, all...)
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterRemove, Address: "erin/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 10, all...)
	if own, received := chains(erin); own != 0 || received != 0 {
		t.Fatalf("erin keeps %d own and %d received chain rows after her removal, want none", own, received)
	}
	if _, received := chains(bob); received == 0 {
		t.Fatal("bob, who stays, keeps no chain of the group")
	}
}
