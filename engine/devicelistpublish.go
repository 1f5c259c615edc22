package engine

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Publishing the account's device list (issue 33, second layer). A device
// tells its relay the list it holds at every new connection to a relay
// that announced wire.FeatureDeviceLists: device 1 so that the relay learns
// generation 1 (or a generation it signed while the relay was out of
// reach), a linked device so that a relay that lost its lists learns them
// again. The relay's answer never stops the client: a refusal is reported
// as EventSyncFailed (Op "device-list") and tried again at the next
// connection.

// DeviceListPublisher is the part of Relay that keeps the account's device
// list at the relay (kinds 40 and 41).
type DeviceListPublisher interface {
	// PublishDeviceList asks the relay to hold l as its account's latest
	// list: nil once it does (also when it did already), a
	// *DeviceListRefusedError, ErrDeviceListsUnsupported, or another
	// error when the outcome is unknown (publishing again is safe).
	PublishDeviceList(ctx context.Context, l wire.DeviceList) error
}

// DeviceListReader is the part of Relay that reads other people's device
// lists (kinds 42 and 43; person.go).
type DeviceListReader interface {
	// FetchDeviceList returns the list the relay holds for user: an
	// ErrNoDeviceList when it holds none, ErrDeviceListsUnsupported when
	// it keeps none.
	FetchDeviceList(ctx context.Context, user string) (wire.DeviceList, error)
	// CheckDeviceList asks whether the relay holds a list of user later
	// than generation (kind 48, the stale-list answer): nil when it does
	// not, else that list; ErrDeviceListsUnsupported when the relay did
	// not announce wire.FeatureDeviceListCheck.
	CheckDeviceList(ctx context.Context, user string, generation uint64) (*wire.DeviceList, error)
}

// ErrDeviceListsUnsupported means the relay of the current connection keeps
// no device lists (it did not announce wire.FeatureDeviceLists).
var ErrDeviceListsUnsupported = errors.New("the relay keeps no device lists")

// DeviceListRefusedError is the relay's refusal of a published list. When
// Reason is wire.DeviceListStale, Current is the list the relay holds.
type DeviceListRefusedError struct {
	Reason  wire.DeviceListRefusal
	Current *wire.DeviceList
}

func (e *DeviceListRefusedError) Error() string {
	return "relay refused the device list: " + e.Reason.String()
}

// UpdateDeviceList replaces the device list the profile holds, by
// compare-and-set: only when the list held is still From (its encoding),
// else ErrConflict and nothing changes. The pending lanes to the devices
// of Removed (RevokedSince: devices List revokes) end LaneRemoved in the
// same transaction, and the lanes of Adopted (adoption.go: the removed
// devices' messages this device resends) are stored, each unless its
// message has the lane already or its history entry is no longer a sent
// copy; the entry of a message that gets a lane turns pending.
type UpdateDeviceList struct {
	From    []byte // wire.EncodeDeviceList of the list held
	List    []byte // wire.EncodeDeviceList of its successor
	Removed []Address
	// CatchUp are the decision lanes to the devices List names and From
	// did not (linked since), for the decisions this device made since
	// their linking (catchUpLanes), stored in the same transaction.
	CatchUp []PersonLane
	Adopted []AdoptedLane
	// GroupAdded are the lanes of this device's group messages and
	// signed roster changes still pending to this person's other devices to the devices List names
	// active and From did not (addedGroupLanes), stored pending in the
	// same transaction unless the lane each was copied from ended.
	GroupAdded []AddedGroupLane
	At         time.Time // when the adopted and catch-up lanes were stored (their send time)
}

func (UpdateDeviceList) plan() {}

// Kind implements Plan.
func (UpdateDeviceList) Kind() string { return "account-list-update" }

// DecideAdoptDeviceList reports whether a device holding held should take
// cur, the list a relay holds for its account, in its place. It should
// when (in this order):
//
//  1. cur is of the same user and account key as held;
//  2. cur's generation is above held's;
//  3. the account key's signature over cur verifies (only the account's
//     holder could have made it, so the generations between are its too);
//  4. cur still names self as an active device with self's signing key.
//
// A list that breaks 4 is the account removing this device, which a later
// layer handles; until then the device keeps what it holds.
func DecideAdoptDeviceList(held, cur wire.DeviceList, self Address, key [32]byte) bool {
	if cur.User != held.User || cur.AccountKey != held.AccountKey {
		return false
	}
	if cur.Generation <= held.Generation {
		return false
	}
	msg, err := deviceListMessage(cur)
	if err != nil || !ed25519.Verify(cur.AccountKey[:], msg, cur.Signature[:]) {
		return false
	}
	return ActiveDevice(cur, self.Device, key)
}

