package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Group errors, matched with errors.Is.
var (
	// ErrUnknownGroup means no group with that ID or name is kept here.
	ErrUnknownGroup = errors.New("unknown group")
	// ErrNotAdmin means a roster change by a device that is not an admin.
	ErrNotAdmin = errors.New("not an admin of the group")
	// ErrNotMember means this device is not in the group's roster.
	ErrNotMember = errors.New("not a member of the group")
	// ErrGroupHoldExpired means a group message waited for its roster too
	// long, or named a generation too far ahead: it was dropped.
	ErrGroupHoldExpired = errors.New("group message held too long for its roster")
	// ErrNotRosterEntry means a roster change on a device that is no entry
	// of the group's roster: a device linked to a member person may send
	// to the group, but only the person's entry devices change its roster.
	ErrNotRosterEntry = errors.New("this device is not in the group's roster; change the roster from the device that is")
)

// GroupSendResult is the outcome of a group send or a roster change: the
// logical ID and the lanes the relay did not take (no session could be set
// up, the relay was out of reach, the hand-off failed; after EnqueueGroup,
// every lane): they are pending, and the pump or a retry sends them.
type GroupSendResult struct {
	ID     wire.LogicalID
	Unsent []Address
}

// Group returns a group this device keeps.
func (c *Client) Group(ctx context.Context, id wire.GroupID) (GroupInfo, error) {
	return c.store.Group(ctx, id)
}

// Groups lists the groups this device keeps.
func (c *Client) Groups(ctx context.Context) ([]GroupInfo, error) {
	return c.store.Groups(ctx)
}

// GroupHistory pages a group's history, oldest first.
func (c *Client) GroupHistory(ctx context.Context, id wire.GroupID, after int64, limit int) ([]GroupEntry, error) {
	return c.store.GroupHistory(ctx, id, after, limit)
}

// CreateGroup makes a group with this device as its first admin and the
// members, and sends the creation to each of them in one transaction.
func (c *Client) CreateGroup(ctx context.Context, name string, members []Address) (GroupInfo, GroupSendResult, error) {
	return c.createGroup(ctx, name, members, true)
}

// createGroup is CreateGroup; without pump, the creation is stored and
// its lanes left pending for the pump (the failpoint matrix's target).
func (c *Client) createGroup(ctx context.Context, name string, members []Address, pump bool) (GroupInfo, GroupSendResult, error) {
	if err := wire.CheckGroupName(name); err != nil {
		return GroupInfo{}, GroupSendResult{}, fmt.Errorf("create group: %w", err)
	}
	var gid wire.GroupID
	if _, err := c.cfg.Random.Read(gid[:]); err != nil {
		return GroupInfo{}, GroupSendResult{}, fmt.Errorf("create group: id: %w", err)
	}
	if all, err := c.store.Groups(ctx); err != nil {
		return GroupInfo{}, GroupSendResult{}, err
	} else if len(all) >= MaxGroupsPerProfile {
		return GroupInfo{}, GroupSendResult{}, fmt.Errorf("create group: %d groups already: %w", len(all), wire.ErrMessageTooLarge)
	}
	var ops []wire.RosterChange
	for _, m := range members {
		if m != c.self {
			ops = append(ops, wire.RosterChange{Op: wire.RosterAdd, Address: m.String()})
		}
	}
	if pump {
		c.refreshMemberLists(ctx, ops)
	}
	res, err := c.changeRoster(ctx, gid, GroupInfo{ID: gid, Name: name}, ops, true, pump)
	if err != nil {
		return GroupInfo{}, GroupSendResult{}, err
	}
	g, err := c.Group(ctx, gid)
	return g, res, err
}

// ChangeRoster makes one roster change to a group this device administers
// (or, with only its own removal, leaves) and sends it to every member of
// the new roster and everyone it removes, in one transaction.
func (c *Client) ChangeRoster(ctx context.Context, id wire.GroupID, ops []wire.RosterChange) (GroupSendResult, error) {
	g, err := c.Group(ctx, id)
	if err != nil {
		return GroupSendResult{}, err
	}
	c.refreshMemberLists(ctx, ops)
	return c.changeRoster(ctx, id, g, ops, false, true)
}

