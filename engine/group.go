package engine

import (
	"bytes"
	"sort"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Bounds of groups, each with its reason. The members per group and the
// largest roster frame are the wire's (wire.MaxGroupMembers,
// wire.MaxRosterFrameSize): a bound the decoder enforces is the one the
// engine plans with.
const (
	// MaxGroupsPerProfile bounds the groups one profile keeps, so that the
	// group list, a roster lookup on every received group frame and the
	// roster log stay small reads.
	MaxGroupsPerProfile = 256
	// MaxLanesPerTransaction is the most lanes one group send or roster
	// change commits in one transaction: one ratchet step and one sealed
	// envelope each, so the largest group (wire.MaxGroupMembers, the sender
	// excluded) fits one transaction and the whole fan-out is all or none.
	MaxLanesPerTransaction = wire.MaxGroupMembers
	// MaxGenerationsAhead bounds how far past its merged roster a device
	// holds a group message: a roster change in flight is one generation,
	// a few concurrent ones a few more; a message naming a generation
	// further ahead can only be hostile and is dropped, so that nobody
	// fills the staging inbox with messages held for ever.
	MaxGenerationsAhead = 16
	// MaxGroupHold is how long a group message stays held waiting for its
	// roster: long enough for an admin offline for days, then it is
	// dropped (quarantined). Held messages also count against the staging
	// inbox's quota.
	MaxGroupHold = 14 * 24 * time.Hour
	// MaxHeldGroupFrames bounds the group frames held because they name a
	// generation this device has not seen yet (FIFO holds per pair only);
	// past it, a held frame stays staged and unacknowledged until the
	// roster arrives, so nothing is lost and the hold stays bounded.
	MaxHeldGroupFrames = 256
)

// RosterChange is one roster change as a device received or made it: the
// change's ID (the roster frame's logical ID), its author (authenticated by
// the pairwise session it arrived on), the generation it creates, the name,
// the operations, and the full roster that resulted as its author saw it.
type RosterChange struct {
	ID         wire.LogicalID
	Author     string
	Generation uint64
	Name       string
	Ops        []wire.RosterChange
	Members    []wire.RosterMember
}

// Roster is a group's roster at one generation: the members, sorted by
// address, each once, with their admin flags.
type Roster struct {
	Generation uint64
	Name       string
	Members    []wire.RosterMember
}

// Has reports whether addr is a member.
func (r Roster) Has(addr string) bool { _, ok := r.find(addr); return ok }

// IsAdmin reports whether addr is a member and an admin.
func (r Roster) IsAdmin(addr string) bool {
	i, ok := r.find(addr)
	return ok && r.Members[i].Admin
}

func (r Roster) find(addr string) (int, bool) {
	i := sort.Search(len(r.Members), func(i int) bool { return r.Members[i].Address >= addr })
	return i, i < len(r.Members) && r.Members[i].Address == addr
}

// MergeRoster folds a set of roster changes into the roster at generation
// upTo (0: as far as the changes reach). It is pure and depends only on the
// set: the order of changes does not matter, and a change repeated counts
// once. The rule, by generation, then admin, then change ID:
//
//  1. The roster starts at the lowest generation present. Generation 1 is
//     the creation; a device added later starts from the generation that
//     added it, as the union of the full rosters its changes carry, less
//     what they remove.
//  2. Each later generation g applies only if some change names it; the
//     first missing generation stops the fold, and changes past it are
//     returned as held, to be merged when the gap fills.
//  3. At g, a change counts when its author is an admin of the roster at
//     g-1, or when it only removes its author (leaving). Changes that do
//     not count are ignored.
//  4. The counted changes at g apply together to the roster at g-1, in the
//     order (author, change ID): an add adds a member unless any counted
//     change at g removes it (remove beats add), an admin op names a member
//     admin when it is a member after the adds, and removes apply last. The
//     name is the last counted change's.
//  5. A generation whose changes all fail rule 3 stops the fold like a gap:
//     an admin's change for it can still arrive.
func MergeRoster(changes []RosterChange, upTo uint64) (r Roster, held []RosterChange) {
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
	if lowest == 0 {
		return Roster{}, nil
	}
	for _, cs := range byGen {
		sortChanges(cs)
	}
	r = bootstrap(byGen[lowest], lowest)
	g := lowest + 1
	for ; upTo == 0 || g <= upTo; g++ {
		cs, ok := byGen[g]
		if !ok {
			break
		}
		next, ok := applyGeneration(r, cs, g)
		if !ok {
			break
		}
		r = next
	}
	for gen, cs := range byGen {
		if gen >= g && (upTo == 0 || gen <= upTo) {
			held = append(held, cs...)
		}
	}
	sortChanges(held)
	return r, held
}

// sortChanges orders changes by generation, author and change ID.
func sortChanges(cs []RosterChange) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Generation != b.Generation {
			return a.Generation < b.Generation
		}
		if a.Author != b.Author {
			return a.Author < b.Author
		}
		return bytes.Compare(a.ID[:], b.ID[:]) < 0
	})
}

