package engine

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/parley-chat/parley/wire"
)

// CommitRound runs the loop's commit-on-arrival step on what a round
// received, as Sync does after processing.
func (c *Client) CommitRound(ctx context.Context, received []ReceiveResult) (int, error) {
	c.loopMu.Lock()
	c.policy.Commit, c.commitPending = CommitOnArrival, false
	c.loopMu.Unlock()
	return c.commitByPolicy(ctx, received)
}

// SweepRequestsBefore sweeps the requests first seen before before, as the
// maintenance does with RequestLifetime.
func (c *Client) SweepRequestsBefore(ctx context.Context, before time.Time) (int, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.sweepLocked(ctx, before)
}

// Stage is the loop's durable stage of leased envelopes, for tests that
// run the receive steps one by one.
func (c *Client) Stage(ctx context.Context, leased []Leased) ([]int64, error) {
	return c.stage(ctx, leased)
}

// ProcessStaged processes the staged rows as the loop does under a policy
// that does not commit on arrival.
func (c *Client) ProcessStaged(ctx context.Context) ([]ReceiveResult, error) {
	return c.processStaged(ctx, false)
}

// PinnedIdentity returns the identity pinned for a peer, or nil.
func (c *Client) PinnedIdentity(ctx context.Context, peer Address) (*IdentityKey, error) {
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return nil, err
	}
	return ps.pinned, nil
}

// ProcessStagedCommitting processes the staged rows as the loop does under
// CommitOnArrival: each new delivery is committed in the transaction that
// receives it.
func (c *Client) ProcessStagedCommitting(ctx context.Context) ([]ReceiveResult, error) {
	return c.processStaged(ctx, true)
}

// SendRawFrame is a hostile client's send: frame, whatever it holds, is
// sealed on the session with peer (set up as a send would) and handed to
// the relay. What the store keeps is an empty application message under a
// fresh ID, so that the session steps stay consistent.
func (c *Client) SendRawFrame(ctx context.Context, peer Address, frame []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	work := make(map[Address]*peerState)
	ps, err := c.working(ctx, work, peer)
	if err != nil {
		return err
	}
	pin, err := c.ensureSession(ctx, ps, peer)
	if err != nil {
		return err
	}
	cand := ps.session.Clone()
	env, err := c.seal(cand, peer, frame)
	if err != nil {
		return err
	}
	sw, err := sessionWrite(peer, ps.version, cand)
	if err != nil {
		return err
	}
	ps.session, ps.version = cand, ps.version+1
	if pin != nil {
		ps.pinned = pin
	}
	var id wire.LogicalID
	if _, err := c.cfg.Random.Read(id[:]); err != nil {
		return err
	}
	cover, _ := wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: []byte{}})
	plan := Send{Recipient: peer, ID: id, Frame: cover, Body: []byte{}, At: c.cfg.Now(), Session: sw, Pin: pin, Out: Outgoing{Envelope: env, Owner: id}}
	if _, err := c.applyWork(ctx, work, []Plan{plan}); err != nil {
		return err
	}
	if errs := c.handOffMessages(ctx, "raw", []wire.Envelope{env}, []wire.LogicalID{id}); errs[0] != nil {
		return errs[0]
	}
	// The cover message is never acknowledged: it is no pending message.
	_, err = c.store.Apply(ctx, Abandon{Recipient: peer, ID: id, At: c.cfg.Now()})
	return err
}

// SignRosterChange signs ch for group as this device, whatever it says,
// and returns the frame: a hostile member's forged change.
func (c *Client) SignRosterChange(group wire.GroupID, ch RosterChange) ([]byte, error) {
	return c.signRoster(group, &ch)
}

// SignFrameBody signs body as the body of a signed roster frame (a frame
// the encoder would refuse) and returns the frame.
func (c *Client) SignFrameBody(body []byte) []byte {
	return append(append([]byte(nil), body...), c.id.Sign(append([]byte(labelRosterChange), body...))...)
}

// StagedCount counts the rows in the staging area.
func (c *Client) StagedCount(ctx context.Context) (int, error) {
	rows, err := c.store.Staged(ctx, 0, 100000)
	return len(rows), err
}

// RetryWithBody resends the pending message id to peer with another body
// under the same logical ID, as a modified client could.
func (c *Client) RetryWithBody(ctx context.Context, peer Address, id wire.LogicalID, body []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	m, err := c.store.Outbound(ctx, peer, id)
	if err != nil {
		return err
	}
	if m.Frame, err = wire.EncodeFrame(wire.Frame{Kind: wire.FrameApplication, ID: id, Body: body}); err != nil {
		return err
	}
	return c.retryOne(ctx, peer, m)
}

// SpendSendWindow encrypts the pending message id to peer again and again
// on a copy of the session until its sending chain is full (SendWindow),
// and stores the advanced session with the last envelope as one retry that
// never reaches the relay: what a relay that lost a whole window of
// envelopes leaves behind, in one transaction.
func (c *Client) SpendSendWindow(ctx context.Context, peer Address, id wire.LogicalID) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	m, err := c.store.Outbound(ctx, peer, id)
	if err != nil {
		return err
	}
	ps, err := c.snapshot(ctx, peer)
	if err != nil {
		return err
	}
	cand := ps.session.Clone()
	var env wire.Envelope
	for canSend(cand) {
		if env, err = c.seal(cand, peer, m.Frame); err != nil {
			return err
		}
	}
	sw, err := sessionWrite(peer, ps.version, cand)
	if err != nil {
		return err
	}
	ps.session, ps.version = cand, ps.version+1
	plan := Retry{Recipient: peer, ID: id, Session: sw, Out: Outgoing{Envelope: env, Owner: id}, At: c.cfg.Now()}
	_, err = c.applyWork(ctx, map[Address]*peerState{peer: &ps}, []Plan{plan})
	return err
}

