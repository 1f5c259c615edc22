package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/parley-chat/parley/wire"
)

// groupFrame decides what a received group frame does. A group message that
// DecideGroupMessage accepts comes back as an application frame with its
// group, to be delivered and deduplicated by (sender, ID) like any message;
// every other outcome is the row's verdict (done): a held message has no
// plan (its row stays staged), a refused one answers not_a_member, a roster
// change is recorded and acknowledged (or joins its sender's request), a
// not_a_member ends a lane.
func (c *Client) groupFrame(ctx context.Context, bs *batchState, in *incoming, op opening, kind wire.FrameKind) (wire.Frame, *wire.GroupID, *prepared, error) {
	gs := c.store
	switch kind {
	case wire.FrameGroupMessage:
		m, err := wire.DecodeGroupMessage(op.plaintext)
		if err != nil {
			p := in.drop(wire.LogicalID{}, err)
			return wire.Frame{}, nil, &p, nil
		}
		verdict, err := c.judgeGroupFrame(ctx, bs, in, op, m.Group, m.Generation)
		if err != nil {
			return wire.Frame{}, nil, nil, err
		}
		switch verdict {
		case GroupHold:
			p := in.hold()
			return wire.Frame{}, nil, &p, nil
		case GroupDrop:
			p := in.drop(m.ID, fmt.Errorf("group %x generation %d: %w", m.Group[:], m.Generation, ErrGroupHoldExpired))
			return wire.Frame{}, nil, &p, nil
		case GroupRefuse:
			p, err := c.refuseGroupMessage(bs, in, op, m)
			return wire.Frame{}, nil, &p, err
		}
		return wire.Frame{Kind: wire.FrameApplication, ID: m.ID, Body: m.Body}, &m.Group, nil, nil
	case wire.FrameRoster:
		// The unsigned layout of before signatures: nobody can check who
		// made it, so it changes nothing and is not acknowledged.
		p := in.drop(wire.LogicalID{}, fmt.Errorf("unsigned roster change: %w", ErrRosterUnverified))
		return wire.Frame{}, nil, &p, nil
	case wire.FrameSignedRoster:
		p, err := c.receiveRoster(ctx, bs, gs, in, op)
		return wire.Frame{}, nil, &p, err
	case wire.FrameChainAnnounce:
		if op.chain != nil {
			p := in.drop(wire.LogicalID{}, fmt.Errorf("chain announcement inside a chain message: %w", ErrChainMismatch))
			return wire.Frame{}, nil, &p, nil
		}
		p, err := c.receiveChainAnnounce(ctx, bs, in, op)
		return wire.Frame{}, nil, &p, err
	case wire.FrameNeedChain:
		if op.chain != nil {
			p := in.drop(wire.LogicalID{}, fmt.Errorf("need-chain request inside a chain message: %w", ErrChainMismatch))
			return wire.Frame{}, nil, &p, nil
		}
		p, err := c.receiveNeedChain(ctx, bs, in, op)
		return wire.Frame{}, nil, &p, err
	default:
		n, err := wire.DecodeNotAMember(op.plaintext)
		if err != nil {
			p := in.drop(wire.LogicalID{}, err)
			return wire.Frame{}, nil, &p, nil
		}
		res := ReceiveResult{Kind: ResultNotAMember, Sender: in.sender, ID: n.ID, Group: &n.Group, Generation: n.Generation}
		p, err := c.groupVerdict(bs, in, op, NotAMemberEffect{Group: n.Group, ID: n.ID}, nil, res)
		return wire.Frame{}, nil, &p, err
	}
}