// bootstrap is rule 1: the roster at the lowest generation a device knows,
// from the full rosters its changes carry. A change whose author is not an
// admin of its own roster (and is not only leaving) does not count.
func bootstrap(cs []RosterChange, gen uint64) Roster {
	admin := make(map[string]bool)
	member := make(map[string]bool)
	removed := removedBy(cs, func(c RosterChange) bool { return true })
	name := ""
	for _, c := range cs {
		own := Roster{Members: c.Members}
		if !own.IsAdmin(c.Author) && !onlyLeaves(c) {
			continue
		}
		for _, m := range c.Members {
			member[m.Address] = true
			admin[m.Address] = admin[m.Address] || m.Admin
		}
		name = c.Name
	}
	r := Roster{Generation: gen, Name: name}
	for a := range member {
		if !removed[a] {
			r.Members = append(r.Members, wire.RosterMember{Address: a, Admin: admin[a]})
		}
	}
	sortMembers(r.Members)
	return r
}

// applyGeneration is rules 3 and 4: the counted changes at g applied to
// prev. It reports false when no change counts.
func applyGeneration(prev Roster, cs []RosterChange, g uint64) (Roster, bool) {
	counts := func(c RosterChange) bool { return prev.IsAdmin(c.Author) || (prev.Has(c.Author) && onlyLeaves(c)) }
	removed := removedBy(cs, counts)
	member := make(map[string]bool, len(prev.Members))
	admin := make(map[string]bool, len(prev.Members))
	for _, m := range prev.Members {
		member[m.Address], admin[m.Address] = true, m.Admin
	}
	name, counted := prev.Name, false
	for _, c := range cs {
		if !counts(c) {
			continue
		}
		counted = true
		name = c.Name
		for _, op := range c.Ops {
			if op.Op == wire.RosterAdd && !removed[op.Address] {
				member[op.Address] = true
			}
		}
	}
	if !counted {
		return prev, false
	}
	for _, c := range cs {
		if !counts(c) {
			continue
		}
		for _, op := range c.Ops {
			if op.Op == wire.RosterAdmin && member[op.Address] {
				admin[op.Address] = true
			}
		}
	}
	r := Roster{Generation: g, Name: name}
	for a := range member {
		if !removed[a] {
			r.Members = append(r.Members, wire.RosterMember{Address: a, Admin: admin[a]})
		}
	}
	sortMembers(r.Members)
	return r, true
}

// removedBy collects the addresses removed by the changes that count.
func removedBy(cs []RosterChange, counts func(RosterChange) bool) map[string]bool {
	removed := make(map[string]bool)
	for _, c := range cs {
		if !counts(c) {
			continue
		}
		for _, op := range c.Ops {
			if op.Op == wire.RosterRemove {
				removed[op.Address] = true
			}
		}
	}
	return removed
}

// onlyLeaves reports whether a change does nothing but remove its author.
func onlyLeaves(c RosterChange) bool {
	return len(c.Ops) == 1 && c.Ops[0].Op == wire.RosterRemove && c.Ops[0].Address == c.Author
}

func sortMembers(ms []wire.RosterMember) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Address < ms[j].Address })
}

// GroupVerdict is what to do with a received group message.
type GroupVerdict uint8

// The outcomes of DecideGroupMessage, one per rule, in the rules' order.
const (
	// GroupHold: the message names a generation this device has not merged
	// yet (or a group it does not know yet): keep it staged, neither
	// acknowledged nor refused, until the roster arrives.
	GroupHold GroupVerdict = iota + 1
	// GroupRefuse: the roster at the message's generation omits the sender
	// (or this device): answer not_a_member, which ends the sender's lane.
	GroupRefuse
	// GroupAccept: deliver as any message, deduplicated by (sender, ID).
	GroupAccept
	// GroupDrop: a message held too long, or naming a generation too far
	// ahead to be in flight: quarantined, neither delivered nor refused.
	GroupDrop
)

