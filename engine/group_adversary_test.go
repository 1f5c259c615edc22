package engine_test

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// The group adversary: groups of three to five devices, members sending and
// admins changing the roster at once, over a relay that withholds every
// envelope and then delivers, reorders, drops and replays them as it likes;
// beside them a hostile member (mallory, in the group from its creation and
// never made an admin) and a hostile stranger (eve) forge roster changes
// signed with their own keys, group messages naming groups and generations
// that do not exist, and frames of no known layout. After every step
// forgeries have changed nothing: no roster any device merged holds a
// member no honest admin added or an admin no honest admin named, and no
// receive loop stopped.
// After every step: no device holds a group message twice, and none holds
// one that was not sent to it (a member added later gets nothing sent
// before). Once the adversary stops, a bounded number of rounds ends every
// lane (acknowledged, removed, not_a_member, or abandoned by the engine
// when the merge removed the sender), puts every acknowledged message in its
// member's history exactly once, and every member agrees on the roster.
//
// On odd seeds every member sends once before the relay turns hostile, so
// that in groups of four or more the later sends go by sender chains (the
// summary counts the lanes sealed by a chain, chain-lanes).
//
// ADVERSARY_GROUP_CASES sets the number of cases (default 10; make test
// runs at most 30). ADVERSARY_GROUP_SEED replays one case.

type groupMsg struct {
	sender string
	body   string
	lanes  map[string]bool // the sender's roster at the send, itself excluded
}

type groupSim struct {
	t       *testing.T
	rng     *mrand.Rand
	w       *world
	devs    []*device
	g       wire.GroupID
	start   engine.GroupStart // the creation
	msgs    map[wire.LogicalID]groupMsg
	joined  map[string]bool // ever a member (never added twice)
	admins  map[string]bool // ever named an admin by an honest admin
	mallory *device         // a member, hostile
	eve     *device         // a stranger, hostile
	serial  int
	actions map[string]int
}

func (s *groupSim) dev(addr string) *device {
	for _, d := range s.devs {
		if d.addr.String() == addr {
			return d
		}
	}
	return nil
}

func (s *groupSim) group(d *device) (engine.GroupInfo, bool) {
	g, err := d.c.Group(s.w.ctx, s.g)
	if err != nil {
		return engine.GroupInfo{}, false
	}
	return g, true
}

func (s *groupSim) syncCommit(d *device) {
	s.t.Helper()
	if _, err := d.c.Sync(s.w.ctx); err != nil {
		s.t.Fatalf("%s syncs: %v", d.addr, err)
	}
	// Every pending message is committed, but for an action whose target
	// is not committed: it waits (the hold's pass settles it).
	msgs, err := d.c.PendingInbound(s.w.ctx, engine.PageQuery{Limit: 1000})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := d.c.Commit(s.w.ctx, m.Sender, m.ID); err != nil && !errors.Is(err, engine.ErrTargetPending) {
			s.t.Fatalf("%s commits %x: %v", d.addr, m.ID[:4], err)
		}
	}
}

func (s *groupSim) retryAll(d *device) {
	for _, p := range s.devs {
		if p != d {
			if _, err := d.c.Retry(s.w.ctx, p.addr); err != nil {
				s.t.Fatalf("%s retries to %s: %v", d.addr, p.addr, err)
			}
		}
	}
}

