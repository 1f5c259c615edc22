package engine_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
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

// The people adversary (issue 33): two or three people, each with one to
// three devices (some linked before the traffic, some linked during it, and
// sometimes a device other than the first removed during it), sending to
// each other by Enqueue (a lane per device of the person, a sent copy to
// each other device of the sender), deciding on any device (and on two
// devices of one person at about the same time, one committing and one
// discarding), retrying, restarting and moving the clock, over the relay of
// TestAdversary: it withholds every envelope and delivers, reorders, drops
// and replays them as it likes.
//
// After every step (check):
//
//  1. no device's history holds a logical ID twice (received messages and
//     own messages, sent copies included);
//  2. a device that committed a message (or holds it in its history) has
//     it exactly once, with the body sent; one that discarded it does not
//     hold it;
//  3. a device that finalized a message without being asked (a decision of
//     another device) has the outcome some device of its person chose,
//     and its history names a device of its person that committed it;
//  4. a removed device holds nothing (in its history or pending) that its
//     sender stored when the list the sender held already revoked it, no
//     lane of such a message goes to it, and it hears no decision made
//     by a device whose own list revoked it.
//
// Once the adversary stops (each withheld envelope delivered or dropped,
// as it likes; on even seeds every device reconnects once, on odd ones
// every connection stays), at most twelve rounds of sync, commit and retry
// leave nothing pending on any active device: every lane acknowledged,
// those to a removed device acknowledged or ended removed; every active
// device of the receiving person that finalized a message agrees with the
// person's decision (commit beats discard: a discard, asked or heard, is
// taken back by the commit heard later, whose decision carries the body);
// and every sent copy whose lane was acknowledged is in that device's
// history once. A removed device may keep a discard (it hears no commit
// made after its removal), and its own lanes stay pending on it (it can
// no longer submit), so it is left out of the liveness and agreement
// checks as a device. Its messages are not: one whose sent copy the
// person's first device held at the removal was adopted there, so its
// lanes from the first device must end as any lane above, and every
// active device of the receiving person holds it once, from either
// device (deduplication by person), decided as the person decided. One
// whose copy the first device did not hold is left out (counted).
//
// A commit made while the committing device's own list did not name a
// sibling linked since obliges that sibling too: the device tells it of
// the decision when it stores the list naming it (catch-up; the gap was
// found with seed 1796583659962398995, which replays it).
//
// Between the steps a discard
// beside a commit is allowed (the commit's decision may not have come
// yet); the summary counts the discards taken back.
//
// A relay that keeps device lists refuses a removed device outright; the
// test's network does not, so the removed device goes on syncing here (it
// cannot submit: its hand-offs fail), which is the harder case for
// property 4.
//
// ADVERSARY_PEOPLE_CASES sets the number of cases (default 30; make test
// runs 30); ADVERSARY_PEOPLE_SEED replays one case;
// ADVERSARY_PEOPLE_NORECONNECT=1 keeps every connection on every seed.
//
// The devices' relay reports one connection per open (connected): the
// test network's endpoints report none, and a device would then never
// publish its list nor fetch the people's lists at connection.

// simPerson is one person of the simulation.
type simPerson struct {
	user    string
	devs    []*device // in linking order; devs[0] holds the account key
	removed map[engine.Address]bool
	toLink  int  // devices still to link during the traffic
	remove  bool // a device other than the first is removed during the traffic
}

func (p *simPerson) active() []*device {
	var out []*device
	for _, d := range p.devs {
		if !p.removed[d.addr] {
			out = append(out, d)
		}
	}
	return out
}

// peopleMsg is one message the simulation sent.
type peopleMsg struct {
	from *device
	to   *simPerson
	body string
	// knewRemoved are the devices the sender's lists (the recipient's and
	// its own) revoked when it stored the message: none of them may ever
	// hold it.
	knewRemoved map[engine.Address]bool
}

