package engine

import (
	"context"
	"errors"
	"fmt"

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
//
// Every forward lane ends. Only a change whose author counts in the merge
// when it is recorded is forwarded (forwardCounts), so a plain member
// cannot make this device fan out her changes at the next generation (a
// change ahead is forwarded whoever made it, at most
// MaxChangesAheadPerAuthor per author at a time; and a change that counts
// only once a concurrent promotion merges later is never forwarded); a sibling
// that refuses a forward for good acknowledges it with nothing stored
// (dropRoster), and one that may take it later (no pin yet, no room yet)
// leaves it to be retried; and a forward lane still pending MaxGroupHold
// after it was stored is abandoned at its next retry (forwardLaneExpired). A list that
// names a device linked since adds no lane of a pending forward
// (addedGroupLanes): the link's archive carries the change.

// siblingCache is the devices a batch forwards roster changes to, read
// once per batch (forwardSiblings).
type siblingCache struct {
	read bool
	to   []Address
}

// forwardSiblings returns the other devices the account's list names
// active when this device holds the account key, read once into sc. It
// checks only that a key record is present (it does not unmarshal it). A
// profile it cannot read is an error of the receive (redone later, rather
// than a forward silently skipped); a profile that holds no account, or a
// list it cannot decode or that is not this person's, forwards nothing: a
// forward is a convenience for siblings linked since, never a reason to
// refuse a roster change.
func (c *Client) forwardSiblings(ctx context.Context, sc *siblingCache) ([]Address, error) {
	if sc.read {
		return sc.to, nil
	}
	prof, err := c.store.Profile(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the siblings to forward a roster change to: %w", err)
	}
	sc.read = true
	if prof.AccountKey == nil || prof.DeviceList == nil {
		return nil, nil
	}
	l, err := wire.DecodeDeviceList(prof.DeviceList)
	if err != nil || l.User != c.self.User {
		return nil, nil
	}
	for _, e := range l.Entries {
		if d := (Address{User: l.User, Device: e.Number}); e.State == wire.DeviceActive && d != c.self {
			sc.to = append(sc.to, d)
		}
	}
	return sc.to, nil
}

// rosterForwards sets the devices a change received from sender is
// forwarded to (RosterEffect.Forward, and ForwardAt): none unless this device holds the
// account key, the change is another device's, and its author counts in
// the merge (counts: an admin of the roster it applies to, or a member
// that only leaves; a change no merge counts is nobody's business to
// spread); otherwise every device the account's list names active but
// this one, the sender and the author. Its error is the profile's that
// could not be read (forwardSiblings).
func (c *Client) rosterForwards(ctx context.Context, sc *siblingCache, e *RosterEffect, sender Address, counts bool) error {
	author := e.Change.Author
	if author == c.self.String() || !counts {
		return nil
	}
	to, err := c.forwardSiblings(ctx, sc)
	if err != nil {
		return err
	}
	for _, d := range to {
		if d != sender && d.String() != author {
			e.Forward = append(e.Forward, d)
		}
	}
	if len(e.Forward) > 0 {
		e.ForwardAt = c.cfg.Now()
	}
	return nil
}

// forwardCounts reports whether ch, recorded in group g as this device
// holds it, is one to forward: its author counts in the merge over the
// roster ch applies to (an admin of it, or a member whose change only
// leaves). A change ahead of the next generation applies to a roster this
// device does not have yet (its author may be an admin a change still
// missing adds), so it is forwarded when recorded, as before: the log
// takes at most MaxChangesAheadPerAuthor such changes of one author
// (changeAdmitted), and the sibling holds them as this device does.
func forwardCounts(g GroupInfo, ch RosterChange) bool {
	if ch.Generation > g.Roster.Generation+1 {
		return true
	}
	r := rosterAt(g, ch.Generation-1)
	return r.IsAdmin(ch.Author) || (r.Has(ch.Author) && onlyLeaves(ch))
}

// forwardedBy reports whether a roster change by author came from sender
// as a forward (rosterforward.go): from another device of this person,
// not the author itself.
func (c *Client) forwardedBy(sender Address, author string) bool {
	return sender.User == c.self.User && sender != c.self && sender.String() != author
}

// dropRoster is the verdict on a roster change this device does not take.
// A change another device of this person forwarded (one the account's list
// names with the key that sent it) is acknowledged, nothing stored, as a
// refusal only when the refusal lasts (lasting): an author its list copy
// revokes, a creation by a non-admin, a hold that expired. A retry would
// meet the same answer, so the forwarding lane ends rather than being
// retried for good. A refusal that may pass is not acknowledged: no pin for
// the author (a link's history import may not have stored it yet), a
// signature that does not verify under the pin held (the forwarder
// verified it under its own pin, so the two pins differ: one of them is
// stale, and an identity change may wait to be accepted), no room for
// another group (the user may leave one); nor is any refusal while a link
// history import is still pending. The lane is retried, and the forwarder
// abandons it after MaxGroupHold (forwardLaneExpired). Any other change is
// dropped unacknowledged, as before.
func (c *Client) dropRoster(ctx context.Context, bs *batchState, in *incoming, op opening, sr wire.SignedRoster, verdict error, lasting bool) (prepared, error) {
	if !lasting || !c.forwardedBy(in.sender, sr.Author) {
		return in.drop(sr.ID, verdict), nil
	}
	if v, err := c.vouchSender(ctx, in.sender, senderKey(in, op)); err != nil {
		return prepared{}, err
	} else if v != VouchListed {
		return in.drop(sr.ID, verdict), nil
	}
	if _, _, pending, err := c.store.PendingLinkImport(ctx); err != nil {
		return prepared{}, err
	} else if pending {
		return in.drop(sr.ID, verdict), nil
	}
	ack, err := wire.EncodeFrame(wire.Frame{Kind: wire.FrameAck, ID: sr.ID})
	if err != nil {
		return prepared{}, err
	}
	res := ReceiveResult{Kind: ResultError, Sender: in.sender, ID: sr.ID, Group: &sr.Group,
		Err: fmt.Errorf("roster change forwarded by %s, refused: %w", in.sender, verdict)}
	return c.groupVerdict(bs, in, op, RepeatEffect{}, ack, res)
}

// forwardLaneExpired reports whether m is a lane forwarding another
// device's roster change to a sibling (rosterforward.go) that has been
// pending longer than MaxGroupHold: the sibling never acknowledged it
// (away for good, or it holds it as a change of a group it does not
// know, which it drops after the same bound), so the retry abandons it
// rather than sending it for ever.
func (c *Client) forwardLaneExpired(peer Address, m OutboundMessage) bool {
	if peer.User != c.self.User || m.Group == nil || m.CreatedAt.IsZero() || c.cfg.Now().Sub(m.CreatedAt) <= MaxGroupHold {
		return false
	}
	switch kind, _ := wire.PeekFrameKind(m.Frame); kind {
	case wire.FrameGroupState:
		// A group state to a linked device (groupstate.go): only this
		// device sends one.
		return true
	case wire.FrameSignedRoster:
	default:
		return false
	}
	sr, err := wire.DecodeSignedRoster(m.Frame)
	return err == nil && sr.Author != c.self.String()
}

// ErrForwardIDTaken means a roster change was not forwarded to a sibling
// because its ID is taken on the lanes to that sibling already, by another
// group's lane or a pending outbound row (Receipt.Unforwarded).
var ErrForwardIDTaken = errors.New("roster change ID taken on the sibling's lanes")

func init() {
	errorNames = append(errorNames, struct {
		err  error
		name string
	}{ErrForwardIDTaken, "forward_id_taken"})
}

// reportUnforwarded reports, after the commit, each forward the store did
// not store because the change's ID was taken to that sibling
// (EventSyncFailed, op "forward"): the receive went on, and the sibling
// gets the change only from its author's lane or a later link's archive.
func (c *Client) reportUnforwarded(us []Unforwarded) {
	for _, u := range us {
		c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "forward", Peer: u.To,
			Err: fmt.Errorf("roster change %x of group %x not forwarded to %s: %w", u.Change[:], u.Group[:], u.To, ErrForwardIDTaken)})
	}
}
