package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Lanes per device (issue 33, third layer). A peer is a person with the
// devices of the account-signed list this device holds for them
// (PeerAccount). A message to a person is stored in one transaction
// (PersonSend) as one pending lane per active device of theirs and one per
// other active device of this person (a sent copy, wire.SentCopy), each
// lane an ordinary pending outbound row with today's one-to-one semantics;
// the history keeps one entry, in the person's conversation. A person
// whose list this device does not hold, or whose list names one device
// and who is not copied, is sent to exactly as before.

// PeerAccount is what this device holds of a peer person: the latest
// device list it verified (DecidePeerDeviceList) and the address under
// which the conversation with them is kept.
type PeerAccount struct {
	List         wire.DeviceList
	Conversation Address
	FetchedAt    time.Time
}

// ErrPeerAccountChanged means a person's relay serves a device list signed
// by another account key than the one pinned here on first sight: this
// device refuses it, as it refuses a changed identity, and sends to the
// devices it knows.
var ErrPeerAccountChanged = errors.New("the person's account key changed")

// ErrNoDeviceList means the relay holds no device list for a person (an
// account made before lists, or a relay that lost it): the person is sent
// to device by device, as before.
var ErrNoDeviceList = errors.New("the relay holds no device list for this person")

// DecidePeerDeviceList decides whether got, a device list a relay served
// for user, replaces held, the one this device holds (nil: none). It is
// taken when, in this order:
//
//  1. it is user's list, and rules 1 to 4 of VerifyDeviceList hold (its
//     signatures, its number of active devices, no shared keys); else
//     the list is refused (a *DeviceListError);
//  2. with no held list: always, pinning its account key (first sight, as
//     an identity is pinned on first use);
//  3. its account key is the pinned one; else ErrPeerAccountChanged;
//  4. its generation is above held's; else it is kept as it is (no
//     error: an older or the same list);
//  5. it is held's successor (generation + 1) and VerifyDeviceList(got,
//     held) accepts it; or it is further ahead (generations this device
//     missed, signed by the same account key) and keeps every device of
//     held with its keys, revoked ones revoked, new numbers above held's
//     (rules 7 and 8; a new device may be revoked already, linked and
//     removed in between); else it is refused.
func DecidePeerDeviceList(user string, held *wire.DeviceList, got wire.DeviceList) (bool, error) {
	if got.User != user {
		return false, listRule(6, "list of %q served for %q", got.User, user)
	}
	if err := verifyListAlone(got); err != nil {
		return false, err
	}
	if held == nil {
		return true, nil
	}
	if got.AccountKey != held.AccountKey {
		return false, fmt.Errorf("%s: %w", user, ErrPeerAccountChanged)
	}
	if got.Generation <= held.Generation {
		return false, nil
	}
	if got.Generation == held.Generation+1 {
		if err := VerifyDeviceList(got, held); err != nil {
			return false, err
		}
		return true, nil
	}
	if err := verifyListFollows(got, held, false); err != nil {
		return false, err
	}
	return true, nil
}

