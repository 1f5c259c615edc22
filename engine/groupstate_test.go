package engine_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// errOf returns the results of kind among res.
func errOf(res []engine.ReceiveResult, kind engine.ResultKind) []engine.ReceiveResult {
	var out []engine.ReceiveResult
	for _, r := range res {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// TestLinkWithoutArchiveSendsTheGroups: the relay keeps no blobs, so
// alice/1 links alice/2 with the archive left out; the link's
// transaction stores a group state lane to alice/2. bob, a member, sends
// the group a message before alice/2 has the group (held as one of an
// unknown group) and one after: alice/2 ends up holding the group and
// both messages, and bob's lanes and alice's group state lane to alice/2
// end acknowledged.
func TestLinkWithoutArchiveSendsTheGroups(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t) // no blob store: the link's archive is left out
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	none := engine.HistoryChoice{Mode: engine.HistoryNone}
	alice2, archived := w.linkWithHistory(alice, none, none)
	if archived {
		t.Fatal("the link carried its archive; want it left out")
	}
	if err := alice2.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := alice.openGroupLanes(); n != 1 {
		t.Fatalf("alice/1 holds %d open group lanes after the link, want the group state to alice/2", n)
	}
	bob.reopen()
	checkPeers(t, bob, alice)
	before, err := bob.c.SendGroup(w.ctx, g, []byte("before"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		bob.sync()
		alice2.sync()
	}
	if gs, err := alice2.c.Groups(w.ctx); err != nil || len(gs) != 0 {
		t.Fatalf("alice/2 holds groups %v (%v) before the group state, want none", gs, err)
	}
	if n, err := alice2.c.StagedCount(w.ctx); err != nil || n != 1 {
		t.Fatalf("alice/2 holds %d staged rows (%v), want bob's message held", n, err)
	}
	settle(t, 10, alice, alice2, bob)
	if _, members := alice2.members(g); !slices.Equal(members, []string{"alice/1", "bob/1"}) {
		t.Fatalf("alice/2 holds the group with %v", members)
	}
	after, err := bob.c.SendGroup(w.ctx, g, []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 10, alice, alice2, bob)
	for _, e := range []string{"bob/1:before", "bob/1:after"} {
		if n := alice2.countEntry(g, e); n != 1 {
			t.Fatalf("alice/2 holds %q %d times (history %v), want once", e, n, alice2.groupHistory(g))
		}
	}
	for _, id := range []wire.LogicalID{before.ID, after.ID} {
		if got := bob.lanes(g, id)["alice/2"]; got != "acknowledged" {
			t.Fatalf("bob's lane of %x to alice/2 is %q, want acknowledged", id[:4], got)
		}
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice/1 holds %d open group lanes, want the group state acknowledged", n)
	}
	if k, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil || *k != bob.c.Identity() {
		t.Fatalf("alice/2 pins bob/1 as %v (%v), want bob's identity", k, err)
	}
}

// groupStateOf is a group state frame of group g as d holds it, under a
// fresh ID, with pins.
func groupStateOf(t *testing.T, d *device, g wire.GroupID, pins ...wire.ArchivePin) []byte {
	t.Helper()
	s := wire.GroupState{Pins: pins}
	if _, err := rand.Read(s.ID[:]); err != nil {
		t.Fatal(err)
	}
	found := false
	if err := d.st.GroupStateRecords(d.w.ctx, func(r wire.ArchiveRecord) error {
		if gr, ok := r.(wire.ArchiveGroup); ok && gr.ID == g {
			s.Group, found = gr, true
		}
		return nil
	}); err != nil || !found {
		t.Fatalf("%s reads group %x: %v (found %v)", d.addr, g[:4], err, found)
	}
	b, err := wire.EncodeGroupState(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGroupStateRefusals: alice/3, linked with no group, takes a group
// state from device 1 of its account only. One from alice/2 (a sibling
// that does not hold the account key) or from carol (another account),
// or a truncated one from alice/1, is refused with nothing stored, and
// the receive goes on; a repeat is acknowledged and changes nothing; a
// state of a group alice/3 holds does not overwrite it; a pin alice/3
// holds with another key stays.
func TestGroupStateRefusals(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	publishLists(t, alice, bob, carol)
	checkPeers(t, alice, bob, carol)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	bobKey := bob.c.Identity()
	bobPin := wire.ArchivePin{Address: "bob/1", PinnedAt: 1,
		Identity: slices.Concat(bobKey.SigningKey[:], bobKey.DHKey[:], bobKey.Signature[:])}
	frame := groupStateOf(t, alice, g, bobPin)
	alice2 := w.linkDevice(alice) // linked with no group (AddDevice: no group state)
	alice3 := w.linkDevice(alice)
	publishLists(t, alice)
	alice2.reopen()

	refused := func(from *device, b []byte, want error) {
		t.Helper()
		if err := from.c.SendRawFrame(w.ctx, alice3.addr, b); err != nil {
			t.Fatalf("%s sends: %v", from.addr, err)
		}
		res := alice3.sync()
		errs := errOf(res, engine.ResultError)
		if len(errs) != 1 || !errors.Is(errs[0].Err, want) {
			t.Fatalf("alice/3 receives from %s: %+v, want one refusal %v", from.addr, res, want)
		}
		if gs, err := alice3.c.Groups(w.ctx); err != nil || len(gs) != 0 {
			t.Fatalf("alice/3 holds %v (%v) after a refused group state", gs, err)
		}
		if k, err := alice3.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k != nil {
			t.Fatalf("alice/3 pins bob/1 (%v) after a refused group state", err)
		}
	}
	refused(alice2, frame, engine.ErrGroupStateSender)
	refused(carol, frame, engine.ErrNotOwnDevice)
	refused(alice, frame[:len(frame)-3], wire.ErrMalformed)
	refused(alice, append([]byte{wire.FrameVersion, byte(wire.FrameGroupState)}, 1, 2, 3), wire.ErrMalformed)

	taken := func(b []byte) {
		t.Helper()
		if err := alice.c.SendRawFrame(w.ctx, alice3.addr, b); err != nil {
			t.Fatal(err)
		}
		if res := errOf(alice3.sync(), engine.ResultGroupState); len(res) != 1 || res[0].Group == nil || *res[0].Group != g {
			t.Fatalf("alice/3 does not take alice/1's group state: %+v", res)
		}
	}
	taken(frame)
	gen, members := alice3.members(g)
	if !slices.Equal(members, []string{"alice/1", "bob/1"}) {
		t.Fatalf("alice/3 holds the group with %v", members)
	}
	if k, err := alice3.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil || *k != bobKey {
		t.Fatalf("alice/3 pins bob/1 as %v (%v)", k, err)
	}
	held, err := alice3.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}

	// A repeat, and a state of the held group that says another thing
	// (no changes, another name, another pin for bob): acknowledged,
	// nothing changed.
	taken(frame)
	other := bobPin
	other.Identity = bytes.Repeat([]byte{7}, len(bobPin.Identity))
	s, err := wire.DecodeGroupState(frame)
	if err != nil {
		t.Fatal(err)
	}
	s.ID[0]++
	s.Group.Name, s.Group.Changes, s.Pins = "forged", s.Group.Changes[:1], []wire.ArchivePin{other}
	forged, err := wire.EncodeGroupState(s)
	if err != nil {
		t.Fatal(err)
	}
	taken(forged)
	now, err := alice3.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if gen2, members2 := alice3.members(g); gen2 != gen || !slices.Equal(members2, members) || now.Roster.Name != held.Roster.Name || len(now.Changes) != len(held.Changes) {
		t.Fatalf("alice/3's group changed: %+v, was %+v", now, held)
	}
	if k, err := alice3.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil || *k != bobKey {
		t.Fatalf("alice/3 pins bob/1 as %v (%v) after another pin came", k, err)
	}
}

// TestGroupStateThenAFirstMessageInOneBatch: alice/2 receives alice/1's
// group state, which pins bob/1, and then, in the same receive round,
// bob's first message to it on a new session, which pins bob/1 too (when
// the two rows are one batch, its working copy was read before the batch
// stored the group state's pin): the same identity pinned twice is kept,
// and the round goes through. The test does not check that the two rows
// were one transaction.
func TestGroupStateThenAFirstMessageInOneBatch(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	alice2 := w.linkHolding(alice)
	alice.sync() // the group state goes out
	bob.reopen()
	checkPeers(t, bob, alice)
	sent := bob.send(alice2, "first")
	res := alice2.sync()
	if len(errOf(res, engine.ResultGroupState)) != 1 || len(errOf(res, engine.ResultError)) != 0 || len(res) != 2 {
		t.Fatalf("alice/2's batch: %+v, want the group state taken and bob's message, nothing refused", res)
	}
	if res[1].Sender != bob.addr || res[1].ID != sent {
		t.Fatalf("alice/2's batch: %+v, want bob's message second", res)
	}
	if _, members := alice2.members(g); len(members) != 2 {
		t.Fatalf("alice/2 holds the group with %v", members)
	}
	if k, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil || *k != bob.c.Identity() {
		t.Fatalf("alice/2 pins bob/1 as %v (%v)", k, err)
	}
}

// TestGroupStateLaneExpires: alice/2 never comes back after alice/1 links
// it; the group state lane stays pending through retries until it has
// been pending past MaxGroupHold, and the next retry abandons it.
func TestGroupStateLaneExpires(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	if _, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr}); err != nil {
		t.Fatal(err)
	}
	settle(t, 6, alice, bob)
	alice2 := w.linkHolding(alice)
	alice.retry(alice2)
	if n := alice.forwardLanes("alice/2", engine.LanePending); n != 1 {
		t.Fatalf("alice/1 has %d group state lanes pending to alice/2, want 1", n)
	}
	w.clock.Advance(engine.MaxGroupHold + time.Hour)
	alice.retry(alice2)
	if n := alice.forwardLanes("alice/2", engine.LaneAbandoned); n != 1 {
		t.Fatalf("alice/1 has %d abandoned group state lanes to alice/2 (%d pending), want 1", n, alice.forwardLanes("alice/2", engine.LanePending))
	}
}

// TestGroupStateSentByAnotherKeyHolder: the account key is held by
// alice/3 (as by a restored profile, which takes the next free number).
// It links alice/4 with the archive left out: its package names alice/3
// as the linker, alice/3 stores a group state lane to alice/4, and
// alice/4 takes it and ends up holding the group; the lane ends
// acknowledged.
func TestGroupStateSentByAnotherKeyHolder(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/3"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice/3 holds %d open group lanes before the link", n)
	}
	none := engine.HistoryChoice{Mode: engine.HistoryNone}
	linked, archived := w.linkWithHistory(alice, none, none)
	if archived || linked.addr.Device == engine.GroupStateSender {
		t.Fatalf("the linked device is %s (archive carried: %v)", linked.addr, archived)
	}
	if prof, err := linked.st.Profile(w.ctx); err != nil || prof.LinkedBy != alice.addr.Device {
		t.Fatalf("%s holds linked-by %d (%v), want %d", linked.addr, prof.LinkedBy, err, alice.addr.Device)
	}
	if err := linked.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := alice.openGroupLanes(); n != 1 {
		t.Fatalf("alice/3 holds %d open group lanes after the link, want the group state to %s", n, linked.addr)
	}
	settle(t, 10, alice, linked, bob)
	if _, members := linked.members(g); !slices.Equal(members, []string{"alice/3", "bob/1"}) {
		t.Fatalf("%s holds the group with %v", linked.addr, members)
	}
	if n := alice.openGroupLanes(); n != 0 {
		t.Fatalf("alice/3 holds %d open group lanes, want the group state acknowledged", n)
	}
}

