// Package relaystore holds what a parley relay keeps: which identity key owns
// each device address, each address's prekey bundle and pool of one-time
// prekeys, each recipient's mailbox of envelopes with its leases, and the
// peers each address accepts and the senders it blocks (peers.go).
//
// The relay server (package relayserver) talks to storage only through
// Store, so that another backend can replace the two kept here: Memory, the
// default, and SQLite, which survives a crash (natsstore is a third).
// WithFaults decorates any of them with fault injection, and Leases is the
// table of leased rows that the backends keeping rows elsewhere share. The
// package imports wire for the bundle type and must not import the engine,
// the websocket, the client (transport) or the server (relayserver).
package relaystore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Store is the relay's storage. Every method is safe for concurrent use and
// atomic on its own: a method that fails changes nothing. Addresses are the
// canonical "user/device" strings the relay has already parsed.
//
// The shape is chosen so that a clustered backend (NATS JetStream, for
// several relay processes sharing one set of mailboxes) can implement it:
// rows are opaque increasing numbers (a stream sequence would do), leases
// have a holder and a deadline (a consumer's ack wait would do), and nothing
// assumes the caller is the only process.
type Store interface {
	// RelayID returns the relay's 32-byte identity, the one clients sign in
	// their authentication. It is stable for the life of the data.
	RelayID(ctx context.Context) ([32]byte, error)

	// Register binds address to the Ed25519 key. The first key to register
	// an address owns it: registering it again with the same key changes
	// nothing, and with another key fails with ErrAddressTaken, unless
	// replace is set. Then the new key replaces the old one, the address's
	// bundle and one-time prekeys are deleted, and replaced is true. The
	// mailbox is kept. A first registration is charged to ip: it fails with
	// ErrRegistrationQuota when ip has registered Limits.RegistrationsPerIP
	// addresses already.
	Register(ctx context.Context, address string, key [32]byte, replace bool, ip string) (replaced bool, err error)

	// Registered returns the key that owns address, or ErrNotRegistered.
	Registered(ctx context.Context, address string) ([32]byte, error)

	// PutBundle stores b as the address's current bundle and adds oneTime
	// to its pool of one-time prekeys, skipping IDs already in the pool and
	// any beyond Limits.OneTimePreKeys. It fails with ErrKeyMismatch when key
	// is no longer the one registered for address. It returns how many
	// one-time prekeys it added.
	PutBundle(ctx context.Context, address string, key [32]byte, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) (added int, err error)

	// TakeBundle returns the address's bundle and, when oneTime is set, at
	// most one one-time prekey, the oldest in the pool, which is removed in
	// the same step so that no two callers ever receive the same one. It
	// also returns how many one-time prekeys the pool holds after the call.
	// It fails with ErrNoBundle when nothing was published.
	TakeBundle(ctx context.Context, address string, oneTime bool) (b wire.Bundle, pool int, err error)

	// OneTimePreKeys counts the address's pool.
	OneTimePreKeys(ctx context.Context, address string) (int, error)

	// Append stores copies (1 or more) of env at the tail of recipient's
	// mailbox, durably when the backend is durable, and returns their rows
	// in order. The copies are charged to from: its address within the
	// mailbox, its IP across the relay. It fails, storing nothing, with
	// ErrNotRegistered when no key owns recipient; ErrMailboxFull when the
	// copies would take the mailbox past Limits.MailboxEnvelopes or
	// MailboxBytes; ErrSenderQuota when they would take what from.Address
	// holds in the mailbox past Limits.SenderEnvelopes or SenderBytes; and
	// ErrStoreFull when they would take what the relay holds in all, or
	// what from.IP's envelopes hold, past its limit.
	Append(ctx context.Context, recipient string, env []byte, copies int, from Origin) ([]uint64, error)

	// AppendBatch appends every item, in order, each as Append would on
	// its own, and returns one result per item: its rows, or the error
	// Append would have returned. An item refused (an unknown recipient, a
	// quota) stores nothing and leaves the others as they are; the items
	// of one mailbox keep their order. Backends write the batch together
	// where they can (one transaction on SQLite, publishes in flight
	// together on NATS); each item's result is final only once it is as
	// durable as Append makes it.
	AppendBatch(ctx context.Context, items []AppendItem) []AppendResult

	// Lease returns up to max rows of recipient's mailbox in FIFO order,
	// skipping those under a lease that has not expired at now, and leases
	// them to holder until until. A lease is not durable: after a restart
	// every row is free again.
	Lease(ctx context.Context, recipient, holder string, max int, now, until time.Time) ([]Row, error)

	// Release ends every lease holder has on recipient's mailbox, so that
	// its rows are delivered again (the holder's connection closed).
	Release(ctx context.Context, recipient, holder string) error

	// Ack deletes the named rows of recipient's mailbox and returns those
	// it deleted, each with its sender and envelope ID, so that the relay
	// can tell the sender the envelope was taken. A row that is not in that
	// mailbox (another's, an acknowledged one, a guess) is ignored without
	// effect.
	Ack(ctx context.Context, recipient string, rows []uint64) ([]Removed, error)

	// Expire deletes up to max rows, of any mailbox, that were accepted
	// before before (rows of unknown age included) and are not under a
	// lease live at now, oldest first, with the accounting of Ack, and
	// returns them: the relay's sweep of envelopes that outlived their
	// lifetime. A row that another relay process leased may go too.
	Expire(ctx context.Context, now, before time.Time, max int) ([]Removed, error)

	// Accept records that owner accepts peer (the relay saw owner send
	// peer an envelope), so that peer's envelopes to owner are not charged
	// to the room kept for strangers (Origin.Stranger). Recording a peer
	// already there refreshes it; past Limits.AcceptedPeers the least
	// recently recorded peer of owner is forgotten; forgot says how many
	// were. See peers.go.
	Accept(ctx context.Context, owner, peer string, now time.Time) (forgot int, err error)

	// Block adds sender to owner's block list, or removes it (blocked
	// false). Adding a sender already listed or removing one that is not
	// changes nothing; adding one past Limits.BlockedSenders fails with
	// ErrBlockListFull.
	Block(ctx context.Context, owner, sender string, blocked bool) error

	// Relation says whether owner accepts sender (recorded within
	// Limits.AcceptedLifetime before now) and whether it blocks it.
	Relation(ctx context.Context, owner, sender string, now time.Time) (Relation, error)

	// ForgetAccepted deletes the accepted peers last recorded before
	// before, and returns how many it deleted (a backend whose records
	// expire on their own, NATS, returns 0): the relay's sweep.
	ForgetAccepted(ctx context.Context, before time.Time) (int, error)

	// DeviceLists keeps the latest device list of each account
	// (devicelist.go).
	DeviceLists

	// Stats counts what the relay holds, for its metrics.
	Stats(ctx context.Context) (Stats, error)

	// Close releases the store. Calls after Close fail.
	Close() error
}