// judgeGroupFrame decides a group message (or a chain announcement, judged
// as one) of group gid at generation gen from in's sender
// (DecideGroupMessage), with the vouch of the list held for the sender's
// person.
func (c *Client) judgeGroupFrame(ctx context.Context, bs *batchState, in *incoming, op opening, gid wire.GroupID, gen uint64) (GroupVerdict, error) {
	g, known, err := bs.group(ctx, c.store, gid)
	if err != nil {
		return 0, err
	}
	gm := GroupMessageInput{Known: known, Merged: g.Roster.Generation, Generation: gen, Sender: in.sender.String(), Self: c.self.String(),
		HeldFor: heldFor(in)}
	if known && gen <= g.Roster.Generation {
		gm.AtMessage = rosterAt(g, gen)
		if gm.Vouch, err = c.vouchSender(ctx, in.sender, senderKey(in, op)); err != nil {
			return 0, err
		}
		if gm.Vouch == VouchNoList && in.sender.User != c.self.User && !gm.AtMessage.Has(gm.Sender) &&
			gm.AtMessage.HasUser(in.sender.User) && c.wantPeerList(in.sender.User) {
			gm.Vouch = VouchAsking
		}
	}
	v := DecideGroupMessage(gm)
	if v == GroupHold && gm.Vouch == VouchUnlisted && in.sender.User == c.self.User {
		// A sibling linked since the account's list held here: the
		// round asks the relay for the later list (learnOwnList).
		c.loopMu.Lock()
		if c.ownUnlisted == nil {
			c.ownUnlisted = make(map[uint32]bool)
		}
		if len(c.ownUnlisted) < maxListChecks {
			c.ownUnlisted[in.sender.Device] = true
		}
		c.loopMu.Unlock()
	}
	return v, nil
}

// vouchSender is what the device list this device holds for sender's
// person says of sender with identity key: for another person the list
// held for them (PeerAccount), for this person's own devices the account's
// list.
func (c *Client) vouchSender(ctx context.Context, sender Address, key *IdentityKey) (SenderVouch, error) {
	var l wire.DeviceList
	if sender.User == c.self.User {
		a, err := LoadAccount(ctx, c.store)
		if errors.Is(err, ErrNoAccount) {
			return VouchNoList, nil
		} else if err != nil {
			return 0, err
		}
		l = a.List
	} else {
		held, ok, err := c.store.PeerAccount(ctx, sender.User)
		if err != nil {
			return 0, err
		}
		if !ok {
			return VouchNoList, nil
		}
		l = held.List
	}
	return vouchOf(l, sender, key), nil
}

// vouchOf is what list l says of device with identity key.
func vouchOf(l wire.DeviceList, device Address, key *IdentityKey) SenderVouch {
	if listedWith(l, device, key) {
		return VouchListed
	}
	if _, named := findEntry(&l, device.Device); named {
		return VouchRefused
	}
	return VouchUnlisted
}

// vouchedMember reports whether sender, with vouch v, is a member of r:
// its person is, and the list held vouches for it (or, with no list held,
// it is itself an entry).
func vouchedMember(r Roster, sender string, v SenderVouch) bool {
	return r.HasUser(userOf(sender)) && (v == VouchListed || v == VouchNoList && r.Has(sender))
}

// groupLists returns the device lists this device holds for the member
// persons of rs (DeviceLists): each peer person's held list, and this
// person's account list.
func (c *Client) groupLists(ctx context.Context, rs ...Roster) (DeviceLists, error) {
	lists := make(DeviceLists)
	seen := make(map[string]bool)
	for _, r := range rs {
		for _, m := range r.Members {
			u := userOf(m.Address)
			if seen[u] {
				continue
			}
			seen[u] = true
			if u == c.self.User {
				a, err := LoadAccount(ctx, c.store)
				if errors.Is(err, ErrNoAccount) {
					continue
				} else if err != nil {
					return nil, err
				}
				lists[u] = a.List
				continue
			}
			held, ok, err := c.store.PeerAccount(ctx, u)
			if err != nil {
				return nil, err
			}
			if ok {
				lists[u] = held.List
			}
		}
	}
	return lists, nil
}

// batchGroup is a group as the rows a batch prepared so far leave it: later
// rows of the batch must see the roster changes of earlier ones, which
// commit together with them.
type batchGroup struct {
	info  GroupInfo
	known bool
}

// group returns a group as this batch sees it, reading it once.
func (bs *batchState) group(ctx context.Context, gs GroupStore, id wire.GroupID) (GroupInfo, bool, error) {
	if g, ok := bs.groupsSeen[id]; ok {
		return g.info, g.known, nil
	}
	g, known, err := lookupGroup(ctx, gs, id)
	if err != nil {
		return GroupInfo{}, false, err
	}
	bs.groupsSeen[id] = &batchGroup{info: g, known: known}
	return g, known, nil
}

