package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/parley-chat/parley/wire"
)

// RosterRestatement is a roster change an admin makes at an old generation
// so that a member added there starts from the roster everyone else merged.
// A member added at generation g holds no change below g: it starts from the
// full rosters the changes at g carry (rule 1 of MergeRoster), and those are
// their authors' views, which miss any change at g-1 an author had not seen
// yet. The restatement is one more change at g: it carries the roster at g
// as this device merged it, which the newcomer's start takes into its union,
// and it removes the members that left at g-1 and that a carried roster
// still shows, which the newcomer's start subtracts. For every device that
// folds generation g from g-1 it changes nothing: it adds nobody, and it
// removes only members the roster at g-1 already lacks.
type RosterRestatement struct {
	Generation uint64
	// Remove: members that left at Generation-1 but that a full roster
	// carried at Generation still shows.
	Remove []string
	// Roster is the roster at Generation as this device merged it.
	Roster Roster
}

// RosterRestatements returns the restatements self should make, given the
// changes it has: one for each generation g that added a member, where self
// is an admin at g-1 and at g, and where the start a member added at g
// computes from the changes at g (self's earlier restatements included)
// lacks a member or an admin flag of self's roster at g, or shows a member
// that left at g-1. It is pure and depends only on the set of changes; a
// restatement once made is part of that set, so the same difference is
// restated once.
//
// Only what self can tell is stale is restated: a member that a carried
// roster shows but that self's fold does not, without a removal at g-1 in
// self's fold to explain it, is left alone, since self may be the one that
// has not seen a change yet.
func RosterRestatements(changes []RosterChange, self string) []RosterRestatement {
	rosters, byGen := rostersByGeneration(changes)
	var gens []uint64
	for g := range rosters {
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	var out []RosterRestatement
	for _, g := range gens {
		prev, ok := rosters[g-1]
		cur := rosters[g]
		if !ok || !prev.IsAdmin(self) || !cur.IsAdmin(self) || !addsMember(prev, cur) {
			continue
		}
		before := rosters[g-2] // the zero roster when g-1 is the first known
		start := bootstrap(byGen[g], g)
		var remove []string
		for _, m := range start.Members {
			if !cur.Has(m.Address) && !prev.Has(m.Address) && before.Has(m.Address) {
				remove = append(remove, m.Address)
			}
		}
		if len(remove) == 0 && !lacksAny(start, cur) {
			continue
		}
		if len(remove) > wire.MaxRosterChanges {
			remove = remove[:wire.MaxRosterChanges]
		}
		out = append(out, RosterRestatement{Generation: g, Remove: remove, Roster: cur})
	}
	return out
}

// rostersByGeneration folds changes as MergeRoster does and returns the
// roster at every generation the fold reaches, with the changes by
// generation.
func rostersByGeneration(changes []RosterChange) (map[uint64]Roster, map[uint64][]RosterChange) {
	byGen := make(map[uint64][]RosterChange)
	seen := make(map[wire.LogicalID]bool)
	var lowest uint64
	for _, c := range changes {
		if c.Generation == 0 || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		byGen[c.Generation] = append(byGen[c.Generation], c)
		if lowest == 0 || c.Generation < lowest {
			lowest = c.Generation
		}
	}
	out := make(map[uint64]Roster)
	if lowest == 0 {
		return out, byGen
	}
	for _, cs := range byGen {
		sortChanges(cs)
	}
	r := bootstrap(byGen[lowest], lowest)
	out[lowest] = r
	for g := lowest + 1; ; g++ {
		cs, ok := byGen[g]
		if !ok {
			break
		}
		next, ok := applyGeneration(r, cs, g)
		if !ok {
			break
		}
		r = next
		out[g] = r
	}
	return out, byGen
}

// addsMember reports whether next has a member prev lacks.
func addsMember(prev, next Roster) bool {
	for _, m := range next.Members {
		if !prev.Has(m.Address) {
			return true
		}
	}
	return false
}

// lacksAny reports whether start lacks a member of want, or an admin flag.
func lacksAny(start, want Roster) bool {
	for _, m := range want.Members {
		i, ok := start.find(m.Address)
		if !ok || (m.Admin && !start.Members[i].Admin) {
			return true
		}
	}
	return false
}

// restateRosters makes the restatements RosterRestatements asks of this
// device for group g, each sent to every member of the roster at its
// generation. It runs under the send mutex after a page of receives brought
// roster changes to g.
func (c *Client) restateRosters(ctx context.Context, g GroupInfo) error {
	self := c.self.String()
	for _, rs := range RosterRestatements(g.Changes, self) {
		var ops []wire.RosterChange
		for _, a := range rs.Remove {
			ops = append(ops, wire.RosterChange{Op: wire.RosterRemove, Address: a})
		}
		ops = normalizeOps(ops)
		change := RosterChange{Author: self, Generation: rs.Generation, Name: rs.Roster.Name, Ops: ops, Members: rs.Roster.Members}
		if _, err := c.cfg.Random.Read(change.ID[:]); err != nil {
			return fmt.Errorf("restate roster: id: %w", err)
		}
		frame, err := wire.EncodeRoster(wire.Roster{ID: change.ID, Group: g.ID, Generation: change.Generation,
			Name: change.Name, Changes: change.Ops, Members: change.Members})
		if err != nil {
			return fmt.Errorf("restate group %x at %d: %w", g.ID[:], rs.Generation, err)
		}
		recipients, err := parseAddresses(LaneRecipients(rs.Roster, self))
		if err != nil {
			return err
		}
		work := make(map[Address]*peerState)
		lanes, err := c.prepareLanes(ctx, work, "roster-change", recipients, frame)
		if err != nil {
			return err
		}
		plan := RosterUpdate{Group: g.ID, Change: change, Frame: frame, At: c.cfg.Now(), Lanes: lanes}
		if _, err := c.commitLanes(ctx, work, plan, change.ID, lanes); err != nil {
			return err
		}
	}
	return nil
}
