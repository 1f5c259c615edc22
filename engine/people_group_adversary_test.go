package engine_test

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/wire"
)

// The people-and-groups adversary (issue 33): the people of
// TestAdversaryPeople (two or three people of one to three devices, some
// linked before the traffic and some during it, a device other than the
// first sometimes removed during it) in one or two groups. The first
// device of the first person creates the first group with the first
// devices of the others as its entries; with two groups the second
// person's first device creates the second. Both are created, and reach
// every device, while the relay is honest; then the relay withholds every
// envelope and delivers, reorders, drops and replays them as it likes.
// Any active device sends to a group (a linked device, no entry, too): a
// text or, a third of the time, a group action on a message its group
// history shows, whatever its state on the receivers (groupAction: a
// reaction most often, an edit or a delete of its own message, a reply);
// any active device commits or discards a group message pending on it (a
// commit of an action still waiting for its target is refused,
// ErrTargetPending), two
// devices of one person decide one message at about the same time (one
// committing, one discarding), devices retry, restart and the clock
// moves. A device linked during the traffic gets its person's groups, and
// every group message committed or pending on the first device, from the
// link's archive (LinkDevice, LinkHistory, ImportLinkHistory, history
// all); a removed device keeps syncing (the test network does not refuse
// it; it cannot submit).
//
// After every step (check):
//
//  1. no device's group history holds a logical ID twice, and each entry
//     is the body sent (the last edit's text, the tombstone's empty body:
//     shownBody), marked own exactly when its sender is a device of this
//     person; a reply quotes its target, and a reaction, an edit or a
//     delete is no entry (checkActionSafety has rule 3 for those);
//  2. a group send's lanes are the active devices of every member person
//     in the lists the sender held (the account's for its own person) but
//     the sender itself;
//  3. a device of a receiving person that committed a group message holds
//     it in the group's history once, one that discarded it does not
//     (unless a sibling's commit heard later took the discard back: the
//     entry names that device); a device that finalized a message
//     without being asked has an outcome some device of its person chose,
//     a commit naming a device of its person that committed it;
//  4. a removed device holds nothing (group history or pending) that its
//     sender stored while the sender's lists already revoked it, no lane
//     of such a message goes to it, and it hears no decision made by a
//     device whose own list revoked it.
//
// Once the adversary stops (withheld envelopes delivered or dropped; on
// even seeds every device reconnects once), at most twelve rounds of
// sync, commit and retry leave nothing pending on any active device, and
// then: every lane of a group message of an active sender is acknowledged
// (a lane to a removed device acknowledged or ended removed); every active
// device that had a lane at the send holds the message: a sibling of the
// sender in its group history as its own, once; a device of a receiving
// person finalized, committed (and in the history once) when an active
// device of its person committed it, not committed when no device of its
// person did. Every active device that finalized a message agrees so,
// whether or not it had a lane.
//
// For a reaction, an edit or a delete the agreement is convergedAction's,
// and the active devices of one person that show a message show the same
// actions' effects on it (convergedState); the allowances for those, each
// counted in the summary line, are documented there, at
// noteEarlyDecisions and at turnedByItsMakers.
//
// Known gap allowed for: a device linked to a person while a group
// message to it is in flight gets no lane of that message (only of later
// ones: the sender adds no lanes to a pending group message when it
// stores a later list). So a device the sender's lists did not name when
// it stored the message is not required to hold it (the summary counts
// those, "not named at the send"); if it holds it, it must agree. The
// check is on what the lanes at the send were, so it stays true once the
// sender adds the lanes later. A removed device's own messages are left
// out of the lane checks (its lanes stay pending on it: it cannot submit
// any more, and group messages are not adopted), not of the agreement.
//
// No roster changes are made during the traffic (TestAdversaryGroups
// does those, one device per person).
//
// Found with it: a retried group lane asked for no list, so on a kept
// connection a lane to a sibling removed since stayed pending for good
// (seed 1796610096311410595; TestRetriedGroupLaneToSiblingAsksForOwnList).
//
// The summary counts the discards a commit heard later took back, and
// those left beside a commit at the end ("left overruled"): the commit was
// made on a device removed since, whose decision the others refuse once
// they hold the list revoking it (an active device's commit obliges every
// active device, above).
//
// ADVERSARY_PEOPLE_GROUP_CASES sets the number of cases (default 20;
// make test runs 20); ADVERSARY_PEOPLE_GROUP_SEED replays one case.
type peopleGroupSim struct {
	*peopleSim
	groups   []wire.GroupID
	gmsgs    map[wire.LogicalID]*peopleGroupMsg
	unnamed  int       // (message, active device of a member person) pairs without a lane at the send
	linkedGT int       // devices linked during the traffic
	start    time.Time // the clock when the traffic began
	// holdEnded is the clock when converge moved it past ActionHold
	// (onlyOrphansWait); orphansWaited the actions that waited so.
	holdEnded     time.Time
	orphansWaited int
	// leftEarly: the (device, action) pairs of waitHeard left discarded
	// at the end (convergedAction), earlyDiverged the entries shown
	// differently because of them.
	leftEarly map[string]bool
	// waitHeard: (device, action) pairs whose sibling's commit was heard
	// while the action waited on the device (noteEarlyDecisions).
	waitHeard map[string]bool
	// rulesEverywhere: (device, action) pairs the person committed, left
	// discarded because each commit turned into the rules' discard where
	// it was made (convergedAction); turnedDiverged the entries shown
	// differently because of one.
	rulesEverywhere map[string]bool
	turnedDiverged  int
	earlyDiverged   int
	// unreachedDiverged: the entries shown differently because an action
	// on them never reached one of the devices (unreachedOn).
	unreachedDiverged int
	// unshownReactions counts the entries with reactions whose holders
	// were not compared on them (one holds the entry by import).
	unshownReactions int
	// actDiscards counts, by reason, the group actions an engine
	// discarded by its rules on an active device at the end.
	actDiscards map[string]int
}

// peopleGroupMsg is one group message the simulation sent.
type peopleGroupMsg struct {
	from  *device
	group wire.GroupID
	body  string
	// lanes are the recipients of the lanes the sender stored.
	lanes map[engine.Address]bool
	// knewRemoved: the devices the sender's lists revoked at the send.
	knewRemoved map[engine.Address]bool
	// act is the action of a group action (a reply, a reaction, an
	// edit, a delete: body is a reply's text, else empty); nil for a text.
	// An edit's number is the one the sender's engine gave it.
	act *wire.Action
}

// shown reports whether m has an entry of its own in a group's history:
// a text or a reply (a reaction, an edit, a delete lands on its target).
func (m *peopleGroupMsg) shown() bool {
	return m.act == nil || m.act.Content == wire.ContentReply
}

