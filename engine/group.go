package engine

import (
	"bytes"
	"sort"
	"strings"
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
	// change commits in one transaction: a lane per active device of every
	// member person (docs/protocol.md, "Groups across a person's
	// devices"), so the largest group (wire.MaxGroupMembers persons, each
	// with MaxDevicesPerAccount devices) fits one transaction and the
	// whole fan-out is all or none. Each lane is one pending row, not yet
	// encrypted; the lanes that go by a sender chain are handed off in
	// SubmitMultis of at most wire.MaxSubmitMultiMailboxes mailboxes, the
	// relay's bound per request. A send over it fails before anything is
	// stored.
	MaxLanesPerTransaction = wire.MaxGroupMembers * MaxDevicesPerAccount
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
	// MaxHeldGroupFrames bounds the group frames held in all (they name a
	// group or a generation this device has not seen yet, and FIFO holds
	// per pair only): each held frame stays staged and is opened again on
	// every pass, and the staging inbox must keep room for friends. Past
	// it the oldest held frame is dropped (quarantined, unacknowledged: its
	// sender's lane stays pending, so nothing is lost), with an event.
	MaxHeldGroupFrames = 256
	// MaxHeldPerSender bounds the frames one sender has held: a member's
	// honest backlog while one roster change is in flight is a few
	// messages; past it that sender's oldest held frame is dropped, so
	// that one sender (a stranger naming groups that do not exist) cannot
	// take the room the others' held frames need.
	MaxHeldPerSender = 32
	// MaxChangesAheadPerAuthor bounds the roster changes one author can
	// have stored past the merged generation: they wait for a gap to fill,
	// and an honest author has one per generation in flight. Past it a new
	// change from that author is dropped unacknowledged.
	MaxChangesAheadPerAuthor = MaxGenerationsAhead
	// MaxChangesPerAuthorGeneration bounds the changes one author makes at
	// one generation: its own change and a few restatements; more is
	// dropped unacknowledged, so that an admin cannot grow the log that
	// every group frame merges without bound.
	MaxChangesPerAuthorGeneration = 4
	// MaxRosterLog is how many changes a group's log keeps before it is
	// compacted: every received group frame reads and merges the log.
	MaxRosterLog = 128
	// KeepGenerations is how many generations below the merged one a
	// compaction keeps as changes (older ones become one snapshot): a
	// change concurrent with one that far back can still merge, and a
	// message naming a generation that old is still judged by its own
	// roster. A change or message older than that is judged by the
	// snapshot.
	KeepGenerations = 32
)

// RosterChange is one roster change as a device received or made it: the
// change's ID (the roster frame's logical ID), its author, the generation
// it creates, the name, the operations, the full roster that resulted as
// its author saw it, and what the author signed: the digest of the roster
// at Generation-1 it was made on (Parent), its identity signing key and the
// signature (zero in changes kept from before signatures).
type RosterChange struct {
	ID         wire.LogicalID
	Author     string
	Generation uint64
	Name       string
	Ops        []wire.RosterChange
	Members    []wire.RosterMember
	Parent     [32]byte
	AuthorKey  [32]byte
	Signature  [64]byte
}

// Roster is a group's roster at one generation: the members, sorted by
// address, each once, with their admin flags.
type Roster struct {
	Generation uint64
	Name       string
	Members    []wire.RosterMember
}

// Has reports whether addr is a member: an entry of the roster.
func (r Roster) Has(addr string) bool { _, ok := r.find(addr); return ok }

// HasUser reports whether user's person is a member: some entry of the
// roster is a device of theirs. A person is a member through any entry;
// their other devices are members with it (docs/protocol.md, "Groups
// across a person's devices").
func (r Roster) HasUser(user string) bool {
	for _, m := range r.Members {
		if userOf(m.Address) == user {
			return true
		}
	}
	return false
}

// userOf is the user of an entry's address ("" when it has none).
func userOf(addr string) string {
	u, _, ok := strings.Cut(addr, "/")
	if !ok {
		return ""
	}
	return u
}