// refreshMemberLists fetches, before a creation or a roster change that
// adds them, the lists of the added persons this device holds none for
// (RefreshPeerList: once per person and connection, nothing when the
// relay is out of reach or keeps no lists): the change then reaches every
// device of theirs, and a device linked to them starts the group from it.
// A refusal is reported, never returned: the change goes to the entries.
func (c *Client) refreshMemberLists(ctx context.Context, ops []wire.RosterChange) {
	for _, op := range ops {
		u := userOf(op.Address)
		if op.Op != wire.RosterAdd || u == "" || u == c.self.User {
			continue
		}
		if _, held, err := c.store.PeerAccount(ctx, u); err != nil || held {
			continue
		}
		if _, _, err := c.RefreshPeerList(ctx, u); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "peer-device-list", Err: err})
		}
	}
}

// changeRoster makes a roster change (or, with create, a group's creation)
// and stores it pending on its lanes in one transaction; with pump it then
// runs the pump's pass for those lanes and reports the ones the relay did
// not take.
func (c *Client) changeRoster(ctx context.Context, gid wire.GroupID, g GroupInfo, ops []wire.RosterChange, create, pump bool) (GroupSendResult, error) {
	self := c.self.String()
	ops = normalizeOps(ops)
	change := RosterChange{Author: self, Name: g.Name, Ops: ops}
	if _, err := c.cfg.Random.Read(change.ID[:]); err != nil {
		return GroupSendResult{}, fmt.Errorf("roster change: id: %w", err)
	}
	old := g.Roster
	var start, compact *GroupStart
	if create {
		change.Generation = 1
		change.Members = []wire.RosterMember{{Address: self, Admin: true}}
		for _, op := range ops {
			change.Members = append(change.Members, wire.RosterMember{Address: op.Address})
		}
		sortMembers(change.Members)
		start = &GroupStart{Change: change.ID}
	} else {
		if !old.Has(self) && old.HasUser(c.self.User) {
			own, err := c.groupLists(ctx, Roster{Members: []wire.RosterMember{{Address: self}}})
			if err != nil {
				return GroupSendResult{}, err
			}
			return GroupSendResult{}, fmt.Errorf("change group %x: %w: %s", gid[:], ErrNotRosterEntry, entryToUse(old, c.self.User, own))
		}
		if !old.IsAdmin(self) && !(old.Has(self) && onlyLeaves(change)) {
			return GroupSendResult{}, fmt.Errorf("change group %x: %w", gid[:], ErrNotAdmin)
		}
		change.Generation = old.Generation + 1
		change.Parent = RosterDigest(gid, old)
		all := append(append([]RosterChange(nil), g.Changes...), change)
		next, _ := MergeRoster(g.Start, all, change.Generation)
		if next.Generation != change.Generation {
			return GroupSendResult{}, fmt.Errorf("change group %x: more than %d members: %w", gid[:], wire.MaxGroupMembers, wire.ErrMessageTooLarge)
		}
		change.Members = next.Members
		compact = compaction(g.Start, all, next)
	}
	if len(change.Members) > wire.MaxGroupMembers {
		return GroupSendResult{}, fmt.Errorf("change group %x: %d members: %w", gid[:], len(change.Members), wire.ErrMessageTooLarge)
	}
	frame, err := c.signRoster(gid, &change)
	if err != nil {
		return GroupSendResult{}, fmt.Errorf("change group %x: %w", gid[:], err)
	}
	next := Roster{Generation: change.Generation, Name: change.Name, Members: change.Members}
	// Stored and pumped under pumpMu: no other pass of the pump takes
	// these lanes first, so that the result says what became of each.
	// The lists are read under sendMu, as a group message's are: a list
	// held meanwhile (takePeerList, the own list) comes wholly before or
	// after the change, never between its reading and its storing.
	c.pumpMu.Lock()
	defer c.pumpMu.Unlock()
	recipients, err := func() ([]Address, error) {
		c.sendMu.Lock()
		defer c.sendMu.Unlock()
		lists, err := c.groupLists(ctx, old, next)
		if err != nil {
			return nil, err
		}
		recipients, err := parseAddresses(RosterRecipients(old, next, self, lists))
		if err != nil {
			return nil, err
		}
		removed, err := parseAddresses(RemovedLanes(old, next, lists))
		if err != nil {
			return nil, err
		}
		lanes, err := pendingLanes("roster-change", recipients)
		if err != nil {
			return nil, err
		}
		plan := RosterUpdate{Group: gid, Change: change, Frame: frame, At: c.cfg.Now(), Lanes: lanes, Removed: removed, Start: start, Compact: compact,
			Left: !next.HasUser(c.self.User)}
		return recipients, c.storeLanes(ctx, plan, change.ID, recipients)
	}()
	if err != nil {
		return GroupSendResult{}, err
	}
	if !pump {
		c.wantPump()
		return GroupSendResult{ID: change.ID, Unsent: recipients}, nil
	}
	return GroupSendResult{ID: change.ID, Unsent: c.pumpLanes(ctx, change.ID, recipients)}, nil
}