// Notifier is implemented by a Store that several relay processes share:
// what one relay learns (an envelope for an address, the address's one-time
// prekey pool running low) reaches the connections of that address on every
// relay, at once rather than at their next poll.
type Notifier interface {
	// Notify tells every relay that s concerns address.
	Notify(ctx context.Context, address string, s Signal) error
	// Watch calls fn with every Signal for address, from any relay, this
	// one's included (a relay tells its own connections of statuses
	// through it), until stop is called. A Mail signal this relay sent may
	// be left out: a relay wakes its own connections itself.
	Watch(address string, fn func(Signal)) (stop func(), err error)
}

// Signal is what a Notifier carries: new mail, the size of a one-time
// prekey pool, or what became of envelopes the address sent.
type Signal struct {
	Mail     bool
	Pool     int            // -1: no pool news
	Statuses []StatusNotice // for the address as a sender
}

// StatusNotice is what the relay tells a sender of one envelope that left a
// mailbox (wire.EnvelopeStatus).
type StatusNotice struct {
	Envelope wire.EnvelopeID
	State    wire.EnvelopeState
}

// Origin is who asks the relay to keep an envelope, and is charged for it:
// the authenticated sender address and the remote IP of its connection.
// Envelope, the ID the relay parsed from the envelope at submission, is
// kept with the row so that the sender can be told when the row leaves
// the mailbox. ToReader says the recipient reads its mail (the relay saw
// it connected or acknowledging lately), so that the envelope may use the
// reserve. Neither is charged for. Stranger says the recipient has not
// accepted the sender (Store.Relation): the envelope is also charged to
// the mailbox's room for strangers and, within it, to its IP's share.
type Origin struct {
	Address  string
	IP       string // empty: charged to no IP
	Envelope wire.EnvelopeID
	ToReader bool
	Stranger bool
}