// step is one move of the members or of the adversary.
func (s *groupSim) step() {
	d := s.devs[s.rng.IntN(len(s.devs))]
	switch k := s.rng.IntN(14); {
	case k == 10:
		s.forge(s.mallory)
	case k == 11:
		s.forge(s.eve)
	case k == 12:
		s.forgeActions(s.mallory)
	case k == 13: // a member reacts to a message it holds
		h, err := d.c.GroupHistory(s.w.ctx, s.g, 0, 1000)
		if err != nil || len(h) == 0 {
			return
		}
		g := s.g
		_, err = d.c.Act(s.w.ctx, engine.ActionRequest{Group: &g, Content: wire.ContentReaction, Target: h[s.rng.IntN(len(h))].ID, Emoji: "+1"})
		var refused *engine.ActionRefusedError
		if err != nil && !errors.Is(err, engine.ErrNotMember) && !errors.As(err, &refused) {
			s.t.Fatalf("%s reacts: %v", d.addr, err)
		}
		s.actions["react"]++
	case k < 2: // a member sends
		s.send(d)
	case k < 3: // an admin changes the roster, maybe at the same time as another
		g, ok := s.group(d)
		if !ok || !g.Roster.IsAdmin(d.addr.String()) {
			return
		}
		var op wire.RosterChange
		var fresh []string
		for _, o := range s.devs {
			if !s.joined[o.addr.String()] {
				fresh = append(fresh, o.addr.String())
			}
		}
		switch {
		case len(fresh) > 0 && s.rng.IntN(2) == 0:
			op = wire.RosterChange{Op: wire.RosterAdd, Address: fresh[s.rng.IntN(len(fresh))]}
			s.joined[op.Address] = true
		case len(g.Roster.Members) > 2 && s.rng.IntN(2) == 0:
			m := g.Roster.Members[s.rng.IntN(len(g.Roster.Members))]
			if m.Address == d.addr.String() {
				return
			}
			op = wire.RosterChange{Op: wire.RosterRemove, Address: m.Address}
		default:
			m := g.Roster.Members[s.rng.IntN(len(g.Roster.Members))]
			if m.Address == s.mallory.addr.String() {
				return // mallory stays a plain member: her forgeries must count for nothing
			}
			op = wire.RosterChange{Op: wire.RosterAdmin, Address: m.Address}
			s.admins[m.Address] = true
		}
		if _, err := d.c.ChangeRoster(s.w.ctx, s.g, []wire.RosterChange{op}); err != nil {
			s.t.Fatalf("%s changes the roster: %v", d.addr, err)
		}
		s.actions["roster"]++
	case k < 5: // the relay delivers one withheld envelope, in any order
		if held := s.w.net.Held(d.addr); len(held) > 0 {
			s.w.net.DeliverHeld(d.addr, s.rng.IntN(len(held)))
			s.actions["deliver"]++
		}
	case k < 6: // the relay drops one
		if held := s.w.net.Held(d.addr); len(held) > 0 {
			s.w.net.DropHeld(d.addr, s.rng.IntN(len(held)))
			s.actions["drop"]++
		}
	case k < 7: // the relay replays anything it saw
		seen := s.w.net.Seen()
		if len(seen) == 0 {
			return
		}
		raw := seen[s.rng.IntN(len(seen))]
		if env, err := wire.DecodeEnvelope(raw); err == nil {
			s.w.net.Inject(engine.MustParseAddress(env.Recipient), raw)
			s.actions["replay"]++
		}
	case k < 9:
		s.syncCommit(d)
		s.actions["sync"]++
	default:
		s.retryAll(d)
		s.actions["retry"]++
	}
}

// forge is one hostile move of h: a roster change signed by h that names a
// generation near the merged one and removes, adds or crowns whom it likes;
// a group message naming a group or a generation that does not exist; or
// bytes of no known layout. Each goes to one honest device.
// send makes d send a group message to its roster, recorded for the
// checks (nothing when d is not a member).
func (s *groupSim) send(d *device) {
	g, ok := s.group(d)
	if !ok || !g.Roster.Has(d.addr.String()) {
		return
	}
	s.serial++
	body := fmt.Sprintf("m%d from %s", s.serial, d.addr)
	lanes := map[string]bool{}
	for _, m := range g.Roster.Members {
		if m.Address != d.addr.String() {
			lanes[m.Address] = true
		}
	}
	res, err := d.c.SendGroup(s.w.ctx, s.g, []byte(body))
	if err != nil {
		s.t.Fatalf("%s sends: %v", d.addr, err)
	}
	s.msgs[res.ID] = groupMsg{sender: d.addr.String(), body: body, lanes: lanes}
	s.actions["send"]++
}