type peopleSim struct {
	t        *testing.T
	rng      *mrand.Rand
	w        *world
	people   []*simPerson
	msgs     map[wire.LogicalID]*peopleMsg
	explicit map[engine.Address]map[wire.LogicalID]engine.Outcome // what the simulation decided on each device
	serial   int
	actions  map[string]int
	outcomes map[string]int // receive results by kind (errors by name)
	// decisionKnew are, per deciding device and message, the devices
	// its own list revoked when it decided: none may hear the decision.
	decisionKnew map[engine.Address]map[wire.LogicalID]map[engine.Address]bool
	// decisionNamed are the active devices the decider's own list named
	// (device and message).
	decisionNamed map[string][]engine.Address
	// takenBack are the discards (device and message) a commit heard
	// later took back.
	takenBack map[string]bool
	// reconnect: every device reconnects once the adversary stops.
	reconnect bool
	// adopted counts the messages of a removed device whose lanes the
	// first device adopted; adoptedOut those of a removed device that it
	// held as a copy and did not adopt.
	adopted, adoptedOut int
}

func (s *peopleSim) person(d *device) *simPerson {
	for _, p := range s.people {
		if p.user == d.addr.User {
			return p
		}
	}
	return nil
}

func (s *peopleSim) allDevices() []*device {
	var out []*device
	for _, p := range s.people {
		out = append(out, p.devs...)
	}
	return out
}

func (s *peopleSim) activeDevices() []*device {
	var out []*device
	for _, p := range s.people {
		out = append(out, p.active()...)
	}
	return out
}

func (s *peopleSim) isRemoved(d *device) bool { return s.person(d).removed[d.addr] }

// link links a new device to p (linkDevice) during the simulation.
func (s *peopleSim) link(p *simPerson) *device {
	d := s.w.linkDevice(p.devs[0])
	p.devs = append(p.devs, d)
	return d
}

// linkDevice links a new device to owner's account as a finished ceremony
// leaves both sides: owner (holding the account key) signs the next list
// naming it and the relay takes it (AddDevice), and the new device's
// profile is written from the package (CreateLinkedProfile), without
// history.
func (w *world) linkDevice(owner *device) *device { return w.linkDeviceEdit(owner, nil) }

// linkDeviceEdit is linkDevice with the package changed by edit before
// the new device's profile is written from it (nil: unchanged).
func (w *world) linkDeviceEdit(owner *device, edit func(*wire.LinkPackageData)) *device {
	t, ctx := w.t, w.ctx
	t.Helper()
	a, err := engine.LoadAccount(ctx, owner.st)
	if err != nil {
		t.Fatal(err)
	}
	n := engine.NextDeviceNumber(a.List)
	d := &device{w: w, addr: engine.Address{User: owner.addr.User, Device: n}}
	var r io.Reader = rand.Reader
	if w.seed != nil {
		*w.seed++
		d.random = newDetRandom(*w.seed)
		r = d.random
	}
	id, err := engine.NewIdentity(r)
	if err != nil {
		t.Fatal(err)
	}
	list, err := owner.c.AddDevice(ctx, engine.DeviceEntryFor(id, d.addr.User, a.Key.Public(), n, w.clock.Now().Unix()))
	if err != nil {
		t.Fatalf("%s links %s: %v", owner.addr, d.addr, err)
	}
	pkg, err := owner.c.LinkPackage(ctx, list, false)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&pkg)
	}
	d.dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d-linked", d.addr.User, n))
	st, err := store.Create(ctx, d.dir, passphrase, store.Options{KDF: store.KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CreateLinkedProfile(ctx, st, "fake://", id, n, pkg, engine.HistoryChoice{Mode: engine.HistoryAll}, d.random, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	d.open()
	if err := d.c.RefreshPreKeys(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.c != nil {
			d.c.Close()
		}
	})
	return d
}

// removeOne removes a device of p other than the first, from the first.
// The relay refuses it from then on: its hand-offs fail.
func (s *peopleSim) removeOne(p *simPerson) bool {
	cands := append([]*device(nil), p.active()[1:]...)
	if len(cands) == 0 {
		return false
	}
	d := cands[s.rng.IntN(len(cands))]
	if _, err := p.devs[0].c.RemoveDevice(s.w.ctx, d.addr); err != nil {
		s.t.Fatalf("%s removes %s: %v", p.devs[0].addr, d.addr, err)
	}
	p.removed[d.addr] = true
	s.w.net.SetDown(d.addr, true)
	return true
}

// revokedIn returns the devices l revokes.
func revokedIn(l wire.DeviceList, into map[engine.Address]bool) {
	for _, e := range l.Entries {
		if e.State != wire.DeviceActive {
			into[engine.Address{User: l.User, Device: e.Number}] = true
		}
	}
}

// send stores a message from d to person p as the command line does
// (CheckPeer, Enqueue, Pump), noting which devices the sender's lists
// revoked at the time.
func (s *peopleSim) send(d *device, p *simPerson) {
	s.t.Helper()
	ctx := s.w.ctx
	peer := p.devs[0].addr
	if err := d.c.CheckPeer(ctx, peer); err != nil {
		s.t.Fatalf("%s checks %s: %v", d.addr, peer, err)
	}
	knew := map[engine.Address]bool{}
	if held, ok, err := d.c.PeerAccount(ctx, p.user); err != nil {
		s.t.Fatal(err)
	} else if ok {
		revokedIn(held.List, knew)
	}
	own, err := engine.LoadAccount(ctx, d.st)
	if err != nil {
		s.t.Fatal(err)
	}
	revokedIn(own.List, knew)
	s.serial++
	body := fmt.Sprintf("m%d %s>%s", s.serial, d.addr, p.user)
	res, err := d.c.Enqueue(ctx, []engine.SendRequest{{Peer: peer, Body: []byte(body)}})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		s.t.Fatalf("%s enqueues to %s: %v", d.addr, p.user, err)
	}
	s.msgs[res[0].ID] = &peopleMsg{from: d, to: p, body: body, knewRemoved: knew}
	if _, err := d.c.Pump(ctx); err != nil {
		s.t.Fatalf("%s pumps: %v", d.addr, err)
	}
	s.actions["send"]++
}

