package relaystore

import (
	"slices"
	"time"
)

// Who a recipient talks to, as the relay learns it. The relay sees every
// envelope's sender and recipient; when bob submits an envelope to alice it
// records that bob accepts alice (Store.Accept), and alice's envelopes to bob
// are then not strangers' (Origin.Stranger): they may use bob's whole
// mailbox, while strangers share a part of it, and each IP a part of that.
// A recipient may also block a sender (Store.Block): the relay answers that
// sender's envelopes as accepted and discards them.

// Default bounds of the accepted set and the block list.
const (
	// DefaultAcceptedPeers bounds the peers recorded per address: more
	// than a person writes to, few enough that the record stays small.
	DefaultAcceptedPeers = 1000
	// DefaultBlockedSenders bounds one address's block list; a client
	// that needs more rotates its address rather than grow the relay's
	// state without bound.
	DefaultBlockedSenders = 1000
	// DefaultAcceptedLifetime is how long the relay keeps a record of one
	// address writing to another: long enough to span a holiday, short
	// enough that a seized relay's record of who talks to whom is a
	// season's, not a lifetime's.
	DefaultAcceptedLifetime = 90 * 24 * time.Hour
)

// Relation is what owner's records say of one sender.
type Relation struct {
	Accepted bool // owner sent the sender an envelope (recently enough)
	Blocked  bool // owner blocks the sender
}

// peerDefaults fills the stranger and peer limits; WithDefaults calls it
// once the mailbox limits are set.
func (l Limits) peerDefaults() Limits {
	if l.StrangerEnvelopes <= 0 {
		l.StrangerEnvelopes = max(1, l.MailboxEnvelopes/2)
	}
	if l.StrangerBytes <= 0 {
		l.StrangerBytes = max(1, l.MailboxBytes/2)
	}
	if l.StrangerIPEnvelopes <= 0 {
		l.StrangerIPEnvelopes = max(1, l.StrangerEnvelopes/4)
	}
	if l.StrangerIPBytes <= 0 {
		l.StrangerIPBytes = max(1, l.StrangerBytes/4)
	}
	if l.AcceptedPeers <= 0 {
		l.AcceptedPeers = DefaultAcceptedPeers
	}
	if l.BlockedSenders <= 0 {
		l.BlockedSenders = DefaultBlockedSenders
	}
	if l.AcceptedLifetime <= 0 {
		l.AcceptedLifetime = DefaultAcceptedLifetime
	}
	return l
}

// StrangerError names the stranger limit an Append of copies envelopes of
// size bytes in all would pass, given what strangers hold in the mailbox
// (room) and what those behind from.IP hold in it (ip); nil when from is not
// a stranger or it passes none. An unknown IP is charged to the room only.
func (l Limits) StrangerError(room, ip Usage, from Origin, copies int, size int64) error {
	switch {
	case !from.Stranger:
		return nil
	case room.Envelopes+copies > l.StrangerEnvelopes || room.Bytes+size > l.StrangerBytes:
		return ErrStrangerRoom
	case from.IP != "" && (ip.Envelopes+copies > l.StrangerIPEnvelopes || ip.Bytes+size > l.StrangerIPBytes):
		return ErrStrangerIPShare
	}
	return nil
}

// Peer is one entry of a PeerList: an address and when it was recorded.
type Peer struct {
	Address string
	Seen    time.Time
}

// PeerList is one owner's accepted peers or blocked senders, least recently
// recorded first. The backends that keep a list as one value (memory, NATS)
// share it.
type PeerList []Peer

// Has reports whether address is in l.
func (l PeerList) Has(address string) bool {
	return slices.ContainsFunc(l, func(p Peer) bool { return p.Address == address })
}

// HasSince reports whether address is in l, recorded at since or later.
func (l PeerList) HasSince(address string, since time.Time) bool {
	return slices.ContainsFunc(l, func(p Peer) bool { return p.Address == address && !p.Seen.Before(since) })
}

// Forget returns l without the entries recorded before before, and how
// many those were.
func (l PeerList) Forget(before time.Time) (PeerList, int) {
	n := len(l)
	l = slices.DeleteFunc(l, func(p Peer) bool { return p.Seen.Before(before) })
	return l, n - len(l)
}

// Record returns l with address recorded at now, moved to the end when it
// was there already, and the oldest entries dropped past limit; forgot
// says how many were.
func (l PeerList) Record(address string, now time.Time, limit int) (_ PeerList, forgot int) {
	l = l.Remove(address)
	l = append(l, Peer{Address: address, Seen: now})
	if n := len(l) - limit; n > 0 {
		l = slices.Delete(l, 0, n)
		forgot = n
	}
	return l, forgot
}

// Remove returns l without address.
func (l PeerList) Remove(address string) PeerList {
	return slices.DeleteFunc(l, func(p Peer) bool { return p.Address == address })
}

// SetBlocked returns l with address added (blocked) or removed, or
// ErrBlockListFull when adding it would take l past limit.
func (l PeerList) SetBlocked(address string, blocked bool, now time.Time, limit int) (PeerList, error) {
	switch {
	case !blocked:
		return l.Remove(address), nil
	case l.Has(address):
		return l, nil
	case len(l) >= limit:
		return l, ErrBlockListFull
	}
	return append(l, Peer{Address: address, Seen: now}), nil
}