// SendGroup sends a message to every other member of the group's current
// roster: one logical ID, one lane per member. The message and every lane
// are stored pending in one transaction first, not yet encrypted, with no
// network in the way (EnqueueGroup); then the pump encrypts each lane on
// its member's session (starting one where there is none) and hands it off,
// after whatever was pending to that member before. Unsent names the lanes
// the relay did not take: they stay pending and the pump or a retry sends
// them. An error means nothing was stored.
func (c *Client) SendGroup(ctx context.Context, id wire.GroupID, body []byte) (GroupSendResult, error) {
	return c.sendGroup(ctx, id, nil, wire.ContentText, body)
}

// EnqueueGroup stores a message to the group as SendGroup does and
// returns: nothing goes to the network here. The loop's pump (Run), or a
// call of Pump, encrypts and hands off its lanes. The result's Unsent names
// every lane: none is handed off yet.
func (c *Client) EnqueueGroup(ctx context.Context, id wire.GroupID, body []byte) (GroupSendResult, error) {
	mid, lanes, err := c.storeGroup(ctx, id, nil, wire.ContentText, body)
	if err != nil {
		return GroupSendResult{}, err
	}
	c.wantPump()
	return GroupSendResult{ID: mid, Unsent: lanes}, nil
}

// sendGroup is SendGroup of any content, with the logical ID chosen by the
// caller when chosen is set (a file's, recorded before its upload).
func (c *Client) sendGroup(ctx context.Context, id wire.GroupID, chosen *wire.LogicalID, content wire.ContentType, body []byte) (GroupSendResult, error) {
	// Stored and pumped under pumpMu: no other pass of the pump takes
	// these lanes first, so that the result says what became of each.
	c.pumpMu.Lock()
	defer c.pumpMu.Unlock()
	mid, lanes, err := c.storeGroup(ctx, id, chosen, content, body)
	if err != nil {
		return GroupSendResult{}, err
	}
	return GroupSendResult{ID: mid, Unsent: c.pumpGroupLanes(ctx, mid, lanes)}, nil
}

// pumpGroupLanes hands off the chain lanes of message id (flushChains) and
// runs the pump's pass for the others; it returns the members whose lane
// the relay did not take.
func (c *Client) pumpGroupLanes(ctx context.Context, id wire.LogicalID, recipients []Address) []Address {
	chained := c.flushChains(ctx)[id]
	var unsent, rest []Address
	for _, r := range recipients {
		err, ok := chained[r]
		switch {
		case !ok:
			rest = append(rest, r)
		case err != nil:
			unsent = append(unsent, r)
		}
	}
	return append(unsent, c.pumpLanes(ctx, id, rest)...)
}

// storeGroup stores a group message with a pending lane to every other
// member of the roster, in one transaction (plan group-send), and returns
// its logical ID and the lanes' recipients. The roster is read and the plan
// applied under sendMu, so that a roster change received meanwhile comes
// before or after the whole of it; nothing in it touches the network.
func (c *Client) storeGroup(ctx context.Context, id wire.GroupID, chosen *wire.LogicalID, content wire.ContentType, body []byte) (wire.LogicalID, []Address, error) {
	return c.storeGroupWith(ctx, id, chosen, content, body, nil)
}