// PublishDeviceList publishes the list the profile holds to the relay of
// the current connection. A stale refusal whose held list DecideAdoptDeviceList
// accepts (a generation device 1 published and then crashed before
// storing, or one this device missed) is taken in the profile's place, in
// one transaction, and counts as published.
func (c *Client) PublishDeviceList(ctx context.Context) error {
	a, err := LoadAccount(ctx, c.store)
	if err != nil {
		return fmt.Errorf("publish device list: %w", err)
	}
	err = c.relay.PublishDeviceList(ctx, a.List)
	var refused *DeviceListRefusedError
	if !errors.As(err, &refused) || refused.Reason != wire.DeviceListStale || refused.Current == nil {
		return err
	}
	if !DecideAdoptDeviceList(a.List, *refused.Current, c.self, c.id.Public().SigningKey) {
		return err
	}
	from, err := wire.EncodeDeviceList(a.List)
	if err != nil {
		return fmt.Errorf("publish device list: %w", err)
	}
	to, err := wire.EncodeDeviceList(*refused.Current)
	if err != nil {
		return fmt.Errorf("publish device list: %w", err)
	}
	if bytes.Equal(from, to) {
		return nil
	}
	removed := RevokedSince(&a.List, *refused.Current)
	// The account-key holder that stopped after the relay took a removal
	// adopts the device's messages here (adoption.go).
	adopted := c.adoptedLanes(ctx, a.Key, removed)
	if err := c.storeOwnList(ctx, a.List, *refused.Current, removed, adopted, time.Time{}); err != nil {
		return fmt.Errorf("adopt the relay's device list (generation %d): %w", refused.Current.Generation, err)
	}
	return nil
}

// storeOwnList stores next in place of held, the list this profile holds
// for its account (UpdateDeviceList, ending the lanes to removed), with
// more plans in the same transaction. A device next names and held did
// not (linked since) is told, in that transaction, of the decisions this
// device made since its linking and not before floor (catchUpLanes): a
// decision made while this device's list did not name it told it
// nothing. sendMu is held from reading the decisions to storing the list,
// so that no decision falls between (a finalization and a receive read
// the list under it). The adopted lanes (a removed device's messages,
// adoption.go) are stored in the same transaction; every lane stored is
// handed to the pump (the round's, or the loop's).
func (c *Client) storeOwnList(ctx context.Context, held, next wire.DeviceList, removed []Address, adopted []AdoptedLane, floor time.Time, more ...Plan) error {
	from, err := wire.EncodeDeviceList(held)
	if err != nil {
		return err
	}
	to, err := wire.EncodeDeviceList(next)
	if err != nil {
		return err
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	lanes, err := c.catchUpLanes(ctx, held, next, floor)
	if err != nil {
		return err
	}
	grouped, err := c.addedGroupLanes(ctx, &held, next)
	if err != nil {
		return err
	}
	gstate := c.groupStateLinked(ctx, next.User, more)
	if gstate != nil {
		more = append(more[:len(more):len(more)], *gstate)
	}
	u := UpdateDeviceList{From: from, List: to, Removed: removed, CatchUp: lanes, Adopted: adopted, GroupAdded: grouped, At: c.cfg.Now()}
	_, err = c.store.ApplyBatch(ctx, append([]Plan{u}, more...))
	if err != nil && gstate != nil && ctx.Err() == nil {
		// The group state never holds the list back (the relay took
		// it): without it, once more (reported).
		c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "group-state", Peer: gstate.To,
			Err: fmt.Errorf("%d group states not sent to %s: %w", len(gstate.Lanes), gstate.To, err)})
		more, gstate = more[:len(more)-1], nil
		_, err = c.store.ApplyBatch(ctx, append([]Plan{u}, more...))
	}
	if err != nil && len(adopted) > 0 && ctx.Err() == nil {
		// Nor does the adoption hold the revocation back: without the
		// adopted lanes, once more (reported).
		c.adoptFailed(fmt.Errorf("store %d adopted lanes: %w", len(adopted), err))
		u.Adopted, adopted = nil, nil
		_, err = c.store.ApplyBatch(ctx, append([]Plan{u}, more...))
	}
	if err != nil {
		return err
	}
	if len(lanes) > 0 || len(adopted) > 0 || len(grouped) > 0 || gstate != nil {
		c.wantLanesPumped()
	}
	return nil
}

