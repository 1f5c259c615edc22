package engine_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The findings of an attack on groups and first contact, each played by a
// modified client made of nothing but its own keys and sessions
// (SendRawFrame, SignRosterChange): every test here failed on the merge rule
// that took a change's authority from the roster it carried, and on a
// receive loop that left a row it could not prepare in staging.

// forge sends peer a roster change of group signed by d, whatever it says.
func (d *device) forge(peer *device, group wire.GroupID, gen uint64, ops, members string) wire.LogicalID {
	d.w.t.Helper()
	var id wire.LogicalID
	copy(id[:], fmt.Sprintf("forged %d %s", gen, ops))
	ch := engine.RosterChange{ID: id, Generation: gen, Name: "forged", Ops: wireOps(ops), Members: wireMembers(members)}
	frame, err := d.c.SignRosterChange(group, ch)
	if err != nil {
		d.w.t.Fatalf("%s signs a forged change: %v", d.addr, err)
	}
	d.raw(peer, frame)
	return id
}

// raw sends peer frame as it is.
func (d *device) raw(peer *device, frame []byte) {
	d.w.t.Helper()
	if err := d.c.SendRawFrame(d.w.ctx, peer.addr, frame); err != nil {
		d.w.t.Fatalf("%s sends a raw frame: %v", d.addr, err)
	}
}

// wireOps builds operations from "+addr", "-addr" and "@addr" words, sorted
// as a roster frame wants them.
func wireOps(words string) []wire.RosterChange {
	var ops []wire.RosterChange
	for _, w := range splitWords(words) {
		op := map[byte]wire.RosterOp{'+': wire.RosterAdd, '-': wire.RosterRemove, '@': wire.RosterAdmin}[w[0]]
		ops = append(ops, wire.RosterChange{Op: op, Address: w[1:]})
	}
	slices.SortFunc(ops, func(a, b wire.RosterChange) int { return bytes.Compare([]byte(a.Address), []byte(b.Address)) })
	return ops
}

// wireMembers builds members from "addr" and "addr*" (admin) words.
func wireMembers(words string) []wire.RosterMember {
	var ms []wire.RosterMember
	for _, w := range splitWords(words) {
		admin := w[len(w)-1] == '*'
		if admin {
			w = w[:len(w)-1]
		}
		ms = append(ms, wire.RosterMember{Address: w, Admin: admin})
	}
	slices.SortFunc(ms, func(a, b wire.RosterMember) int { return bytes.Compare([]byte(a.Address), []byte(b.Address)) })
	return ms
}

func splitWords(s string) []string {
	var out []string
	for _, w := range bytes.Fields([]byte(s)) {
		out = append(out, string(w))
	}
	return out
}