// changed records that a prepared plan of the batch makes group g's log
// changes, merged to roster, compacted to compact when that is set.
func (bs *batchState) changed(g GroupInfo, changes []RosterChange, roster Roster, compact *GroupStart) {
	g.Changes, g.Roster = changes, roster
	if compact != nil {
		g.Start = *compact
		kept := g.Changes[:0:0]
		for _, c := range changes {
			if c.Generation > compact.Snapshot.Generation {
				kept = append(kept, c)
			}
		}
		g.Changes = kept
	}
	bs.groupsSeen[g.ID] = &batchGroup{info: g, known: true}
}

// heldFor is how long a row has been staged (0 when its time is unknown).
func heldFor(in *incoming) time.Duration {
	if in.row.ReceivedAt.IsZero() {
		return 0
	}
	return in.now.Sub(in.row.ReceivedAt)
}

// lookupGroup returns a group and whether this device keeps it.
func lookupGroup(ctx context.Context, gs GroupStore, id wire.GroupID) (GroupInfo, bool, error) {
	g, err := gs.Group(ctx, id)
	switch {
	case errors.Is(err, ErrUnknownGroup):
		return GroupInfo{}, false, nil
	case err != nil:
		return GroupInfo{}, false, err
	}
	return g, true, nil
}

// rosterAt is the group's roster at generation gen (the merged roster when
// gen is not above it; the start's for a generation below the start).
func rosterAt(g GroupInfo, gen uint64) Roster {
	if gen >= g.Roster.Generation {
		return g.Roster
	}
	r, _ := MergeRoster(g.Start, g.Changes, gen)
	return r
}

// refuseGroupMessage answers a group message from a sender the roster at its
// generation omits with not_a_member, encrypted on the session like an ACK
// and never stored as pending.
func (c *Client) refuseGroupMessage(bs *batchState, in *incoming, op opening, m wire.GroupMessage) (prepared, error) {
	frame, err := wire.EncodeNotAMember(wire.NotAMember{ID: m.ID, Group: m.Group, Generation: m.Generation})
	if err != nil {
		return prepared{}, err
	}
	res := ReceiveResult{Kind: ResultError, Sender: in.sender, ID: m.ID, Group: &m.Group,
		Err: fmt.Errorf("group %x: %s: %w", m.Group[:], in.sender, ErrNotMember)}
	return c.groupVerdict(bs, in, op, RepeatEffect{}, frame, res)
}

