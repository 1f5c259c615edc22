package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Group state at link time (issue 33). A link whose archive is left out
// (no blob store, over the bound, a failed upload: ErrArchiveLeftOut)
// would leave the new device with no copy of its person's groups: their
// messages held as ones of unknown groups for good. So the device that
// holds the account key, in the transaction that stores the list naming
// the new device (storeOwnList, with the link's cut), stores one lane per
// group it holds to that device, each carrying a group state frame
// (wire.FrameGroupState): the group's record as the link's archive
// carries it (start, snapshot, signed roster changes) and the pins it
// holds for the roster's entries and its changes' authors. It does so
// for every link, archive or not: the frames are read under sendMu before
// the list is stored, so a change recorded after them is forwarded
// (rosterforward.go), and a device that gets the archive as well takes
// each group once (an import keeps what is there).
//
// The new device takes a group state only from the device that linked it
// (the one holding the account key at the time), as its link package
// named it (wire.LinkPackageData.Linker, stored with the account:
// CreateAccount.LinkedBy) or device 1 when the package did not name it
// (GroupStateSender), active in the account's list with the identity its
// session holds (ErrNotOwnDevice, ErrGroupStateSender: dropped, nothing
// stored). A
// group it does not hold is stored in the receive's transaction with the pins it
// does not hold (a pin it holds with another key stays, reported:
// ErrGroupStatePinKept), and acknowledged; a group it holds (a roster
// change started it first) keeps its start and gains the changes and
// pins it lacks. A group message held as one
// of an unknown group places at the next hold pass. A group whose frame
// would be over wire.MaxFrameSize is not sent (reported,
// ErrGroupStateTooLarge); the link goes on. The group states never hold
// the list back: built best effort (groupStateFor), and dropped from the
// transaction, reported, when the store refuses them (storeOwnList). A
// key holder under another number than 1 (a restored profile) sends
// group states like device 1: its package names it as the linker.

// GroupStateSender is the device number a group state is taken from when
// the link package did not name the linker (versions 1 and 2, written by
// device 1, the device that made the account): that device.
const GroupStateSender = 1

// Group state refusals.
var (
	// ErrGroupStateSender means a group state came from a device of this
	// person other than the one that linked this device.
	ErrGroupStateSender = errors.New("group state from a device other than the one that linked this device")
	// ErrGroupStateTooLarge means a group was not sent to a linked device
	// as a group state: its frame would be over wire.MaxFrameSize.
	ErrGroupStateTooLarge = errors.New("group too large for a group state frame")
	// ErrGroupStatePinKept means a group state carried a pin this device
	// holds with another key: its own pin stays.
	ErrGroupStatePinKept = errors.New("group state pin differs from the one held; the held pin stays")
	// ErrGroupStateBudget means a group was not sent to a linked device:
	// the link's group states were over the bytes one transaction carries
	// (maxGroupStateBytes).
	ErrGroupStateBudget = errors.New("group left out of a link's group states: over the bytes one transaction carries")
)

func init() {
	errorNames = append(errorNames, []struct {
		err  error
		name string
	}{
		{ErrGroupStateSender, "group_state_sender"},
		{ErrGroupStateTooLarge, "group_state_too_large"},
		{ErrGroupStatePinKept, "group_state_pin_kept"},
		{ErrGroupStateBudget, "group_state_budget"},
	}...)
}

// GroupStateLane is one group state frame to a linked device.
type GroupStateLane struct {
	ID    wire.LogicalID
	Group wire.GroupID
	Frame []byte // wire.EncodeGroupState
}

// GroupStateSend stores lanes carrying this person's groups to a device
// it links (To), each a pending outbound row and a pending lane of its
// group, stored at At. It goes in the transaction that stores the list
// naming To (after an UpdateDeviceList in the same batch): the store
// refuses it when the account's list does not name To active, or To is
// this device.
type GroupStateSend struct {
	To    Address
	Lanes []GroupStateLane
	At    time.Time
}

func (GroupStateSend) plan() {}

// Kind implements Plan.
func (GroupStateSend) Kind() string { return "group-state-send" }

