package engine

import (
	"reflect"
	"testing"
)

// TestRosterRestatements: who restates which generation, and that a
// restatement changes nothing for a device that folds from before it while
// it gives a newcomer the roster everyone else merged.
func TestRosterRestatements(t *testing.T) {
	create := change(1, "a/1", 1, "+b/1 +c/1 +d/1", "a/1* b/1 c/1 d/1")
	admin := change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1 d/1")
	// At 3 a removes d while b, unaware, names c admin; b then adds e at 4
	// with the roster it saw, d included.
	removeD := change(3, "a/1", 3, "-d/1", "a/1* b/1* c/1")
	adminC := change(4, "b/1", 3, "@c/1", "a/1* b/1* c/1* d/1")
	addE := change(5, "b/1", 4, "+e/1", "a/1* b/1* c/1* d/1 e/1")
	stale := []RosterChange{create, admin, removeD, adminC, addE}
	restated := change(6, "a/1", 4, "-d/1", "a/1* b/1* c/1* e/1")
	// At 3 a names c admin while b, unaware, names itself admin again; b's
	// roster at 4 shows c as a plain member.
	grantC := change(3, "a/1", 3, "@c/1", "a/1* b/1* c/1* d/1")
	noop := change(4, "b/1", 3, "@b/1", "a/1* b/1* c/1 d/1")
	addE2 := change(5, "b/1", 4, "+e/1", "a/1* b/1* c/1 d/1 e/1")
	// b's roster at 4 shows x, a member nobody a knows of ever had.
	unknown := change(5, "b/1", 4, "+e/1", "a/1* b/1* c/1* d/1 e/1 x/1")
	// c, no admin, forges a change at 3 adding x with a roster that crowns
	// itself: it counts for nothing, so it starts no newcomer to restate
	// for (else every sync would answer it with another restatement).
	addD := change(3, "a/1", 3, "+e/1", "a/1* b/1* c/1 d/1 e/1")
	forged := change(7, "c/1", 3, "+x/1", "c/1* x/1*")
	// b adds e at 4 with a roster that does not show a as an admin: a's
	// restatement does not count for e's start, so it cannot mend it, and
	// once made it is not made again.
	noAdminA := change(5, "b/1", 4, "+e/1", "a/1 b/1* c/1 d/1 e/1")
	once := change(6, "a/1", 4, "", "a/1* b/1* c/1* d/1 e/1")

	tests := []struct {
		name    string
		changes []RosterChange
		self    string
		want    []RosterRestatement
	}{
		{"an admin restates a removal the newcomer's start misses", stale, "a/1",
			[]RosterRestatement{{Generation: 4, Remove: []string{"d/1"}, Roster: Roster{Generation: 4, Name: "g5", Members: rosterOf("a/1* b/1* c/1* e/1")}}}},
		{"so does the adder once it has merged the removal", stale, "b/1",
			[]RosterRestatement{{Generation: 4, Remove: []string{"d/1"}, Roster: Roster{Generation: 4, Name: "g5", Members: rosterOf("a/1* b/1* c/1* e/1")}}}},
		{"not a member that is not an admin", stale, "e/1", nil},
		{"not the adder before it has seen the removal", []RosterChange{create, admin, adminC, addE}, "b/1", nil},
		{"once restated, not again", append(append([]RosterChange(nil), stale...), restated), "b/1", nil},
		{"a missed admin flag, nobody to remove", []RosterChange{create, admin, grantC, noop, addE2}, "a/1",
			[]RosterRestatement{{Generation: 4, Roster: Roster{Generation: 4, Name: "g5", Members: rosterOf("a/1* b/1* c/1* d/1 e/1")}}}},
		{"a member it cannot explain is left alone", []RosterChange{create, admin, grantC, unknown}, "a/1", nil},
		{"a forged change adding a member starts no newcomer", []RosterChange{create, admin, addD, forged}, "a/1", nil},
		{"a restatement that cannot mend is made once",
			[]RosterChange{create, admin, grantC, noop, noAdminA}, "a/1",
			[]RosterRestatement{{Generation: 4, Roster: Roster{Generation: 4, Name: "g5", Members: rosterOf("a/1* b/1* c/1* d/1 e/1")}}}},
		{"and not again", []RosterChange{create, admin, grantC, noop, noAdminA, once}, "a/1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RosterRestatements(GroupStart{Change: create.ID}, tt.changes, tt.self); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("restatements %+v, want %+v", got, tt.want)
			}
		})
	}

	// The restatement changes nothing for whoever has everything, and the
	// newcomer, which holds only generation 4 and later, merges the same.
	fromCreate := GroupStart{Change: create.ID}
	all, _ := MergeRoster(fromCreate, stale, 0)
	with, _ := MergeRoster(fromCreate, append(append([]RosterChange(nil), stale...), restated), 0)
	if !reflect.DeepEqual(all, with) {
		t.Fatalf("restating changed the merge: %+v, was %+v", with, all)
	}
	fromAdd := GroupStart{Change: addE.ID}
	before, _ := MergeRoster(fromAdd, []RosterChange{addE}, 0)
	if reflect.DeepEqual(before.Members, all.Members) {
		t.Fatalf("the newcomer's start %v already agrees: the case tests nothing", before.Members)
	}
	newcomer, _ := MergeRoster(fromAdd, []RosterChange{addE, restated}, 0)
	if !reflect.DeepEqual(newcomer, all) {
		t.Fatalf("the newcomer merges %+v, the others %+v", newcomer, all)
	}
}