// ActiveAddresses returns the addresses of l's active devices, by number.
func ActiveAddresses(l wire.DeviceList) []Address {
	var out []Address
	for _, e := range l.Entries {
		if e.State == wire.DeviceActive {
			out = append(out, Address{User: l.User, Device: e.Number})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out
}

// conversationOf returns the address a person's conversation is kept
// under when l is the first list held for them: the lowest device number
// it names, revoked or not (normally device 1, the one that made the
// account). It never changes afterwards, so the history stays in one place.
func conversationOf(l wire.DeviceList) Address {
	a := Address{User: l.User}
	for _, e := range l.Entries {
		if a.Device == 0 || e.Number < a.Device {
			a.Device = e.Number
		}
	}
	return a
}

// HoldPeerDeviceList stores a peer person's device list, by compare-and-set
// on the generation held (From, 0 for none): a list stored meanwhile by
// another pass makes it ErrConflict, and nothing changes. The
// conversation address is set with the first list and kept after. The
// pending lanes to the devices of Removed (RevokedSince: devices the list
// revokes that the one held did not) end LaneRemoved in the same
// transaction, so no more goes to a device its person removed.
type HoldPeerDeviceList struct {
	User         string
	From         uint64
	AccountKey   [32]byte
	Generation   uint64
	List         []byte // wire.EncodeDeviceList
	Conversation Address
	At           time.Time
	Removed      []Address
	// Added are lanes to devices the list names that the one held did
	// not, of messages still pending to the person: each is stored (an
	// outbound row and its person_lane, beside one for the lane it was
	// copied from) unless its message ended meanwhile or the device has a
	// lane of it already. A first list (From 0) gives each message sent
	// before any list was held a lane to every device it names active
	// that the message has none to, whatever device the message went to
	// (firstListLanes): such a lane is in the conversation of the device
	// it was copied from, where the message's entry is kept. The store
	// keeps every added lane in the conversation of the row it was copied
	// from when that has one (a lane an earlier list copied may be in
	// another device's conversation than the person's).
	Added []AddedLane
	// GroupAdded are the lanes of this device's group messages and
	// signed roster changes still pending to the person to the devices
	// the list newly names (addedGroupLanes): each is stored pending
	// unless the lane it was copied from ended meanwhile. A first list
	// gives them a lane to every device it names active that they have
	// none to.
	//
	// A first list's transaction stores Added and GroupAdded before it
	// ends the lanes to Removed (every device it revokes), so a message
	// sent to a revoked device is copied to the active ones first, and it
	// ends a one-to-one lane to a revoked device only for a message Added
	// copies from that device: one it does not copy (not text, or beyond
	// the rows read) keeps the lanes it had. A later list ends first, and
	// copies from devices it keeps active.
	GroupAdded []AddedGroupLane
}

// AddedGroupLane is a lane of a group message or signed roster change sent
// here and still pending to a person, added for a device a newer list of
// that person names: its frame (the same on every lane), pending to
// Recipient, beside the lane From (a device of the same person) it was
// copied from. The pump encrypts it on the device's session, as any
// pending lane: it goes pairwise, never by a sender chain the device was
// not announced.
type AddedGroupLane struct {
	Group     wire.GroupID
	ID        wire.LogicalID
	From      Address
	Recipient Address
	Frame     []byte // wire.EncodeGroupMessage or wire.EncodeSignedRoster
}

// AddedLane is a lane of a pending message to a person added for a device
// their newer list names: the frame of the message's lane From, to
// Recipient.
type AddedLane struct {
	Conversation Address
	ID           wire.LogicalID
	From         Address
	Recipient    Address
	Frame        []byte
}

// maxAddedLanes bounds the pending messages that get a lane to a device a
// newer list names, per list held: the oldest pending ones are reached,
// the rest go to the devices the person had.
const maxAddedLanes = 256

// freshDevices returns the devices next names as active and prev did not
// (linked since), this device left out.
func (c *Client) freshDevices(prev *wire.DeviceList, next wire.DeviceList) []Address {
	var fresh []Address
	for _, d := range ActiveAddresses(next) {
		if e, ok := findEntry(prev, d.Device); (!ok || e.State != wire.DeviceActive) && d != c.self {
			fresh = append(fresh, d)
		}
	}
	return fresh
}

// laneSources returns the devices a lane may be copied from when next is
// held: those next names as active that are not fresh. A row to a device
// next revokes is no source: the list's transaction ends that lane before
// it adds the copies, and the store skips a copy whose source has ended.
func laneSources(next wire.DeviceList, fresh []Address) map[Address]bool {
	src := make(map[Address]bool)
	for _, d := range ActiveAddresses(next) {
		src[d] = !slices.Contains(fresh, d)
	}
	return src
}

// addedLanes returns the lanes that reach the devices next names as active
// and prev did not, for the text messages pending to the person in
// conversation conv. Each is copied from a row to a device next keeps
// active (laneSources). With no list held (prev nil), next is compared
// with a list naming conv alone: the messages sent before any list was
// held went to conv, and every other device next names active is fresh.
func (c *Client) addedLanes(ctx context.Context, prev *wire.DeviceList, next wire.DeviceList, conv Address) ([]AddedLane, error) {
	if prev == nil {
		return c.firstListLanes(ctx, next)
	}
	fresh := c.freshDevices(prev, next)
	if len(fresh) == 0 {
		return nil, nil
	}
	pending, err := c.store.PendingToPerson(ctx, next.User, maxAddedLanes)
	if err != nil {
		return nil, err
	}
	src := laneSources(next, fresh)
	seen := make(map[wire.LogicalID]bool, len(pending))
	var out []AddedLane
	for _, m := range pending {
		if seen[m.ID] || m.Group != nil || m.Content != wire.ContentText || !src[m.Recipient] {
			continue
		}
		seen[m.ID] = true
		for _, d := range fresh {
			out = append(out, AddedLane{Conversation: conv, ID: m.ID, From: m.Recipient, Recipient: d, Frame: m.Frame})
		}
	}
	return out, nil
}

// firstListLanes returns the lanes a first list held (next) adds to the
// text messages pending to its person. With no list held, each such
// message went to the one device it was written to (a Hold, or a
// PersonSend whose conversation is that device: personLanes), and its
// history entry is kept there: it gets a lane, copied from that device's
// row and in that device's conversation, to every device next names
// active that it has no pending lane to, whatever device it went to (the
// conversation's or another, one next revokes or does not name). The
// hold's transaction adds these before it ends the lanes to the devices
// next revokes, and ends only those of the messages copied here, so a
// message written to a revoked device still reaches the active ones and
// one not copied keeps its lanes. At most maxAddedLanes pending rows are read, oldest
// first, and a message gets at most one lane per active device
// (MaxDevicesPerAccount, DecidePeerDeviceList).
func (c *Client) firstListLanes(ctx context.Context, next wire.DeviceList) ([]AddedLane, error) {
	active := ActiveAddresses(next)
	pending, err := c.store.PendingToPerson(ctx, next.User, maxAddedLanes)
	if err != nil {
		return nil, err
	}
	has := pendingRecipients(pending)
	seen := make(map[wire.LogicalID]bool, len(pending))
	var out []AddedLane
	for _, m := range pending {
		if seen[m.ID] || m.Group != nil || m.Content != wire.ContentText {
			continue
		}
		seen[m.ID] = true
		for _, d := range active {
			if d == c.self || has[m.ID][d] {
				continue
			}
			out = append(out, AddedLane{Conversation: m.Recipient, ID: m.ID, From: m.Recipient, Recipient: d, Frame: m.Frame})
		}
	}
	return out, nil
}

// pendingRecipients returns, per message, the devices it has a pending
// row to among pending.
func pendingRecipients(pending []OutboundMessage) map[wire.LogicalID]map[Address]bool {
	has := make(map[wire.LogicalID]map[Address]bool, len(pending))
	for _, m := range pending {
		if has[m.ID] == nil {
			has[m.ID] = make(map[Address]bool, 1)
		}
		has[m.ID][m.Recipient] = true
	}
	return has
}

// maxAddedGroupLanes bounds the lanes a newer list adds to pending group
// messages and roster changes, per list held: they are stored in the
// list's one transaction, beside its one-to-one lanes (maxAddedLanes), and
// every one is a pairwise encryption for the pump. The oldest pending
// messages are reached first; the rest go to the devices the person had,
// and the device linked since has them from its person's other devices
// (the decisions they tell it, the link's archive).
const maxAddedGroupLanes = maxAddedLanes

// pendingChange is a signed roster change of this device's still pending
// to a device of a person (addedGroupLanes).
type pendingChange struct {
	id    wire.LogicalID
	gen   uint64
	from  Address
	frame []byte
}

// addedGroupLanes returns the lanes that reach the devices next names as
// active and prev did not (this device left out), for the group messages
// and signed roster changes this device sent that are still pending to a
// device of next's person (read oldest first): the fan-out they would
// have had with next held when they were sent. Each is copied from a row
// to a device next keeps active (laneSources).
//
// A message gets a lane when its group has that person as a member at its
// generation; a roster change pending to the person gets one whatever it
// does to them (a change that removes the person tells the new device so).
// A roster change still pending to the person is in no archive the new
// device may have got (the device it was linked from has not received
// it), so the group's pending changes go ahead of its messages: before a
// message at generation N, every pending change of its group at N or
// below that has no lane yet gets one, in generation order, so the new
// device merges the generation and then takes the message (one arriving
// first waits in its group hold). A change and the messages it lets in
// count as one unit against maxAddedGroupLanes: the unit that does not fit
// ends the list, so no message gets a lane without the changes before it.
// Chain announcements get none (the next message announces the chain).
// It serves a peer's list (HoldPeerDeviceList) and this account's own
// (UpdateDeviceList) alike. With no list held (prev nil, a peer's first
// list), every device next names active counts as fresh, every pending
// row is a source, and a lane goes only to a device the message has no
// pending row to.
func (c *Client) addedGroupLanes(ctx context.Context, prev *wire.DeviceList, next wire.DeviceList) ([]AddedGroupLane, error) {
	var fresh []Address
	if prev == nil {
		// A first list: every device it names active may lack a lane
		// (the messages went to the device the roster named), and a
		// message gets one to each that it has no pending row to.
		for _, d := range ActiveAddresses(next) {
			if d != c.self {
				fresh = append(fresh, d)
			}
		}
	} else {
		fresh = c.freshDevices(prev, next)
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	pending, err := c.store.PendingToPerson(ctx, next.User, maxAddedLanes)
	if err != nil {
		return nil, err
	}
	// Each lane is copied from a row to a device next keeps active: a row
	// to a device it revokes ends in the same transaction, before the
	// copies are stored, and a copy of it would be skipped (a unit's change
	// dropped and its message kept). A first list's transaction adds the
	// copies before it ends any lane, so every pending row is a source.
	src := laneSources(next, fresh)
	if prev == nil {
		for _, m := range pending {
			src[m.Recipient] = true
		}
	}
	has := pendingRecipients(pending)
	changes := make(map[wire.GroupID][]pendingChange)
	seen := make(map[wire.LogicalID]bool, len(pending))
	for _, m := range pending {
		if m.Group == nil || seen[m.ID] || !src[m.Recipient] {
			continue
		}
		if k, err := wire.PeekFrameKind(m.Frame); err != nil || k != wire.FrameSignedRoster {
			continue
		}
		sr, err := wire.DecodeSignedRoster(m.Frame)
		if err != nil || sr.ID != m.ID || sr.Group != *m.Group {
			continue
		}
		if next.User == c.self.User && sr.Author != c.self.String() {
			// A forward of another device's change to a sibling
			// (rosterforward.go): this device, which links, recorded
			// it before the list naming the new device was stored, so
			// the link's archive carries it. A copy would only fill
			// the new device's window and maxAddedGroupLanes.
			continue
		}
		seen[m.ID] = true
		changes[sr.Group] = append(changes[sr.Group], pendingChange{id: sr.ID, gen: sr.Generation, from: m.Recipient, frame: m.Frame})
	}
	for _, cs := range changes {
		sort.SliceStable(cs, func(i, j int) bool {
			if cs[i].gen != cs[j].gen {
				return cs[i].gen < cs[j].gen
			}
			return bytes.Compare(cs[i].id[:], cs[j].id[:]) < 0
		})
	}
	groups := make(map[wire.GroupID]*GroupInfo)
	group := func(id wire.GroupID) (*GroupInfo, error) {
		g, known := groups[id]
		if known {
			return g, nil
		}
		info, err := c.store.Group(ctx, id)
		switch {
		case errors.Is(err, ErrUnknownGroup):
		case err != nil:
			return nil, err
		default:
			g = &info
		}
		groups[id] = g
		return g, nil
	}
	done := make(map[wire.LogicalID]bool, len(pending))
	var out []AddedGroupLane
	for _, m := range pending {
		if m.Group == nil || done[m.ID] || !src[m.Recipient] {
			continue
		}
		var gen uint64
		var msg *AddedGroupLane
		if k, err := wire.PeekFrameKind(m.Frame); err == nil && k == wire.FrameSignedRoster {
			if !seen[m.ID] {
				continue // not a change of its group
			}
			for _, ch := range changes[*m.Group] {
				if ch.id == m.ID {
					gen = ch.gen
				}
			}
		} else {
			gm, err := wire.DecodeGroupMessage(m.Frame)
			if err != nil || gm.ID != m.ID || gm.Group != *m.Group {
				continue // a chain announcement
			}
			gen = gm.Generation
			msg = &AddedGroupLane{Group: gm.Group, ID: m.ID, From: m.Recipient, Frame: m.Frame}
		}
		g, err := group(*m.Group)
		if err != nil {
			return nil, err
		}
		if g == nil || (msg != nil && !rosterAt(*g, gen).HasUser(next.User)) {
			done[m.ID] = true
			continue
		}
		// The unit: the group's changes at gen or below without a lane
		// yet (for a change, itself among them), then the message.
		var unit []AddedGroupLane
		for _, ch := range changes[*m.Group] {
			if ch.gen <= gen && !done[ch.id] {
				unit = append(unit, AddedGroupLane{Group: *m.Group, ID: ch.id, From: ch.from, Frame: ch.frame})
			}
		}
		if msg != nil {
			unit = append(unit, *msg)
		}
		if len(out)+len(unit)*len(fresh) > maxAddedGroupLanes {
			break
		}
		for _, l := range unit {
			done[l.ID] = true
			for _, d := range fresh {
				if has[l.ID][d] {
					continue // a first list's device the lane went to
				}
				l.Recipient = d
				out = append(out, l)
			}
		}
	}
	return out, nil
}

func (HoldPeerDeviceList) plan() {}

// Kind implements Plan.
func (HoldPeerDeviceList) Kind() string { return "peer-device-list" }

// PersonLane is one lane of a message to a person: to one of their
// devices, or, Own, a sent copy to another device of this person.
type PersonLane struct {
	Recipient Address
	Frame     []byte // the lane's encoded frame
	Own       bool
}

// PersonSend stores a message to a person as pending on every lane, with
// one history entry in the person's conversation, in one transaction
// (the store-first send of a person with several devices, or of a sender
// with several). The pump hands each lane off as any pending message.
type PersonSend struct {
	Conversation Address
	ID           wire.LogicalID
	Body         []byte
	At           time.Time
	Lanes        []PersonLane
	// ClearDraft, when set, forgets the draft to that address in the same
	// transaction.
	ClearDraft *Address
	// Action, when set, is an own action (a reaction, a reply, an edit, a
	// delete) to the person, applied here in the same transaction, as a
	// Hold's; its entry is the Conversation's.
	Action *ActionApply
}

func (PersonSend) plan() {}

// Kind implements Plan.
func (PersonSend) Kind() string { return "person-send" }

// LaneStatus is where one lane of an own message to a person stands.
type LaneStatus struct {
	Recipient Address
	Own       bool // a sent copy to another device of this person
	State     LaneState
}

// maxListChecks bounds the people whose lists one connection checks at
// the relay: a send to a person checks theirs once per connection, so a
// profile that writes to many people costs at most this many fetches per
// connection; beyond it the list held is used as it is.
const maxListChecks = 256

// PeerAccount returns the device list held for user, if any.
func (c *Client) PeerAccount(ctx context.Context, user string) (PeerAccount, bool, error) {
	return c.store.PeerAccount(ctx, user)
}

// RefreshPeerList fetches user's device list from the relay and holds it
// when DecidePeerDeviceList takes it, at most once per user and
// connection (maxListChecks users). It returns the list held afterwards
// (ok false when none), and the refusal of a list that breaks the rules or
// names another account key. A relay without lists, out of reach, or
// holding none for user is no error: the list held (if any) stays.
func (c *Client) RefreshPeerList(ctx context.Context, user string) (PeerAccount, bool, error) {
	held, ok, err := c.store.PeerAccount(ctx, user)
	if err != nil || user == c.self.User {
		return held, ok, err
	}
	// A relay not connected yet is connected by the fetch (the command
	// line's relay connects on first use); one known to be down, or
	// known to keep no lists, is not asked.
	f, known := c.relay.RelayFeatures()
	l := c.link()
	if (!l.Up && l.Err != nil) || (known && !f.Has(wire.FeatureDeviceLists)) {
		return held, ok, nil
	}
	c.loopMu.Lock()
	if c.listChecked == nil || c.listCheckedEpoch != l.Epoch {
		c.listChecked, c.listCheckedEpoch = make(map[string]bool), l.Epoch
	}
	due := !c.listChecked[user] && len(c.listChecked) < maxListChecks
	if due {
		c.listChecked[user] = true
	}
	c.loopMu.Unlock()
	if !due {
		return held, ok, nil
	}
	got, err := c.relay.FetchDeviceList(ctx, user)
	if err != nil {
		// None held there, no lists, out of reach: the list held (if
		// any) stays, and the next connection asks again.
		return held, ok, ctx.Err()
	}
	return c.takePeerList(ctx, user, got)
}

// takePeerList holds got, a list of user a relay served, in place of the
// list held (if any) when DecidePeerDeviceList takes it: in one
// transaction with the lanes it ends and adds (HoldPeerDeviceList).
//
// It holds sendMu from reading the list held to storing the new one, as a
// group send holds it from reading the lists to storing its lanes
// (storeGroupWith) and a receive while it processes: a send planned with
// the list held is stored before the new list, whose transaction then
// ends its lanes to the devices the list revokes and adds its lanes to
// the ones it names, or it is planned with the new list. Callers hold
// none of the mutexes after syncMu and pumpMu (lockorder.go). The list
// held is read again under the lock: another pass may have stored one
// since the caller read it.
func (c *Client) takePeerList(ctx context.Context, user string, got wire.DeviceList) (PeerAccount, bool, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	held, ok, err := c.store.PeerAccount(ctx, user)
	if err != nil {
		return held, ok, err
	}
	var prev *wire.DeviceList
	if ok {
		prev = &held.List
	}
	take, err := DecidePeerDeviceList(user, prev, got)
	if err != nil {
		return held, ok, fmt.Errorf("device list of %s: %w", user, err)
	}
	if !take {
		return held, ok, nil
	}
	if err := c.checkListPins(ctx, got, !ok); err != nil {
		return held, ok, err
	}
	enc, err := wire.EncodeDeviceList(got)
	if err != nil {
		return held, ok, fmt.Errorf("device list of %s: %w", user, err)
	}
	p := HoldPeerDeviceList{User: user, AccountKey: got.AccountKey, Generation: got.Generation, List: enc,
		Conversation: conversationOf(got), At: c.cfg.Now(), Removed: RevokedSince(prev, got)}
	if ok {
		p.From, p.Conversation = held.List.Generation, held.Conversation
	}
	if p.Added, err = c.addedLanes(ctx, prev, got, p.Conversation); err != nil {
		return held, ok, fmt.Errorf("device list of %s: %w", user, err)
	}
	if p.GroupAdded, err = c.addedGroupLanes(ctx, prev, got); err != nil {
		return held, ok, fmt.Errorf("device list of %s: %w", user, err)
	}
	if _, err := c.store.Apply(ctx, p); err != nil {
		return held, ok, fmt.Errorf("hold the device list of %s: %w", user, err)
	}
	if len(p.Added) > 0 || len(p.GroupAdded) > 0 {
		c.wantLanesPumped()
	}
	return PeerAccount{List: got, Conversation: p.Conversation, FetchedAt: p.At}, true, nil
}

// listSentTo notes that a message to user's person was stored: the next
// round asks the relay whether the list held is still the latest
// (checkSentLists), at most maxListChecks people per round. That round is
// asked for at once when the relay answers such checks: an idle loop
// would otherwise wait for the relay's next signal or the maintenance
// check, and a device the person linked since would wait as long for its
// lane.
func (c *Client) listSentTo(user string) {
	if user == c.self.User {
		return
	}
	c.loopMu.Lock()
	if c.sentLists == nil {
		c.sentLists = make(map[string]bool)
	}
	if len(c.sentLists) < maxListChecks {
		c.sentLists[user] = true
	}
	due := c.sentLists[user]
	c.loopMu.Unlock()
	if f, known := c.relay.RelayFeatures(); due && known && f.Has(wire.FeatureDeviceListCheck) {
		c.SyncNow() // coalesced: one round takes every send before it
	}
}

// checkSentLists is the sender's side of the stale-list answer: for each
// person a message was stored to since the last round, it tells a relay
// that announced wire.FeatureDeviceListCheck the generation held (kind
// 48); a relay holding a later list sends it back, and the client holds it
// with the lanes it lacks (takePeerList), which this round's pump then
// hands off. A device linked since is so reached without waiting for the
// next connection. A failure is reported, never returned; the next
// connection's check catches up.
func (c *Client) checkSentLists(ctx context.Context) {
	f, known := c.relay.RelayFeatures()
	if !c.link().Up || !known || !f.Has(wire.FeatureDeviceListCheck) {
		return
	}
	c.loopMu.Lock()
	users := make([]string, 0, len(c.sentLists))
	for u := range c.sentLists {
		users = append(users, u)
	}
	c.sentLists = nil
	c.loopMu.Unlock()
	sort.Strings(users)
	for _, u := range users {
		if err := c.checkSentList(ctx, u); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "peer-device-list", Err: err})
		}
	}
}