// GroupStateEffect stores a group state from device 1 (groupstate.go):
// a group this device does not hold, with its changes; of a group held by
// the time the transaction runs, the changes it lacks, its row (start,
// snapshot, name) left as it is; and the pins carried that it does not
// hold (every pin held stays).
type GroupStateEffect struct {
	Group wire.ArchiveGroup
	Pins  []wire.ArchivePin
	// PinsKept are the members whose pin carried differs from the one
	// held: nothing is stored for them; they are reported once the
	// transaction commits (ErrGroupStatePinKept, finishRows).
	PinsKept []Address
}

func (GroupStateEffect) effect() {}

// maxGroupStateBytes bounds the group state frames one link stores: they
// go in the transaction that stores the list (under sendMu, beside the
// catch-up and added lanes), and up to MaxGroupsPerProfile frames of up to
// wire.MaxFrameSize each would make that one transaction tens of
// megabytes. A few megabytes carry the groups of any ordinary profile; a
// group beyond the budget is left out, reported (ErrGroupStateBudget).
const maxGroupStateBytes = 4 << 20

// groupStateBudget is maxGroupStateBytes; a test lowers it.
var groupStateBudget = maxGroupStateBytes

// groupStateFor reads the groups this device holds and builds the group
// state lanes to device to, under sendMu: nil when it holds none. It is
// best effort and never fails: the list it goes with is the relay's
// already, and a link must not fail for a group. A group whose read
// fails, or too large for one frame, or beyond the transaction's byte
// budget, is left out, and a group too large only with its pins goes
// without them; each is reported.
func (c *Client) groupStateFor(ctx context.Context, to Address) *GroupStateSend {
	report := func(err error) {
		c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "group-state", Peer: to, Err: err})
	}
	var groups []wire.ArchiveGroup
	pins := make(map[string]wire.ArchivePin)
	err := c.store.GroupStateRecords(ctx, func(r wire.ArchiveRecord) error {
		switch r := r.(type) {
		case wire.ArchiveGroup:
			groups = append(groups, r)
		case wire.ArchivePin:
			pins[r.Address] = r
		}
		return nil
	})
	if err != nil {
		report(fmt.Errorf("no group state sent to %s: read the groups: %w", to, err))
		return nil
	}
	p := &GroupStateSend{To: to, At: c.cfg.Now()}
	total := 0
	for _, g := range groups {
		want := make(map[string]bool)
		for _, ch := range g.Changes {
			want[ch.Author] = true
		}
		if info, err := c.store.Group(ctx, g.ID); err == nil {
			for _, m := range info.Roster.Members {
				want[m.Address] = true
			}
		} else if !errors.Is(err, ErrUnknownGroup) {
			report(fmt.Errorf("group %x not sent to %s: %w", g.ID[:], to, err))
			continue
		}
		s := wire.GroupState{Group: g}
		if _, err := io.ReadFull(c.cfg.Random, s.ID[:]); err != nil {
			report(fmt.Errorf("group %x not sent to %s: %w", g.ID[:], to, err))
			continue
		}
		for a := range want {
			if pin, ok := pins[a]; ok && a != to.String() {
				s.Pins = append(s.Pins, pin)
			}
		}
		sort.Slice(s.Pins, func(i, j int) bool { return s.Pins[i].Address < s.Pins[j].Address })
		if len(s.Pins) > wire.MaxGroupStatePins {
			s.Pins = s.Pins[:wire.MaxGroupStatePins]
		}
		frame, err := wire.EncodeGroupState(s)
		if err != nil && len(s.Pins) > 0 {
			// Too large, or refused, only with its pins: the group
			// goes without them (the new device pins its members on
			// first use).
			withPins := err
			s.Pins = nil
			if frame, err = wire.EncodeGroupState(s); err == nil {
				report(fmt.Errorf("group %x sent to %s without its pins: %w", g.ID[:], to, withPins))
			}
		}
		switch {
		case errors.Is(err, wire.ErrMessageTooLarge):
			report(fmt.Errorf("group %x not sent to %s: %w: %w", g.ID[:], to, ErrGroupStateTooLarge, err))
			continue
		case err != nil:
			report(fmt.Errorf("group %x not sent to %s: %w", g.ID[:], to, err))
			continue
		case total+len(frame) > groupStateBudget:
			report(fmt.Errorf("group %x not sent to %s: %d bytes sent already: %w", g.ID[:], to, total, ErrGroupStateBudget))
			continue
		}
		total += len(frame)
		p.Lanes = append(p.Lanes, GroupStateLane{ID: s.ID, Group: g.ID, Frame: frame})
	}
	if len(p.Lanes) == 0 {
		return nil
	}
	return p
}

