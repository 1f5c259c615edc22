package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Adoption (issue 33, "Removing a device"). A device removed from its
// account may have sent messages whose lanes were never acknowledged: the
// relay now refuses it, so it cannot retry them. Its siblings know those
// messages through the sent copies they committed. The device holding the
// account key, which removes the device (or adopts, at its next
// connection, the relay's list that revokes it), resends each copy it
// holds from the removed device, newer than MaxAdoptAge and at most
// MaxAdoptedMessages of them, under the same logical ID, on a new lane to
// every active device of the recipient person, in the transaction that
// stores the list (UpdateDeviceList.Adopted). Its history entry turns
// from copied to pending, and moves on by the lane rules.
//
// It cannot know which of them the recipient already has: a sent copy
// does not say how the removed device's lanes ended. So the receiver
// deduplicates by person (seenFromPerson): a message with the ID of one
// it holds (pending, committed or discarded) from another device of the
// same person, both named by the list it holds for that person, is the
// same message. It is acknowledged as a repeat and delivered nothing.
//
// Only the account-key holder adopts: it is always a survivor (it cannot
// remove itself), it is the device that removes, and one resend per
// message is enough. A sibling that takes the newer list later resends
// nothing, so receivers see at most one adopted copy.

// MaxAdoptedMessages bounds the messages one removal resends: a device that
// sent much more than this and got none of it acknowledged is rare, and
// the resends are one transaction. The newest are adopted first.
const MaxAdoptedMessages = 256

// MaxAdoptedBytes bounds the frames one removal's adoption stores, summed
// over its lanes (a frame per device of the recipient person): they are
// written in the transaction that stores the revoking list, which must
// stay small enough to commit at once on a small device (256 messages of
// up to 192 KiB to several devices each would be hundreds of MiB). What
// does not fit is not adopted, and reported (ErrAdoptedBytes).
const MaxAdoptedBytes = 4 << 20

// ErrAdoptedBytes reports sent copies left out of an adoption by
// MaxAdoptedBytes.
var ErrAdoptedBytes = errors.New("engine: adoption bounded by MaxAdoptedBytes")

// ErrAdoptFirstBody reports a sent copy left out of an adoption because
// it was edited and the body its device first sent (the edit-0 version)
// is not held here, as when its edits came with an imported history. The
// resend must carry that first body: a receiver that has the message
// takes a resend with another body from a sibling device as a new
// message (seenFromPerson), which would show it twice.
var ErrAdoptFirstBody = errors.New("engine: an edited sent copy whose first body is not held here is not adopted")

// MaxAdoptAge bounds how old a sent copy may be (since it arrived here) to
// be adopted. A receiver remembers that it processed a message until its
// finalized record is pruned; parley prunes only when asked (`parley
// prune`), and the documentation asks to prune only what no sender can
// still retry, which a week keeps well inside. Past it, a resend could be
// delivered again to a receiver that pruned.
const MaxAdoptAge = 7 * 24 * time.Hour

// SentCopyRecord is a sent copy this device committed from another device
// of its person (Store.SentCopiesFrom): the message's conversation, ID
// and body, and when the copy arrived.
//
// Err is set, and the rest may be zero, when the row cannot be read (an
// unsealable body, a malformed address), or wraps ErrAdoptFirstBody, with
// no body, for an edited copy whose first body is not held: the adoption
// skips it.
type SentCopyRecord struct {
	Conversation Address
	ID           wire.LogicalID
	Body         []byte
	At           time.Time
	Err          error
}

// AdoptedLane is one lane of a removed device's message that a surviving
// device resends (UpdateDeviceList.Adopted): to Recipient, a device of the
// person of Conversation, carrying Frame (the text frame of ID).
type AdoptedLane struct {
	Conversation Address
	ID           wire.LogicalID
	Recipient    Address
	Frame        []byte
}

