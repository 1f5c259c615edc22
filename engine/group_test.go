package engine

import (
	"errors"
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

// TestMergeRoster walks the merge rule of docs/protocol.md ("The merge
// rule") in order; each row names the rule that decides it. The hostile
// rows are the findings of an attack on the rule that counted a start's
// authority from the roster a change carried.
func TestMergeRoster(t *testing.T) {
	create := change(1, "a/1", 1, "+b/1 +c/1", "a/1* b/1 c/1")
	fromCreate := GroupStart{Change: create.ID}
	big := make([]string, 0, wire.MaxGroupMembers)
	for i := 0; len(big) < wire.MaxGroupMembers-1; i++ {
		big = append(big, fmt.Sprintf("+n%02d/1", i))
	}
	tests := []struct {
		name     string
		start    GroupStart
		changes  []RosterChange
		upTo     uint64
		want     string // members, "addr*" for an admin
		wantGen  uint64
		wantHeld int
	}{
		{"nothing", fromCreate, nil, 0, "", 0, 0},
		{"1 creation", fromCreate, []RosterChange{create}, 0, "a/1* b/1 c/1", 1, 0},
		{"1 a device added later starts from its adder's roster", GroupStart{Change: wire.LogicalID{5}},
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* b/1 d/1")}, 0, "a/1* b/1 d/1", 4, 0},
		{"1 a concurrent change by an admin of the adder's roster joins the start", GroupStart{Change: wire.LogicalID{5}},
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* b/1* c/1 d/1"), change(6, "b/1", 4, "-c/1", "a/1* b/1* d/1")}, 0, "a/1* b/1* d/1", 4, 0},
		{"1 a change at the start by a member the adder's roster makes no admin does not count", GroupStart{Change: wire.LogicalID{5}},
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* b/1 c/1 d/1"), change(6, "b/1", 4, "-c/1 @b/1", "a/1* b/1* d/1")}, 0, "a/1* b/1 c/1 d/1", 4, 0},
		{"1 a start by a stranger to the adder's roster does not count", GroupStart{Change: wire.LogicalID{5}},
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* d/1"), change(6, "x/1", 4, "+e/1", "x/1* d/1 e/1")}, 0, "a/1* d/1", 4, 0},
		{"1 a start change whose author is no admin of its own roster starts nothing", GroupStart{Change: wire.LogicalID{5}},
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1 d/1")}, 0, "", 0, 0},
		{"1 hostile: a removed member's change at the start generation neither removes nor crowns", fromCreate,
			[]RosterChange{change(1, "a/1", 1, "+b/1 +m/1", "a/1* b/1 m/1"), change(2, "a/1", 2, "-m/1", "a/1* b/1"),
				change(9, "m/1", 1, "-a/1 @m/1", "b/1 m/1*")}, 0, "a/1* b/1", 2, 0},
		{"1 hostile: a change below the start never applies", GroupStart{Change: wire.LogicalID{5}},
			[]RosterChange{change(5, "a/1", 4, "+d/1", "a/1* b/1 d/1"), change(9, "a/1", 2, "-b/1 -d/1", "a/1*")}, 0, "a/1* b/1 d/1", 4, 0},
		{"1 a snapshot start ignores changes at and below it", GroupStart{Snapshot: &Roster{Generation: 3, Name: "s", Members: rosterOf("a/1* b/1")}},
			[]RosterChange{change(9, "a/1", 3, "+x/1", "a/1* b/1 x/1"), change(4, "a/1", 4, "+d/1", "a/1* b/1 d/1")}, 0, "a/1* b/1 d/1", 4, 0},
		{"2 a gap stops the fold and holds what is past it", fromCreate,
			[]RosterChange{create, change(3, "a/1", 3, "-b/1", "a/1* c/1")}, 0, "a/1* b/1 c/1", 1, 1},
		{"2 the gap filled", fromCreate,
			[]RosterChange{create, change(3, "a/1", 3, "-b/1", "a/1* c/1"), change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* c/1 d/1", 3, 0},
		{"2 upTo stops early, nothing held past it", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1"), change(3, "a/1", 3, "-b/1", "a/1* c/1 d/1")}, 2, "a/1* b/1 c/1 d/1", 2, 0},
		{"3 a non-admin's change does not count", fromCreate,
			[]RosterChange{create, change(2, "b/1", 2, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* b/1 c/1", 1, 1},
		{"3 hostile: a non-admin calling itself admin in the roster it carries does not count", fromCreate,
			[]RosterChange{create, change(2, "b/1", 2, "-a/1 -c/1", "b/1*")}, 0, "a/1* b/1 c/1", 1, 1},
		{"3 a member may leave", fromCreate,
			[]RosterChange{create, change(2, "b/1", 2, "-b/1", "a/1* c/1")}, 0, "a/1* c/1", 2, 0},
		{"3 hostile: a member may not remove another", fromCreate,
			[]RosterChange{create, change(2, "b/1", 2, "-c/1", "a/1* b/1")}, 0, "a/1* b/1 c/1", 1, 1},
		{"3 hostile: a non-admin's remove does not count beside an admin's change", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1"), change(3, "c/1", 2, "-b/1", "a/1* c/1")}, 0, "a/1* b/1 c/1 d/1", 2, 0},
		{"3 hostile: a removed admin's later change does not count", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "b/1", 3, "-a/1", "b/1* c/1"), change(4, "a/1", 4, "+e/1", "a/1* b/1* c/1 e/1")}, 0, "b/1* c/1", 3, 1},
		{"3 hostile: a removed member's change does not count", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "-c/1", "a/1* b/1"), change(3, "c/1", 3, "-c/1", "a/1* b/1")}, 0, "a/1* b/1", 2, 1},
		{"4 concurrent add and remove both apply", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "a/1", 3, "+d/1", "a/1* b/1* c/1 d/1"), change(4, "b/1", 3, "-c/1", "a/1* b/1*")}, 0, "a/1* b/1* d/1", 3, 0},
		{"4 remove beats add of the same member", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "a/1", 3, "+d/1", "a/1* b/1* c/1 d/1"), change(4, "b/1", 3, "-d/1", "a/1* b/1* c/1")}, 0, "a/1* b/1* c/1", 3, 0},
		{"4 an admin op on a member added in the same generation", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "+d/1 @d/1", "a/1* b/1 c/1 d/1*")}, 0, "a/1* b/1 c/1 d/1*", 2, 0},
		{"4 an admin op on a non-member is ignored", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "@z/1", "a/1* b/1 c/1")}, 0, "a/1* b/1 c/1", 2, 0},
		{"4 admins removing each other at once: both go", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, "@b/1", "a/1* b/1* c/1"), change(3, "a/1", 3, "-b/1", "a/1* c/1"), change(4, "b/1", 3, "-a/1", "b/1* c/1")}, 0, "c/1", 3, 0},
		{"5 a generation with no counted change stops the fold", fromCreate,
			[]RosterChange{create, change(2, "c/1", 2, "+x/1", "a/1* b/1 c/1 x/1"), change(3, "a/1", 3, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* b/1 c/1", 1, 2},
		{"6 hostile: a change that would pass the member bound does not count", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, strings.Join(big, " "), "a/1*")}, 0, "a/1* b/1 c/1", 1, 1},
		{"6 two changes past the bound together: the last stops counting", fromCreate,
			[]RosterChange{create, change(2, "a/1", 2, strings.Join(big[:40], " "), "a/1*"), change(3, "a/1", 2, strings.Join(big[40:], " "), "a/1*")}, 0, "", 2, 0},
		{"a repeated change counts once", fromCreate,
			[]RosterChange{create, create, change(2, "a/1", 2, "+d/1", "a/1* b/1 c/1 d/1")}, 0, "a/1* b/1 c/1 d/1", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A change that does not count stays with the held ones: a
			// late change below it can still change who is an admin.
			r, held := MergeRoster(tt.start, tt.changes, tt.upTo)
			if tt.name == "6 two changes past the bound together: the last stops counting" {
				if len(r.Members) != 3+40 || r.Generation != 2 {
					t.Fatalf("%d members at %d, want 43 at 2 (the first change only)", len(r.Members), r.Generation)
				}
				return
			}
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

// TestMergeRosterNeverPassesTheMemberBound: whatever admins add, at the
// start or later, no merged roster holds more than wire.MaxGroupMembers.
func TestMergeRosterNeverPassesTheMemberBound(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := range 200 {
		var cs []RosterChange
		start := change(1, "a/1", 1, "+b/1", "a/1* b/1*")
		cs = append(cs, start)
		for i := 0; i < 6; i++ {
			var ops []string
			for range 1 + rng.Intn(40) {
				ops = append(ops, fmt.Sprintf("+m%03d/1", rng.Intn(300)))
			}
			author := []string{"a/1", "b/1"}[rng.Intn(2)]
			c := change(byte(10+i), author, uint64(1+rng.Intn(3)), strings.Join(ops, " "), "a/1* b/1*")
			c.Ops = normalizeOps(c.Ops)
			cs = append(cs, c)
		}
		r, _ := MergeRoster(GroupStart{Change: start.ID}, cs, 0)
		if len(r.Members) > wire.MaxGroupMembers {
			t.Fatalf("trial %d: %d members", trial, len(r.Members))
		}
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
		change(8, "f/1", 2, "-a/1", "b/1 f/1*"),
	}
	start := GroupStart{Change: changes[0].ID}
	want, wantHeld := MergeRoster(start, changes, 0)
	if got := rosterOf("a/1* b/1* f/1"); !reflect.DeepEqual(want.Members, got) || want.Generation != 4 || len(wantHeld) != 1 {
		t.Fatalf("merged %+v, held %d; want %v at 4, one held", want, len(wantHeld), got)
	}
	rng := rand.New(rand.NewSource(1))
	for i := range 200 {
		cs := append([]RosterChange(nil), changes...)
		cs = append(cs, changes[rng.Intn(len(changes))])
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		got, held := MergeRoster(start, cs, 0)
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
		{"2 an unlisted device of a person not a member", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "d/2", Self: "c/1", Vouch: VouchUnlisted}, GroupRefuse},
		{"3 named revoked or with other keys", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1", Vouch: VouchRefused}, GroupRefuse},
		{"3 an entry its list revokes", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/1", Self: "c/1", Vouch: VouchRefused}, GroupRefuse},
		{"3 no list held and no entry", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1"}, GroupRefuse},
		{"4 not in the list held: hold", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1", Vouch: VouchUnlisted}, GroupHold},
		{"4 not in the list held, held too long: drop", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1", Vouch: VouchUnlisted,
			HeldFor: MaxGroupHold + time.Second}, GroupDrop},
		{"4 no list held, being asked for: hold", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1", Vouch: VouchAsking}, GroupHold},
		{"4 no list held, asked for too long: drop", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1", Vouch: VouchAsking,
			HeldFor: MaxGroupHold + time.Second}, GroupDrop},
		{"2 being asked for, person not a member", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "d/2", Self: "c/1", Vouch: VouchAsking}, GroupRefuse},
		{"5 another device of a member, vouched", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/2", Self: "c/1", Vouch: VouchListed}, GroupAccept},
		{"5 to another device of a member", GroupMessageInput{Known: true, Merged: 3, Generation: 3, AtMessage: at3, Sender: "b/1", Self: "c/2"}, GroupAccept},
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
	if got, want := RosterRecipients(old, next, "a/1", nil), []string{"b/1", "c/1", "d/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("roster recipients %v, want %v (new roster and the removed, not self)", got, want)
	}
	if got, want := RemovedLanes(old, next, nil), []string{"b/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	if got, want := LaneRecipients(next, "a/1", nil), []string{"c/1", "d/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lanes %v, want %v", got, want)
	}
}

// listOf builds user's device list: "n" active, "n-" revoked, each with
// keys made from its number.
func listOf(user, words string) wire.DeviceList {
	l := wire.DeviceList{User: user}
	for _, w := range strings.Fields(words) {
		e := wire.DeviceEntry{State: wire.DeviceActive}
		if strings.HasSuffix(w, "-") {
			e.State, w = wire.DeviceRevoked, strings.TrimSuffix(w, "-")
		}
		var n uint32
		fmt.Sscan(w, &n)
		e.Number, e.SigningKey[0], e.DHKey[0] = n, byte(n), byte(n)
		l.Entries = append(l.Entries, e)
	}
	return l
}

// TestRecipientsArePersons: lanes go to every active device of every
// member person, from the list held (a revoked device gets none), else to
// the person's entries; self's own person from the account's list. A
// removal ends the lanes of every device of a person no entry keeps.
func TestRecipientsArePersons(t *testing.T) {
	lists := DeviceLists{"a": listOf("a", "1 2"), "b": listOf("b", "1 2 3-")}
	r := Roster{Members: rosterOf("a/1* b/1 c/1")}
	if got, want := LaneRecipients(r, "a/1", lists), []string{"a/2", "b/1", "b/2", "c/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lanes %v, want %v", got, want)
	}
	if got, want := LaneRecipients(r, "a/2", lists), []string{"a/1", "b/1", "b/2", "c/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a linked device's lanes %v, want %v", got, want)
	}
	next := Roster{Members: rosterOf("a/1* c/1 d/1")}
	if got, want := RosterRecipients(r, next, "a/1", lists), []string{"a/2", "b/1", "b/2", "c/1", "d/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("roster recipients %v, want %v", got, want)
	}
	if got, want := RemovedLanes(r, next, lists), []string{"b/1", "b/2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("removed %v, want every device of b", got)
	}
	two := Roster{Members: rosterOf("a/1* b/1 b/2 c/1")}
	if got := RemovedLanes(two, Roster{Members: rosterOf("a/1* b/1 c/1")}, lists); len(got) != 0 {
		t.Fatalf("removing one of b's two entries removed %v, want nothing: b is still a member", got)
	}
	if !r.HasUser("b") || r.HasUser("d") || r.HasUser("a/1") {
		t.Fatal("HasUser does not match the entries' users")
	}
}

// TestVouchOf: what a held list says of a sender device and the identity
// its session holds.
func TestVouchOf(t *testing.T) {
	l := listOf("b", "1 2-")
	key := func(n byte) *IdentityKey {
		var k IdentityKey
		k.SigningKey[0], k.DHKey[0] = n, n
		return &k
	}
	for _, tt := range []struct {
		dev  string
		key  *IdentityKey
		want SenderVouch
	}{
		{"b/1", key(1), VouchListed},
		{"b/1", key(9), VouchRefused}, // other keys
		{"b/1", nil, VouchRefused},    // no identity known
		{"b/2", key(2), VouchRefused}, // revoked
		{"b/3", key(3), VouchUnlisted},
	} {
		if got := vouchOf(l, MustParseAddress(tt.dev), tt.key); got != tt.want {
			t.Errorf("vouchOf(%s) = %d, want %d", tt.dev, got, tt.want)
		}
	}
}

// TestLaneBound: the largest group's fan-out (wire.MaxGroupMembers
// persons of MaxDevicesPerAccount devices each) fits one transaction; a
// fan-out past the bound is refused before anything is stored.
func TestLaneBound(t *testing.T) {
	lists := DeviceLists{}
	var words []string
	for i := range wire.MaxGroupMembers {
		u := fmt.Sprintf("u%02d", i)
		words = append(words, u+"/1")
		lists[u] = listOf(u, "1 2 3 4 5 6 7 8")
	}
	r := Roster{Members: rosterOf(strings.Join(words, " "))}
	all, err := parseAddresses(LaneRecipients(r, "u00/1", lists))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != wire.MaxGroupMembers*MaxDevicesPerAccount-1 {
		t.Fatalf("%d lanes, want every device but self", len(all))
	}
	if _, err := pendingLanes("group-send", all); err != nil {
		t.Fatalf("the largest fan-out is refused: %v", err)
	}
	over := make([]Address, MaxLanesPerTransaction+1)
	if _, err := pendingLanes("group-send", over); !errors.Is(err, wire.ErrMessageTooLarge) {
		t.Fatalf("%d lanes: %v, want ErrMessageTooLarge", len(over), err)
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
		{"c/2", 4, false}, // another device of a member person: still in
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