// noListRefetch spaces the fetches of one person's list that a round's
// check makes on one connection while none is held here (checkSentList):
// a person who never publishes a list, or a relay that answers none every
// time, costs at most one fetch per this interval and connection, however
// often the person is written to.
const noListRefetch = time.Minute

// checkSentList asks the relay for a later list of u than the one held,
// and holds one it serves (takePeerList). With no list held it fetches
// one (the check names a generation held, and the wire refuses 0), at
// most once per noListRefetch and connection (unlistedFetchDue): a first
// fetch this connection that found none, or did not answer, is so
// retried at a later send, and the list found adds lanes to the messages
// already pending (addedLanes). None held there, or a relay keeping no
// lists, is no error.
func (c *Client) checkSentList(ctx context.Context, u string) error {
	held, ok, err := c.store.PeerAccount(ctx, u)
	if err != nil {
		return err
	}
	var got *wire.DeviceList
	if ok {
		got, err = c.relay.CheckDeviceList(ctx, u, held.List.Generation)
	} else {
		if !c.unlistedFetchDue(u) {
			return nil
		}
		var l wire.DeviceList
		if l, err = c.relay.FetchDeviceList(ctx, u); err == nil {
			got = &l
		} else if errors.Is(err, ErrNoDeviceList) || errors.Is(err, ErrDeviceListsUnsupported) {
			return nil
		}
	}
	if err != nil || got == nil {
		return err
	}
	_, _, err = c.takePeerList(ctx, u, *got)
	return err
}