// adoptedLanes returns the lanes by which this device resends the sent
// copies it holds from the devices of removed: only on the device holding
// the account key (a nil key adopts nothing), only copies newer than
// MaxAdoptAge, at most MaxAdoptedMessages messages and MaxAdoptedBytes of
// frames, each to every active device of its recipient person in the list
// held for them (the conversation's device alone when none is held). Only
// copies to people this device already talks with are resent: a list
// held for them, or a pinned identity of the conversation's device.
//
// It is best effort: the revocation must be stored whatever the adoption
// meets, so a copy that cannot be read or resent is skipped and reported
// (EventSyncFailed, op "adopt"), never returned as an error; so is an
// edited copy whose first body is not held (ErrAdoptFirstBody), counted
// in one report per removed device, naming the first few.
func (c *Client) adoptedLanes(ctx context.Context, key *AccountKey, removed []Address) []AdoptedLane {
	if key == nil {
		return nil
	}
	since := c.cfg.Now().Add(-MaxAdoptAge)
	var out []AdoptedLane
	n, size, left, strangers := 0, 0, 0, 0
	for _, d := range removed {
		if d.User != c.self.User || d == c.self || n >= MaxAdoptedMessages {
			continue
		}
		copies, err := c.store.SentCopiesFrom(ctx, d, since, MaxAdoptedMessages-n)
		if err != nil {
			c.adoptFailed(fmt.Errorf("adopt the messages of %s: %w", d, err))
			continue
		}
		var firstless []SentCopyRecord
		for _, cp := range copies {
			if errors.Is(cp.Err, ErrAdoptFirstBody) {
				firstless = append(firstless, cp)
				continue
			}
			if cp.Err != nil {
				c.adoptFailed(fmt.Errorf("adopt a message of %s: %w", d, cp.Err))
				continue
			}
			recipients := []Address{cp.Conversation}
			held, ok, err := c.store.PeerAccount(ctx, cp.Conversation.User)
			if err != nil {
				c.adoptFailed(fmt.Errorf("adopt message %x of %s: device list of %s: %w", cp.ID[:4], d, cp.Conversation.User, err))
				continue
			}
			if ok {
				recipients = ActiveAddresses(held.List)
			} else if known, err := c.talksWith(ctx, cp.Conversation); err != nil || !known {
				// A stranger to this device: whatever the removed (maybe
				// stolen) device claims to have sent them is not resent.
				if err != nil {
					c.adoptFailed(fmt.Errorf("adopt message %x of %s: %w", cp.ID[:4], d, err))
				} else {
					strangers++
				}
				continue
			}
			frame, err := encodeTextFrame(cp.ID, cp.Body)
			if err != nil {
				// A body the frame cannot carry cannot have been sent.
				c.adoptFailed(fmt.Errorf("adopt message %x of %s: %w", cp.ID[:4], d, err))
				continue
			}
			if size+len(frame)*len(recipients) > MaxAdoptedBytes {
				left++
				continue
			}
			n++
			size += len(frame) * len(recipients)
			for _, r := range recipients {
				out = append(out, AdoptedLane{Conversation: cp.Conversation, ID: cp.ID, Recipient: r, Frame: frame})
			}
		}
		if len(firstless) > 0 {
			c.adoptFailed(fmt.Errorf("%d edited sent copies of %s not adopted (%s): %w", len(firstless), d, namedCopies(firstless), ErrAdoptFirstBody))
		}
	}
	if left > 0 {
		c.adoptFailed(fmt.Errorf("%d sent copies not adopted: %w", left, ErrAdoptedBytes))
	}
	if strangers > 0 {
		c.adoptFailed(fmt.Errorf("%d sent copies to people this device never talked with not adopted", strangers))
	}
	return out
}

// maxNamedCopies bounds how many copies a report names.
const maxNamedCopies = 4

// namedCopies names the first maxNamedCopies of copies by conversation
// and ID prefix, for a report.
func namedCopies(copies []SentCopyRecord) string {
	var names []string
	for i, cp := range copies {
		if i == maxNamedCopies {
			names = append(names, "...")
			break
		}
		names = append(names, fmt.Sprintf("%s %x", cp.Conversation, cp.ID[:4]))
	}
	return strings.Join(names, ", ")
}

// talksWith reports whether this device has a conversation with peer's
// device without holding its person's list: a pinned identity for it.
func (c *Client) talksWith(ctx context.Context, peer Address) (bool, error) {
	ps, err := c.store.Peer(ctx, peer)
	if err != nil {
		return false, fmt.Errorf("peer %s: %w", peer, err)
	}
	return ps.Pinned != nil, nil
}

// adoptFailed reports what the adoption skipped.
func (c *Client) adoptFailed(err error) {
	c.emit(Event{Kind: EventSyncFailed, At: c.cfg.Now(), Op: "adopt", Err: err})
}

// seenFromPerson looks for a one-to-one message with key's ID from another
// device of the sender's person: the same message, adopted (a surviving
// device resends a removed one's messages under their IDs). It counts only
// when the list this device holds for the person names both devices (a
// revoked one included: its messages still in flight are the person's)
// and names the sender with the identity its session holds: a stranger
// using the ID, or a device registered under the person's name that the
// account never vouched for, suppresses nothing. Nor does a record with
// another body: an adopted resend always carries the copy's body,
// so a different one from a sibling is no resend but a lying sibling,
// and the message is new from its device (body is the digest of the
// message received). It returns the device the record is from and the
// record (Pending or Finalized set), or key's sender and a zero
// SeenMessage.
func (c *Client) seenFromPerson(ctx context.Context, bs *batchState, in *incoming, op opening, key inboundKey, body [32]byte) (Address, SeenMessage, error) {
	sender := key.peer
	if sender.User == c.self.User {
		return sender, SeenMessage{}, nil
	}
	list, ok, err := c.personList(ctx, sender.User)
	if err != nil || !ok || !namedWith(list, sender, senderKey(in, op)) {
		return sender, SeenMessage{}, err
	}
	var others []Address
	for _, e := range list.Entries {
		if d := (Address{User: sender.User, Device: e.Number}); d != sender {
			others = append(others, d)
			if dg, ok := bs.delivered[inboundKey{d, key.id}]; ok && sameBody(SeenMessage{Pending: true, Digest: dg}, body) {
				return d, SeenMessage{Pending: true, Digest: dg}, nil
			}
		}
	}
	from, found, err := c.seenFromDevices(ctx, others, key.id, func(s SeenMessage) bool { return sameBody(s, body) })
	if err != nil || !(found.Pending || found.Finalized) {
		return sender, SeenMessage{}, err
	}
	return from, found, nil
}