// TestGroupStateFromTheLinkerOnly: alice/4's package names alice/3 as
// the device that linked it (a key holder other than device 1). A group
// state from alice/1 (active in the list, but not the linker) is refused
// with nothing stored; the same state from alice/3 is taken.
func TestGroupStateFromTheLinkerOnly(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	frame := groupStateOf(t, alice, g)
	alice2 := w.linkDevice(alice)
	alice3 := w.linkDevice(alice)
	alice4 := w.linkDeviceEdit(alice, func(p *wire.LinkPackageData) { p.Linker = alice3.addr.Device })
	publishLists(t, alice)
	alice2.reopen()
	alice3.reopen()
	if prof, err := alice4.st.Profile(w.ctx); err != nil || prof.LinkedBy != 3 {
		t.Fatalf("alice/4 holds linked-by %d (%v), want 3", prof.LinkedBy, err)
	}
	if prof, err := alice2.st.Profile(w.ctx); err != nil || prof.LinkedBy != 0 {
		t.Fatalf("alice/2 (its package names no linker) holds linked-by %d (%v), want 0", prof.LinkedBy, err)
	}
	if err := alice.c.SendRawFrame(w.ctx, alice4.addr, frame); err != nil {
		t.Fatal(err)
	}
	res := alice4.sync()
	if errs := errOf(res, engine.ResultError); len(errs) != 1 || !errors.Is(errs[0].Err, engine.ErrGroupStateSender) {
		t.Fatalf("alice/4 receives from alice/1: %+v, want one refusal ErrGroupStateSender", res)
	}
	if gs, err := alice4.c.Groups(w.ctx); err != nil || len(gs) != 0 {
		t.Fatalf("alice/4 holds %v (%v) after a refused group state", gs, err)
	}
	if err := alice3.c.SendRawFrame(w.ctx, alice4.addr, frame); err != nil {
		t.Fatal(err)
	}
	if res := errOf(alice4.sync(), engine.ResultGroupState); len(res) != 1 || res[0].Group == nil || *res[0].Group != g {
		t.Fatalf("alice/4 does not take alice/3's group state: %+v", res)
	}
	if _, members := alice4.members(g); !slices.Equal(members, []string{"alice/1", "bob/1"}) {
		t.Fatalf("alice/4 holds the group with %v", members)
	}
}