// receiveRoster decides what a signed roster change does, in order:
//
//  1. it must decode and verify under the key pinned for its author;
//  2. from a sender this device has not accepted, for a group that vouches
//     for nobody here (unknown, or no change a person this device accepted
//     made counts in it), it joins the sender's message request and is not
//     acknowledged: accepting the sender applies it;
//  3. a change already recorded is acknowledged again; one at or below the
//     start (it can never apply) is acknowledged and not stored;
//  4. one too far ahead of the merged generation, or from an author with
//     too many changes waiting, is dropped unacknowledged;
//  5. for a group this device does not keep, only a change that adds this
//     device starts it (one that does not is held until one that does
//     arrives), within MaxGroupsPerProfile;
//  6. otherwise it is recorded, the roster merged again, and acknowledged.
func (c *Client) receiveRoster(ctx context.Context, bs *batchState, gs GroupStore, in *incoming, op opening) (prepared, error) {
	sr, err := wire.DecodeSignedRoster(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	key, err := c.rosterAuthorKey(ctx, bs, in, op, sr.Author)
	if errors.Is(err, ErrRosterUnverified) {
		return c.dropRoster(ctx, bs, in, op, sr, err, false)
	} else if err != nil {
		return prepared{}, err
	}
	if err := VerifyRosterChange(op.plaintext, sr, key); err != nil {
		return c.dropRoster(ctx, bs, in, op, sr, err, false)
	}
	if author, err := ParseAddress(sr.Author); err == nil && author != c.self {
		// An entry its person's list revokes (a lost or stolen device)
		// keeps no authority here, whatever its roster flags say.
		if v, err := c.vouchSender(ctx, author, &key); err != nil {
			return prepared{}, err
		} else if v == VouchRefused {
			return c.dropRoster(ctx, bs, in, op, sr, fmt.Errorf("roster change by %s, which its person's list revokes or names with other keys: %w", author, ErrNotMember), true)
		}
	}
	g, known, err := bs.group(ctx, gs, sr.Group)
	if err != nil {
		return prepared{}, err
	}
	if ok, err := c.rosterAccepted(ctx, bs, in.sender, senderKey(in, op), g, known); err != nil {
		return prepared{}, err
	} else if !ok {
		return c.rosterRequest(ctx, bs, in, op, sr)
	}
	change := changeOf(sr)
	res := ReceiveResult{Kind: ResultGroupChanged, Sender: in.sender, ID: sr.ID, Group: &sr.Group, Generation: g.Roster.Generation}
	if !known {
		return c.startGroup(ctx, bs, gs, in, op, change, res)
	}
	ack, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: sr.ID})
	if err != nil {
		return prepared{}, err
	}
	for _, have := range g.Changes {
		if have.ID == change.ID {
			return c.groupVerdict(bs, in, op, RepeatEffect{}, ack, res)
		}
	}
	if startBelow(g, change.Generation) {
		// Below where this device's view begins: it can never apply.
		return c.groupVerdict(bs, in, op, RepeatEffect{}, ack, res)
	}
	if err := changeAdmitted(g, change); err != nil {
		return in.drop(sr.ID, err), nil
	}
	all := append(append([]RosterChange(nil), g.Changes...), change)
	next, _ := MergeRoster(g.Start, all, 0)
	lists, err := c.groupLists(ctx, g.Roster)
	if err != nil {
		return prepared{}, err
	}
	removed, err := parseAddresses(RemovedLanes(g.Roster, next, lists))
	if err != nil {
		return in.drop(sr.ID, err), nil
	}
	res.Generation = next.Generation
	effect := RosterEffect{Group: sr.Group, Change: change, Frame: op.plaintext, Removed: removed, Compact: compaction(g.Start, all, next),
		Left: !next.HasUser(c.self.User)}
	if err := c.rosterForwards(ctx, &bs.siblings, &effect, in.sender, forwardCounts(g, change)); err != nil {
		return prepared{}, err
	}
	p, err := c.groupVerdict(bs, in, op, effect, ack, res)
	if err == nil {
		bs.changed(g, all, next, effect.Compact)
	}
	return p, err
}

// startBelow reports whether a change at gen lies below g's start: below
// the start change's generation, or at or below a snapshot's.
func startBelow(g GroupInfo, gen uint64) bool {
	if g.Start.Snapshot != nil {
		return gen <= g.Start.Snapshot.Generation
	}
	return gen < g.Start.StartGeneration(g.Changes)
}

// changeAdmitted applies the bounds on what a group's log takes: no change
// more than MaxGenerationsAhead past the merged generation, at most
// MaxChangesAheadPerAuthor changes of one author past it, and at most
// MaxChangesPerAuthorGeneration changes of one author at one generation.
func changeAdmitted(g GroupInfo, ch RosterChange) error {
	merged := g.Roster.Generation
	if ch.Generation > merged+MaxGenerationsAhead {
		return fmt.Errorf("group %x: change at generation %d, merged %d: %w", g.ID[:], ch.Generation, merged, ErrRosterAhead)
	}
	ahead, atGen := 0, 0
	for _, c := range g.Changes {
		if c.Author != ch.Author {
			continue
		}
		if c.Generation > merged {
			ahead++
		}
		if c.Generation == ch.Generation {
			atGen++
		}
	}
	switch {
	case ch.Generation > merged && ahead >= MaxChangesAheadPerAuthor:
		return fmt.Errorf("group %x: %s has %d changes waiting: %w", g.ID[:], ch.Author, ahead, ErrRosterAhead)
	case atGen >= MaxChangesPerAuthorGeneration:
		return fmt.Errorf("group %x: %s made %d changes at generation %d: %w", g.ID[:], ch.Author, atGen, ch.Generation, ErrRosterAhead)
	}
	return nil
}

// compaction is the snapshot that replaces the oldest changes of a log
// grown past MaxRosterLog: the roster merged at KeepGenerations below the
// merged one, with the authors that vouched for it. It is nil while the log
// is small or the fold does not reach that generation.
func compaction(start GroupStart, changes []RosterChange, merged Roster) *GroupStart {
	if len(changes) <= MaxRosterLog || merged.Generation <= KeepGenerations {
		return nil
	}
	at := merged.Generation - KeepGenerations
	if at <= start.StartGeneration(changes) {
		return nil
	}
	f := foldRoster(start, changes, at, nil)
	if f.roster.Generation != at {
		return nil
	}
	snap := f.roster
	vouchers := make([]string, 0, len(f.vouchers))
	for a := range f.vouchers {
		vouchers = append(vouchers, a)
	}
	sort.Strings(vouchers)
	return &GroupStart{Snapshot: &snap, Vouchers: vouchers}
}