// AppendItem is one envelope of an AppendBatch, with what Append takes.
//
// Shared, when set, is a payload that several items of the batch share
// (a SubmitMulti's: one payload for several mailboxes). Env is then the
// envelope's head, every byte before the payload (it ends with the
// payload's length), and the envelope is Env followed by Shared.Payload.
// Every backend but WithFaults keeps the payload once for all the items
// of the batch that point at the same SharedPayload, with each item's head
// as a small entry in its mailbox, and deletes it with the last of those
// entries (acknowledged or expired); NATS keeps it in a stream of its own
// with a record of the heads that point at it (natsstore/payload.go).
// Every quota is charged each item's whole envelope, as if it were stored
// alone, and a lease returns the whole envelope.
type AppendItem struct {
	Recipient string
	Env       []byte
	Copies    int
	From      Origin
	Shared    *SharedPayload
}

// SharedPayload is an envelope payload that several AppendItems of one
// AppendBatch share; items share it by pointing at the same value.
type SharedPayload struct {
	Payload []byte
}

// Envelope returns the item's whole envelope: Env, followed by the shared
// payload when there is one (a new slice then).
func (it AppendItem) Envelope() []byte {
	if it.Shared == nil {
		return it.Env
	}
	b := make([]byte, 0, len(it.Env)+len(it.Shared.Payload))
	return append(append(b, it.Env...), it.Shared.Payload...)
}

// Size returns the size of the item's whole envelope, what quotas charge
// it for each copy.
func (it AppendItem) Size() int {
	if it.Shared == nil {
		return len(it.Env)
	}
	return len(it.Env) + len(it.Shared.Payload)
}

// AppendResult is what became of one AppendItem: the rows of its copies,
// or the error Append would have returned.
type AppendResult struct {
	Rows []uint64
	Err  error
}

// appendEach is AppendBatch for a backend without a faster way: Append of
// each item, in order.
func appendEach(ctx context.Context, s Store, items []AppendItem) []AppendResult {
	out := make([]AppendResult, len(items))
	for i, it := range items {
		out[i].Rows, out[i].Err = s.Append(ctx, it.Recipient, it.Envelope(), it.Copies, it.From)
	}
	return out
}

// Removed is a row that left a mailbox, with what its sender is told by:
// the sender's address and the envelope's ID (zero for a row stored
// before the store kept IDs).
type Removed struct {
	Recipient string
	Row       uint64
	Sender    string
	Envelope  wire.EnvelopeID
}

// Row is one envelope in a mailbox: the row the recipient acknowledges it by,
// and the envelope's bytes, which the caller must not modify.
type Row struct {
	ID       uint64
	Envelope []byte
	// Accepted is when the relay stored the envelope (zero when the backend
	// does not know: rows kept by an older version).
	Accepted time.Time
}

// Stats is what the relay holds in all.
type Stats struct {
	Registrations int
	Envelopes     int   // in every mailbox
	Bytes         int64 // of those envelopes, each whole (what quotas charge)
	// Stored is what the backend keeps of those bytes: a payload shared
	// by several mailboxes (AppendItem.Shared) counted once, with each
	// mailbox's head. Equal to Bytes where nothing is shared.
	Stored int64
}