// TestGroupStateNeverHoldsTheLinkBack: the store refuses alice/1's group
// state plan (a failpoint in its first statement), or the groups are over
// the link's byte budget: the link goes through all the same, the list
// naming the new device stored with its cut, and no group state lane
// stored (reported).
func TestGroupStateNeverHoldsTheLinkBack(t *testing.T) {
	oneGoroutine(t)
	for _, name := range []string{"refused", "budget"} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			alice, bob := w.device("alice/1"), w.device("bob/1")
			publishLists(t, alice, bob)
			checkPeers(t, alice, bob)
			if _, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr}); err != nil {
				t.Fatal(err)
			}
			settle(t, 6, alice, bob)
			refused := errors.New("refused by the test")
			if name == "refused" {
				alice.fp.Store(func(p string) error {
					if p == "group-state-send/stmt-group-outbound-insert-before" {
						return refused
					}
					return nil
				})
				defer alice.fp.Store(nil)
			} else {
				defer engine.SetGroupStateBudget(1)()
			}
			none := engine.HistoryChoice{Mode: engine.HistoryNone}
			linked, _ := w.linkWithHistory(alice, none, none) // fails the test if the link fails
			a, err := engine.LoadAccount(w.ctx, alice.st)
			if err != nil || !engine.ActiveDevice(a.List, linked.addr.Device, linked.c.Identity().SigningKey) {
				t.Fatalf("alice/1's list does not name %s active (%v)", linked.addr, err)
			}
			if _, ok, err := alice.st.LinkCut(w.ctx, linked.addr.Device); err != nil || !ok {
				t.Fatalf("alice/1 holds no cut for %s (%v)", linked.addr, err)
			}
			if n := alice.openGroupLanes(); n != 0 {
				t.Fatalf("alice/1 holds %d open group lanes, want none", n)
			}
		})
	}
}