func (s *groupSim) forge(h *device) {
	victim := s.devs[s.rng.IntN(len(s.devs))]
	if victim == h {
		return
	}
	var gen uint64 = 1
	if g, ok := s.group(victim); ok {
		gen = g.Roster.Generation
	}
	var frame []byte
	switch s.rng.IntN(4) {
	case 0, 1:
		ops := []wire.RosterChange{{Op: wire.RosterAdmin, Address: h.addr.String()}}
		members := []wire.RosterMember{{Address: h.addr.String(), Admin: true}}
		for _, d := range s.devs {
			if d != h && s.rng.IntN(2) == 0 {
				ops = append(ops, wire.RosterChange{Op: wire.RosterRemove, Address: d.addr.String()})
			} else if d != h {
				members = append(members, wire.RosterMember{Address: d.addr.String()})
			}
		}
		ops = append(ops, wire.RosterChange{Op: wire.RosterAdd, Address: "intruder/1"})
		members = append(members, wire.RosterMember{Address: "intruder/1", Admin: true})
		sort.Slice(ops, func(i, j int) bool { return ops[i].Address < ops[j].Address })
		sort.Slice(members, func(i, j int) bool { return members[i].Address < members[j].Address })
		at := gen + uint64(s.rng.IntN(3))
		if at > 1 && s.rng.IntN(3) == 0 {
			at -= 1
		}
		var id wire.LogicalID
		s.rng.Uint64()
		for i := range id {
			id[i] = byte(s.rng.UintN(256))
		}
		var err error
		if frame, err = h.c.SignRosterChange(s.g, engine.RosterChange{ID: id, Generation: at, Name: "sim", Ops: ops, Members: members}); err != nil {
			s.t.Fatal(err)
		}
		s.actions["forge-roster"]++
	case 2:
		group := s.g
		if s.rng.IntN(2) == 0 {
			group = wire.GroupID{byte(s.rng.UintN(256)), 0xee}
		}
		frame, _ = wire.EncodeGroupMessage(wire.GroupMessage{ID: wire.LogicalID{byte(s.rng.UintN(256)), 0xee}, Group: group,
			Generation: gen + engine.MaxGenerationsAhead + 1 + uint64(s.rng.IntN(5)), Content: wire.ContentText, Body: []byte("forged")})
		s.actions["forge-message"]++
	default:
		frame = make([]byte, 1+s.rng.IntN(64))
		for i := range frame {
			frame[i] = byte(s.rng.UintN(256))
		}
		frame[0] = wire.FrameVersion
		s.actions["forge-bytes"]++
	}
	if err := h.c.SendRawFrame(s.w.ctx, victim.addr, frame); err != nil && !errors.Is(err, engine.ErrRelayUnreachable) {
		s.t.Fatalf("%s forges to %s: %v", h.addr, victim.addr, err)
	}
}

// forgeActions is a hostile member's move with actions, to one honest
// device: an edit or a delete for everyone of another member's message
// (the rules refuse it: not_author), or a flood of reactions and edits
// naming messages that do not exist (they wait, at most
// MaxHeldActionsPerSender of them, until the hold ends).
func (s *groupSim) forgeActions(h *device) {
	victim := s.devs[s.rng.IntN(len(s.devs))]
	if victim == h {
		return
	}
	var gen uint64 = 1
	if g, ok := s.group(victim); ok {
		gen = g.Roster.Generation
	}
	randomID := func() (id wire.LogicalID) {
		for i := range id {
			id[i] = byte(s.rng.UintN(256))
		}
		return id
	}
	var acts []wire.Action
	var others []wire.LogicalID
	for id, m := range s.msgs {
		if m.sender != h.addr.String() {
			others = append(others, id)
		}
	}
	sort.Slice(others, func(i, j int) bool { return string(others[i][:]) < string(others[j][:]) })
	if len(others) > 0 && s.rng.IntN(2) == 0 {
		target := others[s.rng.IntN(len(others))]
		acts = append(acts, wire.Action{Content: wire.ContentEdit, Target: target, Edit: 1 + uint32(s.rng.IntN(3)), Text: []byte("hijacked")},
			wire.Action{Content: wire.ContentDelete, Target: target})
		s.actions["forge-edit"]++
	} else {
		for range 1 + s.rng.IntN(engine.MaxHeldActionsPerSender+8) {
			acts = append(acts, wire.Action{Content: wire.ContentReaction, Target: randomID(), Emoji: "x"})
		}
		acts = append(acts, wire.Action{Content: wire.ContentEdit, Target: randomID(), Edit: 1, Text: []byte("never")})
		s.actions["forge-held"]++
	}
	for _, a := range acts {
		body, err := wire.EncodeAction(a)
		if err != nil {
			s.t.Fatal(err)
		}
		frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: randomID(), Group: s.g, Generation: gen, Content: a.Content, Body: body})
		if err != nil {
			s.t.Fatal(err)
		}
		if err := h.c.SendRawFrame(s.w.ctx, victim.addr, frame); err != nil && !errors.Is(err, engine.ErrRelayUnreachable) {
			s.t.Fatalf("%s forges actions to %s: %v", h.addr, victim.addr, err)
		}
	}
}