// Limits bound what the relay keeps: per mailbox, per sender within a
// mailbox, per remote IP and in all. A zero field takes its default.
type Limits struct {
	// MailboxEnvelopes is the most envelopes one mailbox holds (10,000).
	MailboxEnvelopes int
	// MailboxBytes is the most envelope bytes one mailbox holds (64 MiB).
	MailboxBytes int64
	// SenderEnvelopes and SenderBytes bound what one sender holds in one
	// mailbox (default a quarter of the mailbox's limits), so that a
	// flooding sender leaves room for the others.
	SenderEnvelopes int
	SenderBytes     int64
	// IPEnvelopes and IPBytes bound what the envelopes submitted from one
	// remote IP hold on the relay (100,000 and 256 MiB).
	IPEnvelopes int
	IPBytes     int64
	// TotalEnvelopes and TotalBytes bound what the relay holds in all
	// (1,000,000 and 1 GiB).
	TotalEnvelopes int
	TotalBytes     int64
	// ReserveEnvelopes and ReserveBytes are the part of the totals kept
	// for envelopes to recipients that read their mail (none by default
	// here; the relay server's default is a quarter of the totals): past TotalEnvelopes-ReserveEnvelopes or
	// TotalBytes-ReserveBytes, an envelope is stored only when its
	// recipient reads (Origin.ToReader) and its sender's IP holds less
	// than a sixteenth of the reserve. Strangers' unread sinks fill at
	// most the rest.
	ReserveEnvelopes int
	ReserveBytes     int64
	// RegistrationsPerIP bounds the addresses first registered from one
	// remote IP (100).
	RegistrationsPerIP int
	// OneTimePreKeys is the most one-time prekeys one address's pool holds
	// (1,000).
	OneTimePreKeys int
	// StrangerEnvelopes and StrangerBytes bound what the senders a
	// recipient has not accepted hold in its mailbox, together (default
	// half of the mailbox's limits): the rest is kept for the peers it
	// talks to. StrangerIPEnvelopes and StrangerIPBytes bound what such
	// senders behind one IP hold in one mailbox (default a quarter of the
	// stranger room), since addresses are free and IPs are not.
	StrangerEnvelopes   int
	StrangerBytes       int64
	StrangerIPEnvelopes int
	StrangerIPBytes     int64
	// AcceptedPeers is the most peers one address is recorded to accept
	// (1,000; the least recently seen is forgotten first), BlockedSenders
	// the most senders one address blocks (1,000; past it Block fails).
	AcceptedPeers  int
	BlockedSenders int
	// AcceptedLifetime is how long a recorded accepted peer counts, and is
	// kept, without being recorded again (90 days).
	AcceptedLifetime time.Duration
	// DeviceListsPerIP bounds the accounts whose first device list came
	// from one remote IP (DefaultDeviceListsPerIP), so that one IP cannot
	// fill the relay's list storage.
	DeviceListsPerIP int
}

// Default limits.
const (
	DefaultMailboxEnvelopes   = 10000
	DefaultMailboxBytes       = 64 << 20
	DefaultIPEnvelopes        = 100000
	DefaultIPBytes            = 256 << 20
	DefaultTotalEnvelopes     = 1000000
	DefaultTotalBytes         = 1 << 30
	DefaultRegistrationsPerIP = 100
	DefaultOneTimePreKeys     = 1000
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MailboxEnvelopes <= 0 {
		l.MailboxEnvelopes = DefaultMailboxEnvelopes
	}
	if l.MailboxBytes <= 0 {
		l.MailboxBytes = DefaultMailboxBytes
	}
	if l.SenderEnvelopes <= 0 {
		l.SenderEnvelopes = max(1, l.MailboxEnvelopes/4)
	}
	if l.SenderBytes <= 0 {
		l.SenderBytes = max(1, l.MailboxBytes/4)
	}
	if l.IPEnvelopes <= 0 {
		l.IPEnvelopes = DefaultIPEnvelopes
	}
	if l.IPBytes <= 0 {
		l.IPBytes = DefaultIPBytes
	}
	if l.TotalEnvelopes <= 0 {
		l.TotalEnvelopes = DefaultTotalEnvelopes
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = DefaultTotalBytes
	}
	l.ReserveEnvelopes = min(max(l.ReserveEnvelopes, 0), l.TotalEnvelopes)
	l.ReserveBytes = min(max(l.ReserveBytes, 0), l.TotalBytes)
	if l.RegistrationsPerIP <= 0 {
		l.RegistrationsPerIP = DefaultRegistrationsPerIP
	}
	if l.OneTimePreKeys <= 0 {
		l.OneTimePreKeys = DefaultOneTimePreKeys
	}
	if l.DeviceListsPerIP <= 0 {
		l.DeviceListsPerIP = DefaultDeviceListsPerIP
	}
	return l.peerDefaults()
}