// learnOwnList is the own account's side of the stale-list answer. A
// sent copy or a decision is refused (ErrNotOwnDevice), or a group frame
// held (judgeGroupFrame), from a device the account's list held here does
// not name; when that device's number is
// above every number of the held list, it may be one linked since (the
// list held is only brought up to date at each connection, and a
// long-lived connection would otherwise refuse the new sibling's copies
// and decisions until the next). The round then publishes the held list
// again: a relay holding a later one refuses it as stale with that list,
// which PublishDeviceList adopts, so the sibling's next retry is taken.
// Each number asks once per connection, at most maxListChecks numbers.
// A lane to another device of this person that was retried (ownListDue)
// asks too, once per round: the device may have been removed since, and
// the adopted list ends the lanes to it (RevokedSince). A failure is
// reported, never returned.
func (c *Client) learnOwnList(ctx context.Context, res []ReceiveResult) {
	l := c.link()
	if !l.Up {
		return
	}
	due := c.ownListDue.Swap(false)
	var asks []uint32
	for _, r := range res {
		if r.Kind == ResultError && r.Sender.User == c.self.User && r.Sender != c.self && errors.Is(r.Err, ErrNotOwnDevice) {
			asks = append(asks, r.Sender.Device)
		}
	}
	c.loopMu.Lock()
	for n := range c.ownUnlisted {
		asks = append(asks, n)
	}
	c.ownUnlisted = nil
	c.loopMu.Unlock()
	if len(asks) == 0 && !due {
		return
	}
	if f, known := c.relay.RelayFeatures(); !known || !f.Has(wire.FeatureDeviceLists) {
		return
	}
	a, err := LoadAccount(ctx, c.store)
	if err != nil {
		return // no account: nothing to bring up to date
	}
	top := uint32(0)
	for _, e := range a.List.Entries {
		top = max(top, e.Number)
	}
	c.loopMu.Lock()
	if c.ownListEpoch != l.Epoch || c.ownListAsked == nil {
		c.ownListEpoch, c.ownListAsked = l.Epoch, make(map[uint32]bool)
	}
	for _, n := range asks {
		if n > top && !c.ownListAsked[n] && len(c.ownListAsked) < maxListChecks {
			c.ownListAsked[n], due = true, true
		}
	}
	c.loopMu.Unlock()
	if !due {
		return
	}
	if err := c.PublishDeviceList(ctx); err != nil && ctx.Err() == nil {
		c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "device-list", Err: err})
	}
}

// publishDeviceListOnConnect publishes the list once per connection to a
// relay that keeps lists. A failure is reported, never returned: the round
// goes on, and the next connection tries again.
func (c *Client) publishDeviceListOnConnect(ctx context.Context) {
	l := c.link()
	if !l.Up {
		return
	}
	f, known := c.relay.RelayFeatures()
	if !known || !f.Has(wire.FeatureDeviceLists) {
		return
	}
	c.loopMu.Lock()
	due := l.Epoch != c.listEpoch
	c.loopMu.Unlock()
	if !due {
		return
	}
	err := c.PublishDeviceList(ctx)
	if ctx.Err() != nil {
		return
	}
	c.loopMu.Lock()
	c.listEpoch = l.Epoch
	c.listErr = err
	c.loopMu.Unlock()
	if err != nil && !errors.Is(err, ErrNoAccount) {
		c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "device-list", Err: err})
	}
}

// DeviceListPublished reports whether the list was published on the
// current connection, and the error of the last attempt.
func (c *Client) DeviceListPublished() (bool, error) {
	l := c.link()
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	return l.Up && l.Epoch == c.listEpoch && c.listErr == nil, c.listErr
}
