package engine_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// personOp runs the operations of fpWorld.do for people with several
// devices: "linkfake:DEVICE" (run on the account's first device: its list
// gains DEVICE, countersigned by DEVICE's identity, stored here and
// served by the network, as a link ceremony would leave it) and
// "checkpeer:PEER" (CheckPeer, which holds the person's list),
// "publishfake" (the network serves the account's list as held here) and
// "removefake:DEVICE" (removeFake) and "adoptlist" (PublishDeviceList,
// adopting the network's later list). It reports
// false for any other op.
func personOp(ctx context.Context, w fpWorld, st *store.DB, c *engine.Client, ep *enginetest.FileEndpoint, name, arg string) (bool, error) {
	switch name {
	case "linkfake":
		return true, w.linkFake(ctx, st, ep, engine.MustParseAddress(arg))
	case "checkpeer":
		return true, c.CheckPeer(ctx, engine.MustParseAddress(arg))
	case "linkcut":
		return true, w.linkCut(ctx, st, nil, engine.MustParseAddress(arg))
	case "linkcutgroups":
		// linkcut with the group state lanes to the new device
		// (groupstate.go), as storeOwnList stores them.
		return true, w.linkCut(ctx, st, c, engine.MustParseAddress(arg))
	case "checkgroupstate":
		return true, checkGroupState(ctx, st, engine.MustParseAddress(arg))
	case "checkcut":
		return true, checkCut(ctx, st, engine.MustParseAddress(arg))
	case "publishfake":
		a, err := engine.LoadAccount(ctx, st)
		if err != nil {
			return true, err
		}
		if err := ep.Network().SetDeviceList(a.List); err != nil {
			return true, err
		}
		return true, ep.Save()
	case "removefake":
		return true, w.removeFake(ctx, st, c, ep, engine.MustParseAddress(arg))
	case "dropnext":
		// The network loses the next envelope from this device to arg.
		ep.Network().DropNext(c.Self(), engine.MustParseAddress(arg), 1)
		return true, ep.Save()
	case "adoptlist":
		// PublishDeviceList: the network's later list is adopted, with
		// the catch-up of a sibling linked since.
		return true, c.PublishDeviceList(ctx)
	case "linkshare":
		return true, w.linkShare(ctx, st, engine.MustParseAddress(arg), false)
	case "linksharepins":
		// linkshare with the pins the archive carries (a roster change
		// forwarded by a sibling is checked against its author's pin).
		return true, w.linkShare(ctx, st, engine.MustParseAddress(arg), true)
	}
	return false, nil
}

// linkShare imports into st the groups and the staged messages that
// from's link archive holds ("linkshare:FROM"), as a link's archive
// brings them to a new device of from's person.
func (w fpWorld) linkShare(ctx context.Context, st *store.DB, from engine.Address, pins bool) error {
	src, err := store.Open(ctx, w.profile(from.String()), passphrase, store.Options{})
	if err != nil {
		return err
	}
	var recs []wire.ArchiveRecord
	err = src.LinkArchiveRecords(ctx, func(r wire.ArchiveRecord) error {
		switch r.(type) {
		case wire.ArchiveGroup, wire.ArchiveStaged:
			recs = append(recs, r)
		case wire.ArchivePin:
			if pins {
				recs = append(recs, r)
			}
		}
		return nil
	})
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil || len(recs) == 0 {
		return err
	}
	var archive [16]byte
	if _, err := rand.Read(archive[:]); err != nil {
		return err
	}
	n, now := uint64(len(recs)), time.Now()
	if _, err := st.Apply(ctx, engine.ImportStart{Archive: archive, Total: n, At: now}); err != nil {
		return err
	}
	_, err = st.Apply(ctx, engine.ImportRecords{Archive: archive, From: 0, To: n, Total: n, Records: recs})
	return err
}

