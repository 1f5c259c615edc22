package engine

import (
	"context"
	"fmt"
	"reflect"
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

// RosterRestatements returns the restatements self should make, given its
// start and the changes it has: one for each generation g that added a
// member, where self is an admin at g-1 and at g, and where the start a
// member added at g computes (StartRoster, from any change at g that adds
// someone, self's earlier restatements included) lacks a member or an admin
// flag of self's roster at g, or shows a member that left at g-1. It is pure
// and depends only on the start and the set of changes; a restatement once
// made is part of that set, so the same difference is restated once.
//
// Only what self can tell is stale is restated: a member that a carried
// roster shows but that self's fold does not, without a removal at g-1 in
// self's fold to explain it, is left alone, since self may be the one that
// has not seen a change yet.
func RosterRestatements(start GroupStart, changes []RosterChange, self string) []RosterRestatement {
	rosters := make(map[uint64]Roster)
	f := foldRoster(start, changes, 0, func(r Roster) { rosters[r.Generation] = r })
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
		remove := make(map[string]bool)
		stale := false
		for _, adder := range f.byGen[g] {
			// Only a change that counted here can have added a newcomer:
			// one whose author was an admin at g-1 and that adds a member
			// of the roster at g. A change that does not count starts no
			// newcomer this device must answer for.
			if !prev.IsAdmin(adder.Author) || !addsNewcomer(adder, prev, cur) {
				continue
			}
			st, counted := StartRoster(adder, f.byGen[g])
			if len(counted) == 0 {
				continue
			}
			for _, m := range st.Members {
				if !cur.Has(m.Address) && !prev.Has(m.Address) && before.Has(m.Address) {
					remove[m.Address] = true
				}
			}
			stale = stale || lacksAny(st, cur)
		}
		if len(remove) == 0 && !stale {
			continue
		}
		var rm []string
		for a := range remove {
			rm = append(rm, a)
		}
		sort.Strings(rm)
		if len(rm) > wire.MaxRosterChanges {
			rm = rm[:wire.MaxRosterChanges]
		}
		if restated(f.byGen[g], self, cur, rm) {
			// Said once already: a newcomer's start that still differs
			// is not one a restatement can mend (its adder does not see
			// this device as an admin), and saying it again would not.
			continue
		}
		out = append(out, RosterRestatement{Generation: g, Remove: rm, Roster: cur})
	}
	return out
}

// addsNewcomer reports whether a change adds a member of next that prev
// lacks: it can be that newcomer's start.
func addsNewcomer(c RosterChange, prev, next Roster) bool {
	for _, op := range c.Ops {
		if op.Op == wire.RosterAdd && next.Has(op.Address) && !prev.Has(op.Address) {
			return true
		}
	}
	return false
}

// restated reports whether self already made, at this generation, a
// restatement of roster r that removes at least remove.
func restated(atGen []RosterChange, self string, r Roster, remove []string) bool {
	for _, c := range atGen {
		if c.Author != self || !reflect.DeepEqual(c.Members, r.Members) {
			continue
		}
		removes := removedBy([]RosterChange{c})
		all := true
		for _, a := range remove {
			all = all && removes[a]
		}
		if all {
			return true
		}
	}
	return false
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
// generation, its lanes stored pending for the pump. It runs under the send
// mutex after a page of receives brought roster changes to g.
func (c *Client) restateRosters(ctx context.Context, g GroupInfo) error {
	self := c.self.String()
	for _, rs := range RosterRestatements(g.Start, g.Changes, self) {
		var ops []wire.RosterChange
		for _, a := range rs.Remove {
			ops = append(ops, wire.RosterChange{Op: wire.RosterRemove, Address: a})
		}
		ops = normalizeOps(ops)
		change := RosterChange{Generation: rs.Generation, Name: rs.Roster.Name, Ops: ops, Members: rs.Roster.Members,
			Parent: RosterDigest(g.ID, rosterAt(g, rs.Generation-1))}
		if _, err := c.cfg.Random.Read(change.ID[:]); err != nil {
			return fmt.Errorf("restate roster: id: %w", err)
		}
		frame, err := c.signRoster(g.ID, &change)
		if err != nil {
			return fmt.Errorf("restate group %x at %d: %w", g.ID[:], rs.Generation, err)
		}
		lists, err := c.groupLists(ctx, rs.Roster)
		if err != nil {
			return err
		}
		recipients, err := parseAddresses(LaneRecipients(rs.Roster, self, lists))
		if err != nil {
			return err
		}
		lanes, err := pendingLanes("roster-change", recipients)
		if err != nil {
			return err
		}
		plan := RosterUpdate{Group: g.ID, Change: change, Frame: frame, At: c.cfg.Now(), Lanes: lanes}
		if err := c.storeLanes(ctx, plan, change.ID, recipients); err != nil {
			return err
		}
		c.wantLanesPumped()
	}
	return nil
}