// linkGroupDevice links a new device to owner's account as `parley device
// add` and `parley link` with all history do (linkResumed, with the
// world's seeded randomness): the package and its archive (the groups,
// their messages, the messages pending at the cut) imported.
func (w *world) linkGroupDevice(owner *device) *device {
	t, ctx := w.t, w.ctx
	t.Helper()
	a, err := engine.LoadAccount(ctx, owner.st)
	if err != nil {
		t.Fatal(err)
	}
	n := engine.NextDeviceNumber(a.List)
	d := &device{w: w, addr: engine.Address{User: owner.addr.User, Device: n}}
	*w.seed++
	d.random = newDetRandom(*w.seed)
	id, err := engine.NewIdentity(d.random)
	if err != nil {
		t.Fatal(err)
	}
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	list, err := owner.c.LinkDevice(ctx, engine.DeviceEntryFor(id, d.addr.User, a.Key.Public(), n, w.clock.Now().Unix()), all)
	if err != nil {
		t.Fatalf("%s links %s: %v", owner.addr, d.addr, err)
	}
	pkg, err := owner.c.LinkPackage(ctx, list, false)
	if err != nil {
		t.Fatal(err)
	}
	if pkg.History, _, err = owner.c.LinkHistory(ctx, n, nil); err != nil {
		t.Fatalf("%s writes %s's history: %v", owner.addr, d.addr, err)
	}
	d.dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d-linked", d.addr.User, n))
	st, err := store.Create(ctx, d.dir, passphrase, store.Options{KDF: store.KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CreateLinkedProfile(ctx, st, "fake://", id, n, pkg, all, d.random, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	d.open()
	t.Cleanup(func() {
		if d.c != nil {
			d.c.Close()
		}
	})
	if pkg.History != nil {
		if _, err := d.c.ImportLinkHistory(ctx, 0, all, nil); err != nil {
			t.Fatalf("%s imports its history: %v", d.addr, err)
		}
	}
	groups, err := owner.c.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if _, err := d.c.Group(ctx, g.ID); err != nil {
			t.Fatalf("%s holds no group %x, which %s holds (archive %v): %v", d.addr, g.ID[:2], owner.addr, pkg.History != nil, err)
		}
	}
	if err := d.c.RefreshPreKeys(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

func (s *peopleGroupSim) link(p *simPerson) *device {
	d := s.w.linkGroupDevice(p.devs[0])
	p.devs = append(p.devs, d)
	return d
}

// expectedLanes returns what a send from d to a group should have lanes
// to (rule 2) and the devices d's lists revoke.
func (s *peopleGroupSim) expectedLanes(d *device) (want, revoked map[engine.Address]bool) {
	ctx := s.w.ctx
	want, revoked = map[engine.Address]bool{}, map[engine.Address]bool{}
	for _, p := range s.people {
		var list wire.DeviceList
		if p.user == d.addr.User {
			own, err := engine.LoadAccount(ctx, d.st)
			if err != nil {
				s.t.Fatal(err)
			}
			list = own.List
		} else if held, ok, err := d.c.PeerAccount(ctx, p.user); err != nil {
			s.t.Fatal(err)
		} else if ok {
			list = held.List
		} else {
			want[p.devs[0].addr] = true // no list held: the entry
			continue
		}
		revokedIn(list, revoked)
		for _, a := range engine.ActiveAddresses(list) {
			if a != d.addr {
				want[a] = true
			}
		}
	}
	return want, revoked
}

// sendGroup has d send to group g and checks its lanes (rule 2).
func (s *peopleGroupSim) sendGroup(d *device, g wire.GroupID) {
	s.t.Helper()
	want, revoked := s.expectedLanes(d)
	s.serial++
	body := fmt.Sprintf("g%d %s>%x", s.serial, d.addr, g[:2])
	res, err := d.c.SendGroup(s.w.ctx, g, []byte(body))
	if err != nil {
		s.t.Fatalf("%s sends to group %x: %v", d.addr, g[:2], err)
	}
	m := &peopleGroupMsg{from: d, group: g, body: body, lanes: map[engine.Address]bool{}, knewRemoved: revoked}
	for _, l := range s.lanesOf(d, g, res.ID) {
		m.lanes[l.Recipient] = true
	}
	s.gmsgs[res.ID] = m
	if len(want) != len(m.lanes) {
		s.t.Fatalf("%s's send %x has lanes to %v, want the active devices its lists name: %v", d.addr, res.ID[:4], m.lanes, want)
	}
	for a := range want {
		if !m.lanes[a] {
			s.t.Fatalf("%s's send %x has lanes to %v, want the active devices its lists name: %v", d.addr, res.ID[:4], m.lanes, want)
		}
	}
	s.actions["group-send"]++
}

// groupAction has d act in group g on a message its group history shows
// (one it sent, a sibling's, or one committed here), whatever its state
// on the receiving devices (pending, discarded, not there yet): a
// reaction most often (sometimes taking it back), an edit or a delete of
// a message d sent itself, or a reply. It checks the action's lanes as
// sendGroup does (rule 2). It reports false when d's history shows no
// message to act on; an action the rules refuse at the send (an edit of
// a deleted message, a reaction to take back that is not there) stores
// nothing and is counted.
func (s *peopleGroupSim) groupAction(d *device, g wire.GroupID) bool {
	s.t.Helper()
	h, err := d.c.GroupHistory(s.w.ctx, g, 0, 1000)
	if err != nil {
		s.t.Fatal(err)
	}
	var any, mine []engine.GroupEntry
	for _, e := range h {
		if m := s.gmsgs[e.ID]; m != nil {
			any = append(any, e)
			if m.from == d && !e.Deleted {
				mine = append(mine, e)
			}
		}
	}
	if len(any) == 0 {
		return false
	}
	want, revoked := s.expectedLanes(d)
	s.serial++
	a := wire.Action{Content: wire.ContentReaction, Target: any[s.rng.IntN(len(any))].ID, Emoji: thumbs}
	name := "group-react"
	switch k := s.rng.IntN(10); {
	case k < 5:
		if s.rng.IntN(2) == 0 {
			a.Emoji = heart
		}
		if s.rng.IntN(6) == 0 {
			a.Emoji, a.Remove, name = "", true, "group-unreact"
		}
	case k < 7 && len(mine) > 0:
		a = wire.Action{Content: wire.ContentEdit, Target: mine[s.rng.IntN(len(mine))].ID, Text: []byte(fmt.Sprintf("e%d %s", s.serial, d.addr))}
		name = "group-edit"
	case k < 8 && len(mine) > 0:
		a = wire.Action{Content: wire.ContentDelete, Target: mine[s.rng.IntN(len(mine))].ID}
		name = "group-delete"
	default:
		a = wire.Action{Content: wire.ContentReply, Target: any[s.rng.IntN(len(any))].ID, Text: []byte(fmt.Sprintf("r%d %s>%x", s.serial, d.addr, g[:2]))}
		name = "group-reply"
	}
	id, err := d.c.Act(s.w.ctx, engine.ActionRequest{Group: &g, Content: a.Content, Target: a.Target, Text: a.Text, Emoji: a.Emoji, Remove: a.Remove})
	var refused *engine.ActionRefusedError
	if errors.As(err, &refused) {
		s.actions[name+"-refused"]++
		return true
	}
	if err != nil {
		s.t.Fatalf("%s: %s of %x in group %x: %v", d.addr, engine.ActionName(a.Content), a.Target[:4], g[:2], err)
	}
	if _, err := d.c.Pump(s.w.ctx); err != nil {
		s.t.Fatalf("%s pumps: %v", d.addr, err)
	}
	if a.Content == wire.ContentEdit {
		a.Edit = d.groupEntry(g, a.Target).Edits // the number the engine gave it, applied here
	}
	m := &peopleGroupMsg{from: d, group: g, body: string(a.Text), lanes: map[engine.Address]bool{}, knewRemoved: revoked, act: &a}
	if a.Content != wire.ContentReply {
		m.body = ""
	}
	s.gmsgs[id] = m
	for _, l := range s.lanesOf(d, g, id) {
		m.lanes[l.Recipient] = true
	}
	if len(want) != len(m.lanes) {
		s.t.Fatalf("%s's %s %x has lanes to %v, want the active devices its lists name: %v", d.addr, name, id[:4], m.lanes, want)
	}
	for x := range want {
		if !m.lanes[x] {
			s.t.Fatalf("%s's %s %x has lanes to %v, want the active devices its lists name: %v", d.addr, name, id[:4], m.lanes, want)
		}
	}
	s.actions[name]++
	return true
}

// lanesOf returns the lanes of d's own group message id.
func (s *peopleGroupSim) lanesOf(d *device, g wire.GroupID, id wire.LogicalID) []engine.Lane {
	s.t.Helper()
	if m := s.gmsgs[id]; m != nil && !m.shown() {
		l, err := d.st.Lanes(s.w.ctx, g, id) // a reaction, an edit, a delete: not in the history
		if err != nil {
			s.t.Fatal(err)
		}
		return l
	}
	h, err := d.c.GroupHistory(s.w.ctx, g, 0, 1000)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range h {
		if e.ID == id {
			return e.Lanes
		}
	}
	s.t.Fatalf("%s's group history lacks its own %x", d.addr, id[:4])
	return nil
}

// sync is peopleSim's sync (property 4's check of decisions heard
// included); a not_a_member is named by whether its sender was removed
// (a replay, or an envelope sent before the removal) or not.
func (s *peopleGroupSim) sync(d *device) {
	s.t.Helper()
	res, err := d.c.Sync(s.w.ctx)
	if err != nil && !s.isRemoved(d) {
		s.t.Fatalf("%s syncs: %v", d.addr, err)
	}
	for _, r := range res.Received {
		name := r.Kind.String()
		if r.Kind == engine.ResultError {
			name = engine.ErrorName(r.Err)
			switch {
			case errors.Is(r.Err, engine.ErrNotOwnDevice):
				name = "not_own_device"
			case errors.Is(r.Err, engine.ErrNotMember) && s.device(r.Sender) != nil && s.isRemoved(s.device(r.Sender)):
				name += "(from a removed device)"
			case errors.Is(r.Err, engine.ErrNotMember):
				name += "(from an active device)"
			}
		}
		if r.Kind == engine.ResultDecisionHeard && r.Decided != nil && s.isRemoved(d) && s.decisionKnew[r.Decided.On][r.Decided.ID][d.addr] {
			s.t.Fatalf("safety: removed %s heard %s's decision on %x, made when its list revoked it", d.addr, r.Decided.On, r.Decided.ID[:4])
		}
		if s.isRemoved(d) {
			name = "removed:" + name
		}
		s.outcomes[name]++
	}
	s.noteEarlyDecisions(d, res.Received)
}

// noteEarlyDecisions notes each sibling's commit of a group reaction, edit
// or delete that d heard in results without taking its discard back while
// the action itself waited here for its target (pending: the decision is
// kept for it) and the hold's pass then discarded it because the person
// discarded the target (target_discarded, in the same receive or later)
// (waitHeard; convergedAction and convergedState allow that case and
// count it). A commit heard while the action was discarded here and its
// target pending or absent is not noted: the decision is kept with its
// action, and the target's commit, however it comes, applies it
// (Finalize.WithKept), so the devices of the person agree on it (seed
// 1796664555521825216).
func (s *peopleGroupSim) noteEarlyDecisions(d *device, results []engine.ReceiveResult) {
	engineDiscarded := map[wire.LogicalID]bool{}
	for _, r := range results {
		if r.Kind == engine.ResultActionDiscarded {
			engineDiscarded[r.ID] = true
		}
	}
	for _, r := range results {
		if r.Kind != engine.ResultDecisionHeard || r.Decided == nil || r.TakenBack || r.Decided.Outcome != engine.OutcomeCommitted {
			continue
		}
		m := s.gmsgs[r.Decided.ID]
		if m == nil || m.shown() {
			continue
		}
		key := d.addr.String() + string(r.Decided.ID[:])
		if engineDiscarded[r.Decided.ID] || s.seen(d, m, r.Decided.ID).Pending {
			s.waitHeard[key] = true
		}
	}
}

// step is one move of the people or of the adversary.
func (s *peopleGroupSim) step() {
	act := s.activeDevices()
	all := s.allDevices()
	switch k := s.rng.IntN(27); {
	case k < 4: // an active device sends to a group: a text, or an action on a message it shows
		d, g := act[s.rng.IntN(len(act))], s.groups[s.rng.IntN(len(s.groups))]
		if s.rng.IntN(3) != 0 || !s.groupAction(d, g) {
			s.sendGroup(d, g)
		}
	case k < 7: // any device syncs (a removed one too: the relay may still deliver to it)
		s.sync(all[s.rng.IntN(len(all))])
		s.actions["sync"]++
	case k < 9: // every device of one person syncs, so that a message is pending on several
		for _, d := range s.people[s.rng.IntN(len(s.people))].devs {
			s.sync(d)
		}
		s.actions["sync-person"]++
	case k < 11: // an active device decides one message pending on it
		var with []*device
		for _, d := range act {
			if len(s.pendingIn(d)) > 0 {
				with = append(with, d)
			}
		}
		if len(with) == 0 {
			return
		}
		d := with[s.rng.IntN(len(with))]
		in := s.pendingIn(d)
		m := in[s.rng.IntN(len(in))]
		s.decide(d, m.Sender, m.ID, s.rng.IntN(3) != 0)
		s.actions["decide"]++
	case k < 13: // two devices of one person decide one message at once
		s.raceAny()
	case k < 14: // an active device retries to any other device
		d := act[s.rng.IntN(len(act))]
		to := all[s.rng.IntN(len(all))]
		if to == d {
			return
		}
		if _, err := d.c.Retry(s.w.ctx, to.addr); err != nil {
			s.t.Fatalf("%s retries to %s: %v", d.addr, to.addr, err)
		}
		s.actions["retry"]++
	case k < 15: // a device restarts (a new connection)
		all[s.rng.IntN(len(all))].reopen()
		s.actions["restart"]++
	case k < 16:
		s.w.clock.Advance(time.Duration(1+s.rng.IntN(90)) * time.Second)
		s.actions["tick"]++
	case k < 18: // a person links a device, or removes one, while messages fly
		p := s.people[s.rng.IntN(len(s.people))]
		switch {
		case p.toLink > 0:
			p.toLink--
			d := s.link(p)
			s.w.net.Hold(d.addr)
			s.linkedGT++
			s.actions["link"]++
		case p.remove && s.removeOne(p):
			p.remove = false
			s.actions["remove"]++
		}
	case k < 21: // the relay delivers one withheld envelope, in any order
		d := all[s.rng.IntN(len(all))]
		if held := s.w.net.Held(d.addr); len(held) > 0 {
			s.w.net.DeliverHeld(d.addr, s.rng.IntN(len(held)))
			s.actions["deliver"]++
		}
	case k < 23: // or the oldest
		d := all[s.rng.IntN(len(all))]
		if len(s.w.net.Held(d.addr)) > 0 {
			s.w.net.DeliverHeld(d.addr, 0)
			s.actions["deliver"]++
		}
	case k < 24: // or everything it holds for one person, shuffled
		for _, d := range s.people[s.rng.IntN(len(s.people))].devs {
			for n := len(s.w.net.Held(d.addr)); n > 0; n-- {
				s.w.net.DeliverHeld(d.addr, s.rng.IntN(n))
			}
		}
		s.actions["deliver-person"]++
	case k < 25: // the relay drops one
		d := all[s.rng.IntN(len(all))]
		if held := s.w.net.Held(d.addr); len(held) > 0 {
			s.w.net.DropHeld(d.addr, s.rng.IntN(len(held)))
			s.actions["drop"]++
		}
	case k < 26: // the relay replays anything it saw
		seen := s.w.net.Seen()
		if len(seen) == 0 {
			return
		}
		raw := seen[s.rng.IntN(len(seen))]
		if env, err := wire.DecodeEnvelope(raw); err == nil {
			s.w.net.Inject(engine.MustParseAddress(env.Recipient), raw)
			s.actions["replay"]++
		}
	default: // the relay hands a one-time prekey out twice
		s.w.net.RepeatOneTime(all[s.rng.IntN(len(all))].addr)
		s.actions["repeat-one-time-prekey"]++
	}
}

// raceAny is race on a person with a message pending on two of its
// active devices, when there is one.
func (s *peopleGroupSim) raceAny() {
	type key struct {
		sender engine.Address
		id     wire.LogicalID
	}
	type pair struct {
		a, b *device
		k    key
	}
	var pairs []pair
	for _, p := range s.people {
		act := p.active()
		for i, a := range act {
			onA := map[key]bool{}
			for _, m := range s.pendingIn(a) {
				onA[key{m.Sender, m.ID}] = true
			}
			for _, b := range act[i+1:] {
				for _, m := range s.pendingIn(b) {
					if k := (key{m.Sender, m.ID}); onA[k] {
						pairs = append(pairs, pair{a, b, k})
					}
				}
			}
		}
	}
	if len(pairs) == 0 {
		return
	}
	x := pairs[s.rng.IntN(len(pairs))]
	if s.rng.IntN(2) == 0 {
		x.a, x.b = x.b, x.a
	}
	commitA := s.rng.IntN(2) == 0
	s.decide(x.a, x.k.sender, x.k.id, commitA)
	s.decide(x.b, x.k.sender, x.k.id, !commitA)
	s.actions["race"]++
}

// groupHeld is what one device holds of one group message.
type groupHeld struct {
	n        int // entries in the group's history
	own      bool
	imported bool
	body     string
	decided  *engine.Address
	pending  bool
	// What actions made of the entry: a reply's target, the latest edit
	// applied, the tombstone, the reactions (sorted "device emoji").
	replyTo   *wire.LogicalID
	edits     uint32
	deleted   bool
	reactions []string
}

// state is what the actions made of an entry, as compared across the
// devices of one person (convergedState); without the reactions when
// withReactions is false.
func (h *groupHeld) state(withReactions bool) string {
	if !withReactions {
		return fmt.Sprintf("body %q, edit %d, deleted %v", h.body, h.edits, h.deleted)
	}
	return fmt.Sprintf("body %q, edit %d, deleted %v, reactions %q", h.body, h.edits, h.deleted, h.reactions)
}

// groupHoldings reads what d holds of every group message: the histories
// of the groups it keeps and its pending messages.
func (s *peopleGroupSim) groupHoldings(d *device) map[wire.LogicalID]*groupHeld {
	s.t.Helper()
	out := map[wire.LogicalID]*groupHeld{}
	get := func(id wire.LogicalID) *groupHeld {
		h := out[id]
		if h == nil {
			h = &groupHeld{}
			out[id] = h
		}
		return h
	}
	for _, g := range s.groups {
		h, err := d.c.GroupHistory(s.w.ctx, g, 0, 1000)
		if errors.Is(err, engine.ErrUnknownGroup) {
			continue
		}
		if err != nil {
			s.t.Fatal(err)
		}
		for _, e := range h {
			x := get(e.ID)
			x.n++
			x.own, x.imported, x.body, x.decided = e.Own, e.Imported != nil, string(e.Body), e.DecidedOn
			x.replyTo, x.edits, x.deleted, x.reactions = e.ReplyTo, e.Edits, e.Deleted, groupReactionsOf(e)
			if m := s.gmsgs[e.ID]; m != nil && m.group != g {
				s.t.Fatalf("safety: %s holds %x in group %x, sent to %x", d.addr, e.ID[:4], g[:2], m.group[:2])
			}
		}
	}
	for _, m := range s.pendingIn(d) {
		if m.Group != nil {
			get(m.ID).pending = true
		}
	}
	return out
}

// seen returns what d's records say of group message id of m.
func (s *peopleGroupSim) seen(d *device, m *peopleGroupMsg, id wire.LogicalID) engine.SeenMessage {
	seen, err := d.st.Seen(s.w.ctx, m.from.addr, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return seen
}

// checkSafety is checked after every step (rules 1, 3 and 4); it returns
// the discards on active devices standing beside a commit of the person.
func (s *peopleGroupSim) checkSafety() int {
	s.t.Helper()
	overruled := 0
	for _, d := range s.allDevices() {
		hs := s.groupHoldings(d)
		p := s.person(d)
		for id, h := range hs {
			m, ok := s.gmsgs[id]
			if !ok {
				s.t.Fatalf("safety: %s holds group message %x, which no one sent", d.addr, id[:4])
			}
			if h.n > 1 {
				s.t.Fatalf("safety: %s's group history holds %x %d times", d.addr, id[:4], h.n)
			}
			if h.n == 1 && !m.shown() {
				s.t.Fatalf("safety: %s's group history shows %s's %s %x as an entry", d.addr, m.from.addr, engine.ActionName(m.act.Content), id[:4])
			}
			if want := s.shownBody(d, id, h); h.n == 1 && h.body != want {
				s.t.Fatalf("safety: %s's group history holds %q for %x (edit %d, deleted %v), want %q", d.addr, h.body, id[:4], h.edits, h.deleted, want)
			}
			if h.n == 1 && m.act != nil && (h.replyTo == nil || *h.replyTo != m.act.Target) {
				s.t.Fatalf("safety: %s's group history holds reply %x quoting %v, sent quoting %x", d.addr, id[:4], h.replyTo, m.act.Target[:4])
			}
			if h.n == 1 && h.own != (m.from.addr.User == d.addr.User) {
				s.t.Fatalf("safety: %s's group history holds %x from %s as own %v", d.addr, id[:4], m.from.addr, h.own)
			}
			if m.knewRemoved[d.addr] {
				s.t.Fatalf("safety: removed %s holds %x (entries %d, pending %v), stored by %s after its lists revoked it", d.addr, id[:4], h.n, h.pending, m.from.addr)
			}
		}
		for id, m := range s.gmsgs {
			if m.from.addr.User == p.user {
				continue
			}
			h := hs[id]
			if h == nil {
				h = &groupHeld{}
			}
			if h.imported {
				continue // from the link's archive: committed on the first device
			}
			own, asked := s.explicit[d.addr][id]
			seen := s.seen(d, m, id)
			commits, discards := s.explicitFor(p, id)
			if !m.shown() {
				if s.checkActionSafety(d, m, id, seen, asked, own, commits, discards) {
					overruled++
				}
				continue
			}
			takenBack := seen.Finalized && seen.Outcome == engine.OutcomeCommitted && h.n == 1 && h.decided != nil && commits[*h.decided]
			switch {
			case asked && own == engine.OutcomeCommitted && h.n != 1:
				s.t.Fatalf("safety: %s committed %x, its group history holds it %d times", d.addr, id[:4], h.n)
			case asked && own == engine.OutcomeCommitted && (!seen.Finalized || seen.Outcome != own):
				s.t.Fatalf("safety: %s committed %x, it holds %+v", d.addr, id[:4], seen)
			case asked && own == engine.OutcomeDiscarded && !takenBack && h.n != 0:
				s.t.Fatalf("safety: %s discarded %x, its group history holds it (naming %v; the person committed it on %v)", d.addr, id[:4], h.decided, commits)
			case asked && own == engine.OutcomeDiscarded && !takenBack && (!seen.Finalized || seen.Outcome != own):
				s.t.Fatalf("safety: %s discarded %x, it holds %+v", d.addr, id[:4], seen)
			case !asked && seen.Finalized && seen.Outcome == engine.OutcomeCommitted && !takenBack:
				s.t.Fatalf("safety: %s committed %x without asking, its group history holding it %d times naming %v; the person committed it on %v", d.addr, id[:4], h.n, h.decided, commits)
			case !asked && seen.Finalized && seen.Outcome != engine.OutcomeCommitted && len(discards) == 0:
				s.t.Fatalf("safety: %s discarded %x without asking, and no device of %s discarded it (%+v)", d.addr, id[:4], p.user, seen)
			case !asked && seen.Finalized && seen.Outcome != engine.OutcomeCommitted && h.n != 0:
				s.t.Fatalf("safety: %s discarded %x without asking, its group history holds it", d.addr, id[:4])
			}
			if takenBack && (asked || len(discards) > 0) && !s.isRemoved(d) {
				s.takenBack[d.addr.String()+string(id[:])] = true
			}
			if seen.Finalized && seen.Outcome != engine.OutcomeCommitted && len(commits) > 0 && !s.isRemoved(d) {
				overruled++
			}
		}
	}
	return overruled
}

// shownBody is the body d's entry h of group message id must show: the
// tombstone's empty body once deleted, the text of the edit it last
// applied, else the body sent.
func (s *peopleGroupSim) shownBody(d *device, id wire.LogicalID, h *groupHeld) string {
	m := s.gmsgs[id]
	switch {
	case h.deleted:
		return ""
	case h.edits == 0:
		return m.body
	}
	for _, e := range s.gmsgs {
		if e.act != nil && e.act.Content == wire.ContentEdit && e.act.Target == id && e.act.Edit == h.edits && e.from == m.from {
			return string(e.act.Text)
		}
	}
	s.t.Fatalf("safety: %s shows edit %d of %x, which %s never sent", d.addr, h.edits, id[:4], m.from.addr)
	return ""
}

// checkActionSafety is rule 3 for a group reaction, edit or delete m
// (id), which has no entry of its own, on d, a device of a receiving
// person: a commit asked here finalizes it, committed or discarded by the
// action rules (ByEngine: a commit the rules turn into a discard); a
// discard asked here stays one unless a device of the person committed it
// (a take-back); a discard the person made, not asked here, was made by a
// device of the person; a commit not asked here names a commit of a
// device of the person. It reports a discard the person made beside a
// commit of an active device (overruled).
func (s *peopleGroupSim) checkActionSafety(d *device, m *peopleGroupMsg, id wire.LogicalID, seen engine.SeenMessage, asked bool, own engine.Outcome, commits, discards map[engine.Address]bool) bool {
	s.t.Helper()
	name := engine.ActionName(m.act.Content)
	switch {
	case asked && !seen.Finalized:
		s.t.Fatalf("safety: %s decided %s's %s %x (%v), it holds %+v", d.addr, m.from.addr, name, id[:4], own, seen)
	case asked && own == engine.OutcomeCommitted && seen.Outcome != engine.OutcomeCommitted && !seen.Reason.ByEngine():
		s.t.Fatalf("safety: %s committed %s's %s %x, it holds %+v", d.addr, m.from.addr, name, id[:4], seen)
	case asked && own == engine.OutcomeDiscarded && seen.Outcome == engine.OutcomeCommitted && len(commits) == 0:
		s.t.Fatalf("safety: %s discarded %s's %s %x, it holds it committed, which no device of its person did", d.addr, m.from.addr, name, id[:4])
	case !asked && seen.Finalized && seen.Outcome != engine.OutcomeCommitted && !seen.Reason.ByEngine() && len(discards) == 0:
		s.t.Fatalf("safety: %s discarded %s's %s %x without asking (%v), and no device of its person discarded it", d.addr, m.from.addr, name, id[:4], seen.Reason)
	case !asked && seen.Finalized && seen.Outcome == engine.OutcomeCommitted && len(commits) == 0:
		s.t.Fatalf("safety: %s committed %s's %s %x without asking, and no device of its person committed it", d.addr, m.from.addr, name, id[:4])
	}
	if asked && own == engine.OutcomeDiscarded && seen.Outcome == engine.OutcomeCommitted && !s.isRemoved(d) {
		s.takenBack[d.addr.String()+string(id[:])] = true
	}
	return seen.Finalized && seen.Outcome != engine.OutcomeCommitted && !seen.Reason.ByEngine() && len(commits) > 0 && !s.isRemoved(d) &&
		!s.leftEarly[d.addr.String()+string(id[:])] // counted on its own
}

// converge runs rounds of sync, commit and retry; it returns the rounds it
// took, or -1.
func (s *peopleGroupSim) converge(rounds int) int {
	for round := 1; round <= rounds; round++ {
		for _, d := range s.allDevices() {
			s.sync(d)
			if s.isRemoved(d) {
				continue
			}
			for _, m := range s.pendingIn(d) {
				s.decide(d, m.Sender, m.ID, true)
			}
		}
		for _, d := range s.allDevices() {
			s.sync(d)
			if s.isRemoved(d) {
				continue
			}
			for _, to := range s.allDevices() {
				if to != d {
					if _, err := d.c.Retry(s.w.ctx, to.addr); err != nil {
						s.t.Fatalf("%s retries to %s: %v", d.addr, to.addr, err)
					}
				}
			}
		}
		s.w.clock.Advance(engine.RecoveryRepeat)
		s.checkSafety()
		if s.settled(false) {
			return round
		}
		if s.onlyOrphansWait() {
			// What waits is a group action whose target never comes (no
			// lane of it here, or one of a removed sender: the known gaps
			// above). The rule ends the wait at
			// ActionHold (target_missing), so the clock moves past it.
			if s.holdEnded.IsZero() {
				s.holdEnded = s.w.clock.Now()
			}
			s.w.clock.Advance(engine.ActionHold + time.Minute)
		}
	}
	return -1
}

// onlyOrphansWait reports whether everything pending on the active devices
// is a group reaction, edit or delete whose target the device holds no
// record of and had no lane of at the target's send that must end (none,
// or one of a sender removed since), and there is one; and every lane
// pending on an active device carries one of those to a device that holds
// it pending (nothing else is on the way: moving the clock judges no
// arrival later than it would be).
func (s *peopleGroupSim) onlyOrphansWait() bool {
	n := 0
	for _, d := range s.activeDevices() {
		outs, err := d.c.PendingOutbound(s.w.ctx, engine.PageQuery{Limit: 1000})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, o := range outs {
			m, to := s.gmsgs[o.ID], s.device(o.Recipient)
			if m == nil || m.shown() || to == nil || !s.seen(to, m, o.ID).Pending {
				return false
			}
		}
	}
	for _, d := range s.activeDevices() {
		for _, in := range s.waitingIn(d) {
			m := s.gmsgs[in.ID]
			if m == nil || m.shown() {
				return false
			}
			t := s.gmsgs[m.act.Target]
			seen := s.seen(d, t, m.act.Target)
			if t.lanes[d.addr] && !s.isRemoved(t.from) || seen.Pending || seen.Finalized || s.groupHoldings(d)[m.act.Target] != nil {
				return false
			}
			n++
		}
	}
	if n > 0 {
		s.orphansWaited += n
	}
	return n > 0
}

// checkConverged checks, once nothing is pending, the lanes and the
// agreement of the doc comment.
func (s *peopleGroupSim) checkConverged() {
	s.t.Helper()
	holds := map[engine.Address]map[wire.LogicalID]*groupHeld{}
	for _, d := range s.allDevices() {
		holds[d.addr] = s.groupHoldings(d)
	}
	ids := make([]wire.LogicalID, 0, len(s.gmsgs))
	for id := range s.gmsgs {
		ids = append(ids, id)
	}
	sortIDs(ids)
	for _, id := range ids {
		m := s.gmsgs[id]
		if !s.isRemoved(m.from) {
			for _, l := range s.lanesOf(m.from, m.group, id) {
				r := s.device(l.Recipient)
				switch {
				case r == nil:
					s.t.Fatalf("liveness: %s's %x has a lane to %s, a device that never was", m.from.addr, id[:4], l.Recipient)
				case m.knewRemoved[r.addr]:
					s.t.Fatalf("safety: %s's %x has a lane to %s, which its lists revoked when it was stored", m.from.addr, id[:4], r.addr)
				case s.isRemoved(r) && l.State != engine.LaneRemoved && l.State != engine.LaneAcknowledged:
					s.t.Fatalf("liveness: %s's lane of %x to removed %s is %v", m.from.addr, id[:4], r.addr, l.State)
				case !s.isRemoved(r) && l.State != engine.LaneAcknowledged:
					s.settled(true)
					s.t.Fatalf("liveness: %s's lane of %x to %s is %v", m.from.addr, id[:4], r.addr, l.State)
				}
			}
		}
		for _, p := range s.people {
			commits, _ := s.explicitFor(p, id)
			activeCommit := false
			for a := range commits {
				activeCommit = activeCommit || !p.removed[a]
			}
			for _, d := range p.active() {
				if d == m.from {
					continue
				}
				h := holds[d.addr][id]
				if h == nil {
					h = &groupHeld{}
				}
				named := m.lanes[d.addr] && !s.isRemoved(m.from)
				if p.user == m.from.addr.User {
					if named && m.shown() && h.n != 1 {
						s.t.Fatalf("liveness: %s, a sibling of %s with a lane, holds %x %d times", d.addr, m.from.addr, id[:4], h.n)
					}
					if !m.lanes[d.addr] {
						s.unnamed++
					}
					continue
				}
				seen := s.seen(d, m, id)
				if seen.Pending {
					s.t.Fatalf("liveness: %s still holds %x pending", d.addr, id[:4])
				}
				if !m.lanes[d.addr] {
					s.unnamed++
				}
				if h.imported {
					continue // committed on the first device before the link
				}
				if !m.shown() {
					s.convergedAction(d, p, m, id, seen, named, activeCommit, commits, holds[d.addr])
					continue
				}
				if !seen.Finalized {
					if named {
						s.t.Fatalf("liveness: %s had a lane of %s's %x and holds no record of it", d.addr, m.from.addr, id[:4])
					}
					continue
				}
				// A commit of an active device obliges d, whether or not
				// that device's list named d when it committed (catch-up).
				if activeCommit && (seen.Outcome != engine.OutcomeCommitted || h.n != 1) {
					_, asked := s.explicit[d.addr][id]
					for a := range commits {
						s.t.Logf("%s's list named %v when it committed", a, s.decisionNamed[a.String()+string(id[:])])
					}
					s.t.Fatalf("agreement: %s holds %x %v with %d entries (asked here: %v), the person committed it on %v (removed: %v)", d.addr, id[:4], seen.Outcome, h.n, asked, commits, p.removed)
				}
				if len(commits) == 0 && seen.Outcome == engine.OutcomeCommitted {
					s.t.Fatalf("safety: %s committed %x, which no device of %s committed", d.addr, id[:4], p.user)
				}
			}
		}
	}
	s.convergedState(holds, ids)
}

// convergedAction is checkConverged's agreement for a group reaction,
// edit or delete m (id) on d, an active device of receiving person p that
// holds nothing pending: d had a lane of it, so holds a record of it; when
// an active device of p committed it, d committed it too, or the rules
// discarded it here by the target's state, which the person's devices
// agree on: its target is deleted here (a delete that came first: the
// tombstone the committing device shows too, convergedState), or its
// target is not shown here, discarded (target_discarded; the text's own
// agreement then says no active device of p committed the target, so the
// committing device's commit turned into the same discard), or its
// target never came here and the action waited out ActionHold
// (target_missing, onlyOrphansWait). Two cases are allowed besides, and
// counted: the known gap of noteEarlyDecisions, and a commit of p that
// turned into the rules' discard on every active device that made it
// (its target discarded there then): such a commit tells the siblings
// without its action, nothing takes the maker's own discard back when
// its target is taken back later, and a sibling whose pending copy it
// finalizes applies it and tells no one (turnedByItsMakers). A commit
// here names a commit of p.
func (s *peopleGroupSim) convergedAction(d *device, p *simPerson, m *peopleGroupMsg, id wire.LogicalID, seen engine.SeenMessage, named, activeCommit bool, commits map[engine.Address]bool, holds map[wire.LogicalID]*groupHeld) {
	s.t.Helper()
	name := engine.ActionName(m.act.Content)
	if !seen.Finalized {
		if named {
			s.t.Fatalf("liveness: %s had a lane of %s's %s %x and holds no record of it", d.addr, m.from.addr, name, id[:4])
		}
		return
	}
	if seen.Outcome != engine.OutcomeCommitted && seen.Reason.ByEngine() {
		s.actDiscards[seen.Reason.String()]++
	}
	target := holds[m.act.Target]
	shown := target != nil && target.n == 1
	byRule := seen.Reason == engine.DiscardTargetDeleted && shown && target.deleted ||
		seen.Reason == engine.DiscardTargetDiscarded && !shown ||
		seen.Reason == engine.DiscardTargetMissing && !shown && !s.holdEnded.IsZero()
	key := d.addr.String() + string(id[:])
	if activeCommit && seen.Outcome != engine.OutcomeCommitted && !byRule &&
		seen.Reason == engine.DiscardTargetDiscarded && s.waitHeard[key] {
		s.leftEarly[key] = true // the known gap of noteEarlyDecisions
		return
	}
	if activeCommit && seen.Outcome != engine.OutcomeCommitted && !byRule && s.turnedByItsMakers(p, m, id) {
		// Every commit of the person was turned into a discard by the
		// rules where it was made (its target discarded there then):
		// such a commit tells the siblings without its action, nothing
		// re-judges the maker's own discard when its target is taken back
		// later, and a sibling that finalizes its pending copy by that
		// commit applies it and tells no one. So the devices may differ
		// (convergedState counts the entries that do).
		s.rulesEverywhere[key] = true
		return
	}
	if activeCommit && seen.Outcome != engine.OutcomeCommitted && !byRule {
		_, asked := s.explicit[d.addr][id]
		var ts string
		if target != nil {
			ts = fmt.Sprintf("its target %x shown %d times, %s", m.act.Target[:4], target.n, target.state(true))
		} else {
			ts = fmt.Sprintf("its target %x not shown (%+v)", m.act.Target[:4], s.seen(d, s.gmsgs[m.act.Target], m.act.Target))
		}
		s.t.Fatalf("agreement: %s holds %s's %s %x %v (%v; asked here: %v), the person committed it on %v (removed: %v); %s", d.addr, m.from.addr, name, id[:4], seen.Outcome, seen.Reason, asked, commits, p.removed, ts)
	}
	if len(commits) == 0 && seen.Outcome == engine.OutcomeCommitted {
		s.t.Fatalf("safety: %s committed %s's %s %x, which no device of %s committed", d.addr, m.from.addr, name, id[:4], p.user)
	}
}

// convergedState checks that the active devices of each person that show
// one group message (a text or a reply) show the same actions' effects on
// it: the same reactions, the same edit and body, the same tombstone. The
// action decisions are the person's and converge by its rule; an edit's
// window is measured on each device between two arrivals and could
// differ, so the case must end within ActionWindow of its first send,
// which it checks (every edit then lands in its window everywhere). An
// entry a device holds by import (the link's archive) is compared without
// its reactions: an archive carries a group entry's edit, tombstone and
// quote but no reactions (docs/storage.md, "reactions are not read"), so
// a linked device does not show those the first device applied before the
// cut; they are counted (unshownReactions).
func (s *peopleGroupSim) convergedState(holds map[engine.Address]map[wire.LogicalID]*groupHeld, ids []wire.LogicalID) {
	s.t.Helper()
	end := s.w.clock.Now()
	if !s.holdEnded.IsZero() {
		end = s.holdEnded // every action had arrived where it could: only orphans waited
	}
	if span := end.Sub(s.start); span >= engine.ActionWindow {
		s.t.Fatalf("the case spans %v, past ActionWindow: an edit's window could pass on one device only", span)
	}
	for _, id := range ids {
		if !s.gmsgs[id].shown() {
			continue
		}
		for _, p := range s.people {
			var first *device
			for _, d := range p.active() {
				h := holds[d.addr][id]
				if h == nil || h.n != 1 {
					continue
				}
				if first == nil {
					first = d
					continue
				}
				f := holds[first.addr][id]
				both := !f.imported && !h.imported
				if !both && len(f.reactions)+len(h.reactions) > 0 {
					s.unshownReactions++
				}
				switch a, b := f.state(both), h.state(both); {
				case a == b:
				case s.leftEarlyOn(id, first, d):
					s.earlyDiverged++
				case s.unreachedOn(id, first, d):
					s.unreachedDiverged++
				case s.turnedOn(id, p):
					s.turnedDiverged++
				default:
					s.explainActionsOn(id, first, d, holds)
					s.t.Fatalf("agreement: %s shows %s's %x as %s; %s shows %s", first.addr, s.gmsgs[id].from.addr, id[:4], a, d.addr, b)
				}
			}
		}
	}
}

// unreachedOn reports whether an action on group message id never reached
// a or b: the device holds no record of it (a sibling's decision does not
// bring a message, only decides it when it comes) and had no lane of it
// that must end: the action's sender did not name it at the send (the
// known gap of the doc comment: no lane to a device its lists did not
// name yet), or was removed since (its lanes stay pending on it).
func (s *peopleGroupSim) unreachedOn(id wire.LogicalID, a, b *device) bool {
	for aid, m := range s.gmsgs {
		if m.act == nil || m.act.Target != id {
			continue
		}
		for _, d := range []*device{a, b} {
			if d == m.from || m.lanes[d.addr] && !s.isRemoved(m.from) {
				continue
			}
			if seen := s.seen(d, m, aid); !seen.Pending && !seen.Finalized {
				return true
			}
		}
	}
	return false
}

// turnedByItsMakers reports whether the person p committed group action id
// of m (on an active device) and each active device that committed it
// holds it discarded by the rules: the commit turned into the rules'
// discard where it was made.
func (s *peopleGroupSim) turnedByItsMakers(p *simPerson, m *peopleGroupMsg, id wire.LogicalID) bool {
	commits, _ := s.explicitFor(p, id)
	n := 0
	for a := range commits {
		d := s.device(a)
		if p.removed[a] || d == nil {
			continue
		}
		seen := s.seen(d, m, id)
		if !seen.Finalized || seen.Outcome == engine.OutcomeCommitted || !seen.Reason.ByEngine() {
			return false
		}
		n++
	}
	return n > 0
}

// turnedOn reports whether an action on group message id is one of
// turnedByItsMakers for p.
func (s *peopleGroupSim) turnedOn(id wire.LogicalID, p *simPerson) bool {
	for aid, m := range s.gmsgs {
		if m.act != nil && m.act.Target == id && s.turnedByItsMakers(p, m, aid) {
			return true
		}
	}
	return false
}

// leftEarlyOn reports whether an action on group message id was left
// discarded on a or b by the known gap of noteEarlyDecisions.
func (s *peopleGroupSim) leftEarlyOn(id wire.LogicalID, a, b *device) bool {
	for aid, m := range s.gmsgs {
		if m.act != nil && m.act.Target == id && (s.leftEarly[a.addr.String()+string(aid[:])] || s.leftEarly[b.addr.String()+string(aid[:])]) {
			return true
		}
	}
	return false
}

// explainActionsOn logs, for a failing agreement, each action on group
// message id and what devices a and b hold of it.
func (s *peopleGroupSim) explainActionsOn(id wire.LogicalID, a, b *device, holds map[engine.Address]map[wire.LogicalID]*groupHeld) {
	for _, d := range []*device{a, b} {
		h := holds[d.addr][id]
		s.t.Logf("%s: the target imported %v, decided on %v; lanes of the target's send to it %v", d.addr, h.imported, h.decided, s.gmsgs[id].lanes[d.addr])
	}
	for aid, m := range s.gmsgs {
		if m.act == nil || m.act.Target != id {
			continue
		}
		for _, d := range []*device{a, b} {
			_, asked := s.explicit[d.addr][aid]
			s.t.Logf("%s's %s %x (%+v): on %s lane %v, asked %v, %+v", m.from.addr, engine.ActionName(m.act.Content), aid[:4], *m.act, d.addr, m.lanes[d.addr], asked, s.seen(d, m, aid))
		}
	}
}

// explainPending logs, for a liveness failure, each group action pending
// on an active device and what that device and the sender hold of its
// target.
func (s *peopleGroupSim) explainPending() {
	for _, d := range s.activeDevices() {
		for _, in := range s.waitingIn(d) {
			m := s.gmsgs[in.ID]
			if m == nil || m.act == nil {
				continue
			}
			t := s.gmsgs[m.act.Target]
			s.t.Logf("%s holds %s's %s %x pending, its target %x from %s (lane to %s at the send %v): here %+v, shown %v", d.addr, m.from.addr, engine.ActionName(m.act.Content), in.ID[:4], m.act.Target[:4], t.from.addr, d.addr, t.lanes[d.addr], s.seen(d, t, m.act.Target), s.groupHoldings(d)[m.act.Target])
		}
	}
}

// peopleGroupTotals is what the cases of one run add up to.
type peopleGroupTotals struct {
	cases, steps, maxRounds, overruled, devices, linked, removed, takenBack, msgs, unnamed int
	actions, outcomes                                                                      map[string]int
	// groupActs counts the group actions sent, by kind; actDiscards the
	// rules' discards of them at the end, by reason.
	groupActs, actDiscards map[string]int
	// orphans: actions that waited out ActionHold for a target that never
	// came to their device; unshown: entries whose reactions were not
	// compared (held by import on one device).
	orphans, unshown int
	// leftEarly, earlyDiverged: noteEarlyDecisions's gap.
	leftEarly, earlyDiverged, unreachedDiverged, rulesEverywhere, turnedDiverged int
}

func TestAdversaryPeopleGroups(t *testing.T) {
	cases := 20
	if v, err := strconv.Atoi(os.Getenv("ADVERSARY_PEOPLE_GROUP_CASES")); err == nil && v >= 0 {
		cases = v
	}
	if testing.Short() && cases > 5 {
		cases = 5
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ADVERSARY_PEOPLE_GROUP_SEED"), 10, 64); err == nil {
		seed, cases = v, 1
	}
	fmt.Printf("adversary people groups: seed %d (ADVERSARY_PEOPLE_GROUP_SEED=%d replays the first case)\n", seed, seed)
	tot := peopleGroupTotals{actions: map[string]int{}, outcomes: map[string]int{}, groupActs: map[string]int{}, actDiscards: map[string]int{}}
	for c := 0; c < cases; c++ {
		caseSeed := seed + uint64(c)
		ok := t.Run(fmt.Sprintf("seed=%d", caseSeed), func(t *testing.T) {
			runPeopleGroupCase(t, caseSeed, &tot)
		})
		if !ok {
			t.Fatalf("case with seed %d failed: ADVERSARY_PEOPLE_GROUP_SEED=%d replays it", caseSeed, caseSeed)
		}
	}
	keys := make([]string, 0, len(tot.actions))
	for k := range tot.actions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	acts := ""
	for _, k := range keys {
		acts += fmt.Sprintf(" %s=%d", k, tot.actions[k])
	}
	nActs := 0
	for _, n := range tot.groupActs {
		nActs += n
	}
	fmt.Printf("adversary people groups: %d cases, %d steps, %d devices (%d linked during traffic, %d removed), %d group messages (%d of them actions: %s; discarded by the rules at the end %s; %d waited out ActionHold for a target never sent to their device; %d entries with reactions held by import on a device, reactions not compared; %d left discarded beside a sibling's commit heard while the action waited, %d entries shown differently so; %d shown differently by an action that never reached one device, not named at its send; %d (device, action) pairs left discarded where the person's every commit of it turned into the rules' discard, %d entries shown differently so), 0 safety violations, 0 stuck, at most %d rounds to converge, %d discards taken back, %d left overruled, %d (message, device) pairs not named at the send; actions%s\n",
		tot.cases, tot.steps, tot.devices, tot.linked, tot.removed, tot.msgs, nActs, countList(tot.groupActs), countList(tot.actDiscards), tot.orphans, tot.unshown, tot.leftEarly, tot.earlyDiverged, tot.unreachedDiverged, tot.rulesEverywhere, tot.turnedDiverged, tot.maxRounds, tot.takenBack, tot.overruled, tot.unnamed, acts)
	t.Logf("receive outcomes over all cases: %v", tot.outcomes)
}

// countList prints counts by name, sorted, "a=1 b=2" ("none" for none).
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for _, k := range keys {
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf("%s=%d", k, m[k])
	}
	if out == "" {
		return "none"
	}
	return out
}

// peopleGroupSteps is the number of steps of one case.
const peopleGroupSteps = 80

func runPeopleGroupCase(t *testing.T, seed uint64, tot *peopleGroupTotals) {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	w := newWorld(t)
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	keySeed := seed
	w.seed = &keySeed
	s := &peopleGroupSim{peopleSim: &peopleSim{t: t, rng: rng, w: w, msgs: map[wire.LogicalID]*peopleMsg{},
		explicit: map[engine.Address]map[wire.LogicalID]engine.Outcome{}, actions: tot.actions, outcomes: tot.outcomes,
		decisionKnew:  map[engine.Address]map[wire.LogicalID]map[engine.Address]bool{},
		takenBack:     map[string]bool{},
		decisionNamed: map[string][]engine.Address{},
		reconnect:     seed%2 == 0},
		gmsgs: map[wire.LogicalID]*peopleGroupMsg{}, actDiscards: tot.actDiscards, leftEarly: map[string]bool{}, waitHeard: map[string]bool{}, rulesEverywhere: map[string]bool{}}
	n := 2 + rng.IntN(2)
	for i := 0; i < n; i++ {
		user := fmt.Sprintf("p%d", i)
		d := w.device(user + "/1")
		a, err := engine.LoadAccount(w.ctx, d.st)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.net.SetDeviceList(a.List); err != nil {
			t.Fatal(err)
		}
		p := &simPerson{user: user, devs: []*device{d}, removed: map[engine.Address]bool{}}
		more := rng.IntN(3)
		before := rng.IntN(more + 1)
		for j := 0; j < before; j++ {
			s.link(p)
		}
		p.toLink = more - before
		p.remove = more > 0 && rng.IntN(3) != 0
		s.people = append(s.people, p)
	}
	// The groups, made while the relay is honest: the first by p0/1, a
	// second (on half the seeds) by p1/1, each with the other people's
	// first devices as entries.
	creators := []*simPerson{s.people[0]}
	if rng.IntN(2) == 0 {
		creators = append(creators, s.people[1])
	}
	for _, c := range creators {
		var members []engine.Address
		for _, p := range s.people {
			if p != c {
				members = append(members, p.devs[0].addr)
			}
		}
		info, _, err := c.devs[0].c.CreateGroup(w.ctx, "sim", members)
		if err != nil {
			t.Fatal(err)
		}
		s.groups = append(s.groups, info.ID)
	}
	for range 4 {
		for _, d := range s.allDevices() {
			s.sync(d)
			for _, m := range s.pendingIn(d) { // the creations, asked as requests
				if _, err := d.c.Commit(w.ctx, m.Sender, m.ID); err != nil {
					t.Fatalf("%s accepts %x: %v", d.addr, m.ID[:4], err)
				}
			}
			for _, to := range s.allDevices() {
				if to != d {
					if _, err := d.c.Retry(w.ctx, to.addr); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	for _, d := range s.allDevices() {
		for _, g := range s.groups {
			if _, err := d.c.Group(w.ctx, g); err != nil {
				t.Fatalf("%s holds no group %x after the honest rounds: %v", d.addr, g[:2], err)
			}
		}
		if n := d.pendingOut(); n > 0 {
			t.Fatalf("%s has %d lanes pending after the honest rounds", d.addr, n)
		}
	}
	for _, d := range s.allDevices() {
		w.net.Hold(d.addr)
	}
	s.start = w.clock.Now()
	for i := 0; i < peopleGroupSteps; i++ {
		s.step()
		s.checkSafety()
	}
	s.heal()
	rounds := s.converge(12)
	tot.cases++
	tot.steps += peopleGroupSteps
	tot.devices += len(s.allDevices())
	for _, p := range s.people {
		tot.removed += len(p.removed)
	}
	tot.linked += s.linkedGT
	tot.msgs += len(s.gmsgs)
	for _, m := range s.gmsgs {
		if m.act != nil {
			tot.groupActs[engine.ActionName(m.act.Content)]++
		}
	}
	if rounds < 0 {
		s.settled(true)
		s.explainPending()
		t.Fatalf("liveness: still pending twelve rounds after the adversary stopped (seed %d)", seed)
	}
	s.checkConverged()
	tot.overruled += s.checkSafety()
	tot.takenBack += len(s.takenBack)
	tot.unnamed += s.unnamed
	tot.orphans += s.orphansWaited
	tot.leftEarly += len(s.leftEarly)
	tot.earlyDiverged += s.earlyDiverged
	tot.unreachedDiverged += s.unreachedDiverged
	tot.rulesEverywhere += len(s.rulesEverywhere)
	tot.turnedDiverged += s.turnedDiverged
	tot.unshown += s.unshownReactions
	if rounds > tot.maxRounds {
		tot.maxRounds = rounds
	}
}

// TestPeopleGroupsFoundSeeds replays the people-in-groups adversary's
// cases that once ended with one person's devices apart on a group
// action, each fixed since: a sibling's commit heard before its target's
// (1796664555521825216), a commit heard while the action waited
// (1796665169603684224), a sibling's own reaction discarded for its
// discarded target (1796666887868553873), a person's discard of a
// sibling's own waiting delete (1796666830844202532), and a sibling's
// discard told to a device the committing device linked after its commit
// (1796668991363755344). A change of the engine may take another path
// through a seed; the sweeps (ADVERSARY_PEOPLE_GROUP_CASES) look for new
// ones.
func TestPeopleGroupsFoundSeeds(t *testing.T) {
	oneGoroutine(t)
	tot := peopleGroupTotals{actions: map[string]int{}, outcomes: map[string]int{}, groupActs: map[string]int{}, actDiscards: map[string]int{}}
	for _, seed := range []uint64{1796664555521825216, 1796665169603684224, 1796666887868553873, 1796666830844202532, 1796668991363755344} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runPeopleGroupCase(t, seed, &tot)
		})
	}
}