// linkCut stores, as LinkDevice does after the relay took it, the list
// that adds dev with the link's cut, in one transaction; with c, the group
// state lanes to dev too.
func (w fpWorld) linkCut(ctx context.Context, st *store.DB, c *engine.Client, dev engine.Address) error {
	a, err := engine.LoadAccount(ctx, st)
	if err != nil {
		return err
	}
	for _, e := range a.List.Entries {
		if e.Number == dev.Device {
			return nil // stored by a run before the failure
		}
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		return err
	}
	next, err := engine.NextDeviceList(a.Key, a.List, engine.DeviceEntryFor(id, dev.User, a.Key.Public(), dev.Device, realNow().Unix()))
	if err != nil {
		return err
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		return err
	}
	to, err := wire.EncodeDeviceList(next)
	if err != nil {
		return err
	}
	plans := []engine.Plan{engine.UpdateDeviceList{From: from, List: to},
		engine.LinkCut{Device: dev.Device, At: realNow(), History: engine.HistoryAll}}
	if c != nil {
		gs := c.GroupStateFor(ctx, dev)
		if gs == nil {
			return fmt.Errorf("no group to send %s", dev)
		}
		plans = append(plans, *gs)
	}
	_, err = st.ApplyBatch(ctx, plans)
	return err
}

// checkGroupState fails unless the list held names dev exactly when a
// group state lane to dev is pending (the two are one transaction), then
// abandons those lanes: dev is no device of the world, and would never
// acknowledge them.
func checkGroupState(ctx context.Context, st *store.DB, dev engine.Address) error {
	if err := checkCut(ctx, st, dev); err != nil {
		return err
	}
	a, err := engine.LoadAccount(ctx, st)
	if err != nil {
		return err
	}
	listed := false
	for _, e := range a.List.Entries {
		listed = listed || e.Number == dev.Device
	}
	out, err := st.PendingToPerson(ctx, dev.User, 100)
	if err != nil {
		return err
	}
	n := 0
	for _, m := range out {
		if m.Recipient == dev {
			n++
			if _, err := st.Apply(ctx, engine.Abandon{Recipient: dev, ID: m.ID, At: realNow()}); err != nil {
				return err
			}
		}
	}
	if listed != (n == 1) {
		return fmt.Errorf("the list names %s: %v; %d group state lanes to it pending", dev, listed, n)
	}
	return nil
}

// checkCut fails unless the list held names dev exactly when a cut for
// dev is recorded: the two are one transaction.
func checkCut(ctx context.Context, st *store.DB, dev engine.Address) error {
	a, err := engine.LoadAccount(ctx, st)
	if err != nil {
		return err
	}
	listed := false
	for _, e := range a.List.Entries {
		listed = listed || e.Number == dev.Device
	}
	_, cut, err := st.LinkCut(ctx, dev.Device)
	if err != nil {
		return err
	}
	if listed != cut {
		return fmt.Errorf("the list names %s: %v; a cut for it is recorded: %v", dev, listed, cut)
	}
	return nil
}

func (w fpWorld) linkFake(ctx context.Context, st *store.DB, ep *enginetest.FileEndpoint, dev engine.Address) error {
	a, err := engine.LoadAccount(ctx, st)
	if err != nil {
		return err
	}
	other, err := store.Open(ctx, w.profile(dev.String()), passphrase, store.Options{})
	if err != nil {
		return err
	}
	prof, err := other.Profile(ctx)
	other.Close()
	if err != nil {
		return err
	}
	id, err := session.UnmarshalIdentity(prof.Identity)
	if err != nil {
		return err
	}
	next, err := engine.NextDeviceList(a.Key, a.List, engine.DeviceEntryFor(id, dev.User, a.Key.Public(), dev.Device, realNow().Unix()))
	if err != nil {
		return err
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		return err
	}
	to, err := wire.EncodeDeviceList(next)
	if err != nil {
		return err
	}
	if _, err := st.Apply(ctx, engine.UpdateDeviceList{From: from, List: to}); err != nil {
		return err
	}
	// The new device holds the list too, as the link package leaves it:
	// its frames to the first device (a sent copy) come from a device of
	// the account it holds.
	if err := holdList(ctx, w.profile(dev.String()), to); err != nil {
		return err
	}
	if err := ep.Network().SetDeviceList(next); err != nil {
		return err
	}
	return ep.Save()
}

