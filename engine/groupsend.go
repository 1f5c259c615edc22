package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

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
)

// GroupSendResult is the outcome of a group send or a roster change: the
// logical ID and the lanes that stay unsent (no session could be set up, or
// the hand-off failed); they are pending and a retry sends them.
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
	res, err := c.changeRoster(ctx, gid, GroupInfo{ID: gid, Name: name}, ops, true)
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
	return c.changeRoster(ctx, id, g, ops, false)
}

func (c *Client) changeRoster(ctx context.Context, gid wire.GroupID, g GroupInfo, ops []wire.RosterChange, create bool) (GroupSendResult, error) {
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
	recipients, err := parseAddresses(RosterRecipients(old, next, self))
	if err != nil {
		return GroupSendResult{}, err
	}
	removed, err := parseAddresses(RemovedLanes(old, next))
	if err != nil {
		return GroupSendResult{}, err
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	work := make(map[Address]*peerState)
	lanes, err := c.prepareLanes(ctx, work, "roster-change", recipients, frame)
	if err != nil {
		return GroupSendResult{}, err
	}
	plan := RosterUpdate{Group: gid, Change: change, Frame: frame, At: c.cfg.Now(), Lanes: lanes, Removed: removed, Start: start, Compact: compact}
	return c.applyLanes(ctx, work, plan, change.ID, lanes)
}

// SendGroup sends a message to every other member of the group's current
// roster: one logical ID, one lane per member, all stored in one
// transaction. Members without a session get a pending lane.
func (c *Client) SendGroup(ctx context.Context, id wire.GroupID, body []byte) (GroupSendResult, error) {
	return c.sendGroup(ctx, id, nil, wire.ContentText, body)
}

// sendGroup is SendGroup of any content, with the logical ID chosen by the
// caller when chosen is set (a file's, recorded before its upload).
func (c *Client) sendGroup(ctx context.Context, id wire.GroupID, chosen *wire.LogicalID, content wire.ContentType, body []byte) (GroupSendResult, error) {
	g, err := c.Group(ctx, id)
	if err != nil {
		return GroupSendResult{}, err
	}
	if !g.Roster.Has(c.self.String()) {
		return GroupSendResult{}, fmt.Errorf("send to group %x: %w", id[:], ErrNotMember)
	}
	var mid wire.LogicalID
	if chosen != nil {
		mid = *chosen
	} else if _, err := c.cfg.Random.Read(mid[:]); err != nil {
		return GroupSendResult{}, fmt.Errorf("send to group: logical id: %w", err)
	}
	frame, err := wire.EncodeGroupMessage(wire.GroupMessage{ID: mid, Group: id, Generation: g.Roster.Generation, Content: content, Body: body})
	if err != nil {
		return GroupSendResult{}, fmt.Errorf("send to group %x: %w", id[:], err)
	}
	recipients, err := parseAddresses(LaneRecipients(g.Roster, c.self.String()))
	if err != nil {
		return GroupSendResult{}, err
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	work := make(map[Address]*peerState)
	lanes, err := c.prepareLanes(ctx, work, "group-send", recipients, frame)
	if err != nil {
		return GroupSendResult{}, err
	}
	if m, ok := FileOf(content, body); ok {
		body = fileHistoryBody(m)
	}
	plan := GroupSend{Sender: c.self, Group: id, ID: mid, Frame: frame, Body: body, At: c.cfg.Now(), Lanes: lanes}
	return c.applyLanes(ctx, work, plan, mid, lanes)
}

// prepareLanes encrypts frame for each recipient on the working state. A
// recipient whose session cannot be set up gets a lane without an envelope.
func (c *Client) prepareLanes(ctx context.Context, work map[Address]*peerState, kind string, recipients []Address, frame []byte) ([]GroupLane, error) {
	if len(recipients) > MaxLanesPerTransaction {
		return nil, fmt.Errorf("%s: %d lanes: %w", kind, len(recipients), wire.ErrMessageTooLarge)
	}
	lanes := make([]GroupLane, 0, len(recipients))
	for _, peer := range recipients {
		shared, err := c.working(ctx, work, peer)
		if err != nil {
			return nil, err
		}
		ps := *shared
		pin, err := c.ensureSession(ctx, &ps, peer)
		if err != nil {
			lanes = append(lanes, GroupLane{Recipient: peer})
			continue
		}
		if err := c.fail(kind, "before-crypto"); err != nil {
			return nil, err
		}
		cand := ps.session.Clone()
		env, err := c.seal(cand, peer, frame)
		if err != nil {
			return nil, err
		}
		if err := c.fail(kind, "after-crypto"); err != nil {
			return nil, err
		}
		sw, err := sessionWrite(peer, ps.version, cand)
		if err != nil {
			return nil, err
		}
		ps.session, ps.version = cand, ps.version+1
		if pin != nil {
			ps.pinned = pin
		}
		*shared = ps
		lanes = append(lanes, GroupLane{Recipient: peer, Session: &sw, Pin: pin, Out: &Outgoing{Envelope: env, Owner: frameID(frame)}})
	}
	return lanes, nil
}

// applyLanes applies a group plan and hands its envelopes off.
func (c *Client) applyLanes(ctx context.Context, work map[Address]*peerState, plan Plan, id wire.LogicalID, lanes []GroupLane) (GroupSendResult, error) {
	receipts, err := c.applyWork(ctx, work, []Plan{plan})
	if err != nil {
		return GroupSendResult{}, err
	}
	if err := c.fail(plan.Kind(), "after-swap"); err != nil {
		return GroupSendResult{}, err
	}
	res := GroupSendResult{ID: id}
	var envs []wire.Envelope
	var ids []wire.LogicalID
	var sent []Address
	for _, l := range lanes {
		if l.Out == nil {
			res.Unsent = append(res.Unsent, l.Recipient)
			continue
		}
		envs = append(envs, l.Out.Envelope)
		ids = append(ids, id)
		sent = append(sent, l.Recipient)
	}
	c.noteSent(sent)
	errs := c.handOffMessages(ctx, plan.Kind(), envs, ids)
	for k, peer := range sent {
		if errs[k] != nil {
			res.Unsent = append(res.Unsent, peer)
			c.emit(Event{Kind: EventNotSent, At: c.cfg.Now(), Peer: peer, ID: id, Err: errs[k], marker: receipts[0].Marker})
			continue
		}
		c.emit(Event{Kind: EventSent, At: c.cfg.Now(), Peer: peer, ID: id, marker: receipts[0].Marker})
	}
	return res, nil
}

// frameID returns the logical ID of an encoded frame (bytes 2..18 of every
// kind of version 0x01).
func frameID(frame []byte) (id wire.LogicalID) {
	if len(frame) >= 18 {
		copy(id[:], frame[2:18])
	}
	return id
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
// per change with only the missing lanes (the change's log row is already
// there; its frame re-encodes to the same bytes). Then it restates the
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
		if err := c.abandonStrandedLanes(ctx, gs, g); err != nil {
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
	var missing []string
	for _, m := range at.Members {
		if m.Address != c.self.String() && !have[m.Address] {
			missing = append(missing, m.Address)
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
	work := make(map[Address]*peerState)
	newLanes, err := c.prepareLanes(ctx, work, "roster-change", recipients, frame)
	if err != nil {
		return err
	}
	_, err = c.applyLanes(ctx, work, RosterUpdate{Group: g.ID, Change: own, Frame: frame, At: c.cfg.Now(), Lanes: newLanes}, own.ID, newLanes)
	return err
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
	}...)
}