// Usage is what a scope holds: envelopes and their bytes.
type Usage struct {
	Envelopes int
	Bytes     int64
}

// QuotaError names the limit an Append of copies envelopes of size bytes in
// all from from would pass, given what the mailbox, the sender within it,
// the sender's IP (when known) and the relay hold, from the most to the
// least specific scope; nil when it passes none.
func (l Limits) QuotaError(mailbox, sender, ip, total Usage, from Origin, copies int, size int64) error {
	ipKnown := from.IP != ""
	// The reserve serves readers' mail from IPs that hold little.
	reserve := from.ToReader && ipKnown &&
		ip.Envelopes+copies <= l.ReserveEnvelopes/16 && ip.Bytes+size <= l.ReserveBytes/16
	switch {
	case mailbox.Envelopes+copies > l.MailboxEnvelopes || mailbox.Bytes+size > l.MailboxBytes:
		return ErrMailboxFull
	case sender.Envelopes+copies > l.SenderEnvelopes || sender.Bytes+size > l.SenderBytes:
		return ErrSenderQuota
	case ipKnown && (ip.Envelopes+copies > l.IPEnvelopes || ip.Bytes+size > l.IPBytes):
		return ErrIPQuota
	case total.Envelopes+copies > l.TotalEnvelopes || total.Bytes+size > l.TotalBytes:
		return ErrStoreFull
	case !reserve && (total.Envelopes+copies > l.TotalEnvelopes-l.ReserveEnvelopes || total.Bytes+size > l.TotalBytes-l.ReserveBytes):
		return ErrReserve
	}
	return nil
}

// Errors that the relay turns into protocol replies. Backends return them (or
// wrap them) and never a driver's error for these conditions.
var (
	// ErrAddressTaken means another key owns the address.
	ErrAddressTaken = errors.New("address registered to another identity")
	// ErrKeyMismatch means the key is not (or no longer) the one registered.
	ErrKeyMismatch = errors.New("key is not the address's registered key")
	// ErrNotRegistered means no key owns the address.
	ErrNotRegistered = errors.New("address not registered")
	// ErrNoBundle means the address has published no bundle.
	ErrNoBundle = errors.New("no bundle published")
	// ErrMailboxFull means the mailbox is at its count or byte limit.
	ErrMailboxFull = errors.New("mailbox full")
	// ErrSenderQuota means the sender holds its share of the mailbox.
	ErrSenderQuota = errors.New("sender's share of the mailbox is full")
	// ErrStoreFull means the relay holds all it may, in all or for the
	// sender's IP.
	ErrStoreFull = errors.New("relay storage quota reached")
	// ErrIPQuota means the envelopes from the sender's IP hold that IP's
	// share of the relay; it is an ErrStoreFull.
	ErrIPQuota = fmt.Errorf("%w: the sender's IP holds its share", ErrStoreFull)
	// ErrReserve means the relay holds all it may outside the reserve, and
	// the envelope may not use the reserve (its recipient does not read,
	// or its sender's IP holds too much already); it is an ErrStoreFull.
	ErrReserve = fmt.Errorf("%w: the rest is kept for recipients that read their mail", ErrStoreFull)
	// ErrRegistrationQuota means the remote IP registered all the addresses
	// it may.
	ErrRegistrationQuota = errors.New("too many addresses registered from this IP")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("relay store closed")
	// ErrStrangerRoom means the senders the recipient has not accepted
	// hold the mailbox's room for strangers; it is an ErrMailboxFull.
	ErrStrangerRoom = fmt.Errorf("%w: the room for senders the recipient has not accepted is full", ErrMailboxFull)
	// ErrStrangerIPShare means such senders behind the sender's IP hold
	// that IP's share of the room; it is an ErrSenderQuota.
	ErrStrangerIPShare = fmt.Errorf("%w: the sender's IP holds its share of the room for strangers", ErrSenderQuota)
	// ErrBlockListFull means the owner blocks Limits.BlockedSenders
	// senders already.
	ErrBlockListFull = errors.New("block list full")
)
