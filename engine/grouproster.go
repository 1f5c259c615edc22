package engine

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/wire"
)

// Signed roster changes. Every roster change a device makes is signed by its
// identity key over the group, the generation it creates, the digest of the
// roster at the generation before as the author merged it (Parent) and the
// change itself (wire.SignedRosterBody), so that whoever holds the author's
// key can check a change whoever forwards it. A receiver trusts only the key
// it has pinned for the author: the key a change carries is compared with the
// pin, never believed on its own.

// Labels of the roster signature and of the roster digest.
const (
	labelRosterChange = "parley/v1/roster-change"
	labelRosterDigest = "parley/v1/roster-digest"
)

// Group errors of signed changes and bounds, matched with errors.Is.
var (
	// ErrRosterUnverified means a roster change's signature did not verify
	// under the key pinned for its author, named no author with a pinned
	// key, or came in the unsigned layout.
	ErrRosterUnverified = errors.New("roster change not verified")
	// ErrRosterAhead means a roster change named a generation too far past
	// the merged one (MaxGenerationsAhead), or its author already has
	// MaxChangesAheadPerAuthor changes waiting: it was not stored.
	ErrRosterAhead = errors.New("roster change too far ahead")
	// ErrGroupsFull means a roster change would have brought a new group to
	// a profile that keeps MaxGroupsPerProfile already.
	ErrGroupsFull = errors.New("too many groups")
	// ErrHeldFull means a held group frame was dropped to keep the holds
	// within MaxHeldPerSender and MaxHeldGroupFrames.
	ErrHeldFull = errors.New("too many held group frames")
)

// RosterDigest is the digest of a group's roster at one generation: what a
// change names as the roster it was made on.
func RosterDigest(group wire.GroupID, r Roster) [32]byte {
	h := sha256.New()
	h.Write([]byte(labelRosterDigest))
	h.Write(group[:])
	h.Write(binary.BigEndian.AppendUint64(nil, r.Generation))
	h.Write([]byte{byte(len(r.Name))})
	h.Write([]byte(r.Name))
	for _, m := range r.Members {
		role := byte(0)
		if m.Admin {
			role = 1
		}
		h.Write([]byte{role, byte(len(m.Address))})
		h.Write([]byte(m.Address))
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// signedRosterOf is the wire form of a change of group.
func signedRosterOf(group wire.GroupID, c RosterChange) wire.SignedRoster {
	return wire.SignedRoster{
		Roster: wire.Roster{ID: c.ID, Group: group, Generation: c.Generation, Name: c.Name, Changes: c.Ops, Members: c.Members},
		Parent: c.Parent, Author: c.Author, AuthorKey: c.AuthorKey, Signature: c.Signature,
	}
}

// changeOf is the change a signed roster frame carries.
func changeOf(sr wire.SignedRoster) RosterChange {
	return RosterChange{ID: sr.ID, Author: sr.Author, Generation: sr.Generation, Name: sr.Name, Ops: sr.Changes,
		Members: sr.Members, Parent: sr.Parent, AuthorKey: sr.AuthorKey, Signature: sr.Signature}
}

// signRoster signs change c of group as this device and returns the frame.
func (c *Client) signRoster(group wire.GroupID, ch *RosterChange) ([]byte, error) {
	ch.Author = c.self.String()
	ch.AuthorKey = c.id.Public().SigningKey
	body, err := wire.SignedRosterBody(signedRosterOf(group, *ch))
	if err != nil {
		return nil, fmt.Errorf("sign roster change of group %x: %w", group[:], err)
	}
	copy(ch.Signature[:], c.id.Sign(append([]byte(labelRosterChange), body...)))
	return append(body, ch.Signature[:]...), nil
}

// VerifyRosterChange checks a signed roster frame (the bytes sr was decoded
// from) against key, the identity key the reader pinned for sr.Author: the
// key the frame carries must be that key, and the signature must verify.
func VerifyRosterChange(frame []byte, sr wire.SignedRoster, key IdentityKey) error {
	if sr.AuthorKey != key.SigningKey {
		return fmt.Errorf("roster change %x: author %s signs with a key other than the pinned one: %w", sr.ID[:], sr.Author, ErrRosterUnverified)
	}
	if len(frame) < len(sr.Signature) {
		return fmt.Errorf("roster change %x: %w", sr.ID[:], ErrRosterUnverified)
	}
	msg := append([]byte(labelRosterChange), frame[:len(frame)-len(sr.Signature)]...)
	if !ed25519.Verify(key.SigningKey[:], msg, sr.Signature[:]) {
		return fmt.Errorf("roster change %x by %s: %w", sr.ID[:], sr.Author, ErrRosterUnverified)
	}
	return nil
}

// rosterAuthorKey is the key a roster change from in's sender is checked
// against: the pin of its author. A change its author sent is checked
// against the key the pairwise session authenticated (the handshake's pin
// for a first message); a change forwarded by someone else against the pin
// this device holds for the author, and a change whose author has no pin
// here cannot be checked.
func (c *Client) rosterAuthorKey(ctx context.Context, bs *batchState, in *incoming, op opening, author string) (IdentityKey, error) {
	if author == in.sender.String() {
		if op.handshake != nil && op.handshake.Pin != nil {
			return *op.handshake.Pin, nil
		}
		if in.ps.pinned != nil {
			return *in.ps.pinned, nil
		}
		return IdentityKey{}, fmt.Errorf("roster change by %s: no pinned key: %w", author, ErrRosterUnverified)
	}
	addr, err := ParseAddress(author)
	if err != nil {
		return IdentityKey{}, fmt.Errorf("roster change author: %w: %w", ErrRosterUnverified, err)
	}
	if addr == c.self {
		return c.id.Public(), nil
	}
	ps, err := c.working(ctx, bs.work, addr)
	if err != nil {
		return IdentityKey{}, err
	}
	if ps.pinned == nil {
		return IdentityKey{}, fmt.Errorf("roster change by %s forwarded by %s: no key pinned for its author: %w", author, in.sender, ErrRosterUnverified)
	}
	return *ps.pinned, nil
}

func init() {
	errorNames = append(errorNames, []struct {
		err  error
		name string
	}{
		{ErrRosterUnverified, "roster_unverified"},
		{ErrRosterAhead, "roster_too_far_ahead"},
		{ErrGroupsFull, "groups_full"},
		{ErrHeldFull, "held_full"},
	}...)
}
