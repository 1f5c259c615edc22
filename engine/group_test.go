package engine

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/wire"
)

// rosterOf builds members from "addr" and "addr*" (admin) words.
func rosterOf(words string) []wire.RosterMember {
	var ms []wire.RosterMember
	for _, w := range strings.Fields(words) {
		admin := strings.HasSuffix(w, "*")
		ms = append(ms, wire.RosterMember{Address: strings.TrimSuffix(w, "*"), Admin: admin})
	}
	sortMembers(ms)
	return ms
}

// opsOf builds operations from "+addr", "-addr" and "@addr" words.
func opsOf(words string) []wire.RosterChange {
	var ops []wire.RosterChange
	for _, w := range strings.Fields(words) {
		op := map[byte]wire.RosterOp{'+': wire.RosterAdd, '-': wire.RosterRemove, '@': wire.RosterAdmin}[w[0]]
		ops = append(ops, wire.RosterChange{Op: op, Address: w[1:]})
	}
	return ops
}

func change(id byte, author string, gen uint64, ops, members string) RosterChange {
	return RosterChange{ID: wire.LogicalID{id}, Author: author, Generation: gen, Name: fmt.Sprintf("g%d", id),
		Ops: opsOf(ops), Members: rosterOf(members)}
}

// TestMergeRoster walks the merge rule of docs/protocol.md ("Roster") in
// order; each row names the rule that decides it.
func TestMergeRoster(t *testing.T) {
	create := change(1, "a/1", 1, "+b/1 +c/1", "a/1* b/1 c/1")
	tests := []struct {
		name     string
		changes  []RosterChange
		upTo     uint64
		want     string // members, "addr*" for an admin
		wantGen  uint64
		wantHeld int
	}{
		{"nothing", nil, 0, "", 0, 0},
		{"1 creation", []RosterChange{create}, 0, "a/1* b/1 c/1", 1, 0},
		{"1 a device added later starts from its roster",
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* b/1 d/1")}, 0, "a/1* b/1 d/1", 4, 0},
		{"1 a newcomer's two concurrent changes: union less removes",
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* b/1 c/1 d/1"), change(6, "b/1", 4, "-c/1", "a/1* b/1* d/1")}, 0, "a/1* b/1* d/1", 4, 0},
		{"1 a bootstrap change from a non-admin does not count",
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* d/1"), change(6, "x/1", 4, "+e/1", "x/1 d/1 e/1")}, 0, "a/1* d/1", 4, 0},
		{"2 a gap stops the fold and holds what is past it",
			[]RosterChange{create, change(3, "a/1", 3, "-b/1", "a/1* c/1")}, 0, "a/1* b/1 c/1", 1, 1},
		{"2 the gap filled",
			[]RosterChange{create, change(3, "a/1", 3, "-b/1", "a/1* c/1"), change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* c/1 d/1", 3, 0},
		{"2 upTo stops early, nothing held past it",
			[]RosterChange{create, change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1"), change(3, "a/1", 3, "-b/1", "a/1* c/1 d/1")}, 2, "a/1* b/1 c/1 d/1", 2, 0},
		{"3 a non-admin's change does not count",
			[]RosterChange{create, change(2, "b/1", 2, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* b/1 c/1", 1, 1},
		{"3 a member may leave",
			[]RosterChange{create, change(2, "b/1", 2, "-b/1", "a/1* c/1")}, 0, "a/1* c/1", 2, 0},
		{"3 a member may not remove another",
			[]RosterChange{create, change(2, "b/1", 2, "-c/1", "a/1* b/1")}, 0, "a/1* b/1 c/1", 1, 1},
		{"3 a removed admin's later change does not count",
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "b/1", 3, "-a/1", "b/1* c/1"), change(4, "a/1", 4, "+e/1", "a/1* b/1* c/1 e/1")}, 0, "b/1* c/1", 3, 1},
		{"4 concurrent add and remove both apply",
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "a/1", 3, "+d/1", "a/1* b/1* c/1 d/1"), change(4, "b/1", 3, "-c/1", "a/1* b/1*")}, 0, "a/1* b/1* d/1", 3, 0},
		{"4 remove beats add of the same member",
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "a/1", 3, "+d/1", "a/1* b/1* c/1 d/1"), change(4, "b/1", 3, "-d/1", "a/1* b/1* c/1")}, 0, "a/1* b/1* c/1", 3, 0},
		{"4 an admin op on a member added in the same generation",
			[]RosterChange{create, change(2, "a/1", 2, "+d/1 @d/1", "a/1* b/1 c/1 d/1*")}, 0, "a/1* b/1 c/1 d/1*", 2, 0},
		{"4 an admin op on a non-member is ignored",
			[]RosterChange{create, change(2, "a/1", 2, "@z/1", "a/1* b/1 c/1")}, 0, "a/1* b/1 c/1", 2, 0},
		{"4 admins removing each other at once: both go",
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "a/1", 3, "-b/1", "a/1* c/1"), change(4, "b/1", 3, "-a/1", "b/1* c/1")}, 0, "c/1", 3, 0},
		{"5 a generation with no counted change stops the fold",
			[]RosterChange{create, change(2, "c/1", 2, "+x/1", "a/1* b/1 c/1 x/1"), change(3, "a/1", 3, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* b/1 c/1", 1, 2},
		{"a repeated change counts once",
			[]RosterChange{create, create, change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* b/1 c/1 d/1", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A change that does not count stays with the held ones: a
			// late change below it can still change who is an admin.
			r, held := MergeRoster(tt.changes, tt.upTo)
			if got, want := r.Members, rosterOf(tt.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("members %v, want %v", got, want)
			}
			if r.Generation != tt.wantGen {
				t.Fatalf("generation %d, want %d", r.Generation, tt.wantGen)
			}
			if len(held) != tt.wantHeld {
				t.Fatalf("%d changes held, want %d", len(held), tt.wantHeld)
			}
		})
	}
}

// TestMergeRosterIsAFunctionOfTheSet: every order of the same changes, with
// repeats, merges to the same roster and holds the same changes.
func TestMergeRosterIsAFunctionOfTheSet(t *testing.T) {
	changes := []RosterChange{
		change(1, "a/1", 1, "+b/1 +c/1", "a/1* b/1 c/1"),
		change(2, "a/1", 2, "@b/1 +d/1", "a/1* b/1* c/1 d/1"),
		change(3, "a/1", 3, "+e/1", "a/1* b/1* c/1 d/1 e/1"),
		change(4, "b/1", 3, "-c/1 +f/1", "a/1* b/1* d/1 f/1"),
		change(5, "b/1", 3, "-e/1", "a/1* b/1* d/1"),
		change(6, "d/1", 4, "-d/1", "a/1* b/1* f/1"),
		change(7, "a/1", 6, "+g/1", "a/1* b/1* g/1"),
	}
	want, wantHeld := MergeRoster(changes, 0)
	if got := rosterOf("a/1* b/1* f/1"); !reflect.DeepEqual(want.Members, got) || want.Generation != 4 || len(wantHeld) != 1 {
		t.Fatalf("merged %+v, held %d; want %v at 4, one held", want, len(wantHeld), got)
	}
	rng := rand.New(rand.NewSource(1))
	for i := range 200 {
		cs := append([]RosterChange(nil), changes...)
		cs = append(cs, changes[rng.Intn(len(changes))])
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		got, held := MergeRoster(cs, 0)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(held, wantHeld) {
			t.Fatalf("order %d merged %+v (held %d), want %+v (held %d)", i, got, len(held), want, len(wantHeld))
		}
	}
}

// TestDecideGroupMessage walks the rules for a received group message in
// their order.
func TestDecideGroupMessage(t *testing.T) {
	at3 := Roster{Generation: 3, Members: rosterOf("a/1* b/1 c/1")}
	tests := []struct {
		name string
		in   GroupMessageInput
		want GroupVerdict
	}{
		{"1 unknown group: hold", GroupMessageInput{Generation: 1, Sender: "b/1", Self: "c/1"}, GroupHold},
		{"1 a generation not merged yet: hold", GroupMessageInput{Known: true, Merged: 3, Generation: 4, AtMessage: at3, Sender: "d/1", Self: "c/1"}, GroupHold},
		{"1 hold beats refuse", GroupMessageInput{Known: true, Merged: 3, Generation: 9, Sender: "x/1", Self: "c/1"}, GroupHold},
		{"1 too far ahead: drop", GroupMessageInput{Known: true, Merged: 3, Generation: 3 + MaxGenerationsAhead + 1, Sender: "b/1", Self: "c/1"}, GroupDrop},
		{"1 as far ahead as allowed: hold", GroupMessageInput{Known: true, Merged: 3, Generation: 3 + MaxGenerationsAhead, Sender: "b/1", Self: "c/1"}, GroupHold},
		{"1 held too long: drop", GroupMessageInput{Generation: 1, Sender: "b/1", Self: "c/1", HeldFor: MaxGroupHold + time.Second}, GroupDrop},
		{"1 held long, not too long: hold", GroupMessageInput{Generation: 1, Sender: "b/1", Self: "c/1", HeldFor: MaxGroupHold}, GroupHold},
		{"2 the sender is not in the message's roster", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "d/1", Self: "c/1"}, GroupRefuse},
		{"2 this device is not in the message's roster", GroupMessageInput{Known: true, Merged: 5, Generation: 3, AtMessage: at3, Sender: "b/1", Self: "e/1"}, GroupRefuse},
		{"3 a member at that generation", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/1", Self: "c/1"}, GroupAccept},
		{"3 removed later, sent while a member", GroupMessageInput{Known: true, Merged: 7, Generation: 3, AtMessage: at3, Sender: "b/1", Self: "c/1"}, GroupAccept},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideGroupMessage(tt.in); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRosterRecipients(t *testing.T) {
	old := Roster{Members: rosterOf("a/1* b/1 c/1")}
	next := Roster{Members: rosterOf("a/1* c/1 d/1")}
	if got, want := RosterRecipients(old, next, "a/1"), []string{"b/1", "c/1", "d/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("roster recipients %v, want %v (new roster and the removed, not self)", got, want)
	}
	if got, want := RemovedLanes(old, next), []string{"b/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	if got, want := LaneRecipients(next, "a/1"), []string{"c/1", "d/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lanes %v, want %v", got, want)
	}
}

// TestStrandedLane: a lane of this device's message is stranded only when
// the merged roster omits this device and the message names a generation
// past the merged one.
func TestStrandedLane(t *testing.T) {
	merged := Roster{Generation: 3, Members: rosterOf("c/1")}
	for _, tt := range []struct {
		self string
		gen  uint64
		want bool
	}{
		{"b/1", 4, true},  // removed, and generation 4 existed only in b's view
		{"b/1", 3, false}, // the member decides: accept or not_a_member
		{"b/1", 2, false}, // sent while a member: a removal is not retroactive
		{"c/1", 4, false}, // still a member: an admin's change at 4 can still come
	} {
		if got := StrandedLane(merged, tt.self, tt.gen); got != tt.want {
			t.Errorf("StrandedLane(%s at %d) = %v, want %v", tt.self, tt.gen, got, tt.want)
		}
	}
}

func TestLaneStateNames(t *testing.T) {
	want := []string{"pending", "relay_accepted", "acknowledged", "abandoned", "removed", "not_a_member"}
	for i, w := range want {
		s := LaneState(i + 1)
		if s.String() != w {
			t.Errorf("lane state %d is %q, want %q", i+1, s, w)
		}
		if s.Ended() != (i >= 2) {
			t.Errorf("%s ended = %v", s, s.Ended())
		}
	}
}