// CheckLockOrder switches the lock-order checker (lockorder.go) on until
// the returned function is called; that reports the pairs of a client's
// mutexes seen nested ("held → taken") and every violation of the order.
func CheckLockOrder() func() (nested, violations []string) {
	lockOrder.mu.Lock()
	lockOrder.held, lockOrder.nested, lockOrder.violations = nil, nil, nil
	lockOrder.mu.Unlock()
	lockOrder.on.Store(true)
	return func() ([]string, []string) {
		lockOrder.on.Store(false)
		lockOrder.mu.Lock()
		defer lockOrder.mu.Unlock()
		var nested []string
		for p := range lockOrder.nested {
			nested = append(nested, p[0].String()+" → "+p[1].String())
		}
		slices.Sort(nested)
		return nested, lockOrder.violations
	}
}

// LockBackwards takes eventMu, then syncMu, against the order (reading the
// policy under both): the checker must report it.
func (c *Client) LockBackwards() Policy {
	c.eventMu.Lock()
	defer c.eventMu.Unlock()
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	return c.policy
}

// StoreGroupCreation is CreateGroup without the pump's pass: the creation
// is stored with every lane pending (one plan, roster-change), for the
// failpoint matrix.
func (c *Client) StoreGroupCreation(ctx context.Context, name string, members []Address) error {
	_, _, err := c.createGroup(ctx, name, members, false)
	return err
}

// StoreRosterChange stores a roster change pending on its lanes without
// the pump's pass (one plan, for the failpoint matrix).
func (c *Client) StoreRosterChange(ctx context.Context, id wire.GroupID, ops []wire.RosterChange) error {
	g, err := c.Group(ctx, id)
	if err != nil {
		return err
	}
	_, err = c.changeRoster(ctx, id, g, ops, false, false)
	return err
}

// PumpPeer is one peer's pass of the pump (one transaction), for the
// failpoint matrix: Pump runs one per peer.
func (c *Client) PumpPeer(ctx context.Context, peer Address) error {
	c.pumpMu.Lock()
	defer c.pumpMu.Unlock()
	_, err := c.pumpPeer(ctx, peer)
	return err
}

// SettleActions runs the pass over the actions that wait for their target
// under CommitOnArrival, as Sync does after each batch.
func (c *Client) SettleActions(ctx context.Context) ([]ReceiveResult, error) {
	c.loopMu.Lock()
	c.policy.Commit, c.commitPending = CommitOnArrival, false
	c.loopMu.Unlock()
	return c.settleActions(ctx)
}

// ChainLanes counts the lanes this client sealed by its sender chains.
func (c *Client) ChainLanes() int64 { return c.chainLanes.Load() }

// AdoptedLanes returns the lanes by which the holder of key resends the
// sent copies it holds from the removed devices, as RemoveDevice stores
// them with the list.
func (c *Client) AdoptedLanes(ctx context.Context, key *AccountKey, removed []Address) ([]AdoptedLane, error) {
	return c.adoptedLanes(ctx, key, removed), nil
}

// MaxAddedGroupLanes is maxAddedGroupLanes, for the bound's test.
const MaxAddedGroupLanes = maxAddedGroupLanes

// AddedGroupLanes is addedGroupLanes: the group lanes holding next in place
// of prev would add.
func (c *Client) AddedGroupLanes(ctx context.Context, prev *wire.DeviceList, next wire.DeviceList) ([]AddedGroupLane, error) {
	return c.addedGroupLanes(ctx, prev, next)
}

// AddedLanes is addedLanes: the one-to-one lanes holding next in place of
// prev would add to the messages pending in conversation conv.
func (c *Client) AddedLanes(ctx context.Context, prev *wire.DeviceList, next wire.DeviceList, conv Address) ([]AddedLane, error) {
	return c.addedLanes(ctx, prev, next, conv)
}

// NewArchiveWriterVersion is NewArchiveWriter writing a header of version
// (the frozen version-1 archive, an old-format archive for the refusals).
func NewArchiveWriterVersion(w io.Writer, passphrase []byte, kdf ArchiveKDF, r io.Reader, version uint8) (*ArchiveWriter, error) {
	return newArchiveWriter(w, passphrase, kdf, r, version)
}

// NewKeyedArchiveWriterVersion is NewKeyedArchiveWriter writing a header
// of version.
func NewKeyedArchiveWriterVersion(w io.Writer, key [32]byte, r io.Reader, version uint8) (*ArchiveWriter, error) {
	return newKeyedArchiveWriter(w, key, r, version)
}

// GroupStateFor is the group state plan a link of device to stores with
// its list (groupstate.go), or nil when this device holds no group.
func (c *Client) GroupStateFor(ctx context.Context, to Address) *GroupStateSend {
	return c.groupStateFor(ctx, to)
}

// SetKeptWithTargetBound sets how many kept action decisions one
// take-back applies with its target until the returned function puts the
// bound back.
func SetKeptWithTargetBound(n int) func() {
	old := keptWithTargetBound
	keptWithTargetBound = n
	return func() { keptWithTargetBound = old }
}

// SetGroupStateBudget sets the bytes of group state one link stores until
// the returned function puts the bound back.
func SetGroupStateBudget(n int) func() {
	old := groupStateBudget
	groupStateBudget = n
	return func() { groupStateBudget = old }
}

// NoListRefetch is noListRefetch, for tests that space a round's fetches
// of a list none is held for.
const NoListRefetch = noListRefetch