// groupStateLinked is the group state plan of a link among more (its
// LinkCut names the device), or nil. Any key holder sends it: the
// package names a linker other than device 1 (LinkPackage), which the new
// device takes group states from.
func (c *Client) groupStateLinked(ctx context.Context, user string, more []Plan) *GroupStateSend {
	for _, p := range more {
		if cut, ok := p.(LinkCut); ok {
			return c.groupStateFor(ctx, Address{User: user, Device: cut.Device})
		}
	}
	return nil
}

// pinBytes is an identity as a pin record holds it.
func pinBytes(k IdentityKey) []byte {
	b := append([]byte(nil), k.SigningKey[:]...)
	b = append(b, k.DHKey[:]...)
	return append(b, k.Signature[:]...)
}

// prepareGroupState receives a group state (wire.FrameGroupState): from
// the device that linked this one only (Profile.LinkedBy, device 1 when
// not named), a group this device does not
// hold is stored with the pins it lacks, and acknowledged. One it holds
// (from the store, or started earlier in the batch: a roster change that
// started it before the state came) gets the changes and the pins it
// lacks, its start and snapshot left as they are, and is acknowledged.
// The group is recorded in the batch, so a later row sees it.
func (c *Client) prepareGroupState(ctx context.Context, bs *batchState, in *incoming, op opening) (prepared, error) {
	s, err := wire.DecodeGroupState(op.plaintext)
	if err != nil {
		return in.drop(wire.LogicalID{}, fmt.Errorf("group state: %w", err)), nil
	}
	if err := c.checkOwnDevice(ctx, in, op); errors.Is(err, ErrNotOwnDevice) {
		return in.drop(s.ID, fmt.Errorf("group state: %w", err)), nil
	} else if err != nil {
		return prepared{}, err
	}
	prof, err := c.store.Profile(ctx)
	if err != nil {
		return prepared{}, fmt.Errorf("group state: read profile: %w", err)
	}
	linker := cmp.Or(prof.LinkedBy, GroupStateSender)
	if in.sender.Device != linker {
		return in.drop(s.ID, fmt.Errorf("group state from %s, linked by device %d: %w", in.sender, linker, ErrGroupStateSender)), nil
	}
	for _, ch := range s.Group.Changes {
		if a, err := ParseAddress(ch.Author); err != nil || a.String() != ch.Author {
			return in.drop(s.ID, fmt.Errorf("group state from %s: change author %q: %w", in.sender, ch.Author, ErrInvalidAddress)), nil
		}
	}
	info, err := groupStateInfo(s.Group)
	if err != nil {
		return in.drop(s.ID, fmt.Errorf("group state from %s: %w", in.sender, err)), nil
	}
	g := s.Group.ID
	step := in.step(op, s.ID, &g, wire.ContentText)
	step.res.Kind = ResultGroupState
	held, known, err := bs.group(ctx, c.store, g)
	if err != nil {
		return prepared{}, err
	}
	if !known {
		if full, err := c.groupsFull(ctx, bs, c.store); err != nil {
			return prepared{}, err
		} else if full {
			return in.drop(s.ID, fmt.Errorf("group state of %x from %s: %d groups kept: %w", g[:], in.sender, MaxGroupsPerProfile, ErrGroupsFull)), nil
		}
	}
	e := GroupStateEffect{Group: s.Group}
	for _, p := range s.Pins {
		a, err := ParseAddress(p.Address)
		if err != nil || a.String() != p.Address {
			return in.drop(s.ID, fmt.Errorf("group state from %s: pin of %q: %w", in.sender, p.Address, ErrInvalidAddress)), nil
		}
		if _, err := decodePinBytes(p.Identity); err != nil {
			return in.drop(s.ID, fmt.Errorf("group state from %s: pin of %s: %w", in.sender, a, err)), nil
		}
		if a == c.self || a == in.sender {
			continue
		}
		// The pin as stored: this batch's working copy of a peer it
		// touches (a handshake in it pins the peer itself), else the
		// store's row. No working copy is made here, so none carries a
		// stale "no pin" back to the cache after the commit.
		var pinned *IdentityKey
		if ps, ok := bs.work[a]; ok {
			if ps.pinned == nil {
				continue // a handshake of this batch pins it
			}
			pinned = ps.pinned
		} else {
			st, err := c.store.Peer(ctx, a)
			if err != nil {
				return prepared{}, err
			}
			pinned = st.Pinned
		}
		switch {
		case pinned == nil:
			e.Pins = append(e.Pins, p)
		case !bytes.Equal(pinBytes(*pinned), p.Identity):
			e.PinsKept = append(e.PinsKept, a)
		}
	}
	step.effect = e
	if known {
		// The store adds the changes not held; the batch sees them too.
		merged := append([]RosterChange(nil), held.Changes...)
		have := make(map[wire.LogicalID]bool, len(merged))
		for _, ch := range merged {
			have[ch.ID] = true
		}
		for _, ch := range info.Changes {
			if !have[ch.ID] {
				merged = append(merged, ch)
			}
		}
		r, _ := MergeRoster(held.Start, merged, 0)
		bs.changed(held, merged, r, nil)
	} else {
		bs.newGroups++
		bs.changed(info, info.Changes, info.Roster, nil)
	}
	if step.ack, err = c.ackOnNext(&step.next, in.sender, s.ID); err != nil {
		return prepared{}, err
	}
	return in.receive(bs, op, step)
}