var groupVerdictNames = [...]string{
	GroupHold:   "hold",
	GroupRefuse: "not a member",
	GroupAccept: "accept",
	GroupDrop:   "drop",
}

// String names the verdict.
func (v GroupVerdict) String() string {
	if int(v) < len(groupVerdictNames) && groupVerdictNames[v] != "" {
		return groupVerdictNames[v]
	}
	return "unknown verdict"
}

// GroupMessageInput is everything DecideGroupMessage looks at.
type GroupMessageInput struct {
	Known      bool   // this device has a roster for the group
	Merged     uint64 // the generation this device has merged up to
	Generation uint64 // the generation the message names
	// AtMessage is the roster at the message's generation (when it is not
	// above Merged).
	AtMessage Roster
	Sender    string
	Self      string
	// HeldFor is how long the message has been staged.
	HeldFor time.Duration
}

// DecideGroupMessage applies the rules for a received group message in
// order. It is pure; the caller does what it says in one receive
// transaction.
//
//  1. an unknown group, or a generation above the merged one: hold (a
//     message from a member just added can overtake the admin's roster
//     frame, since FIFO holds per pair only), unless it is more than
//     MaxGenerationsAhead past the merged generation or was held for
//     MaxGroupHold already: drop;
//  2. the roster at the message's generation omits the sender or this
//     device: refuse with not_a_member. A later generation that removed
//     the sender does not refuse a message sent while it was a member;
//  3. otherwise accept.
func DecideGroupMessage(in GroupMessageInput) GroupVerdict {
	switch {
	case !in.Known || in.Generation > in.Merged:
		if in.HeldFor > MaxGroupHold || in.Generation > in.Merged+MaxGenerationsAhead {
			return GroupDrop
		}
		return GroupHold
	case !in.AtMessage.Has(in.Sender) || !in.AtMessage.Has(in.Self):
		return GroupRefuse
	}
	return GroupAccept
}

// LaneState is where one member's lane of a group message stands.
type LaneState uint8

// Lane states, as `history GROUP --json` names them.
const (
	LanePending       LaneState = 1
	LaneRelayAccepted LaneState = 2
	LaneAcknowledged  LaneState = 3
	LaneAbandoned     LaneState = 4
	LaneRemoved       LaneState = 5
	LaneNotAMember    LaneState = 6
)

var laneStateNames = [...]string{
	LanePending:       "pending",
	LaneRelayAccepted: "relay_accepted",
	LaneAcknowledged:  "acknowledged",
	LaneAbandoned:     "abandoned",
	LaneRemoved:       "removed",
	LaneNotAMember:    "not_a_member",
}

// String is the lane state's name in JSON.
func (s LaneState) String() string {
	if int(s) < len(laneStateNames) && laneStateNames[s] != "" {
		return laneStateNames[s]
	}
	return "unknown"
}

// Ended reports whether the lane will never send again.
func (s LaneState) Ended() bool { return s >= LaneAcknowledged }

// LaneRecipients returns the lanes of a group message sent at roster r by
// self: every member but self. A member added later is in no roster a
// message names, so it gets nothing sent before it joined.
func LaneRecipients(r Roster, self string) []string {
	out := make([]string, 0, len(r.Members))
	for _, m := range r.Members {
		if m.Address != self {
			out = append(out, m.Address)
		}
	}
	return out
}

// RosterRecipients returns who receives a roster change: every member of the
// new roster and everyone the old roster had that the new one does not
// (removed members learn that they were removed), self excluded.
func RosterRecipients(old, next Roster, self string) []string {
	set := make(map[string]bool)
	for _, m := range next.Members {
		set[m.Address] = true
	}
	for _, m := range old.Members {
		set[m.Address] = true
	}
	delete(set, self)
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// RemovedLanes returns the members of old that next omits: their pending
// lanes end as removed.
func RemovedLanes(old, next Roster) []string {
	var out []string
	for _, m := range old.Members {
		if !next.Has(m.Address) {
			out = append(out, m.Address)
		}
	}
	return out
}