// TestRemovedMemberCannotRewriteTheRoster (finding 1): mallory, removed by
// the admin at generation 2, sends bob a change at generation 1 that
// removes alice and crowns herself, then one at 3 that removes alice; bob's
// roster stays alice and bob, his next message goes to alice alone, and
// alice's messages still reach him.
func TestRemovedMemberCannotRewriteTheRoster(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("mallory/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "trio", []engine.Address{bob.addr, mallory.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, mallory)
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterRemove, Address: "mallory/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, mallory)
	mallory.forge(bob, info.ID, 1, "-alice/1 @mallory/1", "bob/1 mallory/1*")
	mallory.forge(bob, info.ID, 3, "-alice/1", "bob/1 mallory/1*")
	bob.sync()
	if gen, ms := bob.members(info.ID); gen != 2 || !slices.Equal(ms, []string{"alice/1", "bob/1"}) {
		t.Fatalf("bob's roster after mallory's forgeries: %v at %d, want alice and bob at 2", ms, gen)
	}
	sent, err := bob.c.SendGroup(w.ctx, info.ID, []byte("to the group"))
	if err != nil {
		t.Fatal(err)
	}
	if got := bob.lanes(info.ID, sent.ID); len(got) != 1 || got["alice/1"] == "" {
		t.Fatalf("bob's lanes %v, want alice's alone", got)
	}
	alice.c.SendGroup(w.ctx, info.ID, []byte("still here"))
	settle(t, 5, alice, bob)
	if h := bob.groupHistory(info.ID); !slices.Contains(h, "alice/1:still here") {
		t.Fatalf("bob's group history %v, want alice's message", h)
	}
}

// TestMemberCannotRemoveAnother (finding 1): carol, a member but no admin,
// removes bob from bob's own view; nothing changes, and alice's message is
// delivered to bob rather than refused as not_a_member.
func TestMemberCannotRemoveAnother(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "trio", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	carol.forge(bob, info.ID, 2, "-bob/1", "alice/1* carol/1")
	carol.forge(bob, info.ID, 1, "-bob/1", "alice/1* carol/1*")
	bob.sync()
	if gen, ms := bob.members(info.ID); gen != 1 || !slices.Equal(ms, []string{"alice/1", "bob/1", "carol/1"}) {
		t.Fatalf("bob's roster after carol's removal: %v at %d, want all three at 1", ms, gen)
	}
	sent, err := alice.c.SendGroup(w.ctx, info.ID, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	if got := alice.lanes(info.ID, sent.ID); got["bob/1"] != "acknowledged" {
		t.Fatalf("alice's lanes %v, want bob's acknowledged", got)
	}
	if _, err := bob.c.SendGroup(w.ctx, info.ID, []byte("I can still send")); err != nil {
		t.Fatalf("bob cannot send: %v", err)
	}
}

// TestRosterStaysWithinTheMemberBound (finding 1): an admin's two changes at
// one generation, each within the frame's bounds, would grow the roster past
// wire.MaxGroupMembers; the merge counts only what fits, and the creator
// can still send.
func TestRosterStaysWithinTheMemberBound(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, mallory := w.device("alice/1"), w.device("bob/1"), w.device("mallory/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "big", []engine.Address{bob.addr, mallory.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, mallory)
	if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "mallory/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, mallory)
	var first, second []string
	for i := range 60 {
		first = append(first, fmt.Sprintf("+x%02d/1", i))
		second = append(second, fmt.Sprintf("+y%02d/1", i))
	}
	for _, ops := range [][]string{first, second} {
		mallory.forge(bob, info.ID, 3, joinWords(ops), "alice/1* bob/1 mallory/1*")
		mallory.forge(alice, info.ID, 3, joinWords(ops), "alice/1* bob/1 mallory/1*")
	}
	for _, d := range []*device{alice, bob} {
		d.sync()
		if _, ms := d.members(info.ID); len(ms) > wire.MaxGroupMembers {
			t.Fatalf("%s's roster holds %d members", d.addr, len(ms))
		}
	}
	if _, err := alice.c.SendGroup(w.ctx, info.ID, []byte("still fits")); err != nil {
		t.Fatalf("the creator cannot send: %v", err)
	}
}

func joinWords(ws []string) string { return string(bytes.Join(toBytes(ws), []byte(" "))) }

func toBytes(ws []string) [][]byte {
	out := make([][]byte, len(ws))
	for i, w := range ws {
		out[i] = []byte(w)
	}
	return out
}

// TestNoFrameStopsTheReceiveLoop (finding 2): a stranger's roster naming a
// member that is no device address, a change removing it, an unsigned
// roster and frames of no known kind; every one leaves staging at once,
// sync keeps working, and a friend's message arrives.
func TestNoFrameStopsTheReceiveLoop(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, eve := w.device("alice/1"), w.device("bob/1"), w.device("eve/1")
	alice.send(bob, "hi")
	settle(t, 5, alice, bob)
	group := wire.GroupID{0x77}
	good, err := eve.c.SignRosterChange(group, engine.RosterChange{ID: wire.LogicalID{1}, Generation: 1, Name: "x",
		Ops: wireOps("+aa/11 +bob/1"), Members: wireMembers("aa/11 bob/1 eve/1*")})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Replace(good[:len(good)-64], []byte("aa/11"), []byte("zz%11"), -1)
	eve.raw(bob, eve.c.SignFrameBody(body))
	rm := bytes.Replace(body, []byte{byte(wire.RosterAdd), 5, 'z'}, []byte{byte(wire.RosterRemove), 5, 'z'}, 1)
	eve.raw(bob, eve.c.SignFrameBody(rm))
	unsigned, err := wire.EncodeRoster(wire.Roster{ID: wire.LogicalID{2}, Group: group, Generation: 1, Name: "x",
		Changes: wireOps("+bob/1"), Members: wireMembers("bob/1 eve/1*")})
	if err != nil {
		t.Fatal(err)
	}
	eve.raw(bob, unsigned)
	eve.raw(bob, []byte{1, 9, 1, 2, 3})
	eve.raw(bob, append([]byte{1, byte(wire.FrameSignedRoster)}, bytes.Repeat([]byte{0xff}, 300)...))
	res := bob.sync()
	if n, err := bob.c.StagedCount(w.ctx); err != nil || n != 0 {
		t.Fatalf("%d rows left staged (%v) after one sync, want none", n, err)
	}
	if errs := errorsIn(res); len(errs) < 5 {
		t.Fatalf("bob's sync reported %d errors (%v), want one per hostile frame", len(errs), errs)
	}
	alice.send(bob, "are you still there?")
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); !slices.Contains(got, "are you still there?") {
		t.Fatalf("bob received %v from alice", got)
	}
	// What was dropped is in quarantine, each with its reason, for bob to
	// look at and clear.
	q, err := bob.c.Quarantine(w.ctx, 0, 100)
	if err != nil || len(q) < 5 {
		t.Fatalf("quarantine %+v, %v; want the five hostile envelopes", q, err)
	}
	for _, e := range q {
		if e.Sender != "eve/1" || e.Reason == "" || e.Size == 0 {
			t.Fatalf("quarantined %+v, want eve's envelope with a reason", e)
		}
	}
	if n, err := bob.c.ClearQuarantine(w.ctx, 0); err != nil || n != len(q) {
		t.Fatalf("cleared %d (%v), want %d", n, err, len(q))
	}
	if q, _ := bob.c.Quarantine(w.ctx, 0, 100); len(q) != 0 {
		t.Fatalf("quarantine after clearing: %+v", q)
	}
}

// TestStrangersGroupIsARequest (finding 3): a stranger's first envelope is a
// roster change naming bob's accepted friend alice an admin; it is a
// request, unacknowledged, and the stranger's group message is no delivery.
func TestStrangersGroupIsARequest(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, eve := w.device("alice/1"), w.device("bob/1"), w.device("eve/1")
	bob.withRequests(nil)
	if _, err := bob.c.AcceptRequest(w.ctx, alice.addr); err != nil {
		t.Fatal(err)
	}
	group := wire.GroupID{0x55}
	created := eve.forge(bob, group, 1, "+bob/1", "alice/1* bob/1 eve/1")
	res := bob.sync()
	if k := kindsOf(res); k[engine.ResultRequest] != 1 || k[engine.ResultGroupChanged] != 0 {
		t.Fatalf("bob's sync of the stranger's roster: %v, want one request", k)
	}
	if acked(eve.sync(), created) {
		t.Fatal("bob acknowledged a stranger's roster change")
	}
	msg, _ := wire.EncodeGroupMessage(wire.GroupMessage{ID: wire.LogicalID{9}, Group: group, Generation: 1, Content: wire.ContentText, Body: []byte("buy")})
	eve.raw(bob, msg)
	if k := kindsOf(bob.sync()); k[engine.ResultDelivery] != 0 {
		t.Fatalf("the stranger's group message: %v, want no delivery", k)
	}
	if _, err := bob.c.Group(w.ctx, group); !errors.Is(err, engine.ErrUnknownGroup) {
		t.Fatalf("bob keeps the stranger's group: %v", err)
	}
}

// TestHeldFramesAreBounded (finding 4): a stranger's group messages naming
// a group that does not exist are held, at most MaxHeldPerSender of them;
// the oldest are dropped with an event, and a friend's message still
// arrives.
func TestHeldFramesAreBounded(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, eve := w.device("alice/1"), w.device("bob/1"), w.device("eve/1")
	n := engine.MaxHeldPerSender + 8
	for i := range n {
		msg, _ := wire.EncodeGroupMessage(wire.GroupMessage{ID: wire.LogicalID{byte(i), 1}, Group: wire.GroupID{0x66}, Generation: 1,
			Content: wire.ContentText, Body: []byte("held")})
		eve.raw(bob, msg)
	}
	res := bob.sync()
	dropped := 0
	for _, err := range errorsIn(res) {
		if errors.Is(err, engine.ErrHeldFull) {
			dropped++
		}
	}
	if dropped != n-engine.MaxHeldPerSender {
		t.Fatalf("%d held frames dropped, want %d", dropped, n-engine.MaxHeldPerSender)
	}
	if staged, _ := bob.c.StagedCount(w.ctx); staged != engine.MaxHeldPerSender {
		t.Fatalf("%d rows staged, want %d held", staged, engine.MaxHeldPerSender)
	}
	alice.send(bob, "hello")
	bob.sync()
	bob.commitAll()
	if got := bob.received(alice); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("bob received %v", got)
	}
}

// TestRosterLogIsBounded (finding 5): a change far ahead of the merged
// generation is not stored, an author's waiting changes are bounded, and a
// long-lived group's log is compacted.
func TestRosterLogIsBounded(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "long", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob)
	alice.forge(bob, info.ID, 1+engine.MaxGenerationsAhead+1, "+far/1", "alice/1* bob/1 far/1")
	// Two changes at each of generations 3 to 12, all waiting on the gap at
	// 2: the author's first MaxChangesAheadPerAuthor are kept.
	sent := 0
	for g := uint64(3); g <= 12; g++ {
		for k := range 2 {
			alice.forge(bob, info.ID, g, fmt.Sprintf("+w%d-%d/1", g, k), "alice/1* bob/1")
			sent++
		}
	}
	var refused int
	for _, err := range errorsIn(bob.sync()) {
		if errors.Is(err, engine.ErrRosterAhead) {
			refused++
		}
	}
	if want := 1 + sent - engine.MaxChangesAheadPerAuthor; refused != want {
		t.Fatalf("%d changes refused, want %d (the far one and those past the author's bound)", refused, want)
	}
	g, err := bob.c.Group(w.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Changes) != 1+engine.MaxChangesAheadPerAuthor {
		t.Fatalf("bob's log holds %d changes, want %d", len(g.Changes), 1+engine.MaxChangesAheadPerAuthor)
	}
	for _, c := range g.Changes {
		if c.Generation > 1+engine.MaxGenerationsAhead {
			t.Fatalf("bob stored a change at generation %d", c.Generation)
		}
	}
}