// removeFake removes dev from the account of the first device as
// RemoveDevice does, the relay taking the list first: the network holds
// the next generation with dev revoked, then the profile stores it with
// its lanes to dev ended and dev's messages adopted (UpdateDeviceList).
// Run again after a failure, it signs the same list (Ed25519 is
// deterministic) and completes.
func (w fpWorld) removeFake(ctx context.Context, st *store.DB, c *engine.Client, ep *enginetest.FileEndpoint, dev engine.Address) error {
	a, err := engine.LoadAccount(ctx, st)
	if err != nil {
		return err
	}
	next, err := engine.RemovedDeviceList(a.Key, a.List, dev.Device)
	if err != nil {
		return err
	}
	if err := ep.Network().SetDeviceList(next); err != nil {
		return err
	}
	if err := ep.Save(); err != nil {
		return err
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		return err
	}
	to, err := wire.EncodeDeviceList(next)
	if err != nil {
		return err
	}
	removed := []engine.Address{dev}
	adopted, err := c.AdoptedLanes(ctx, a.Key, removed)
	if err != nil {
		return err
	}
	_, err = st.Apply(ctx, engine.UpdateDeviceList{From: from, List: to, Removed: removed, Adopted: adopted, At: realNow()})
	return err
}

// personScenarios are the failpoint matrix's scenarios of lanes per
// device: holding a person's list, storing a message on a lane per device,
// the pump's pass over those lanes, and a sent copy's receive. Switched off
// with PARLEY_FP_PEOPLE=0.
func personScenarios() []fpScenario {
	if os.Getenv("PARLEY_FP_PEOPLE") == "0" {
		return nil
	}
	abb := []string{"alice/1", "bob/1", "bob/2"}
	both := map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}, "bob/2": {"alice/1": {"hello"}}}
	linked := []fpStep{{"bob/1", "linkfake:bob/2"}}
	held := append(linked, fpStep{"alice/1", "checkpeer:bob/1"})
	return []fpScenario{
		{name: "peer device list", devices: abb, setup: linked, target: fpStep{"alice/1", "checkpeer:bob/1"},
			want: map[string]map[string][]string{}},
		{name: "send to a person", devices: abb, setup: append(held, fpStep{"alice/1", "draft:bob/1:hello"}),
			target: fpStep{"alice/1", "enqueue:bob/1:hello"}, want: both},
		// The pump passes each lane in a transaction of its own: the
		// target is one lane's (Pump over both is composite).
		{name: "pump a lane to a person", devices: abb, setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}),
			target: fpStep{"alice/1", "pumppeer:bob/2"}, want: both},
		// The link's cut is stored with the list that names the new
		// device, or neither is (heal checks).
		{name: "link cut", devices: []string{"alice/1", "bob/1"}, setup: established(),
			target: fpStep{"alice/1", "linkcut:alice/2"}, heal: []fpStep{{"alice/1", "checkcut:alice/2"}},
			want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}},
		// The group state lanes to a linked device are stored with the
		// list that names it, or neither is (heal checks, then abandons
		// them: alice/2 is no device here).
		{name: "link cut with group states", devices: []string{"alice/1", "bob/1"},
			setup:  append(established(), fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"alice/1", "sync"}),
			target: fpStep{"alice/1", "linkcutgroups:alice/2"}, heal: []fpStep{{"alice/1", "checkgroupstate:alice/2"}},
			want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}},
		// Removing a device: the account's device ends its sent copies
		// to it; a peer holding the new list ends its lanes to it.
		{name: "remove an own device", devices: []string{"alice/1", "alice/2", "bob/1"},
			setup:  []fpStep{{"alice/1", "linkfake:alice/2"}, {"alice/1", "enqueue:bob/1:hello"}},
			target: fpStep{"alice/1", "removefake:alice/2"}, want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}},
		// Removing a device whose message has a sent copy here (to bob,
		// whom alice/1 talks with): the
		// list and the adopted lane to bob are one transaction, and bob,
		// holding alice's list, takes the resend as the message he has
		// from alice/2 (once in his history).
		{name: "adopt a removed device's message", devices: []string{"alice/1", "alice/2", "bob/1"},
			setup: []fpStep{{"bob/1", "publishfake"}, {"alice/1", "checkpeer:bob/1"}, {"alice/1", "linkfake:alice/2"}, {"bob/1", "checkpeer:alice/1"}, {"alice/2", "enqueue:bob/1:hello"},
				{"alice/2", "pump"}, {"alice/1", "sync"}},
			target: fpStep{"alice/1", "removefake:alice/2"},
			want:   map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}, "alice/2": {"hello"}}}},
		{name: "peer list removes a device", devices: abb,
			setup:  append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"bob/1", "removefake:bob/2"}),
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}},
		// A peer list that revokes a device ends the group lanes to it in
		// the hold's transaction: alice's message to the group never
		// reaches bob/2, and bob/1 has it.
		{name: "peer list removes a group device", devices: abb,
			setup: append(append([]fpStep(nil), held...), fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"},
				fpStep{"alice/1", "sync"}, fpStep{"alice/1", "groupenqueue:g:hi"}, fpStep{"bob/1", "removefake:bob/2"}),
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: map[string]map[string][]string{},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}}, groupMembers: 2},
		// A newer list naming a device linked since: alice's group
		// message pending to bob gets a lane to bob/2 in the hold's
		// transaction, and bob/2 (holding bob's groups, as a link's
		// archive leaves them) takes it.
		{name: "newer list adds group lanes", devices: abb, groupMembers: 2,
			setup: []fpStep{{"bob/1", "publishfake"}, {"alice/1", "checkpeer:bob/1"}, {"alice/1", "groupcreate:g:bob/1"}, {"bob/1", "sync"},
				{"alice/1", "sync"}, {"alice/1", "groupenqueue:g:hi"}, {"bob/1", "linkfake:bob/2"}, {"bob/2", "linkshare:bob/1"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: map[string]map[string][]string{},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}, "bob/2": {"alice/1:hi"}}},
		// The same with alice's roster change (bob/1 named admin) pending
		// to bob ahead of the message: the hold's transaction adds lanes
		// to bob/2 for both, the change first, so bob/2 (whose archive
		// holds the group at generation 1) merges generation 2 and takes
		// the message, and every lane ends.
		{name: "newer list adds group lanes behind a change", devices: abb, groupMembers: 2, groupGeneration: 2,
			setup: []fpStep{{"bob/1", "publishfake"}, {"alice/1", "checkpeer:bob/1"}, {"alice/1", "groupcreate:g:bob/1"}, {"bob/1", "sync"},
				{"alice/1", "sync"}, {"alice/1", "groupadmin:g:bob/1"}, {"alice/1", "groupenqueue:g:hi"}, {"bob/1", "linkfake:bob/2"}, {"bob/2", "linkshare:bob/1"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: map[string]map[string][]string{},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}, "bob/2": {"alice/1:hi"}}},
		// bob/1, which holds bob's account key, links bob/2 (whose
		// archive holds the group at generation 1), then receives alice's
		// change naming bob/1 admin: the receive's transaction records it
		// and stores its forward to bob/2, or neither. alice never learns
		// of bob/2 (the change is acknowledged to her by bob/1 alone), so
		// bob/2 reaches generation 2 only by the forward.
		{name: "linker forwards a roster change", devices: abb, groupMembers: 2, groupGeneration: 2,
			setup: []fpStep{{"bob/1", "publishfake"}, {"alice/1", "checkpeer:bob/1"}, {"alice/1", "groupcreate:g:bob/1"}, {"bob/1", "sync"},
				{"alice/1", "sync"}, {"bob/1", "linkfake:bob/2"}, {"bob/2", "linksharepins:bob/1"}, {"alice/1", "groupadmin:g:bob/1"},
				{"alice/1", "pump"}, {"bob/1", "stage"}},
			target: fpStep{"bob/1", "process"}, want: map[string]map[string][]string{}, wantGroup: map[string][]string{}},
		// The own version: alice/2's group message is pending to alice/1
		// when alice/1 links alice/3; the list alice/2 adopts adds a lane
		// of it to alice/3 in the list's transaction.
		{name: "own list adds group lanes", devices: []string{"alice/1", "alice/2", "alice/3", "bob/1"}, groupMembers: 2,
			setup: []fpStep{{"alice/1", "linkfake:alice/2"}, {"bob/1", "checkpeer:alice/1"}, {"alice/1", "groupcreate:g:bob/1"}, {"bob/1", "sync"}, {"alice/2", "sync"},
				{"alice/1", "sync"}, {"alice/2", "groupenqueue:g:hi"}, {"alice/1", "linkfake:alice/3"}, {"alice/3", "linkshare:alice/1"}},
			target: fpStep{"alice/2", "adoptlist"}, want: map[string]map[string][]string{},
			wantGroup: map[string][]string{"alice/1": {"alice/2:hi"}, "alice/2": {"alice/2:hi"}, "alice/3": {"alice/2:hi"}, "bob/1": {"alice/2:hi"}}},
		// A newer list naming a device linked since: the message pending
		// to the person gets a lane to it in the hold's transaction.
		{name: "peer list adds a lane", devices: abb,
			setup: []fpStep{{"bob/1", "publishfake"}, {"alice/1", "checkpeer:bob/1"}, {"alice/1", "enqueue:bob/1:hello"},
				{"bob/1", "linkfake:bob/2"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: both},
		// The same with no list held: bob had published none when alice
		// wrote (her message went to bob/1 alone), and the first list
		// she holds names bob/2 as well: the hold's transaction stores
		// the lane to bob/2 beside the list, or neither.
		{name: "first peer list adds a lane", devices: abb,
			setup:  []fpStep{{"alice/1", "checkpeer:bob/1"}, {"alice/1", "enqueue:bob/1:hello"}, {"bob/1", "linkfake:bob/2"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: both},
		// The same for a message written to bob/2, not the
		// conversation's device: the first list gives it a lane to
		// bob/1, copied from bob/2's, in the hold's transaction.
		{name: "first peer list copies from another device", devices: abb,
			setup:  []fpStep{{"alice/1", "checkpeer:bob/1"}, {"bob/1", "linkfake:bob/2"}, {"alice/1", "enqueue:bob/2:hello"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: both},
		// bob removed bob/2 before alice held any list: the first list
		// she holds revokes it, and its transaction adds the lane to
		// bob/1 and then ends the lane to bob/2, or does neither.
		{name: "first peer list ends a revoked lane", devices: abb,
			setup: []fpStep{{"alice/1", "checkpeer:bob/1"}, {"bob/1", "linkfake:bob/2"}, {"alice/1", "enqueue:bob/2:hello"},
				{"bob/1", "removefake:bob/2"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}},
		// The first list copied the message written to bob/2 to bob/1
		// (in bob/2's conversation); bob links bob/3 before either takes
		// it, and the later list alice holds adds bob/3's lane, in that
		// conversation, in its transaction.
		{name: "later peer list copies a first list's lane", devices: []string{"alice/1", "bob/1", "bob/2", "bob/3"},
			setup: []fpStep{{"alice/1", "checkpeer:bob/1"}, {"bob/1", "linkfake:bob/2"}, {"alice/1", "enqueue:bob/2:hello"},
				{"alice/1", "checkpeer:bob/1"}, {"bob/1", "linkfake:bob/3"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"},
			// bob/2 adopts the list naming bob/3, which bob/3's
			// decision lane to it needs.
			heal: []fpStep{{"bob/2", "adoptlist"}},
			want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}, "bob/2": {"alice/1": {"hello"}}, "bob/3": {"alice/1": {"hello"}}}},
		// alice's group message is pending to bob/1 while she holds no
		// list of bob; bob links bob/2 (holding bob's groups), and the
		// first list she holds adds the message's lane to bob/2 in its
		// transaction.
		{name: "first peer list adds group lanes", devices: abb, groupMembers: 2,
			setup: []fpStep{{"alice/1", "checkpeer:bob/1"}, {"alice/1", "groupcreate:g:bob/1"}, {"bob/1", "sync"},
				{"alice/1", "sync"}, {"alice/1", "groupenqueue:g:hi"}, {"bob/1", "linkfake:bob/2"}, {"bob/2", "linkshare:bob/1"}},
			target: fpStep{"alice/1", "checkpeer:bob/1"}, want: map[string]map[string][]string{},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}, "bob/2": {"alice/1:hi"}}},
		// bob discards on bob/2 while bob/1 commits: bob/1's decision
		// carries the body, and bob/2 takes the message back in the
		// receive that hears it (commit beats discard).
		{name: "decision takes back a discard", devices: abb,
			setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "commitall"},
				fpStep{"bob/1", "pump"}, fpStep{"bob/2", "stage"}),
			target: fpStep{"bob/2", "process"}, want: both},
		// The same for an action: bob/2 discards alice's edit of a
		// message both devices committed while bob/1 commits it; bob/1's
		// decision carries the edit (frame kind 18), and bob/2 takes the
		// discard back and applies the edit in the receive that hears it.
		{name: "decision takes back a discarded action", devices: abb,
			setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/2", "commitall"},
				fpStep{"bob/1", "pump"}, fpStep{"bob/2", "pump"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/1", "sync"},
				fpStep{"alice/1", "sync"}, fpStep{"alice/1", "edit:bob/1:hello again"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "commitall"},
				fpStep{"bob/1", "pump"}, fpStep{"bob/2", "stage"}),
			target: fpStep{"bob/2", "process"},
			want:   map[string]map[string][]string{"bob/1": {"alice/1": {"hello again"}}, "bob/2": {"alice/1": {"hello again"}}}},
		// bob/2 discards hello (and its hold pass alice's edit of it,
		// target_discarded) while bob/1 commits both; hello's decision
		// to bob/2 is lost and the edit's (kind 18) comes first: bob/2
		// keeps it with its action. bob/1 sends hello's again, and the
		// receive that takes hello back takes the edit back and applies
		// it in the same transaction, forgetting the kept decision.
		{name: "take-back applies a kept action decision", devices: abb,
			setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "dropnext:bob/2"},
				fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "edit:bob/1:hello again"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/2", "sync"}, fpStep{"bob/2", "settle"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"},
				fpStep{"bob/2", "sync"}, fpStep{"bob/2", "pump"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "retry:bob/2"}, fpStep{"bob/2", "stage"}),
			target: fpStep{"bob/2", "process"},
			want:   map[string]map[string][]string{"bob/1": {"alice/1": {"hello again"}}, "bob/2": {"alice/1": {"hello again"}}}},
		// bob/1's commit of alice's edit (kind 18) reaches bob/2 before
		// the edit does (alice's first envelope to bob/2 is lost), while
		// hello, which bob/2 discarded, waits for its decision from
		// bob/1 (lost too): bob/2 keeps the commit without a body. The
		// edit then comes again, and bob/2's hold pass discards it
		// (target_discarded) and keeps the commit with the edit in the
		// same transaction; the converge sends hello's decision again,
		// which takes hello back and the edit with it.
		{name: "discard for its target keeps a commit with its action", devices: abb,
			setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "dropnext:bob/2"},
				fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "dropnext:bob/2"}, fpStep{"alice/1", "edit:bob/1:hello again"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"},
				fpStep{"alice/1", "retry:bob/2"}, fpStep{"bob/2", "sync"}),
			target: fpStep{"bob/2", "settle"},
			want:   map[string]map[string][]string{"bob/1": {"alice/1": {"hello again"}}, "bob/2": {"alice/1": {"hello again"}}}},
		// The same for a group message: bob/2 holds the group and the
		// message pending (alice's fan-out to every device of bob's),
		// discards it, and takes it back into the group's history in the
		// receive that hears bob/1's commit.
		{name: "group decision takes back a discard", devices: abb, groupMembers: 2,
			// bob/1 forwards the group's creation to bob/2 (it holds
			// the account key): its pump before bob/2's sync brings that
			// forward there ahead of the target, which then receives
			// the decision alone.
			setup: append(held, fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"},
				fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "stage"}),
			target:    fpStep{"bob/2", "process"},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi"}, "bob/1": {"alice/1:hi"}, "bob/2": {"alice/1:hi"}}},
		// The same for a group's action: bob's devices committed hi;
		// bob/2 discards alice's edit of it while bob/1 commits it. bob/1's
		// decision carries the edit (frame kind 18), and bob/2 takes the
		// discard back and applies the edit by the group's rules in the
		// receive that hears it.
		{name: "group decision takes back a discarded action", devices: abb, groupMembers: 2,
			setup: append(held, fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"},
				fpStep{"bob/1", "commitall"}, fpStep{"bob/2", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/1", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupedit:g:hi all"}, fpStep{"alice/1", "pump"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"},
				fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "stage"}),
			target:    fpStep{"bob/2", "process"},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi all"}, "bob/1": {"alice/1:hi all"}, "bob/2": {"alice/1:hi all"}}},
		// The kept decision for a group's action: bob/2 discards hi (and
		// its engine alice's edit of it, target_discarded) while bob/1
		// commits both; hi's decision to bob/2 is lost and the edit's
		// (kind 18) comes first: bob/2 keeps it with its action, by group
		// and target (migration 0030). bob/1 sends hi's again, and the
		// receive that takes hi back takes the edit back and applies it
		// by the group's rules in the same transaction, forgetting the
		// kept decision.
		{name: "group take-back applies a kept group action decision", devices: abb, groupMembers: 2,
			setup: append(held, fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"},
				fpStep{"bob/2", "discardall"}, fpStep{"bob/1", "dropnext:bob/2"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupedit:g:hi all"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/2", "sync"}, fpStep{"bob/2", "settle"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"},
				fpStep{"bob/2", "sync"}, fpStep{"bob/2", "pump"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "retry:bob/2"}, fpStep{"bob/2", "stage"}),
			target:    fpStep{"bob/2", "process"},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi all"}, "bob/1": {"alice/1:hi all"}, "bob/2": {"alice/1:hi all"}}},
		// A sibling's commit of a group action kept while its target is
		// pending: alice's edit of hi waits for hi on both of bob's
		// devices; bob/2's person discards the edit; bob/1 commits hi
		// (its decision to bob/2 lost) and the edit, whose decision (kind
		// 18) bob/2 keeps with its action, hi still pending there. The
		// person's commit of hi on bob/2 takes the edit's discard back
		// and applies it in the commit's transaction (Finalize.WithKept),
		// forgetting the kept decision. bob/2 is offline, so that the
		// commit's lanes wait (the commit is the one transaction).
		{name: "group commit applies a kept group action decision", devices: abb, groupMembers: 2,
			setup: append(held, fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"alice/1", "groupedit:g:hi all"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "discardlast"},
				fpStep{"bob/1", "dropnext:bob/2"}, fpStep{"bob/1", "commitfirst"}, fpStep{"bob/1", "pump"},
				fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "down"}),
			target: fpStep{"bob/2", "commitall"}, heal: []fpStep{{"bob/2", "up"}},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi all"}, "bob/1": {"alice/1:hi all"}, "bob/2": {"alice/1:hi all"}}},
		// The person's commit made here, kept for its discarded target:
		// alice's edit of hi waits for hi on both of bob's devices; on
		// bob/1 the person discards hi, then commits the edit, which the
		// rules turn into a discard (target_discarded) and keep with its
		// action as bob/1's own commit. bob/2 commits hi before it hears
		// of bob/1's discard; the receive on bob/1 that hears that commit
		// takes hi back and applies the edit in the same transaction, as
		// bob/1's own decision (its record keeping the action body).
		{name: "take-back applies the commit made here", devices: abb, groupMembers: 2,
			setup: append(held, fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"alice/1", "groupedit:g:hi all"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/1", "discardfirst"}, fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"},
				fpStep{"bob/2", "pump"}, fpStep{"bob/1", "sync"}, fpStep{"bob/2", "commitfirst"}, fpStep{"bob/1", "stage"}),
			target:    fpStep{"bob/1", "process"},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi all"}, "bob/1": {"alice/1:hi all"}, "bob/2": {"alice/1:hi all"}}},
		// The commit itself: on bob/1 the person discards hi, then
		// commits alice's edit of it; the rules turn the commit into a
		// discard (target_discarded), kept with its action as bob/1's own
		// commit, and its decision (kind 18, with the edit) to bob/2 is
		// stored in the same transaction, or none of it is.
		{name: "commit turned into a discard keeps the commit made here", devices: abb, groupMembers: 2,
			setup: append(held, fpStep{"alice/1", "groupcreate:g:bob/1"}, fpStep{"bob/1", "sync"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"alice/1", "sync"},
				fpStep{"alice/1", "groupsend:g:hi"}, fpStep{"alice/1", "groupedit:g:hi all"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/1", "discardfirst"}, fpStep{"bob/1", "down"}),
			target: fpStep{"bob/1", "commitall"}, heal: []fpStep{{"bob/1", "up"}},
			wantGroup: map[string][]string{"alice/1": {"alice/1:hi all"}, "bob/1": {"alice/1:hi all"}, "bob/2": {"alice/1:hi all"}}},
		// The same one to one: alice's edit of hello waits for hello on
		// both of bob's devices; bob/2's person discards the edit; bob/1
		// commits hello (its decision to bob/2 lost) and the edit, whose
		// decision (kind 18) bob/2 keeps with its action, hello still
		// pending there. The person's commit of hello on bob/2 takes the
		// edit's discard back and applies it in the commit's transaction
		// (Finalize.WithKept, one to one), forgetting the kept decision.
		{name: "commit applies a kept action decision", devices: abb,
			setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"alice/1", "edit:bob/1:hello again"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "sync"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "discardlast"},
				fpStep{"bob/1", "dropnext:bob/2"}, fpStep{"bob/1", "commitfirst"}, fpStep{"bob/1", "pump"},
				fpStep{"bob/1", "commitall"}, fpStep{"bob/1", "pump"}, fpStep{"bob/2", "sync"}, fpStep{"bob/2", "down"}),
			target: fpStep{"bob/2", "commitall"}, heal: []fpStep{{"bob/2", "up"}},
			want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello again"}}, "bob/2": {"alice/1": {"hello again"}}}},
		// bob/1 commits alice's message on arrival (the loop's policy):
		// the lane that tells bob/2 is stored in the receive's own
		// transaction, or nothing is.
		{name: "arrival commit tells a sibling", devices: abb,
			setup: append(held, fpStep{"alice/1", "enqueue:bob/1:hello"}, fpStep{"alice/1", "pump"},
				fpStep{"bob/1", "stage"}),
			target: fpStep{"bob/1", "processcommit"}, want: both},
		// bob/2 committed while its list did not name bob/3; adopting
		// the list that names it stores the catch-up lane to bob/3 in
		// the list's transaction, or neither.
		{name: "list adoption catches up a sibling", devices: []string{"alice/1", "bob/1", "bob/2", "bob/3"},
			setup: []fpStep{{"bob/1", "linkfake:bob/2"}, {"bob/1", "linkfake:bob/3"}, {"alice/1", "checkpeer:bob/1"},
				{"alice/1", "enqueue:bob/1:hello"}, {"alice/1", "pump"}, {"bob/2", "sync"}, {"bob/2", "commitall"}},
			target: fpStep{"bob/2", "adoptlist"},
			want:   map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}, "bob/2": {"alice/1": {"hello"}}, "bob/3": {"alice/1": {"hello"}}}},
		{name: "sent copy receive", devices: []string{"alice/1", "alice/2", "bob/1"},
			setup:  []fpStep{{"alice/1", "linkfake:alice/2"}, {"alice/1", "enqueue:bob/1:hello"}, {"alice/1", "pump"}, {"alice/2", "stage"}},
			target: fpStep{"alice/2", "process"}, want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}}},
		// alice/1's edit of her message reaches alice/2 as a sent copy of
		// the action (frame kind 17), committed and applied as it arrives.
		{name: "sent action copy receive", devices: []string{"alice/1", "alice/2", "bob/1"},
			setup: []fpStep{{"alice/1", "linkfake:alice/2"}, {"alice/1", "enqueue:bob/1:hello"}, {"alice/1", "pump"}, {"alice/2", "sync"},
				{"alice/1", "edit:bob/1:hello again"}, {"alice/1", "pump"}, {"alice/2", "stage"}},
			target: fpStep{"alice/2", "process"}, want: map[string]map[string][]string{"bob/1": {"alice/1": {"hello again"}}}},
	}
}

// holdList replaces the device list the profile in dir holds with list.
func holdList(ctx context.Context, dir string, list []byte) error {
	st, err := store.Open(ctx, dir, passphrase, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	a, err := engine.LoadAccount(ctx, st)
	if err != nil {
		return err
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		return err
	}
	_, err = st.Apply(ctx, engine.UpdateDeviceList{From: from, List: list})
	return err
}