// checkSafety: no message twice, none that was not sent to the device, and
// no roster holding a member or an admin that only a forgery named.
func (s *groupSim) checkSafety() {
	s.t.Helper()
	for _, d := range s.devs {
		if g, ok := s.group(d); ok {
			for _, m := range g.Roster.Members {
				if !s.joined[m.Address] {
					s.t.Fatalf("safety: %s's roster holds %s, whom no honest admin added", d.addr, m.Address)
				}
				if m.Admin && !s.admins[m.Address] {
					s.t.Fatalf("safety: %s's roster makes %s an admin, which no honest admin did", d.addr, m.Address)
				}
			}
		}
	}
	for _, d := range s.devs {
		h, err := d.c.GroupHistory(s.w.ctx, s.g, 0, 1000)
		if err != nil {
			continue // not in the group yet
		}
		seen := map[wire.LogicalID]bool{}
		for _, e := range h {
			if seen[e.ID] {
				s.t.Fatalf("safety: %s holds %x twice", d.addr, e.ID[:4])
			}
			seen[e.ID] = true
			m, ok := s.msgs[e.ID]
			if !ok || m.sender != e.Sender.String() || m.body != string(e.Body) {
				s.t.Fatalf("safety: %s holds %x (%s: %q), which was never sent", d.addr, e.ID[:4], e.Sender, e.Body)
			}
			if !e.Own && !m.lanes[d.addr.String()] {
				s.t.Fatalf("safety: %s holds %q, sent before it joined", d.addr, e.Body)
			}
			// Nobody edits or deletes here but the adversary, whose
			// actions name others' messages: none may apply.
			if e.Edits != 0 || e.Deleted {
				s.t.Fatalf("safety: %s shows %x by %s edited %d times, deleted %v", d.addr, e.ID[:4], e.Sender, e.Edits, e.Deleted)
			}
			reactors := map[string]bool{}
			for _, r := range e.Reactions {
				if !s.joined[r.From.String()] || reactors[r.From.String()] {
					s.t.Fatalf("safety: %s shows a reaction by %s on %x (twice or by a stranger)", d.addr, r.From, e.ID[:4])
				}
				reactors[r.From.String()] = true
			}
		}
	}
}

// converge heals the network and runs rounds until every lane ended; it
// reports the rounds it took, or -1.
func (s *groupSim) converge(rounds int) int {
	for _, d := range s.devs {
		for i := len(s.w.net.Held(d.addr)) - 1; i >= 0; i-- {
			if s.rng.IntN(3) == 0 {
				s.w.net.DropHeld(d.addr, i)
			}
		}
	}
	s.w.net.Heal()
	for round := 1; round <= rounds; round++ {
		if round >= 2 {
			// Past the hold, the actions whose target never comes are
			// discarded (target_missing) and end: the adversary's for
			// messages that do not exist, and any action, honest or
			// forged, on a message sent before its receiver joined (it
			// cannot tell that from an action that is early). Every
			// round, since a retried action's hold starts when it
			// arrives.
			s.w.clock.Advance(engine.ActionHold + time.Minute)
		}
		for _, d := range s.devs {
			s.syncCommit(d)
		}
		for _, d := range s.devs {
			s.syncCommit(d)
			s.retryAll(d)
		}
		s.w.clock.Advance(engine.RecoveryRepeat)
		s.checkSafety()
		if s.settled() {
			return round
		}
	}
	return -1
}

// settled: nothing pending anywhere, every acknowledged lane's message in
// its member's history, and every member of the roster all the changes
// merge to agreeing on it.
func (s *groupSim) settled() bool {
	for _, d := range s.devs {
		if d.pendingOut() > 0 || d.pendingIn() > 0 {
			return false
		}
	}
	ref := s.roster()
	for _, d := range s.devs {
		if !ref.Has(d.addr.String()) {
			continue
		}
		g, ok := s.group(d)
		if !ok || !reflect.DeepEqual(ref.Members, g.Roster.Members) || ref.Generation != g.Roster.Generation {
			return false
		}
	}
	for _, d := range s.devs {
		h, err := d.c.GroupHistory(s.w.ctx, s.g, 0, 1000)
		if err != nil {
			continue
		}
		for _, e := range h {
			if !e.Own {
				continue
			}
			for _, l := range e.Lanes {
				if l.State == engine.LaneAcknowledged && !s.holds(s.dev(l.Recipient.String()), e.ID) {
					s.t.Fatalf("liveness: %s's lane of %x to %s is acknowledged but not in its history", d.addr, e.ID[:4], l.Recipient)
				}
				if !l.State.Ended() {
					return false
				}
			}
		}
	}
	return true
}

// roster merges every roster change any device has: the roster every
// member ends with. A device that only a change the merge does not count
// added (its author was removed before it) is not in it, and nothing tells
// that device so: it keeps the roster that change showed it
// (docs/protocol.md, "Groups"), so it is not asked to agree.
func (s *groupSim) roster() engine.Roster {
	var all []engine.RosterChange
	for _, d := range s.devs {
		if g, ok := s.group(d); ok {
			all = append(all, g.Changes...)
		}
	}
	r, _ := engine.MergeRoster(s.start, all, 0)
	return r
}