// startGroup handles a change for a group this device does not keep: one
// that adds this device starts the group here, from that change (rule 1 of
// MergeRoster); any other is held until one that does arrives.
func (c *Client) startGroup(ctx context.Context, bs *batchState, gs GroupStore, in *incoming, op opening, change RosterChange, res ReceiveResult) (prepared, error) {
	sr := wire.SignedRoster{Roster: wire.Roster{ID: change.ID, Group: *res.Group}, Author: change.Author}
	if !startsHere(change, c.self) {
		if heldFor(in) > MaxGroupHold {
			return c.dropRoster(ctx, bs, in, op, sr, fmt.Errorf("roster change for unknown group: %w", ErrGroupHoldExpired), true)
		}
		return in.hold(), nil
	}
	start := GroupStart{Change: change.ID}
	r, counted := StartRoster(change, []RosterChange{change})
	if len(counted) == 0 {
		return c.dropRoster(ctx, bs, in, op, sr, fmt.Errorf("group started by %s, not an admin of its own roster: %w", change.Author, ErrNotAdmin), true)
	}
	if full, err := c.groupsFull(ctx, bs, gs); err != nil {
		return prepared{}, err
	} else if full {
		return c.dropRoster(ctx, bs, in, op, sr, fmt.Errorf("%d groups kept: %w", MaxGroupsPerProfile, ErrGroupsFull), false)
	}
	bs.newGroups++
	ack, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: change.ID})
	if err != nil {
		return prepared{}, err
	}
	res.Generation = r.Generation
	effect := RosterEffect{Group: *res.Group, Change: change, Frame: op.plaintext, Start: &start}
	if err := c.rosterForwards(ctx, &bs.siblings, &effect, in.sender, true); err != nil {
		return prepared{}, err
	}
	p, err := c.groupVerdict(bs, in, op, effect, ack, res)
	if err == nil {
		bs.changed(GroupInfo{ID: *res.Group, Name: change.Name, Start: start}, []RosterChange{change}, r, nil)
	}
	return p, err
}

// addsDevice reports whether a change adds self: the creation (generation
// 1) naming it, or an add of it.
func addsDevice(c RosterChange, self string) bool {
	for _, op := range c.Ops {
		if op.Op == wire.RosterAdd && op.Address == self {
			return true
		}
	}
	return false
}

// startsHere reports whether a change can start a group this device does
// not keep: one that adds this device, or, for a device that is no entry
// of the roster the change carries (a device linked to a member person),
// one that adds an entry of this device's person, where that entry would
// start (the creation naming it, or the add of it), or one a sibling that
// is an entry made. A change that only
// carries this person in its roster starts nothing: any member who knows
// the group's ID could sign one naming itself admin, and a linked device
// would then take that member's roster for the group's for good.
func startsHere(c RosterChange, self Address) bool {
	if addsDevice(c, self.String()) {
		return true
	}
	carried := Roster{Members: c.Members}
	if carried.Has(self.String()) {
		return false
	}
	if userOf(c.Author) == self.User && carried.Has(c.Author) {
		return true // a sibling's own change (its signature was checked)
	}
	for _, op := range c.Ops {
		if op.Op == wire.RosterAdd && userOf(op.Address) == self.User && carried.Has(op.Address) {
			return true
		}
	}
	return false
}

// groupsFull reports whether a new group would pass MaxGroupsPerProfile,
// counting the groups this batch starts.
func (c *Client) groupsFull(ctx context.Context, bs *batchState, gs GroupStore) (bool, error) {
	if bs.groups < 0 {
		all, err := gs.Groups(ctx)
		if err != nil {
			return false, err
		}
		bs.groups = len(all)
	}
	return bs.groups+bs.newGroups >= MaxGroupsPerProfile, nil
}

