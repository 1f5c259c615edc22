package engine

import (
	"context"
	"fmt"
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

// MaxAdoptAge bounds how old a sent copy may be (since it arrived here) to
// be adopted. A receiver remembers that it processed a message until its
// finalized record is pruned; parley prunes only when asked (`parley
// prune`), and the documentation asks to prune only what no sender can
// still retry, which a week keeps well inside. Past it, a resend could be
// delivered again to a receiver that pruned.
const MaxAdoptAge = 7 * 24 * time.Hour

// maxSeenFromPerson bounds the rows the deduplication by person reads: one
// per device of a person (wire.MaxDeviceListEntries) and as many again for
// addresses of the person the list does not name, which it then ignores.
const maxSeenFromPerson = 2 * wire.MaxDeviceListEntries

// SeenFrom is a received message with a given logical ID and its sender
// (Store.SeenFromPerson).
type SeenFrom struct {
	Sender Address
	Seen   SeenMessage
}

// SentCopyRecord is a sent copy this device committed from another device
// of its person (Store.SentCopiesFrom): the message's conversation, ID
// and body, and when the copy arrived.
type SentCopyRecord struct {
	Conversation Address
	ID           wire.LogicalID
	Body         []byte
	At           time.Time
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
// MaxAdoptAge, at most MaxAdoptedMessages messages, each to every active
// device of its recipient person in the list held for them (the
// conversation's device alone when none is held).
func (c *Client) adoptedLanes(ctx context.Context, key *AccountKey, removed []Address) ([]AdoptedLane, error) {
	if key == nil {
		return nil, nil
	}
	since := c.cfg.Now().Add(-MaxAdoptAge)
	var out []AdoptedLane
	n := 0
	for _, d := range removed {
		if d.User != c.self.User || d == c.self || n >= MaxAdoptedMessages {
			continue
		}
		copies, err := c.store.SentCopiesFrom(ctx, d, since, MaxAdoptedMessages-n)
		if err != nil {
			return nil, fmt.Errorf("adopt the messages of %s: %w", d, err)
		}
		for _, cp := range copies {
			recipients := []Address{cp.Conversation}
			held, ok, err := c.store.PeerAccount(ctx, cp.Conversation.User)
			if err != nil {
				return nil, err
			}
			if ok {
				recipients = ActiveAddresses(held.List)
			}
			frame, err := encodeTextFrame(cp.ID, cp.Body)
			if err != nil {
				// A body the frame cannot carry cannot have been sent.
				continue
			}
			n++
			for _, r := range recipients {
				out = append(out, AdoptedLane{Conversation: cp.Conversation, ID: cp.ID, Recipient: r, Frame: frame})
			}
		}
	}
	return out, nil
}

// seenFromPerson looks for a one-to-one message with key's ID from another
// device of the sender's person: the same message, adopted (a surviving
// device resends a removed one's messages under their IDs). It counts only
// when the list this device holds for the person names both devices (a
// revoked one included: its messages still in flight are the person's)
// and names the sender with the identity its session holds: a stranger
// using the ID, or a device registered under the person's name that the
// account never vouched for, suppresses nothing. It returns the found
// record (Pending or Finalized set), or a zero SeenMessage.
func (c *Client) seenFromPerson(ctx context.Context, bs *batchState, in *incoming, op opening, key inboundKey) (SeenMessage, error) {
	sender := key.peer
	if sender.User == c.self.User {
		return SeenMessage{}, nil
	}
	held, ok, err := c.store.PeerAccount(ctx, sender.User)
	if err != nil || !ok || !namedWith(held.List, sender, senderKey(in, op)) {
		return SeenMessage{}, err
	}
	others := make(map[Address]bool)
	for _, e := range held.List.Entries {
		if d := (Address{User: sender.User, Device: e.Number}); d != sender {
			others[d] = true
			if dg, ok := bs.delivered[inboundKey{d, key.id}]; ok {
				return SeenMessage{Pending: true, Digest: dg}, nil
			}
		}
	}
	if len(others) == 0 {
		return SeenMessage{}, nil // a person of one device: nothing more to read
	}
	rows, err := c.store.SeenFromPerson(ctx, sender.User, key.id, maxSeenFromPerson)
	if err != nil {
		return SeenMessage{}, err
	}
	var found SeenMessage
	for _, r := range rows {
		if !others[r.Sender] {
			continue
		}
		// A finalized record says more than a pending one (the message
		// may be pending from one device and finalized from none).
		if !found.Finalized && (r.Seen.Pending || r.Seen.Finalized) {
			found = r.Seen
		}
	}
	return found, nil
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
// acknowledged again; another body is a conflict); else new.
func (c *Client) classifyByPerson(ctx context.Context, bs *batchState, in *incoming, op opening, key inboundKey, d [32]byte) (FrameEffect, ResultKind, error) {
	seen, err := c.seenFromPerson(ctx, bs, in, op, key)
	switch {
	case err != nil:
		return nil, 0, err
	case !seen.Pending && !seen.Finalized:
		return DeliverEffect{}, ResultDelivery, nil
	case seen.Digest != d && (seen.Pending || knownDigest(seen.Outcome, seen.Digest)):
		return nil, 0, ErrLogicalMessageConflict
	case seen.Pending:
		return RepeatEffect{}, ResultDelivery, nil
	case seen.Outcome == OutcomeDiscarded:
		return RepeatEffect{}, ResultAlreadyDiscarded, nil
	}
	return RepeatEffect{}, ResultAlreadyCommitted, nil
}

// heldFromPerson returns the device under which this device holds message
// id of sender's person when it is not held from sender itself: another
// device of the person that the list held for them names beside sender
// (the removed device's message and its adopted resend are one message),
// with what is held (a finalized record first). With none, it returns
// sender and nothing held. A decision heard from a sibling names the
// device its own copy came from; this lets it decide the copy held here.
func (c *Client) heldFromPerson(ctx context.Context, bs *batchState, sender Address, id wire.LogicalID) (Address, SeenMessage, error) {
	held, ok, err := c.store.PeerAccount(ctx, sender.User)
	if err != nil || !ok || sender.User == c.self.User {
		return sender, SeenMessage{}, err
	}
	if _, named := findEntry(&held.List, sender.Device); !named {
		return sender, SeenMessage{}, nil
	}
	others := make(map[Address]bool)
	for _, e := range held.List.Entries {
		if d := (Address{User: sender.User, Device: e.Number}); d != sender {
			others[d] = true
			if dg, ok := bs.delivered[inboundKey{d, id}]; ok {
				return d, SeenMessage{Pending: true, Digest: dg}, nil
			}
		}
	}
	rows, err := c.store.SeenFromPerson(ctx, sender.User, id, maxSeenFromPerson)
	if err != nil {
		return sender, SeenMessage{}, err
	}
	from, found := sender, SeenMessage{}
	for _, r := range rows {
		if others[r.Sender] && !found.Finalized && (r.Seen.Pending || r.Seen.Finalized) {
			from, found = r.Sender, r.Seen
		}
	}
	return from, found, nil
}
