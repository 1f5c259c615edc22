package engine

import (
	"context"
	"errors"

	"github.com/parley-chat/parley/wire"
)

// Forwarding roster changes to this person's own devices (issue 33). A
// device linked at time T gets the groups in its link's archive as the
// linking device held them at the archive's cut; an admin sends a later
// change to the devices its copy of this person's list names. A change
// that reached the older devices after the cut and that they acknowledged
// before the admin learned of the new device is pending to nobody: no
// lane the newer list adds (addedGroupLanes) carries it, and the new
// device would hold the group's later messages for good. So the device
// that holds the account key (the only one that links) forwards every
// signed roster change another device made that it records, in the
// receive's own transaction (RosterEffect.Forward), to every other active
// device its list names: the frame as received, which each receiver checks
// against the pin it holds for the change's author (rosterAuthorKey) and
// takes as any change (a change it has already is acknowledged and stored
// once). The receive runs under sendMu, as the store of a list naming a
// newly linked device does, and the link's archive is read after that
// list is stored: a change is in the archive, forwarded, or both.
//
// The rule is every active sibling, not only devices linked lately: it
// needs no notion of "lately", and it costs one pairwise encryption and
// one relay message per sibling for each change another device makes to
// a group of this person's (at most MaxDevicesPerAccount-1 siblings, at the
// pace admins change rosters), the same order as the admin's own fan-out.

// rosterForwards returns the devices a change by author received from
// sender is forwarded to (RosterEffect.Forward): none unless this device
// holds the account key and author is another device; otherwise every
// device the account's list names active but this one, the sender and the
// author.
func (c *Client) rosterForwards(ctx context.Context, sender Address, author string) ([]Address, error) {
	if author == c.self.String() {
		return nil, nil
	}
	a, err := LoadAccount(ctx, c.store)
	if errors.Is(err, ErrNoAccount) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if a.Key == nil || a.List.User != c.self.User {
		return nil, nil
	}
	var out []Address
	for _, e := range a.List.Entries {
		d := Address{User: a.List.User, Device: e.Number}
		if e.State != wire.DeviceActive || d == c.self || d == sender || d.String() == author {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}