// rosterAccepted reports whether a roster change from sender (whose
// session holds key) is processed as one (true) or joins sender's message
// request: it is processed when requests are off, when sender is accepted
// or is another device of this person's that the account's list names
// with that identity, or when the group vouches for its members (a change
// made by this device or by a person it accepted counts in it).
func (c *Client) rosterAccepted(ctx context.Context, bs *batchState, sender Address, key *IdentityKey, g GroupInfo, known bool) (bool, error) {
	if _, ok := c.requests(); !ok {
		return true, nil
	}
	if sender.User == c.self.User {
		if v, err := c.vouchSender(ctx, sender, key); err != nil || v == VouchListed {
			return v == VouchListed, err
		}
	}
	if known {
		if ok, err := c.vouches(ctx, g); err != nil || ok {
			return ok, err
		}
	}
	return c.acceptedIn(ctx, bs, sender)
}

// acceptedIn reports whether sender is accepted, read once per batch.
func (c *Client) acceptedIn(ctx context.Context, bs *batchState, sender Address) (bool, error) {
	if open, known := bs.requests.open[sender]; known && !open {
		return true, nil
	}
	return c.store.Accepted(ctx, sender)
}

// vouches reports whether group g vouches for its members here: a change
// that counts in its roster (or in the snapshot it starts from) was made by
// this device or by a peer it accepted. Only a change the accepted person
// signed vouches; an admin flag a stranger's roster gives an accepted peer
// does not.
func (c *Client) vouches(ctx context.Context, g GroupInfo) (bool, error) {
	for author := range foldRoster(g.Start, g.Changes, 0, nil).vouchers {
		if author == c.self.String() {
			return true, nil
		}
		if userOf(author) == c.self.User {
			// Another device of this person's, when the account's list
			// names it with the key that signed its change.
			if ok, err := c.ownListedAuthor(ctx, g, author); err != nil || ok {
				return ok, err
			}
			continue
		}
		peer, err := ParseAddress(author)
		if err != nil {
			continue
		}
		if ok, err := c.store.Accepted(ctx, peer); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// ownListedAuthor reports whether author, a device of this person's, is
// named active in the account's list with the signing key of a change it
// made in g (a device registered under this person's name with other keys
// vouches for nothing).
func (c *Client) ownListedAuthor(ctx context.Context, g GroupInfo, author string) (bool, error) {
	a, err := LoadAccount(ctx, c.store)
	if errors.Is(err, ErrNoAccount) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	dev, err := ParseAddress(author)
	if err != nil {
		return false, nil
	}
	e, found := findEntry(&a.List, dev.Device)
	if !found || e.State != wire.DeviceActive {
		return false, nil
	}
	for _, ch := range g.Changes {
		if ch.Author == author && ch.AuthorKey == e.SigningKey {
			return true, nil
		}
	}
	return false, nil
}

// rosterRequest makes a roster change from a sender this device has not
// accepted part of the sender's message request, exactly as its first
// message would be: stored with the request (bounded by the stranger caps
// and the request bounds), not acknowledged, applied when the sender is
// accepted (AcceptRequest) and deleted with the request otherwise.
func (c *Client) rosterRequest(ctx context.Context, bs *batchState, in *incoming, op opening, sr wire.SignedRoster) (prepared, error) {
	d := digest(op.plaintext)
	key := inboundKey{in.sender, sr.ID}
	effect, kind, err := c.classify(ctx, bs, key, d)
	if errors.Is(err, ErrLogicalMessageConflict) {
		return in.drop(sr.ID, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	res := ReceiveResult{Kind: ResultRequest, Sender: in.sender, ID: sr.ID, Group: &sr.Group}
	if _, ok := effect.(DeliverEffect); !ok || kind != ResultDelivery {
		return c.groupVerdict(bs, in, op, RepeatEffect{}, nil, res)
	}
	if err := c.admitPending(ctx, bs.caps, in.sender); errors.Is(err, ErrPendingCap) {
		return in.drop(sr.ID, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	at := in.row.ReceivedAt
	if at.IsZero() {
		at = in.now
	}
	shown := []byte(fmt.Sprintf("[group] invites you to %q", sr.Name))
	request, err := c.stageRequest(ctx, bs, in.sender, senderKey(in, op), shown, len(op.plaintext), at)
	if errors.Is(err, ErrRequestBound) {
		return in.drop(sr.ID, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	bs.delivered[key] = d
	res.opened = request != nil && !request.Join
	p, err := c.groupVerdict(bs, in, op, DeliverEffect{ID: sr.ID, Frame: op.plaintext, Digest: d, At: at}, nil, res)
	if err != nil {
		return prepared{}, err
	}
	rc := p.plan.(Receive)
	rc.Request = request
	p.plan = rc
	return p, nil
}

// groupVerdict makes the Receive plan of a group frame: the session step
// that opened it, its effect and, when reply is set, that frame encrypted
// back on the advanced session (an ACK, or a not_a_member).
func (c *Client) groupVerdict(bs *batchState, in *incoming, op opening, effect FrameEffect, reply []byte, res ReceiveResult) (prepared, error) {
	ps, hs := in.ps, op.handshake
	next := peerState{pinned: ps.pinned, session: op.session, version: ps.version + 1, replaces: ps.replaces}
	if hs != nil && hs.Pin != nil {
		next.pinned = hs.Pin
	}
	var out *Outgoing
	// A reply is encrypted only within the sending window; past it, it is
	// owed, and the sender's retry asks for it again.
	if reply != nil && canSend(next.session) {
		cand := next.session.Clone()
		env, err := c.seal(cand, in.sender, reply)
		if err != nil {
			return prepared{}, err
		}
		next.session = cand
		out = &Outgoing{Envelope: env, IsAck: true}
	}
	sw, err := sessionWrite(in.sender, ps.version, next.session)
	if err != nil {
		return prepared{}, err
	}
	*ps = next
	if hs != nil && hs.ConsumeOneTime != nil {
		bs.consumed[*hs.ConsumeOneTime] = true
	}
	if hs != nil && hs.Retire != nil {
		bs.retired[retiredKey{in.sender, hs.Retire.ID}] = true
	}
	res.handshake, res.converged = hs != nil, hs != nil
	return prepared{
		plan:   Receive{StagedRow: in.row.Row, Peer: in.sender, Session: sw, Handshake: hs, Effect: effect, Ack: out, Chain: bs.commitChain(op)},
		result: res,
		ack:    out,
	}, nil
}

// derefPrepared returns *p, or the zero prepared (a held row) for nil.
func derefPrepared(p *prepared) prepared {
	if p == nil {
		return prepared{}
	}
	return *p
}

// wantPeerList reports whether user's list, none being held here, is
// still to be asked for on this connection (RefreshPeerList asks once per
// person and connection, at most maxListChecks people), and if so notes it for the round
// (learnGroupLists). A relay known to keep no lists is never asked: the
// rule before lists stands there.
func (c *Client) wantPeerList(user string) bool {
	if f, known := c.relay.RelayFeatures(); known && !f.Has(wire.FeatureDeviceLists) {
		return false
	}
	epoch := c.link().Epoch
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	if c.listCheckedEpoch == epoch && (c.listChecked[user] || len(c.listChecked) >= maxListChecks) {
		// Asked already, or the connection's budget is spent (the fetch
		// would not ask): the rule before lists stands until the next
		// connection, rather than a hold that no round resolves.
		return false
	}
	if c.groupListsWanted == nil {
		c.groupListsWanted = make(map[string]bool)
	}
	if len(c.groupListsWanted) < maxListChecks {
		c.groupListsWanted[user] = true
	}
	return true
}

// learnGroupLists fetches the lists wantPeerList noted: a device linked to
// a member person is then judged by its person's list, and a group send
// reaches every device of the members from then on. When it fetched
// any, it asks for another round at once, in which the held frames are
// judged again. A refusal is reported, never returned.
func (c *Client) learnGroupLists(ctx context.Context) {
	if !c.link().Up {
		return
	}
	c.loopMu.Lock()
	users := make([]string, 0, len(c.groupListsWanted))
	for u := range c.groupListsWanted {
		users = append(users, u)
	}
	c.groupListsWanted = nil
	c.loopMu.Unlock()
	if len(users) == 0 {
		return
	}
	sort.Strings(users)
	for _, u := range users {
		if _, _, err := c.RefreshPeerList(ctx, u); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "peer-device-list", Err: err})
		}
	}
	// Each user is now asked on this connection (or the budget is
	// spent), so the frames held for them are judged in the next round
	// and none is held for them again: this asks for one round, not a
	// loop of them.
	c.SyncNow()
}