func (s *groupSim) holds(d *device, id wire.LogicalID) bool {
	h, _ := d.c.GroupHistory(s.w.ctx, s.g, 0, 1000)
	for _, e := range h {
		if e.ID == id {
			return true
		}
	}
	return false
}

func TestAdversaryGroups(t *testing.T) {
	cases := 10
	if v, err := strconv.Atoi(os.Getenv("ADVERSARY_GROUP_CASES")); err == nil && v >= 0 {
		cases = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ADVERSARY_GROUP_SEED"), 10, 64); err == nil {
		seed, cases = v, 1
	}
	fmt.Printf("adversary groups: seed %d (ADVERSARY_GROUP_SEED=%d replays the first case)\n", seed, seed)
	total := map[string]int{}
	maxRounds := 0
	for c := 0; c < cases; c++ {
		caseSeed := seed + uint64(c)
		ok := t.Run(fmt.Sprintf("seed=%d", caseSeed), func(t *testing.T) {
			rounds := runGroupCase(t, caseSeed, total)
			if rounds > maxRounds {
				maxRounds = rounds
			}
		})
		if !ok {
			t.Fatalf("case with seed %d failed: ADVERSARY_GROUP_SEED=%d replays it", caseSeed, caseSeed)
		}
	}
	fmt.Printf("adversary groups: %d cases, 0 safety violations, 0 stuck, at most %d rounds to converge; actions %v\n", cases, maxRounds, total)
}

func runGroupCase(t *testing.T, seed uint64, total map[string]int) int {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := newWorld(t)
	keySeed := seed
	w.seed = &keySeed
	n := 3 + rng.IntN(3)
	s := &groupSim{t: t, rng: rng, w: w, msgs: map[wire.LogicalID]groupMsg{}, joined: map[string]bool{}, admins: map[string]bool{}, actions: total}
	for i := 0; i < n; i++ {
		s.devs = append(s.devs, w.device(fmt.Sprintf("d%d/1", i)))
	}
	s.mallory, s.eve = w.device("mallory/1"), w.device("eve/1")
	// The creator starts with all but the last device and mallory, names
	// a second admin, and the relay turns hostile.
	var members []engine.Address
	for _, d := range s.devs[1 : n-1] {
		members = append(members, d.addr)
	}
	members = append(members, s.mallory.addr)
	info, created, err := s.devs[0].c.CreateGroup(w.ctx, "sim", members)
	if err != nil {
		t.Fatal(err)
	}
	s.g, s.start = info.ID, engine.GroupStart{Change: created.ID}
	for _, d := range s.devs[:n-1] {
		s.joined[d.addr.String()] = true
	}
	s.joined[s.mallory.addr.String()] = true
	s.admins[s.devs[0].addr.String()], s.admins[s.devs[1].addr.String()] = true, true
	s.devs = append(s.devs, s.mallory)
	for _, d := range s.devs {
		s.syncCommit(d)
	}
	if _, err := s.devs[0].c.ChangeRoster(w.ctx, s.g, []wire.RosterChange{{Op: wire.RosterAdmin, Address: s.devs[1].addr.String()}}); err != nil {
		t.Fatal(err)
	}
	if seed%2 == 1 {
		// On odd seeds every member sends once while the relay is still
		// honest, so that each holds the others' chains (groups of four
		// or more) and the adversary's sends go by them.
		for _, d := range s.devs {
			s.send(d)
		}
		for range 3 {
			for _, d := range s.devs {
				s.syncCommit(d)
			}
		}
	}
	for _, d := range s.devs {
		w.net.Hold(d.addr)
	}
	w.net.Hold(s.eve.addr)
	for range 40 {
		s.step()
		s.checkSafety()
	}
	rounds := s.converge(12)
	for _, d := range s.devs {
		total["chain-lanes"] += int(d.c.ChainLanes())
	}
	if rounds < 0 {
		for _, d := range s.devs {
			g, _ := s.group(d)
			t.Logf("%s: %d out, %d in pending; roster %d %v", d.addr, d.pendingOut(), d.pendingIn(), g.Roster.Generation, g.Roster.Members)
			for _, c := range g.Changes {
				t.Logf("    change %x by %s at %d: %v -> %v", c.ID[:2], c.Author, c.Generation, c.Ops, c.Members)
			}
		}
		t.Fatalf("liveness: lanes still open twelve rounds after the adversary stopped")
	}
	return rounds
}