// seenFromDevices reads message id from each of devices (point lookups on
// the primary key: a person has a few devices, at most
// wire.MaxDeviceListEntries) and returns the device and record of the
// first finalized one that keep accepts, else of the first pending one;
// with none, a zero SeenMessage. A message known only from an imported
// history counts for nothing here (its body is unknown).
func (c *Client) seenFromDevices(ctx context.Context, devices []Address, id wire.LogicalID, keep func(SeenMessage) bool) (Address, SeenMessage, error) {
	var from Address
	var found SeenMessage
	for _, d := range devices {
		s, err := c.store.Seen(ctx, d, id)
		if err != nil {
			return Address{}, SeenMessage{}, err
		}
		if s.Imported || !(s.Pending || s.Finalized) || !keep(s) {
			continue
		}
		// A finalized record says more than a pending one (the message
		// may be pending from one device and finalized from none).
		if s.Finalized {
			return d, s, nil
		}
		if !found.Pending {
			from, found = d, s
		}
	}
	return from, found, nil
}

// sameBody reports whether s, a record of a message, may be of body
// digest d: its digest is d, or unknown (a discard that kept none).
func sameBody(s SeenMessage, d [32]byte) bool {
	return s.Digest == d || !knownDigest(s.Outcome, s.Digest)
}

// namedWith reports whether l names device (active or revoked) with
// identity key.
func namedWith(l wire.DeviceList, device Address, key *IdentityKey) bool {
	if key == nil || device.User != l.User {
		return false
	}
	e, found := findEntry(&l, device.Device)
	return found && e.SigningKey == key.SigningKey && e.DHKey == key.DHKey
}

// classifyByPerson is classify for a one-to-one message new from its
// sender device: a repeat when another device of the sender's person sent
// it here before (seenFromPerson), by the same rules as a repeat from the
// same device (a repeat of a pending one, or of a finalized one, which is
// acknowledged again), with the same body only; else new. It also returns
// the device whose record the message repeats (key's sender when new).
func (c *Client) classifyByPerson(ctx context.Context, bs *batchState, in *incoming, op opening, key inboundKey, d [32]byte) (FrameEffect, ResultKind, Address, error) {
	from, seen, err := c.seenFromPerson(ctx, bs, in, op, key, d)
	switch {
	case err != nil:
		return nil, 0, key.peer, err
	case !seen.Pending && !seen.Finalized:
		return DeliverEffect{}, ResultDelivery, key.peer, nil
	case seen.Pending:
		return RepeatEffect{}, ResultDelivery, from, nil
	case seen.Outcome == OutcomeDiscarded:
		return RepeatEffect{}, ResultAlreadyDiscarded, from, nil
	}
	return RepeatEffect{}, ResultAlreadyCommitted, from, nil
}

// heldFromPerson returns the device under which this device holds message
// id of sender's person when it is not held from sender itself: another
// device of the person that the list held for them names beside sender
// (the removed device's message and its adopted resend are one message),
// with what is held (a finalized record first). With none, it returns
// sender and nothing held. A decision heard from a sibling names the
// device its own copy came from; this lets it decide the copy held here.
func (c *Client) heldFromPerson(ctx context.Context, bs *batchState, sender Address, id wire.LogicalID) (Address, SeenMessage, error) {
	list, ok, err := c.personList(ctx, sender.User)
	if err != nil || !ok || sender.User == c.self.User {
		return sender, SeenMessage{}, err
	}
	if _, named := findEntry(&list, sender.Device); !named {
		return sender, SeenMessage{}, nil
	}
	var others []Address
	for _, e := range list.Entries {
		if d := (Address{User: sender.User, Device: e.Number}); d != sender {
			others = append(others, d)
			if dg, ok := bs.delivered[inboundKey{d, id}]; ok {
				return d, SeenMessage{Pending: true, Digest: dg}, nil
			}
		}
	}
	from, found, err := c.seenFromDevices(ctx, others, id, func(SeenMessage) bool { return true })
	if err != nil || !(found.Pending || found.Finalized) {
		return sender, SeenMessage{}, err
	}
	return from, found, nil
}