// TestGroupStateAfterAChangeStartedTheGroup: alice/2, linked with no
// group, gets alice/1's roster change of the group first (a sibling's own
// change starts the group there, from that change), then alice/1's group
// state. The state still adds what the start left out: the earlier
// changes of the log and the pin of bob, a member alice/2 never talked to;
// the start stays. A later message of bob's is placed.
func TestGroupStateAfterAChangeStartedTheGroup(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	frame := groupStateOf(t, alice, g, func() wire.ArchivePin {
		k := bob.c.Identity()
		return wire.ArchivePin{Address: "bob/1", PinnedAt: 1, Identity: slices.Concat(k.SigningKey[:], k.DHKey[:], k.Signature[:])}
	}())
	alice2 := w.linkDevice(alice) // AddDevice: no group state
	publishLists(t, alice)
	if err := alice2.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.reopen()
	checkPeers(t, bob, alice)
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	settle(t, 10, alice, alice2, bob)
	started, err := alice2.c.Group(w.ctx, g)
	if err != nil {
		t.Fatalf("alice/2 holds no group after alice/1's change: %v", err)
	}
	if k, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k != nil {
		t.Fatalf("alice/2 pins bob/1 before the group state (%v)", err)
	}
	full, err := alice.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(started.Changes) >= len(full.Changes) {
		t.Fatalf("alice/2 holds %d changes before the state, alice/1 %d: want fewer", len(started.Changes), len(full.Changes))
	}
	if err := alice.c.SendRawFrame(w.ctx, alice2.addr, frame); err != nil {
		t.Fatal(err)
	}
	if res := errOf(alice2.sync(), engine.ResultGroupState); len(res) != 1 {
		t.Fatalf("alice/2 does not take the group state: %+v", res)
	}
	now, err := alice2.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Changes) != len(full.Changes) || now.Start.Change != started.Start.Change || (now.Start.Snapshot == nil) != (started.Start.Snapshot == nil) {
		t.Fatalf("alice/2 holds %d changes from start %+v, want %d from %+v", len(now.Changes), now.Start, len(full.Changes), started.Start)
	}
	if k, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil || *k != bob.c.Identity() {
		t.Fatalf("alice/2 pins bob/1 as %v (%v), want bob's identity from the state", k, err)
	}
	if _, err := bob.c.SendGroup(w.ctx, g, []byte("after")); err != nil {
		t.Fatal(err)
	}
	settle(t, 10, alice, alice2, bob)
	if n := alice2.countEntry(g, "bob/1:after"); n != 1 {
		t.Fatalf("alice/2 holds bob's message %d times (history %v), want once", n, alice2.groupHistory(g))
	}
}

