package engine

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/parley-chat/parley/wire"
)

// The two profiles' sides of linking (link.go holds the exchange). Device
// 1 changes its profile once, after the relay took the new list
// (AddDevice); the new device writes its whole profile once, after the
// package checked out (CreateLinkedProfile). A ceremony that stops before
// either leaves that profile as it was.

// ImportBlock records Peer as blocked on a new device, as device 1 had it
// (a linking package): its envelopes are dropped unopened, and the relay is
// told by the maintenance (MarkBlockTold). A peer blocked already is left
// as it is.
type ImportBlock struct {
	Peer Address
	At   time.Time
}

func (ImportBlock) plan() {}

// Kind implements Plan.
func (ImportBlock) Kind() string { return "block-import" }

// LinkOffer returns what device 1 offers a new device: the account's user
// and key and the next device number. Only the device holding the account
// key links (ErrNotAccountHolder), and not past MaxDevicesPerAccount
// active devices (a *DeviceListError of rule 3).
func (c *Client) LinkOffer(ctx context.Context) (LinkOfferData, error) {
	a, err := LoadAccount(ctx, c.store)
	if err != nil {
		return LinkOfferData{}, err
	}
	if a.Key == nil {
		return LinkOfferData{}, ErrNotAccountHolder
	}
	active := 0
	for _, e := range a.List.Entries {
		if e.State == wire.DeviceActive {
			active++
		}
	}
	if active >= MaxDevicesPerAccount {
		return LinkOfferData{}, listRule(3, "the account has %d active devices, the most it may", active)
	}
	if len(a.List.Entries) >= wire.MaxDeviceListEntries {
		return LinkOfferData{}, listRule(3, "the account has linked %d devices, the most a list holds", len(a.List.Entries))
	}
	return LinkOfferData{User: a.List.User, AccountKey: a.List.AccountKey, Number: NextDeviceNumber(a.List)}, nil
}

// AddDevice signs the generation after the list held, adding e, and has
// the relay take it (compare-and-set): only then does the profile store it
// (UpdateDeviceList). A refusal leaves the profile as it was; a failure to
// store after the relay took it is mended at the next connection, which
// adopts the relay's list (PublishDeviceList). The relay must hold the
// profile's current list first: it is published before.
func (c *Client) AddDevice(ctx context.Context, e wire.DeviceEntry) (wire.DeviceList, error) {
	return c.addDevice(ctx, e, nil)
}

// addDevice is AddDevice, storing more plans (a link's cut) in the
// transaction that stores the list.
func (c *Client) addDevice(ctx context.Context, e wire.DeviceEntry, more []Plan) (wire.DeviceList, error) {
	if err := c.PublishDeviceList(ctx); err != nil {
		return wire.DeviceList{}, fmt.Errorf("add device %d: %w", e.Number, err)
	}
	a, err := LoadAccount(ctx, c.store)
	if err != nil {
		return wire.DeviceList{}, err
	}
	next, err := NextDeviceList(a.Key, a.List, e)
	if err != nil {
		return wire.DeviceList{}, fmt.Errorf("add device %d: %w", e.Number, err)
	}
	if err := c.relay.PublishDeviceList(ctx, next); err != nil {
		return wire.DeviceList{}, fmt.Errorf("add device %d: %w", e.Number, err)
	}
	// Decisions before the link's cut travel in its history archive
	// (linkhistory.go); those after it and since the entry's linking
	// time are caught up.
	var floor time.Time
	for _, p := range more {
		if cut, ok := p.(LinkCut); ok {
			floor = cut.At
		}
	}
	if err := c.storeOwnList(ctx, a.List, next, nil, nil, floor, more...); err != nil {
		return next, fmt.Errorf("store the device list the relay took (the next connection adopts it): %w", err)
	}
	return next, nil
}

// LinkPackage gathers what a new device of the account receives besides
// the list: the named contacts and the blocked senders, and this device's
// number as the linker when it is not device 1 (the new device takes
// group states from its linker only, groupstate.go; device 1 leaves it
// out, so its package stays version 1 or 2, which an older build on the
// new device reads, and the new device takes device 1 by default).
// acceptAll is the profile's setting for strangers, which lives beside
// the store.
func (c *Client) LinkPackage(ctx context.Context, list wire.DeviceList, acceptAll bool) (wire.LinkPackageData, error) {
	p := wire.LinkPackageData{AccountKey: list.AccountKey, List: list, AcceptAll: acceptAll}
	if c.self.Device != GroupStateSender {
		p.Linker = c.self.Device
	}
	names, err := c.Contacts(ctx)
	if err != nil {
		return p, err
	}
	for a, n := range names {
		if n != "" {
			p.Contacts = append(p.Contacts, wire.LinkContact{Address: a.String(), Name: n})
		}
	}
	sort.Slice(p.Contacts, func(i, j int) bool { return p.Contacts[i].Address < p.Contacts[j].Address })
	blocks, err := c.Blocks(ctx)
	if err != nil {
		return p, err
	}
	for _, b := range blocks {
		p.Blocked = append(p.Blocked, b.String())
	}
	if len(p.Contacts) > wire.MaxLinkContacts {
		p.Contacts = p.Contacts[:wire.MaxLinkContacts]
	}
	if len(p.Blocked) > wire.MaxLinkBlocked {
		p.Blocked = p.Blocked[:wire.MaxLinkBlocked]
	}
	return p, nil
}

// CreateLinkedProfile writes a linked device's profile in one
// transaction: its identity and first prekeys (Bootstrap), the account as
// the package gave it (the list, never the key), the contacts' names and
// the blocked senders, the device that linked it when the package names
// it (the one whose group states it takes, groupstate.go), and, when the
// package names a history, the
// import's start with the history this device keeps of it (keep: `parley
// link --history`), so that a resumed import keeps no more than the
// person chose at the start.
func CreateLinkedProfile(ctx context.Context, st Store, relayURL string, id *Identity, number uint32, p wire.LinkPackageData, keep HistoryChoice, r Randomness, now time.Time) (Address, error) {
	if r == nil {
		r = SystemRandom{}
	}
	self := Address{User: p.List.User, Device: number}
	recs, err := freshPreKeys(r, id, 1, now, true)
	if err != nil {
		return Address{}, err
	}
	idRec, _ := id.MarshalBinary()
	list, err := wire.EncodeDeviceList(p.List)
	if err != nil {
		return Address{}, err
	}
	plans := []Plan{Bootstrap{Self: self, RelayURL: relayURL, Identity: idRec, PreKeys: recs}, CreateAccount{List: list, LinkedBy: p.Linker}}
	if p.History != nil {
		start, err := linkImportStart(*p.History, keep, now)
		if err != nil {
			return Address{}, err
		}
		plans = append(plans, start)
	}
	for _, ct := range p.Contacts {
		a, err := ParseAddress(ct.Address)
		if err != nil || CheckContactName(ct.Name) != nil {
			continue // a name this build would not store is left out
		}
		plans = append(plans, SetContact{Peer: a, Name: ct.Name})
	}
	for _, b := range p.Blocked {
		if a, err := ParseAddress(b); err == nil {
			plans = append(plans, ImportBlock{Peer: a, At: now})
		}
	}
	if _, err := st.ApplyBatch(ctx, plans); err != nil {
		return Address{}, fmt.Errorf("store the linked profile of %s: %w", self, err)
	}
	return self, nil
}