// unlistedFetchDue reports whether checkSentList may fetch the list of
// u, a person none is held for, and if so notes the fetch: not within
// noListRefetch of the last one on this connection, and for at most
// maxListChecks people per connection.
func (c *Client) unlistedFetchDue(u string) bool {
	epoch, now := c.link().Epoch, c.cfg.Now()
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	if c.unlistedFetched == nil || c.unlistedEpoch != epoch {
		c.unlistedFetched, c.unlistedEpoch = make(map[string]time.Time), epoch
	}
	last, seen := c.unlistedFetched[u]
	if !seen && len(c.unlistedFetched) >= maxListChecks {
		// Full: the people whose spacing has passed make room.
		for p, at := range c.unlistedFetched {
			if !now.Before(at.Add(noListRefetch)) {
				delete(c.unlistedFetched, p)
			}
		}
	}
	switch {
	case seen && now.Before(last.Add(noListRefetch)):
		return false
	case !seen && len(c.unlistedFetched) >= maxListChecks:
		return false
	}
	c.unlistedFetched[u] = now
	return true
}

// refreshPeerListsOnConnect checks, once per connection, the lists of the
// people this device holds one for (at most maxListChecks): a device they
// linked since is then sent to. A refusal is reported, never returned.
func (c *Client) refreshPeerListsOnConnect(ctx context.Context) {
	l := c.link()
	if !l.Up {
		return
	}
	f, known := c.relay.RelayFeatures()
	if !known || !f.Has(wire.FeatureDeviceLists) {
		return
	}
	c.loopMu.Lock()
	due := l.Epoch != c.peerListEpoch
	c.peerListEpoch = l.Epoch
	c.loopMu.Unlock()
	if !due {
		return
	}
	users, err := c.store.PeerAccountUsers(ctx, maxListChecks)
	if err != nil {
		c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "peer-device-list", Err: err})
		return
	}
	for _, u := range users {
		if _, _, err := c.RefreshPeerList(ctx, u); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "peer-device-list", Err: err})
		}
	}
}