func (s *peopleSim) sync(d *device) {
	s.t.Helper()
	res, err := d.c.Sync(s.w.ctx)
	if err != nil && !s.isRemoved(d) {
		s.t.Fatalf("%s syncs: %v", d.addr, err)
	}
	for _, r := range res.Received {
		name := r.Kind.String()
		if r.Kind == engine.ResultError {
			name = engine.ErrorName(r.Err)
			if errors.Is(r.Err, engine.ErrNotOwnDevice) {
				name = "not_own_device"
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
}

// decide commits or discards message id from sender on d, as the person
// asked there.
func (s *peopleSim) decide(d *device, sender engine.Address, id wire.LogicalID, commit bool) {
	s.t.Helper()
	own, err := engine.LoadAccount(s.w.ctx, d.st)
	if err != nil {
		s.t.Fatal(err)
	}
	knew := map[engine.Address]bool{}
	revokedIn(own.List, knew)
	if commit {
		_, err = d.c.Commit(s.w.ctx, sender, id)
	} else {
		_, err = d.c.Discard(s.w.ctx, sender, id, engine.DiscardRejected)
	}
	if errors.Is(err, engine.ErrTargetPending) {
		// A group reaction, edit or delete whose target is not committed
		// here waits (actionhold.go): the commit is refused, nothing is
		// decided, and it stays pending.
		s.actions["commit-refused-target-pending"]++
		return
	}
	if errors.Is(err, engine.ErrHeldCopy) {
		// A sibling's own group action waiting for its target is the
		// hold's, not the person's: refused, it stays pending.
		s.actions["decide-refused-siblings-own"]++
		return
	}
	if err != nil {
		s.t.Fatalf("%s decides %x (commit %v): %v", d.addr, id[:4], commit, err)
	}
	if s.decisionKnew[d.addr] == nil {
		s.decisionKnew[d.addr] = map[wire.LogicalID]map[engine.Address]bool{}
	}
	s.decisionKnew[d.addr][id] = knew
	s.decisionNamed[d.addr.String()+string(id[:])] = engine.ActiveAddresses(own.List)
	if s.explicit[d.addr] == nil {
		s.explicit[d.addr] = map[wire.LogicalID]engine.Outcome{}
	}
	o := engine.OutcomeDiscarded
	if commit {
		o = engine.OutcomeCommitted
	}
	s.explicit[d.addr][id] = o
}

func (s *peopleSim) pendingIn(d *device) []engine.InboundMessage {
	s.t.Helper()
	in, err := d.c.PendingInbound(s.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		s.t.Fatal(err)
	}
	return in
}

// waitingIn returns what d holds pending: the messages its person decides
// (pendingIn) and the group actions of its siblings that wait for their
// target, held for the hold's pass, which the person's lists leave out.
func (s *peopleSim) waitingIn(d *device) []engine.InboundMessage {
	s.t.Helper()
	in := s.pendingIn(d)
	held, err := d.st.HeldActions(s.w.ctx, 0, 1000)
	if err != nil {
		s.t.Fatal(err)
	}
	listed := make(map[string]bool, len(in))
	for _, m := range in {
		listed[m.Sender.String()+string(m.ID[:])] = true
	}
	for _, m := range held {
		if m.Group != nil && !listed[m.Sender.String()+string(m.ID[:])] {
			in = append(in, m)
		}
	}
	return in
}

// race has two active devices of one person decide one message both hold
// pending, one committing and one discarding, before either hears the
// other.
func (s *peopleSim) race() {
	p := s.people[s.rng.IntN(len(s.people))]
	act := p.active()
	if len(act) < 2 {
		return
	}
	s.rng.Shuffle(len(act), func(i, j int) { act[i], act[j] = act[j], act[i] })
	a, b := act[0], act[1]
	type key struct {
		sender engine.Address
		id     wire.LogicalID
	}
	onB := map[key]bool{}
	for _, m := range s.pendingIn(b) {
		onB[key{m.Sender, m.ID}] = true
	}
	var both []key
	for _, m := range s.pendingIn(a) {
		if onB[key{m.Sender, m.ID}] {
			both = append(both, key{m.Sender, m.ID})
		}
	}
	if len(both) == 0 {
		return
	}
	k := both[s.rng.IntN(len(both))]
	commitA := s.rng.IntN(2) == 0
	s.decide(a, k.sender, k.id, commitA)
	s.decide(b, k.sender, k.id, !commitA)
	s.actions["race"]++
}

// step is one move of the people or of the adversary.
func (s *peopleSim) step() {
	act := s.activeDevices()
	all := s.allDevices()
	switch k := s.rng.IntN(27); {
	case k < 4: // an active device sends to another person
		d := act[s.rng.IntN(len(act))]
		var others []*simPerson
		for _, p := range s.people {
			if p.user != d.addr.User {
				others = append(others, p)
			}
		}
		s.send(d, others[s.rng.IntN(len(others))])
	case k < 7: // any device syncs (a removed one too: the relay may still deliver to it)
		s.sync(all[s.rng.IntN(len(all))])
		s.actions["sync"]++
	case k < 9: // every device of one person syncs, so that a message is pending on several
		for _, d := range s.people[s.rng.IntN(len(s.people))].devs {
			s.sync(d)
		}
		s.actions["sync-person"]++
	case k < 11: // an active device decides one pending message
		d := act[s.rng.IntN(len(act))]
		in := s.pendingIn(d)
		if len(in) == 0 {
			return
		}
		m := in[s.rng.IntN(len(in))]
		s.decide(d, m.Sender, m.ID, s.rng.IntN(3) != 0)
		s.actions["decide"]++
	case k < 13:
		s.race()
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

// held is what one device holds of one message.
type held struct {
	in, out int // history entries received / own (sent or copied)
	body    string
	decided *engine.Address
	pending bool
}

// holdings reads what d holds of every message: its history with every
// other person (each address of theirs read, entries taken once by
// sequence number) and its pending messages.
func (s *peopleSim) holdings(d *device) map[wire.LogicalID]*held {
	s.t.Helper()
	out := map[wire.LogicalID]*held{}
	get := func(id wire.LogicalID) *held {
		h := out[id]
		if h == nil {
			h = &held{}
			out[id] = h
		}
		return h
	}
	for _, p := range s.people {
		if p.user == d.addr.User {
			continue
		}
		seqs := map[int64]bool{}
		for _, a := range p.devs {
			h, err := d.c.History(s.w.ctx, a.addr, 0, 1000)
			if err != nil {
				s.t.Fatal(err)
			}
			for _, e := range h {
				if seqs[e.Seq] {
					continue
				}
				seqs[e.Seq] = true
				x := get(e.ID)
				if e.Direction == engine.DirectionIn {
					x.in++
					x.decided = e.DecidedOn
				} else {
					x.out++
				}
				x.body = string(e.Body)
			}
		}
	}
	for _, m := range s.pendingIn(d) {
		get(m.ID).pending = true
	}
	return out
}

// explicitFor returns the outcomes the simulation chose for id on the
// devices of p (removed ones included).
func (s *peopleSim) explicitFor(p *simPerson, id wire.LogicalID) (commits, discards map[engine.Address]bool) {
	commits, discards = map[engine.Address]bool{}, map[engine.Address]bool{}
	for _, d := range p.devs {
		switch o, ok := s.explicit[d.addr][id]; {
		case !ok:
		case o == engine.OutcomeCommitted:
			commits[d.addr] = true
		default:
			discards[d.addr] = true
		}
	}
	return commits, discards
}

// seenByPerson returns what d holds of message id of m: the record under
// m's sender device, else under another device of the sender's person (a
// removed device's message adopted by the account's first device arrives
// from that device; deduplication by person keeps one of the two). A
// finalized record wins over a pending one.
func (s *peopleSim) seenByPerson(d *device, m *peopleMsg, id wire.LogicalID) engine.SeenMessage {
	s.t.Helper()
	var out engine.SeenMessage
	for _, from := range append([]*device{m.from}, s.person(m.from).devs...) {
		seen, err := d.st.Seen(s.w.ctx, from.addr, id)
		if err != nil {
			s.t.Fatal(err)
		}
		if seen.Finalized {
			return seen
		}
		if seen.Pending {
			out = seen
		}
	}
	return out
}

// checkSafety is checked after every step; it returns the number of
// discards on active devices standing beside a commit of the person
// (allowed between the steps: the commit's decision may be on its way).
func (s *peopleSim) checkSafety() int {
	s.t.Helper()
	overruled := 0
	for _, d := range s.allDevices() {
		hs := s.holdings(d)
		p := s.person(d)
		for id, h := range hs {
			m, ok := s.msgs[id]
			if !ok {
				s.t.Fatalf("safety: %s holds %x, which no one sent", d.addr, id[:4])
			}
			if h.in > 1 || h.out > 1 || h.in+h.out > 1 {
				s.t.Fatalf("safety: %s's history holds %x twice (%d in, %d out)", d.addr, id[:4], h.in, h.out)
			}
			if h.in+h.out == 1 && h.body != m.body {
				s.t.Fatalf("safety: %s's history holds %q for %x, sent as %q", d.addr, h.body, id[:4], m.body)
			}
			if m.knewRemoved[d.addr] {
				s.t.Fatalf("safety: removed %s holds %x, stored by %s after its list revoked it (in %d, out %d, pending %v)", d.addr, id[:4], m.from.addr, h.in, h.out, h.pending)
			}
			switch {
			case h.out == 1 && (m.from.addr.User != d.addr.User):
				s.t.Fatalf("safety: %s holds %x, sent by %s, as its own", d.addr, id[:4], m.from.addr)
			case h.in == 1 && m.to != p:
				s.t.Fatalf("safety: %s holds %x, sent to %s, as received", d.addr, id[:4], m.to.user)
			}
		}
		// What this device decided, and what it decided without asking.
		for id, m := range s.msgs {
			if m.to != p {
				continue
			}
			h := hs[id]
			if h == nil {
				h = &held{}
			}
			own, asked := s.explicit[d.addr][id]
			seen := s.seenByPerson(d, m, id)
			commits, discards := s.explicitFor(p, id)
			// A discard, asked here or heard, is taken back by a commit
			// heard later (the decision carries the body): the record
			// turns committed and the history names the committing device.
			takenBack := seen.Finalized && seen.Outcome == engine.OutcomeCommitted && h.in == 1 && h.decided != nil && commits[*h.decided]
			switch {
			case asked && own == engine.OutcomeCommitted && h.in != 1:
				s.t.Fatalf("safety: %s committed %x, its history holds it %d times", d.addr, id[:4], h.in)
			case asked && own == engine.OutcomeCommitted && (!seen.Finalized || seen.Outcome != own):
				s.t.Fatalf("safety: %s committed %x, it holds %+v", d.addr, id[:4], seen)
			case asked && own == engine.OutcomeDiscarded && !takenBack && h.in != 0:
				s.t.Fatalf("safety: %s discarded %x, its history holds it (naming %v; the person committed it on %v)", d.addr, id[:4], h.decided, commits)
			case asked && own == engine.OutcomeDiscarded && !takenBack && (!seen.Finalized || seen.Outcome != own):
				s.t.Fatalf("safety: %s discarded %x, it holds %+v", d.addr, id[:4], seen)
			case !asked && seen.Finalized && seen.Outcome == engine.OutcomeCommitted && !takenBack:
				s.t.Fatalf("safety: %s committed %x without asking, its history holding it %d times naming %v; the person committed it on %v", d.addr, id[:4], h.in, h.decided, commits)
			case !asked && seen.Finalized && seen.Outcome != engine.OutcomeCommitted && len(discards) == 0:
				s.t.Fatalf("safety: %s discarded %x without asking, and no device of %s discarded it", d.addr, id[:4], p.user)
			case !asked && seen.Finalized && seen.Outcome != engine.OutcomeCommitted && h.in != 0:
				s.t.Fatalf("safety: %s discarded %x without asking, its history holds it", d.addr, id[:4])
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

// heal ends the adversary: each withheld envelope is delivered or dropped
// (its choice), and the network is honest from then on. On even seeds
// every device then reconnects once (the lists are fetched again); on odd
// ones every connection stays, as a long-lived TUI's would, and the lists
// are brought up to date by the rounds alone (the stale-list answer,
// learnOwnList).
func (s *peopleSim) heal() {
	for _, d := range s.allDevices() {
		for i := len(s.w.net.Held(d.addr)) - 1; i >= 0; i-- {
			if s.rng.IntN(3) == 0 {
				s.w.net.DropHeld(d.addr, i)
			}
		}
	}
	s.w.net.Heal()
	if !s.reconnect {
		return
	}
	for _, d := range s.allDevices() {
		d.reopen()
	}
}

// converge runs rounds of sync, commit and retry; it returns the rounds it
// took, or -1.
func (s *peopleSim) converge(rounds int) int {
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
	}
	return -1
}

// settled reports whether nothing is pending on any active device; with
// report, it logs what is.
func (s *peopleSim) settled(report bool) bool {
	ok := true
	if report {
		for _, p := range s.people {
			var ds []string
			for _, d := range p.devs {
				a, _ := engine.LoadAccount(s.w.ctx, d.st)
				ds = append(ds, fmt.Sprintf("%s(removed %v, holds own generation %d)", d.addr, p.removed[d.addr], a.List.Generation))
			}
			s.t.Logf("%s: %v", p.user, ds)
		}
	}
	for _, d := range s.activeDevices() {
		if out, in := d.pendingOut(), len(s.waitingIn(d)); out+in > 0 {
			ok = false
			if report {
				s.t.Logf("%s: %d lanes and %d messages pending", d.addr, out, in)
				outs, _ := d.c.PendingOutbound(s.w.ctx, engine.PageQuery{Limit: 1000})
				for _, o := range outs {
					what := "a message of its own"
					if m := s.msgs[o.ID]; m == nil {
						what = "a decision or another frame"
					} else if m.from != d {
						what = fmt.Sprintf("a copy of %s's message to %s", m.from.addr, m.to.user)
					} else {
						what = fmt.Sprintf("its message to %s", m.to.user)
					}
					s.t.Logf("    lane of %x to %s: %s (frame kind %d)", o.ID[:4], o.Recipient, what, frameKind(o.Frame))
				}
			}
		}
	}
	return ok
}

func frameKind(f []byte) int {
	if len(f) < 2 {
		return -1
	}
	return int(f[1])
}

// checkConverged checks, once nothing is pending: every lane of an active
// sender ended as it should, every sent copy acknowledged is held, and the
// active devices of each person agree on every message: commit beats
// discard, a discard taken back by the commit.
func (s *peopleSim) checkConverged() {
	s.t.Helper()
	ctx := s.w.ctx
	holds := map[engine.Address]map[wire.LogicalID]*held{}
	for _, d := range s.allDevices() {
		holds[d.addr] = s.holdings(d)
	}
	ids := make([]wire.LogicalID, 0, len(s.msgs))
	for id := range s.msgs {
		ids = append(ids, id)
	}
	sortIDs(ids)
	for _, id := range ids {
		m := s.msgs[id]
		sender := m.from
		if s.isRemoved(m.from) {
			// Adopted by the account's first device when it held the
			// sent copy at the removal: its lanes then obey the rules
			// below. Otherwise (no copy there yet, or none to adopt)
			// it is left out.
			sender = s.person(m.from).devs[0]
			if h := holds[sender.addr][id]; h == nil || h.out != 1 {
				continue
			}
		}
		if h := holds[sender.addr][id]; h == nil || h.out != 1 {
			s.t.Fatalf("liveness: %s's history does not hold its own %x once", sender.addr, id[:4])
		}
		lanes, err := sender.c.PersonLanes(ctx, m.to.devs[0].addr, id)
		if err != nil {
			s.t.Fatal(err)
		}
		if sender != m.from && len(lanes) == 0 {
			s.adoptedOut++ // the copy came after the removal, or was past the bounds
			continue
		}
		if sender != m.from {
			s.adopted++
		}
		for _, l := range lanes {
			r := s.device(l.Recipient)
			switch {
			case r == nil:
				s.t.Fatalf("liveness: %s's %x has a lane to %s, a device that never was", m.from.addr, id[:4], l.Recipient)
			case m.knewRemoved[r.addr]:
				s.t.Fatalf("safety: %s's %x has a lane to %s, which its list revoked when it was stored", m.from.addr, id[:4], r.addr)
			case s.isRemoved(r) && l.State != engine.LaneRemoved && l.State != engine.LaneAcknowledged:
				s.t.Fatalf("liveness: %s's lane of %x to removed %s is %v", m.from.addr, id[:4], r.addr, l.State)
			case !s.isRemoved(r) && l.State != engine.LaneAcknowledged:
				s.t.Fatalf("liveness: %s's lane of %x to %s is %v", m.from.addr, id[:4], r.addr, l.State)
			case l.Own && !s.isRemoved(r):
				if h := holds[r.addr][id]; h == nil || h.out != 1 {
					s.t.Fatalf("liveness: %s acknowledged the copy of %x, its history does not hold it once", r.addr, id[:4])
				}
			}
		}
		commits, _ := s.explicitFor(m.to, id)
		for _, d := range m.to.active() {
			seen := s.seenByPerson(d, m, id)
			if seen.Pending {
				s.t.Fatalf("liveness: %s still holds %x pending", d.addr, id[:4])
			}
			if !seen.Finalized {
				continue // never reached it (linked after the message ended)
			}
			// Every commit of an active device obliges d, whether or
			// not that device's list named d when it committed: a
			// device that learns of d later tells it of the decisions
			// made since d's linking (catch-up, decision.go).
			activeCommit := false
			for a := range commits {
				activeCommit = activeCommit || !m.to.removed[a]
			}
			// A commit on a device removed since counts only if its
			// decision came before the removal: after, it is refused as
			// from a stranger, and the discard stands.
			if activeCommit && seen.Outcome != engine.OutcomeCommitted {
				_, asked := s.explicit[d.addr][id]
				s.settled(true)
				for a := range commits {
					s.t.Logf("%s's list named %v when it committed", a, s.decisionNamed[a.String()+string(id[:])])
				}
				s.t.Fatalf("agreement: %s holds %x discarded (asked here: %v), the person committed it on %v (removed: %v)", d.addr, id[:4], asked, commits, m.to.removed)
			}
			if len(commits) == 0 && seen.Outcome == engine.OutcomeCommitted {
				s.t.Fatalf("safety: %s committed %x, which no device of %s committed", d.addr, id[:4], m.to.user)
			}
		}
	}
}

func (s *peopleSim) device(a engine.Address) *device {
	for _, d := range s.allDevices() {
		if d.addr == a {
			return d
		}
	}
	return nil
}

// connected is a relay that keeps lists whose every client is one
// connection (epoch 1): the test network's endpoints report epoch 0,
// which the engine takes as the connection it already checked, so that a
// device would never publish its list nor fetch the people's lists at
// connection. Each open of a device (a restart) is a new connection.
type connected struct{ listChecking }

func (c connected) Link() engine.Link {
	l := c.listChecking.Link()
	if l.Up {
		l.Epoch = 1
	}
	return l
}

// peopleTotals is what the cases of one run add up to.
type peopleTotals struct {
	cases, steps, maxRounds, overruled, devices, linked, removed, takenBack, adopted, adoptedOut int
	actions, outcomes                                                                            map[string]int
}

func TestAdversaryPeople(t *testing.T) {
	cases := 30
	if v, err := strconv.Atoi(os.Getenv("ADVERSARY_PEOPLE_CASES")); err == nil && v >= 0 {
		cases = v
	}
	if testing.Short() && cases > 5 {
		cases = 5
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ADVERSARY_PEOPLE_SEED"), 10, 64); err == nil {
		seed, cases = v, 1
	}
	fmt.Printf("adversary people: seed %d (ADVERSARY_PEOPLE_SEED=%d replays the first case)\n", seed, seed)
	tot := peopleTotals{actions: map[string]int{}, outcomes: map[string]int{}}
	for c := 0; c < cases; c++ {
		caseSeed := seed + uint64(c)
		ok := t.Run(fmt.Sprintf("seed=%d", caseSeed), func(t *testing.T) {
			runPeopleCase(t, caseSeed, &tot)
		})
		if !ok {
			t.Fatalf("case with seed %d failed: ADVERSARY_PEOPLE_SEED=%d replays it", caseSeed, caseSeed)
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
	fmt.Printf("adversary people: %d cases, %d steps, %d devices (%d linked during traffic, %d removed), 0 safety violations, 0 stuck, at most %d rounds to converge, %d discards taken back, %d left overruled, %d messages of removed devices adopted (%d copies not adopted); actions%s\n",
		tot.cases, tot.steps, tot.devices, tot.linked, tot.removed, tot.maxRounds, tot.takenBack, tot.overruled, tot.adopted, tot.adoptedOut, acts)
	t.Logf("receive outcomes over all cases: %v", tot.outcomes)
}

// peopleSteps is the number of steps of one case.
const peopleSteps = 80

func runPeopleCase(t *testing.T, seed uint64, tot *peopleTotals) {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	w := newWorld(t)
	// The network keeps lists and answers a stale one, as a relay run
	// with --device-lists.
	w.relay = func(_ engine.Address, ep *enginetest.Endpoint) engine.Relay { return connected{listChecking{ep}} }
	keySeed := seed
	w.seed = &keySeed
	s := &peopleSim{t: t, rng: rng, w: w, msgs: map[wire.LogicalID]*peopleMsg{},
		explicit: map[engine.Address]map[wire.LogicalID]engine.Outcome{}, actions: tot.actions, outcomes: tot.outcomes,
		decisionKnew:  map[engine.Address]map[wire.LogicalID]map[engine.Address]bool{},
		takenBack:     map[string]bool{},
		decisionNamed: map[string][]engine.Address{},
		reconnect:     seed%2 == 0 && os.Getenv("ADVERSARY_PEOPLE_NORECONNECT") == ""}
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
		more := rng.IntN(3) // devices beyond the first
		before := rng.IntN(more + 1)
		for j := 0; j < before; j++ {
			s.link(p)
		}
		p.toLink = more - before
		p.remove = more > 0 && rng.IntN(3) != 0
		s.people = append(s.people, p)
	}
	for _, d := range s.allDevices() {
		w.net.Hold(d.addr)
	}
	for i := 0; i < peopleSteps; i++ {
		s.step()
		s.checkSafety()
	}
	s.heal()
	rounds := s.converge(12)
	tot.cases++
	tot.steps += peopleSteps
	tot.devices += len(s.allDevices())
	for _, p := range s.people {
		tot.removed += len(p.removed)
	}
	tot.linked = s.actions["link"]
	if rounds < 0 {
		s.settled(true)
		t.Fatalf("liveness: still pending twelve rounds after the adversary stopped (seed %d)", seed)
	}
	s.checkConverged()
	tot.overruled += s.checkSafety()
	tot.takenBack += len(s.takenBack)
	tot.adopted += s.adopted
	tot.adoptedOut += s.adoptedOut
	if rounds > tot.maxRounds {
		tot.maxRounds = rounds
	}
}