// storeGroupWith is storeGroup; for an action, apply makes what the plan
// applies here with it (from the message's ID and time).
func (c *Client) storeGroupWith(ctx context.Context, id wire.GroupID, chosen *wire.LogicalID, content wire.ContentType, body []byte,
	apply func(wire.LogicalID, time.Time) *ActionApply) (wire.LogicalID, []Address, error) {
	var mid wire.LogicalID
	if chosen != nil {
		mid = *chosen
	} else if _, err := c.cfg.Random.Read(mid[:]); err != nil {
		return mid, nil, fmt.Errorf("send to group: logical id: %w", err)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	g, err := c.Group(ctx, id)
	if err != nil {
		return mid, nil, err
	}
	if !g.Roster.HasUser(c.self.User) {
		return mid, nil, fmt.Errorf("send to group %x: %w", id[:], ErrNotMember)
	}
	frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: mid, Group: id, Generation: g.Roster.Generation, Content: content, Body: body})
	if err != nil {
		return mid, nil, fmt.Errorf("send to group %x: %w", id[:], err)
	}
	lists, err := c.groupLists(ctx, g.Roster)
	if err != nil {
		return mid, nil, err
	}
	c.askMissingLists(g.Roster, lists)
	recipients, err := parseAddresses(LaneRecipients(g.Roster, c.self.String(), lists))
	if err != nil {
		return mid, nil, err
	}
	lanes, err := pendingLanes("group-send", recipients)
	if err != nil {
		return mid, nil, err
	}
	at := c.cfg.Now()
	plan := GroupSend{Sender: c.self, Group: id, ID: mid, Frame: frame, Body: body, At: at, Lanes: lanes}
	if m, ok := FileOf(content, body); ok {
		plan.Body = fileHistoryBody(m)
	}
	if apply != nil {
		plan.Action = apply(mid, at)
		plan.Body = actionHistoryBody(wire.Action{Content: plan.Action.Content, Text: plan.Action.Text})
	}
	part, err := c.prepareChainSend(ctx, g, mid, frame, plan.Lanes)
	if err != nil {
		return mid, nil, err
	}
	if part != nil {
		plan.Chain, plan.Announce = part.write, part.announce
	}
	if err := c.storeLanes(ctx, plan, mid, recipients); err != nil {
		return mid, nil, err
	}
	if part != nil {
		c.queueChain(part.batch)
	}
	return mid, recipients, nil
}

// pendingLanes makes a lane per recipient, pending and not yet encrypted:
// the pump encrypts each on its member's session and hands it off.
func pendingLanes(kind string, recipients []Address) ([]GroupLane, error) {
	if len(recipients) > MaxLanesPerTransaction {
		return nil, fmt.Errorf("%s: %d lanes, over %d: %w", kind, len(recipients), MaxLanesPerTransaction, wire.ErrMessageTooLarge)
	}
	lanes := make([]GroupLane, len(recipients))
	for i, peer := range recipients {
		lanes[i] = GroupLane{Recipient: peer}
	}
	return lanes, nil
}

// storeLanes applies a group plan (a group send or a roster change) whose
// lanes to recipients are pending and not yet encrypted, and reports each
// lane stored. It writes no session: callers hold sendMu only to order it
// with receive processing (roster changes).
func (c *Client) storeLanes(ctx context.Context, plan Plan, id wire.LogicalID, recipients []Address) error {
	if err := c.fail(plan.Kind(), "before-plan"); err != nil {
		return err
	}
	receipts, err := c.applyAll(ctx, []Plan{plan})
	if err != nil {
		return err
	}
	if err := c.fail(plan.Kind(), "after-swap"); err != nil {
		return err
	}
	now := c.cfg.Now()
	for _, peer := range recipients {
		c.emit(Event{Kind: EventStored, At: now, Peer: peer, ID: id, marker: receipts[0].Marker})
	}
	return nil
}

// pumpLanes runs the pump's pass for each lane's member and returns the
// members whose lane of message id the relay did not take (it stays
// pending). Callers hold pumpMu, taken before the lanes were stored: no
// other pass took them first.
func (c *Client) pumpLanes(ctx context.Context, id wire.LogicalID, recipients []Address) []Address {
	var unsent []Address
	for i, err := range c.pumpFor(ctx, id, recipients) {
		if err != nil {
			unsent = append(unsent, recipients[i])
		}
	}
	return unsent
}