// groupStateInfo is a group state's group as the store would read it back:
// its snapshot a roster of that group, each change a roster frame of that
// group under the change's ID (and, signed, by its author); any other is
// ErrMalformed.
func groupStateInfo(a wire.ArchiveGroup) (GroupInfo, error) {
	g := GroupInfo{ID: a.ID, Name: a.Name}
	for _, ch := range a.Changes {
		var rc RosterChange
		var r wire.Roster
		if kind, err := wire.PeekFrameKind(ch.Frame); err == nil && kind == wire.FrameSignedRoster {
			sr, err := wire.DecodeSignedRoster(ch.Frame)
			if err != nil || sr.Author != ch.Author {
				return GroupInfo{}, fmt.Errorf("change %x: not a roster change by %s: %w", ch.ID[:], ch.Author, wire.ErrMalformed)
			}
			r = sr.Roster
			rc = RosterChange{ID: sr.ID, Author: sr.Author, Generation: sr.Generation, Name: sr.Name, Ops: sr.Changes,
				Members: sr.Members, Parent: sr.Parent, AuthorKey: sr.AuthorKey, Signature: sr.Signature}
		} else {
			var err error
			if r, err = wire.DecodeRoster(ch.Frame); err != nil {
				return GroupInfo{}, fmt.Errorf("change %x: not a roster change: %w", ch.ID[:], wire.ErrMalformed)
			}
			rc = RosterChange{ID: r.ID, Author: ch.Author, Generation: r.Generation, Name: r.Name, Ops: r.Changes, Members: r.Members}
		}
		if r.Group != a.ID || r.ID != ch.ID || r.Generation != ch.Generation {
			return GroupInfo{}, fmt.Errorf("change %x: a change of group %x, ID %x: %w", ch.ID[:], r.Group[:], r.ID[:], wire.ErrMalformed)
		}
		g.Changes = append(g.Changes, rc)
	}
	switch {
	case a.Snapshot != nil:
		r, err := wire.DecodeRoster(a.Snapshot)
		if err != nil || r.Group != a.ID {
			return GroupInfo{}, fmt.Errorf("snapshot: not a roster of group %x: %w", a.ID[:], wire.ErrMalformed)
		}
		g.Start = GroupStart{Snapshot: &Roster{Generation: r.Generation, Name: r.Name, Members: r.Members},
			Vouchers: strings.Fields(a.Vouchers)}
	case a.Start != nil:
		g.Start = GroupStart{Change: *a.Start}
	default:
		g.Start = LegacyStart(g.Changes)
	}
	g.Roster, _ = MergeRoster(g.Start, g.Changes, 0)
	if g.Roster.Name != "" {
		g.Name = g.Roster.Name
	}
	return g, nil
}

// decodePinBytes checks an identity as a pin record holds it.
func decodePinBytes(b []byte) (IdentityKey, error) {
	var k IdentityKey
	if len(b) != len(k.SigningKey)+len(k.DHKey)+len(k.Signature) {
		return k, fmt.Errorf("pinned identity of %d bytes: %w", len(b), wire.ErrMalformed)
	}
	n := copy(k.SigningKey[:], b)
	n += copy(k.DHKey[:], b[n:])
	copy(k.Signature[:], b[n:])
	return k, nil
}