// TestGroupStatePinKeptOnANewGroup: alice/2, linked with no group, pins
// bob/1 already; alice/1's group state of a group alice/2 does not hold
// carries another key for bob/1. The group is stored, bob's pin stays,
// and the differing pin is reported once, after the commit.
func TestGroupStatePinKeptOnANewGroup(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	alice2 := w.linkDevice(alice)
	publishLists(t, alice)
	if err := alice2.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	bob.reopen()
	checkPeers(t, bob, alice)
	bob.send(alice2, "hello")
	alice2.sync()
	if k, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil {
		t.Fatalf("alice/2 does not pin bob/1 (%v)", err)
	}
	forged := wire.ArchivePin{Address: "bob/1", PinnedAt: 1, Identity: bytes.Repeat([]byte{7}, 32+32+64)}
	frame := groupStateOf(t, alice, g, forged)
	for drained := false; !drained; {
		select {
		case <-alice2.c.Events():
		default:
			drained = true
		}
	}
	if err := alice.c.SendRawFrame(w.ctx, alice2.addr, frame); err != nil {
		t.Fatal(err)
	}
	if res := errOf(alice2.sync(), engine.ResultGroupState); len(res) != 1 {
		t.Fatalf("alice/2 does not take the group state: %+v", res)
	}
	if _, members := alice2.members(g); !slices.Equal(members, []string{"alice/1", "bob/1"}) {
		t.Fatalf("alice/2 holds the group with %v", members)
	}
	if k, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || k == nil || *k != bob.c.Identity() {
		t.Fatalf("alice/2 pins bob/1 as %v (%v), want its own pin kept", k, err)
	}
	kept := 0
	for drained := false; !drained; {
		select {
		case e := <-alice2.c.Events():
			if errors.Is(e.Err, engine.ErrGroupStatePinKept) {
				kept++
			}
		default:
			drained = true
		}
	}
	if kept != 1 {
		t.Fatalf("alice/2 reported %d kept pins, want 1", kept)
	}
}

// TestGroupStateAfterAChangeInOneRound: as
// TestGroupStateAfterAChangeStartedTheGroup, with alice/1's change and its
// group state received in one round: the state finds the group the change
// started earlier in the batch and adds the earlier changes and bob's pin.
func TestGroupStateAfterAChangeInOneRound(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	publishLists(t, alice, bob)
	checkPeers(t, alice, bob)
	info, _, err := alice.c.CreateGroup(w.ctx, "pair", []engine.Address{bob.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 6, alice, bob)
	k := bob.c.Identity()
	frame := groupStateOf(t, alice, g, wire.ArchivePin{Address: "bob/1", PinnedAt: 1,
		Identity: slices.Concat(k.SigningKey[:], k.DHKey[:], k.Signature[:])})
	alice2 := w.linkDevice(alice) // AddDevice: no group state
	publishLists(t, alice)
	if err := alice2.c.RefreshPreKeys(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.ChangeRoster(w.ctx, g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: "bob/1"}}); err != nil {
		t.Fatal(err)
	}
	alice.sync()
	if err := alice.c.SendRawFrame(w.ctx, alice2.addr, frame); err != nil {
		t.Fatal(err)
	}
	res := alice2.sync()
	if n := len(errOf(res, engine.ResultGroupState)); n != 1 || len(errOf(res, engine.ResultError)) != 0 {
		t.Fatalf("alice/2's round: %+v, want the change and the group state taken", res)
	}
	full, err := alice.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	now, err := alice2.c.Group(w.ctx, g)
	if err != nil {
		t.Fatalf("alice/2 holds no group: %v", err)
	}
	if len(now.Changes) != len(full.Changes) {
		t.Fatalf("alice/2 holds %d changes, alice/1 %d", len(now.Changes), len(full.Changes))
	}
	if p, err := alice2.c.PinnedIdentity(w.ctx, bob.addr); err != nil || p == nil || *p != k {
		t.Fatalf("alice/2 pins bob/1 as %v (%v), want bob's identity from the state", p, err)
	}
}