// entriesOf returns the entries of r that are devices of user.
func (r Roster) entriesOf(user string) []string {
	var out []string
	for _, m := range r.Members {
		if userOf(m.Address) == user {
			out = append(out, m.Address)
		}
	}
	return out
}

// IsAdmin reports whether addr is a member and an admin.
func (r Roster) IsAdmin(addr string) bool {
	i, ok := r.find(addr)
	return ok && r.Members[i].Admin
}

func (r Roster) find(addr string) (int, bool) {
	i := sort.Search(len(r.Members), func(i int) bool { return r.Members[i].Address >= addr })
	return i, i < len(r.Members) && r.Members[i].Address == addr
}

// GroupStart is where a device's view of a group begins. Until the device
// compacts its roster log it is Change, the change that added this device
// to the group (for the creator, the creation); nothing below that change's
// generation is ever applied. Once compacted it is Snapshot, the roster the
// device had merged at the snapshot's generation, with Vouchers, the authors
// of the changes counted up to it; no change at or below that generation
// applies any more.
type GroupStart struct {
	Change   wire.LogicalID
	Snapshot *Roster
	Vouchers []string
}

// StartGeneration is the generation of the start: the snapshot's, or the
// start change's among changes (0 when it is not there).
func (s GroupStart) StartGeneration(changes []RosterChange) uint64 {
	if s.Snapshot != nil {
		return s.Snapshot.Generation
	}
	for _, c := range changes {
		if c.ID == s.Change {
			return c.Generation
		}
	}
	return 0
}

// MergeRoster folds a set of roster changes, from a device's start, into
// the roster at generation upTo (0: as far as the changes reach). It is
// pure and depends only on the start and the set: the order of changes does
// not matter, and a change repeated counts once. The rules (docs/protocol.md,
// "The merge rule"):
//
//  1. The fold starts at the start. From a snapshot, the roster is the
//     snapshot. From the change that added this device (the adder's change,
//     at generation s), it is the roster that change carries, joined by the
//     other changes at s whose author is an admin of that roster (their
//     carried rosters added, their removes applied). A start change whose
//     author is not an admin of the roster it carries starts nothing.
//     Changes below s (or at and below a snapshot) never apply.
//  2. Each later generation g applies only if some change names it; the
//     first missing generation stops the fold, and changes past it are
//     returned as held, to be merged when the gap fills.
//  3. At g, a change counts when its author is an admin of the roster at
//     g-1 as this fold computed it, or when it only removes its author, a
//     member at g-1 (leaving). Nothing a change carries about itself (its
//     author's admin flag, its roster) gives it authority. A change that
//     does not count does nothing, its removes included.
//  4. The counted changes at g apply together to the roster at g-1, in the
//     order (author, change ID): an add adds a member unless any counted
//     change at g removes it (remove beats add), an admin op names a member
//     admin when it is a member after the adds, and removes apply last. The
//     name is the last counted change's.
//  5. A generation whose changes all fail rule 3 stops the fold like a gap:
//     an admin's change for it can still arrive.
//  6. No roster holds more than wire.MaxGroupMembers members: when the
//     counted changes at a generation (or at the start) would make more,
//     the last of them in (author, change ID) order stop counting until the
//     roster fits; the start change itself always counts.
func MergeRoster(start GroupStart, changes []RosterChange, upTo uint64) (r Roster, held []RosterChange) {
	f := foldRoster(start, changes, upTo, nil)
	return f.roster, f.held
}

// rosterFold is what a fold computed: the roster it reached, the changes
// held past it, and the authors of the changes it counted.
type rosterFold struct {
	roster   Roster
	held     []RosterChange
	vouchers map[string]bool
	byGen    map[uint64][]RosterChange
}