// normalizeOps sorts operations by address and keeps the last for each
// address, as the roster frame wants them.
func normalizeOps(ops []wire.RosterChange) []wire.RosterChange {
	last := make(map[string]wire.RosterChange)
	for _, op := range ops {
		last[op.Address] = op
	}
	out := make([]wire.RosterChange, 0, len(last))
	for _, op := range last {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// askMissingLists notes, for the round to fetch (learnGroupLists), the
// member persons of r whose list this device does not hold: this send
// reaches their entries only, and the next one every device their list
// names.
func (c *Client) askMissingLists(r Roster, lists DeviceLists) {
	for _, m := range r.Members {
		if u := userOf(m.Address); u != c.self.User {
			if _, ok := lists[u]; !ok {
				c.wantPeerList(u)
			}
		}
	}
}

// entryToUse names the entry device of user's person in r that can change
// the roster: an admin one when there is one, else the first, among the
// entries the person's list held in lists names active (all of them when
// none is held); "an admin" when the list revokes every entry, since then
// only an admin can put this device in.
func entryToUse(r Roster, user string, lists DeviceLists) string {
	var entries []string
	l, held := lists[user]
	for _, e := range r.entriesOf(user) {
		a, err := ParseAddress(e)
		if held && (err != nil || !slices.Contains(ActiveAddresses(l), a)) {
			continue
		}
		entries = append(entries, e)
	}
	for _, e := range entries {
		if r.IsAdmin(e) {
			return e
		}
	}
	if len(entries) == 0 {
		return "every entry of this person's is revoked: ask an admin to add this device"
	}
	return entries[0]
}

func parseAddresses(as []string) ([]Address, error) {
	out := make([]Address, 0, len(as))
	for _, a := range as {
		p, err := ParseAddress(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformedState, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// forwardRosterChanges delivers this device's own roster changes to members
// that a concurrent change added: each change goes to every member of the
// merged roster at its generation, and a change made before its author knew
// of a concurrent add did not reach the member added. It runs after a page
// of receives brought roster changes, under the send mutex, one RosterUpdate
// per change with only the missing lanes, stored pending for the pump (the
// change's log row is already there; its frame re-encodes to the same
// bytes). Then it restates the
// roster at a generation whose newcomers start from a stale one
// (restateRosters), and, when the merge removed this device, it abandons its
// lanes that can no longer be answered (abandonStrandedLanes).
func (c *Client) forwardRosterChanges(ctx context.Context, results []ReceiveResult) error {
	gs := c.store
	done := make(map[wire.GroupID]bool)
	self := c.self.String()
	for _, r := range results {
		if r.Kind != ResultGroupChanged || r.Group == nil || done[*r.Group] {
			continue
		}
		done[*r.Group] = true
		g, err := gs.Group(ctx, *r.Group)
		if err != nil {
			return err
		}
		for _, own := range g.Changes {
			if own.Author != self || own.Generation > g.Roster.Generation {
				continue
			}
			if err := c.forwardChange(ctx, gs, g, own); err != nil {
				return err
			}
		}
		if err := c.restateRosters(ctx, g); err != nil {
			return err
		}
		if err := c.abandonStrandedLanes(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) forwardChange(ctx context.Context, gs GroupStore, g GroupInfo, own RosterChange) error {
	at := rosterAt(g, own.Generation)
	lanes, err := gs.Lanes(ctx, g.ID, own.ID)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(lanes))
	for _, l := range lanes {
		have[l.Recipient.String()] = true
	}
	lists, err := c.groupLists(ctx, at)
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range LaneRecipients(at, c.self.String(), lists) {
		if !have[d] {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	recipients, err := parseAddresses(missing)
	if err != nil {
		return err
	}
	var frame []byte
	if own.Signature == ([64]byte{}) {
		// Made before changes were signed: sign it now, as it stands.
		own.Parent = RosterDigest(g.ID, rosterAt(g, own.Generation-1))
		frame, err = c.signRoster(g.ID, &own)
	} else {
		frame, err = wire.EncodeSignedRoster(signedRosterOf(g.ID, own))
	}
	if err != nil {
		return err
	}
	newLanes, err := pendingLanes("roster-change", recipients)
	if err != nil {
		return err
	}
	// Stored pending: the pump encrypts and hands the lanes off, so that
	// receive processing (which runs this) waits on no bundle or relay.
	if err := c.storeLanes(ctx, RosterUpdate{Group: g.ID, Change: own, Frame: frame, At: c.cfg.Now(), Lanes: newLanes}, own.ID, recipients); err != nil {
		return err
	}
	c.wantLanesPumped()
	return nil
}

func init() {
	errorNames = append(errorNames, []struct {
		err  error
		name string
	}{
		{ErrUnknownGroup, "unknown_group"},
		{ErrNotAdmin, "not_an_admin"},
		{ErrNotMember, "not_a_member"},
		{ErrGroupHoldExpired, "group_hold_expired"},
		{ErrNotRosterEntry, "not_a_roster_entry"},
		{ErrChainUnknown, "chain_unknown"},
		{ErrChainMismatch, "chain_mismatch"},
		{ErrBeforeChainStart, "before_chain_start"},
		{ErrNeedChainUnknown, "need_chain_unknown"},
	}...)
}