// TestRosterLogCompacts: a group changed more than MaxRosterLog times keeps
// a snapshot and the last KeepGenerations generations, on both sides, and
// the roster every device merges is the same.
func TestRosterLogCompacts(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "long", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	for i := range engine.MaxRosterLog + 10 {
		op := wire.RosterChange{Op: wire.RosterAdd, Address: fmt.Sprintf("n%d/1", i%50)}
		if i%2 == 1 {
			op.Op = wire.RosterRemove
		}
		if _, err := alice.c.ChangeRoster(w.ctx, info.ID, []wire.RosterChange{op}); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			bob.sync()
		}
	}
	bob.sync()
	a, err := alice.c.Group(w.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bob.c.Group(w.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []engine.GroupInfo{a, b} {
		if g.Start.Snapshot == nil || len(g.Changes) > engine.MaxRosterLog {
			t.Fatalf("log of %d changes, snapshot %v: want it compacted", len(g.Changes), g.Start.Snapshot)
		}
	}
	if a.Roster.Generation != b.Roster.Generation || !slices.Equal(a.Roster.Members, b.Roster.Members) {
		t.Fatalf("alice merges %+v, bob %+v", a.Roster, b.Roster)
	}
}

// TestUnreadableStateDoesNotStopTheLoop: a row whose preparation fails for
// a reason that is neither the store's failure nor a cancellation (here the
// sealed session with its sender no longer opens) gets a verdict: it goes
// to quarantine with its reason, and the rows after it are processed.
func TestUnreadableStateDoesNotStopTheLoop(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	alice.send(bob, "first")
	settle(t, 5, alice, bob)
	if err := bob.c.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(bob.dir, "parley.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE session SET sealed = x'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff' WHERE peer = 'alice/1'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	bob.open()
	alice.send(bob, "second")
	carol.send(bob, "from carol")
	res, err := bob.c.Sync(w.ctx)
	if err != nil {
		t.Fatalf("bob's sync with an unreadable session: %v", err)
	}
	var quarantined bool
	for _, e := range errorsIn(res.Received) {
		quarantined = quarantined || errors.Is(e, engine.ErrSealedRecord) || errors.Is(e, engine.ErrMalformedState)
	}
	if !quarantined {
		t.Fatalf("bob's sync reported %v, want alice's envelope quarantined for its unreadable session", errorsIn(res.Received))
	}
	if n, _ := bob.c.StagedCount(w.ctx); n != 0 {
		t.Fatalf("%d rows left staged", n)
	}
	bob.commitAll()
	if got := bob.received(carol); !slices.Equal(got, []string{"from carol"}) {
		t.Fatalf("bob received %v from carol", got)
	}
}