// foldRoster is MergeRoster's fold; visit, when set, sees the roster at
// every generation the fold reaches, from the start on.
func foldRoster(start GroupStart, changes []RosterChange, upTo uint64, visit func(Roster)) rosterFold {
	f := rosterFold{vouchers: make(map[string]bool), byGen: make(map[uint64][]RosterChange)}
	seen := make(map[wire.LogicalID]bool)
	for _, c := range changes {
		if c.Generation == 0 || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		f.byGen[c.Generation] = append(f.byGen[c.Generation], c)
	}
	for _, cs := range f.byGen {
		sortChanges(cs)
	}
	var r Roster
	switch {
	case start.Snapshot != nil:
		r = *start.Snapshot
		for _, a := range start.Vouchers {
			f.vouchers[a] = true
		}
	default:
		var ok bool
		if r, ok = startRoster(start.Change, f.byGen, f.vouchers); !ok {
			return f
		}
	}
	if upTo != 0 && r.Generation > upTo {
		// Asked for a generation below the start: the start is the oldest
		// roster this device can tell.
		f.roster = r
		return f
	}
	if visit != nil {
		visit(r)
	}
	g := r.Generation + 1
	for ; upTo == 0 || g <= upTo; g++ {
		cs, ok := f.byGen[g]
		if !ok {
			break
		}
		next, counted := applyGeneration(r, cs, g)
		if len(counted) == 0 {
			break
		}
		for _, c := range counted {
			f.vouchers[c.Author] = true
		}
		r = next
		if visit != nil {
			visit(r)
		}
	}
	for gen, cs := range f.byGen {
		if gen >= g && (upTo == 0 || gen <= upTo) {
			f.held = append(f.held, cs...)
		}
	}
	sortChanges(f.held)
	f.roster = r
	return f
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

// startRoster is rule 1 from the change that added this device: the
// roster at its generation, and whether there is one.
func startRoster(id wire.LogicalID, byGen map[uint64][]RosterChange, vouchers map[string]bool) (Roster, bool) {
	for _, cs := range byGen {
		for _, c := range cs {
			if c.ID == id {
				r, counted := StartRoster(c, cs)
				if len(counted) == 0 {
					return Roster{}, false
				}
				for _, cc := range counted {
					vouchers[cc.Author] = true
				}
				return r, true
			}
		}
	}
	return Roster{}, false
}

// StartRoster is the roster a device added by adder starts from (rule 1):
// the roster adder carries, joined by the changes of atStart (the changes
// at adder's generation) whose author is an admin of it, and the changes
// that counted (none when adder's author is not an admin of its own
// roster).
func StartRoster(adder RosterChange, atStart []RosterChange) (Roster, []RosterChange) {
	base := Roster{Members: adder.Members}
	if !base.IsAdmin(adder.Author) {
		return Roster{}, nil
	}
	counted := []RosterChange{adder}
	for _, c := range atStart {
		if c.ID != adder.ID && c.Generation == adder.Generation && (base.IsAdmin(c.Author) || (base.Has(c.Author) && onlyLeaves(c))) {
			counted = append(counted, c)
		}
	}
	sortChanges(counted)
	for {
		r := joinRosters(adder, counted)
		if len(r.Members) <= wire.MaxGroupMembers || len(counted) == 1 {
			return r, counted
		}
		counted = dropLastBut(counted, adder.ID)
	}
}

// joinRosters is the start's roster from the counted changes: the union of
// the rosters they carry and of their adds and admin ops, less what they
// remove. The name is the adder's.
func joinRosters(adder RosterChange, counted []RosterChange) Roster {
	removed := removedBy(counted)
	member := make(map[string]bool)
	admin := make(map[string]bool)
	for _, c := range counted {
		for _, m := range c.Members {
			member[m.Address] = true
			admin[m.Address] = admin[m.Address] || m.Admin
		}
		for _, op := range c.Ops {
			switch op.Op {
			case wire.RosterAdd:
				member[op.Address] = true
			case wire.RosterAdmin:
				admin[op.Address] = true
			}
		}
	}
	r := Roster{Generation: adder.Generation, Name: adder.Name}
	for a := range member {
		if !removed[a] {
			r.Members = append(r.Members, wire.RosterMember{Address: a, Admin: admin[a]})
		}
	}
	sortMembers(r.Members)
	return r
}

// dropLastBut removes the last change of counted that is not keep.
func dropLastBut(counted []RosterChange, keep wire.LogicalID) []RosterChange {
	for i := len(counted) - 1; i >= 0; i-- {
		if counted[i].ID != keep {
			return append(counted[:i:i], counted[i+1:]...)
		}
	}
	return counted
}

// applyGeneration is rules 3, 4 and 6: the counted changes at g applied to
// prev, and which changes counted (none: the generation does not apply).
func applyGeneration(prev Roster, cs []RosterChange, g uint64) (Roster, []RosterChange) {
	var counted []RosterChange
	for _, c := range cs {
		if prev.IsAdmin(c.Author) || (prev.Has(c.Author) && onlyLeaves(c)) {
			counted = append(counted, c)
		}
	}
	for len(counted) > 0 {
		r := applyCounted(prev, counted, g)
		if len(r.Members) <= wire.MaxGroupMembers {
			return r, counted
		}
		counted = counted[:len(counted)-1]
	}
	return prev, nil
}

// applyCounted is rule 4: counted (in order) applied to prev at g.
func applyCounted(prev Roster, counted []RosterChange, g uint64) Roster {
	removed := removedBy(counted)
	member := make(map[string]bool, len(prev.Members))
	admin := make(map[string]bool, len(prev.Members))
	for _, m := range prev.Members {
		member[m.Address], admin[m.Address] = true, m.Admin
	}
	name := prev.Name
	for _, c := range counted {
		name = c.Name
		for _, op := range c.Ops {
			if op.Op == wire.RosterAdd && !removed[op.Address] {
				member[op.Address] = true
			}
		}
	}
	for _, c := range counted {
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
	return r
}

// removedBy collects the addresses the changes remove.
func removedBy(cs []RosterChange) map[string]bool {
	removed := make(map[string]bool)
	for _, c := range cs {
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

// SenderVouch is what the device list this device holds for a group
// frame's sender's person says of the sender (the caller computes it; see
// vouchSender).
type SenderVouch uint8

// The vouches, from the held list.
const (
	// VouchNoList: no list is held for the sender's person: the sender
	// must itself be an entry of the roster (the rule before lists).
	VouchNoList SenderVouch = iota
	// VouchListed: the list names the sender active with the identity its
	// session holds.
	VouchListed
	// VouchUnlisted: the list does not name the sender at all (a device
	// linked after the list held here): its newer list is asked for.
	VouchUnlisted
	// VouchRefused: the list names the sender revoked, or with other keys
	// (a stranger registered under a listed address).
	VouchRefused
	// VouchAsking: no list is held for the sender's person, the sender is
	// no entry of the roster but its person is a member, and the relay
	// keeps lists: the person's list is asked for (once per connection)
	// before the sender is judged, since refusing would end the lane of
	// a device linked to a member for good.
	VouchAsking
)

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
	// Vouch is what the list held for the sender's person says of it.
	Vouch SenderVouch
	// HeldFor is how long the message has been staged.
	HeldFor time.Duration
}

// DecideGroupMessage applies the rules for a received group message (and
// a chain announcement, judged as one) in order. It is pure; the caller
// does what it says in one receive transaction. Members are persons
// (docs/protocol.md, "Groups across a person's devices"): a person is a
// member when an entry of the roster is a device of theirs.
//
//  1. an unknown group, or a generation above the merged one: hold (a
//     message from a member just added can overtake the admin's roster
//     frame, since FIFO holds per pair only), unless it is more than
//     MaxGenerationsAhead past the merged generation or was held for
//     MaxGroupHold already: drop;
//  2. the roster at the message's generation omits the sender's person or
//     this device's person: refuse with not_a_member. A later generation
//     that removed the sender does not refuse a message sent while it was
//     a member;
//  3. the list held for the sender's person names it revoked or with other
//     keys (VouchRefused), or no list is held and the sender is not itself
//     an entry: refuse with not_a_member;
//  4. the list held does not name the sender (VouchUnlisted, a device
//     linked after it), or no list is held and it is being asked for
//     (VouchAsking): hold while the list is fetched, drop after
//     MaxGroupHold; refusing would end its lane for good;
//  5. otherwise accept.
func DecideGroupMessage(in GroupMessageInput) GroupVerdict {
	switch {
	case !in.Known || in.Generation > in.Merged:
		if in.HeldFor > MaxGroupHold || in.Generation > in.Merged+MaxGenerationsAhead {
			return GroupDrop
		}
		return GroupHold
	case !in.AtMessage.HasUser(userOf(in.Sender)) || !in.AtMessage.HasUser(userOf(in.Self)):
		return GroupRefuse
	case in.Vouch == VouchRefused, in.Vouch == VouchNoList && !in.AtMessage.Has(in.Sender):
		return GroupRefuse
	case in.Vouch == VouchUnlisted, in.Vouch == VouchAsking:
		if in.HeldFor > MaxGroupHold {
			return GroupDrop
		}
		return GroupHold
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

// DeviceLists are the device lists a device holds, by user: each peer
// person's held list (PeerAccount) and, under this person's own user, the
// account's list. A user missing from it has no list held here.
type DeviceLists map[string]wire.DeviceList

// devicesOf returns the devices of user's person that group lanes go to:
// the active devices of the list held for them, else their entries in
// the rosters given.
func devicesOf(user string, lists DeviceLists, rs ...Roster) []string {
	if l, ok := lists[user]; ok {
		var out []string
		for _, a := range ActiveAddresses(l) {
			out = append(out, a.String())
		}
		return out
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.entriesOf(user)...)
	}
	return out
}

// personDevices returns every device of the member persons of rs, self
// excluded, sorted and each once.
func personDevices(self string, lists DeviceLists, rs ...Roster) []string {
	users := make(map[string]bool)
	for _, r := range rs {
		for _, m := range r.Members {
			users[userOf(m.Address)] = true
		}
	}
	set := make(map[string]bool)
	for u := range users {
		for _, d := range devicesOf(u, lists, rs...) {
			set[d] = true
		}
	}
	delete(set, self)
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// LaneRecipients returns the lanes of a group message sent at roster r by
// self: every active device of every member person but self (the devices
// of the list held for the person, else the person's entries; for self's
// own person, the account's list). A member added later is in no roster a
// message names, so it gets nothing sent before it joined; a device its
// person's list revokes gets no lane.
func LaneRecipients(r Roster, self string, lists DeviceLists) []string {
	return personDevices(self, lists, r)
}

// RosterRecipients returns who receives a roster change: every device of
// every member person of the new roster and of everyone the old roster
// had that the new one does not (removed members learn that they were
// removed), self excluded.
func RosterRecipients(old, next Roster, self string, lists DeviceLists) []string {
	return personDevices(self, lists, old, next)
}

// RemovedLanes returns the devices of the persons old has and next omits:
// their pending lanes end as removed. A person with another entry left in
// next is still a member, and so are all of their devices.
func RemovedLanes(old, next Roster, lists DeviceLists) []string {
	set := make(map[string]bool)
	for _, m := range old.Members {
		u := userOf(m.Address)
		if next.HasUser(u) {
			continue
		}
		set[m.Address] = true
		for _, d := range devicesOf(u, lists, old) {
			set[d] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// LegacyStart is the start of a group kept from before starts were
// recorded: the change at the lowest generation whose author is an admin of
// the roster it carries (the first in (author, change ID) order), as the
// merge once began.
func LegacyStart(changes []RosterChange) GroupStart {
	cs := append([]RosterChange(nil), changes...)
	sortChanges(cs)
	for _, c := range cs {
		if (Roster{Members: c.Members}).IsAdmin(c.Author) {
			return GroupStart{Change: c.ID}
		}
	}
	return GroupStart{}
}