// learnSenderLists fetches the lists of the people whose messages this
// round delivered, once per person and connection (RefreshPeerList's
// bound): a person who only ever received from someone then holds their
// list too, so both compute the safety number from the two accounts and
// a reply reaches every device of the sender. A refusal is reported,
// never returned.
func (c *Client) learnSenderLists(ctx context.Context, res []ReceiveResult) {
	l := c.link()
	if !l.Up || len(res) == 0 {
		return
	}
	if f, known := c.relay.RelayFeatures(); !known || !f.Has(wire.FeatureDeviceLists) {
		return
	}
	seen := map[string]bool{}
	for _, r := range res {
		u := r.Sender.User
		// A group's members are not asked: a large group would spend the
		// connection's budget (maxListChecks) on people never written to.
		if r.Kind != ResultDelivery || r.Group != nil || u == "" || u == c.self.User || seen[u] {
			continue
		}
		seen[u] = true
		c.loopMu.Lock()
		checked := c.listCheckedEpoch == l.Epoch && c.listChecked[u]
		c.loopMu.Unlock()
		if checked {
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

// personLanes returns the lanes of a text message or an action (action
// set) to peer's person and the conversation it belongs to: nil lanes when
// the message goes as before (a single Hold to peer), which is when this
// device holds no list for the person, or one naming peer alone, and no
// other device of this person is copied. A text's copy is a
// wire.SentCopy, an action's a wire.SentActionCopy (actioncopy.go).
func (c *Client) personLanes(ctx context.Context, peer Address, id wire.LogicalID, frame, body []byte, action *wire.Action) ([]PersonLane, Address, error) {
	if peer.User == c.self.User {
		return nil, peer, nil
	}
	held, ok, err := c.store.PeerAccount(ctx, peer.User)
	if err != nil {
		return nil, peer, err
	}
	conv, recipients := peer, []Address{peer}
	if ok {
		conv, recipients = held.Conversation, ActiveAddresses(held.List)
	}
	own, err := c.ownOtherDevices(ctx)
	if err != nil {
		return nil, peer, err
	}
	if len(own) == 0 && len(recipients) == 1 && recipients[0] == peer && conv == peer {
		return nil, peer, nil
	}
	lanes := make([]PersonLane, 0, len(recipients)+len(own))
	for _, r := range recipients {
		lanes = append(lanes, PersonLane{Recipient: r, Frame: frame})
	}
	if len(own) > 0 {
		if err := copyFits(body, action); err != nil {
			return nil, peer, err
		}
		var cp []byte
		if action != nil {
			cp, err = wire.EncodeSentActionCopy(wire.SentActionCopy{ID: id, To: conv.String(), Action: *action})
		} else {
			cp, err = wire.EncodeSentCopy(wire.SentCopy{ID: id, To: conv.String(), Body: body})
		}
		if err != nil {
			return nil, peer, fmt.Errorf("copy to the own devices: %w", err)
		}
		for _, o := range own {
			lanes = append(lanes, PersonLane{Recipient: o, Frame: cp, Own: true})
		}
	}
	return lanes, conv, nil
}

// ErrCopyTooLarge means a one-to-one message or a reply's or an edit's
// text fits a message to the person but not the sent copy that goes with
// it to this person's other devices (a copy carries the conversation's
// address besides): refused before anything is stored, the text left with
// the person. Its error names the limit; the chain also holds
// wire.ErrMessageTooLarge.
var ErrCopyTooLarge = errors.New("too large for the copy to this person's other devices")

// copyFits refuses a text message (body) or a reply's or an edit's text
// (action) that its sent copy to this person's other devices cannot carry
// (wire.MaxSentCopyBodySize, wire.MaxSentActionTextSize).
func copyFits(body []byte, action *wire.Action) error {
	switch {
	case action == nil && len(body) > wire.MaxSentCopyBodySize:
		return fmt.Errorf("message of %d bytes, at most %d with other devices of this account: %w: %w",
			len(body), wire.MaxSentCopyBodySize, ErrCopyTooLarge, wire.ErrMessageTooLarge)
	case action != nil && len(action.Text) > wire.MaxSentActionTextSize:
		return fmt.Errorf("%s text of %d bytes, at most %d with other devices of this account: %w: %w",
			ActionName(action.Content), len(action.Text), wire.MaxSentActionTextSize, ErrCopyTooLarge, wire.ErrMessageTooLarge)
	}
	return nil
}

// ownOtherDevices returns the other active devices of this person, from
// the account's list (none on a profile without an account).
func (c *Client) ownOtherDevices(ctx context.Context) ([]Address, error) {
	a, err := LoadAccount(ctx, c.store)
	if errors.Is(err, ErrNoAccount) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Address
	for _, d := range ActiveAddresses(a.List) {
		if d != c.self {
			out = append(out, d)
		}
	}
	return out, nil
}

// ErrNotOwnDevice means a frame that only a device of this person may send
// (a sent copy, a decision) came from another person's device: it is
// dropped.
var ErrNotOwnDevice = errors.New("frame only another device of this person may send")

// prepareSentCopy receives a sent copy: a message this person sent from
// another of their devices. It is committed on arrival into the
// conversation it names, as a message sent by this person (SentCopied),
// and acknowledged; a copy seen before is acknowledged again. Only a device
// of this person's account may send one.
func (c *Client) prepareSentCopy(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	cp, err := wire.DecodeSentCopy(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, err), nil
	}
	if err := c.checkOwnDevice(ctx, in, op); errors.Is(err, ErrNotOwnDevice) {
		return in.drop(cp.ID, fmt.Errorf("sent copy: %w", err)), nil
	} else if err != nil {
		return prepared{}, err
	}
	to, err := ParseAddress(cp.To)
	if err != nil {
		return in.drop(cp.ID, err), nil
	}
	if to.User == c.self.User {
		// As a sent action copy's (actioncopy.go): dropped here, not left
		// to the store, whose refusal fails the whole page.
		return in.drop(cp.ID, fmt.Errorf("sent copy to %s: %w", to, ErrCopyConversation)), nil
	}
	d := digest(cp.Body)
	key := inboundKey{in.sender, cp.ID}
	effect, kind, err := c.classify(ctx, bs, key, d)
	if errors.Is(err, ErrLogicalMessageConflict) {
		return in.drop(cp.ID, err), nil
	} else if err != nil {
		return prepared{}, err
	}
	step := in.step(op, cp.ID, nil, wire.ContentText)
	step.effect, step.res.Kind = effect, kind
	switch _, repeat := effect.(RepeatEffect); {
	case kind == ResultDelivery && repeat:
		// The same copy earlier in this batch: it is acknowledged there.
		step.res.Kind = ResultSentCopy
	case kind == ResultDelivery:
		taken, err := c.copyIDTaken(ctx, bs.copyIDs, to, cp.ID)
		if err != nil {
			return prepared{}, err
		}
		if taken || bs.takenRows[in.row.Row] {
			// Another own message has the ID (actioncopy.go).
			if err := c.refuseTakenCopy(&step, in.sender, to, cp.ID); err != nil {
				return prepared{}, err
			}
			break
		}
		at := in.row.ReceivedAt
		if at.IsZero() {
			at = in.now
		}
		if err := c.claimCopyID(ctx, bs.copyIDs, to, cp.ID); err != nil {
			return prepared{}, err
		}
		if step.ack, err = c.ackOnNext(&step.next, in.sender, cp.ID); err != nil {
			return prepared{}, err
		}
		step.effect = CommitEffect{ID: cp.ID, Digest: d, Arrived: at, At: in.now, Body: cp.Body, SentTo: &to}
		step.res.Kind, step.res.Body, step.res.CopyTo = ResultSentCopy, cp.Body, &to
		step.res.committed = true
		bs.delivered[key] = d
	default:
		if step.ack, err = c.ackOnNext(&step.next, in.sender, cp.ID); err != nil {
			return prepared{}, err
		}
	}
	return in.receive(bs, op, step)
}

// PersonLanes returns the lanes of an own message in conversation (a
// HistoryEntry's Peer and ID): one per device of the person and one per
// sent copy, none for a message sent to one device alone.
func (c *Client) PersonLanes(ctx context.Context, conversation Address, id wire.LogicalID) ([]LaneStatus, error) {
	return c.store.PersonLanes(ctx, conversation, id)
}

// personAccepted reports whether sender is an active device of a person
// this device accepted: the list held for them names it, and another of
// their devices is accepted, and the sender's session holds the identity
// the list names for it (a device registered at a relay under a listed
// address with other keys is a stranger). A person accepted is accepted on every device
// their account vouches for; a stranger's second device is no less a
// stranger.
func (c *Client) personAccepted(ctx context.Context, sender Address, key *IdentityKey) (bool, error) {
	held, ok, err := c.store.PeerAccount(ctx, sender.User)
	if err != nil || !ok || !listedWith(held.List, sender, key) {
		return false, err
	}
	devices := ActiveAddresses(held.List)
	for _, d := range devices {
		if d == sender {
			continue
		}
		if accepted, err := c.store.Accepted(ctx, d); err != nil || accepted {
			return accepted, err
		}
	}
	return false, nil
}

// senderKey returns the identity of in's sender that the session opening
// op holds: the pin a first handshake makes, else the one held; nil when
// neither is known.
func senderKey(in *incoming, op opening) *IdentityKey {
	if op.handshake != nil && op.handshake.Pin != nil {
		return op.handshake.Pin
	}
	if in.ps != nil {
		return in.ps.pinned
	}
	return nil
}

// listedWith reports whether l names device as active with identity key.
func listedWith(l wire.DeviceList, device Address, key *IdentityKey) bool {
	if key == nil || device.User != l.User {
		return false
	}
	e, found := findEntry(&l, device.Device)
	return found && e.State == wire.DeviceActive && e.SigningKey == key.SigningKey && e.DHKey == key.DHKey
}

// checkOwnDevice checks that in's sender may send a frame only this
// person's devices send (a sent copy, a decision): a device of this
// person that the account's own list names as active, with the identity
// its session holds. A device registered under this person's name at a
// relay that does not keep device lists, or one revoked, is refused
// (ErrNotOwnDevice); so is every sender on a profile without an account.
func (c *Client) checkOwnDevice(ctx context.Context, in *incoming, op opening) error {
	if in.sender.User != c.self.User {
		return fmt.Errorf("%s is another person: %w", in.sender, ErrNotOwnDevice)
	}
	a, err := LoadAccount(ctx, c.store)
	if errors.Is(err, ErrNoAccount) {
		return fmt.Errorf("%s: this profile has no account: %w", in.sender, ErrNotOwnDevice)
	}
	if err != nil {
		return err
	}
	if !listedWith(a.List, in.sender, senderKey(in, op)) {
		return fmt.Errorf("%s is not an active device of this account's list with that identity: %w", in.sender, ErrNotOwnDevice)
	}
	return nil
}

// maxPinnedChecked bounds the pinned devices of one person a first list is
// checked against: more than a list can name (wire.MaxDeviceListEntries)
// would be refused anyway.
const maxPinnedChecked = 4 * wire.MaxDeviceListEntries

// checkListPins checks a list this device would hold for a person against
// the identities it pinned for their devices: a pinned device the list
// names must be named with its pinned keys (active or revoked), and, for
// the first list (first), every pinned device must be named. Each entry is
// countersigned by its device, so a list signed by an account key the
// relay made cannot name a device the person already talks to from here;
// without this check such a list, taken on first sight, would move every
// later send to the relay's devices. A later list naming a device pinned
// here with other keys (pinned on first use before any list named it) is
// refused as well: the lanes to that device would go on the session with
// the identity pinned, not the one the account vouched for.
func (c *Client) checkListPins(ctx context.Context, l wire.DeviceList, first bool) error {
	pinned, err := c.store.PinnedDevices(ctx, l.User, maxPinnedChecked)
	if err != nil {
		return err
	}
	for _, d := range pinned {
		ps, err := c.store.Peer(ctx, d)
		if err != nil {
			return err
		}
		if ps.Pinned == nil {
			continue
		}
		e, found := findEntry(&l, d.Device)
		if found && (e.SigningKey != ps.Pinned.SigningKey || e.DHKey != ps.Pinned.DHKey) || !found && first {
			return fmt.Errorf("device list of %s: %s, pinned here, is not in it with its identity: %w", l.User, d, ErrNotInDeviceList)
		}
	}
	return nil
}

// ErrNotInDeviceList means a device's bundle carries keys other than the
// ones its person's account-signed list names for it: the relay (or
// someone at it) serves a device the account never vouched for.
var ErrNotInDeviceList = errors.New("the bundle's identity is not the one the person's device list names")

// checkListed checks a bundle's identity against the device list held for
// peer's person, when one is held and names peer: the keys must be the
// entry's. A device the list does not name (a person without lists, a
// device linked since the list was fetched) is checked by the pin alone.
func (c *Client) checkListed(ctx context.Context, peer Address, key IdentityKey) error {
	held, ok, err := c.store.PeerAccount(ctx, peer.User)
	if err != nil || !ok {
		return err
	}
	e, found := findEntry(&held.List, peer.Device)
	if !found {
		return nil
	}
	if e.SigningKey != key.SigningKey || e.DHKey != key.DHKey {
		return fmt.Errorf("%s: %w", peer, ErrNotInDeviceList)
	}
	return nil
}

// checkListsBeforeAcks is the receiver's side of a device linked while
// a message to its person was on its way (issue 34): before processing
// envelopes (staged, the ones in envs, or all staged when envs is nil),
// it asks a relay that announced wire.FeatureDeviceListCheck for the
// latest list of each person who sent one of them and to whom a message
// is still pending here, and holds a later list with the lanes it adds.
//
// Why before: an acknowledgement from a device of that person may clear
// the message's last lane. A device that acknowledges a message after
// linking another stored the list naming the new device only once the
// relay held it (LinkDevice), so a list asked for after that
// acknowledgement was leased names the new device: its lane is added
// before the acknowledgement clears the old one, and the message reaches
// the new device too. Without this check the message was acknowledged
// and gone before the next connection's check, and the new device never
// held it. A failure is reported, never returned.
//
// It also fetches the first list of a person none is held for, when
// the deduplication by person (adoption.go) may need it: one-to-one
// envelopes (not a group's chain) from two or more of their devices in
// envs, or from one while another device of theirs is pinned here. That
// list is held nowhere: nothing is pinned for a first contact, so a relay
// could serve any list that agrees with itself. It is kept for this batch
// alone (firstLists), where it suppresses a message only when it names
// the sender with the identity its session holds; the list is held, once
// a delivery pinned the sender, by learnSenderLists (checkListPins).
func (c *Client) checkListsBeforeAcks(ctx context.Context, envs [][]byte) {
	c.loopMu.Lock()
	c.firstLists = nil
	c.loopMu.Unlock()
	f, known := c.relay.RelayFeatures()
	if !c.link().Up || known && !f.Has(wire.FeatureDeviceLists) {
		return
	}
	checks := known && f.Has(wire.FeatureDeviceListCheck)
	if envs == nil {
		var after int64
		for len(envs) < maxListChecks*4 {
			rows, err := c.store.Staged(ctx, after, c.cfg.BatchSize)
			if err != nil || len(rows) == 0 {
				break
			}
			after = rows[len(rows)-1].Row
			for _, r := range rows {
				if r.Err == nil {
					envs = append(envs, r.Envelope)
				}
			}
		}
	}
	// users maps each sender's person to the devices of theirs that sent
	// one of the envelopes one-to-one (a chain envelope is a group's).
	users := make(map[string]map[uint32]bool)
	for _, b := range envs {
		e, err := wire.DecodeEnvelope(b)
		if err != nil {
			continue // the receive reports it
		}
		a, err := ParseAddress(e.Sender)
		if err != nil || a.User == c.self.User {
			continue
		}
		devs, seen := users[a.User]
		if !seen {
			if len(users) >= maxListChecks {
				continue
			}
			devs = make(map[uint32]bool)
			users[a.User] = devs
		}
		if e.Type != wire.EnvelopeChain {
			devs[a.Device] = true
		}
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		held, ok, err := c.store.PeerAccount(ctx, u)
		if err == nil && !ok && len(users[u]) > 0 {
			err = c.fetchFirstList(ctx, u, users[u])
		}
		if err == nil && ok && checks {
			var asked bool
			if asked, err = c.checkUnlisted(ctx, u, held, users[u]); err == nil && !asked {
				err = c.checkHeldList(ctx, u, held)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "peer-device-list", Err: err})
		}
	}
}

// checkUnlisted asks the relay for a list of u later than held when devs,
// devices of u that sent one-to-one envelopes in this batch, include one
// that held does not name (linked since it was fetched), and takes it:
// the deduplication by person then knows the device, so a message it
// sends and that message's adopted resend from a sibling are one. At
// most once per device and connection (maxListChecks devices); the held
// list is otherwise checked once per connection, which a device linked
// during a long connection would outlive. It reports whether it asked.
func (c *Client) checkUnlisted(ctx context.Context, u string, held PeerAccount, devs map[uint32]bool) (bool, error) {
	l := c.link()
	due := false
	c.loopMu.Lock()
	c.resetFirstLocked(l.Epoch)
	for n := range devs {
		a := Address{User: u, Device: n}
		if _, named := findEntry(&held.List, n); named || c.unlistedChecked[a] || len(c.unlistedChecked) >= maxListChecks {
			continue
		}
		c.unlistedChecked[a] = true
		due = true
	}
	c.loopMu.Unlock()
	if !due {
		return false, nil
	}
	got, err := c.relay.CheckDeviceList(ctx, u, held.List.Generation)
	if err == nil && got != nil {
		_, _, err = c.takePeerList(ctx, u, *got)
	}
	return true, err
}

// resetFirstLocked empties the per-connection sets of
// checkListsBeforeAcks when the relay link's epoch moved on. loopMu held.
func (c *Client) resetFirstLocked(epoch uint64) {
	if c.firstFetched == nil || c.firstEpoch != epoch {
		c.firstFetched, c.unlistedChecked, c.firstEpoch = make(map[string]bool), make(map[Address]bool), epoch
	}
}

// checkHeldList asks the relay whether held, user's list, is still the
// latest when a message to that person is pending here, and takes a later
// one (checkListsBeforeAcks).
func (c *Client) checkHeldList(ctx context.Context, u string, held PeerAccount) error {
	pending, err := c.store.PendingToPerson(ctx, u, 1)
	if err != nil || len(pending) == 0 {
		return err
	}
	got, err := c.relay.CheckDeviceList(ctx, u, held.List.Generation)
	if err == nil && got != nil {
		_, _, err = c.takePeerList(ctx, u, *got)
	}
	return err
}

// fetchFirstList fetches user's list for this batch's deduplication by
// person (firstLists) when devs, the devices of user that sent one-to-one
// envelopes in it, make one possible: two or more of them, or one while
// another device of user is pinned here. At most once per person and
// connection (maxListChecks people). Nothing is stored.
func (c *Client) fetchFirstList(ctx context.Context, u string, devs map[uint32]bool) error {
	if len(devs) < 2 {
		pinned, err := c.store.PinnedDevices(ctx, u, len(devs)+1)
		if err != nil {
			return err
		}
		other := false
		for _, p := range pinned {
			other = other || !devs[p.Device]
		}
		if !other {
			return nil
		}
	}
	l := c.link()
	c.loopMu.Lock()
	c.resetFirstLocked(l.Epoch)
	due := !c.firstFetched[u] && len(c.firstFetched) < maxListChecks
	if due {
		c.firstFetched[u] = true
	}
	c.loopMu.Unlock()
	if !due {
		return nil
	}
	got, err := c.relay.FetchDeviceList(ctx, u)
	if err != nil {
		return ctx.Err() // none held there, no lists, out of reach
	}
	if take, err := DecidePeerDeviceList(u, nil, got); err != nil || !take {
		return err
	}
	c.loopMu.Lock()
	if c.firstLists == nil {
		c.firstLists = make(map[string]wire.DeviceList)
	}
	c.firstLists[u] = got
	c.loopMu.Unlock()
	return nil
}

// personList returns the device list the deduplication by person reads
// for user: the one held, else the first list fetched for this batch
// (firstLists).
func (c *Client) personList(ctx context.Context, user string) (wire.DeviceList, bool, error) {
	held, ok, err := c.store.PeerAccount(ctx, user)
	if err != nil || ok {
		return held.List, ok, err
	}
	c.loopMu.Lock()
	l, ok := c.firstLists[user]
	c.loopMu.Unlock()
	return l, ok, nil
}
