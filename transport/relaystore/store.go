// Package relaystore holds what a parley relay keeps: which identity key owns
// each device address, each address's prekey bundle and pool of one-time
// prekeys, and each recipient's mailbox of envelopes with its leases.
//
// The relay's protocol code (package transport) talks to storage only through
// Store, so that another backend can replace the two kept here: Memory, the
// default, and SQLite, which survives a crash. The package imports wire for
// the bundle type and nothing of the engine, the websocket or the protocol.
package relaystore

import (
	"context"
	"errors"
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
	// mailbox is kept.
	Register(ctx context.Context, address string, key [32]byte, replace bool) (replaced bool, err error)

	// Registered returns the key that owns address, or ErrNotRegistered.
	Registered(ctx context.Context, address string) ([32]byte, error)

	// PutBundle stores b as the address's current bundle and adds oneTime
	// to its pool of one-time prekeys, skipping IDs already in the pool and
	// any beyond Limits.OneTimePreKeys. It fails with ErrKeyMismatch when key
	// is no longer the one registered for address. It returns how many
	// one-time prekeys it added.
	PutBundle(ctx context.Context, address string, key [32]byte, b wire.Bundle, oneTime []wire.OneTimePreKeyPublic) (added int, err error)

	// TakeBundle returns the address's bundle with at most one one-time
	// prekey, the oldest in the pool, which is removed in the same step so
	// that no two callers ever receive the same one. It fails with
	// ErrNoBundle when nothing was published.
	TakeBundle(ctx context.Context, address string) (wire.Bundle, error)

	// OneTimePreKeys counts the address's pool.
	OneTimePreKeys(ctx context.Context, address string) (int, error)

	// Append stores copies (1 or more) of env at the tail of recipient's
	// mailbox, durably when the backend is durable, and returns their rows
	// in order. It fails with ErrNotRegistered when no key owns recipient,
	// and with ErrMailboxFull when the copies would take the mailbox past
	// Limits.MailboxEnvelopes or Limits.MailboxBytes; then nothing is
	// stored.
	Append(ctx context.Context, recipient string, env []byte, copies int) ([]uint64, error)

	// Lease returns up to max rows of recipient's mailbox in FIFO order,
	// skipping those under a lease that has not expired at now, and leases
	// them to holder until until. A lease is not durable: after a restart
	// every row is free again.
	Lease(ctx context.Context, recipient, holder string, max int, now, until time.Time) ([]Row, error)

	// Release ends every lease holder has on recipient's mailbox, so that
	// its rows are delivered again (the holder's connection closed).
	Release(ctx context.Context, recipient, holder string) error

	// Ack deletes the named rows of recipient's mailbox and returns how
	// many it deleted. A row that is not in that mailbox (another's, an
	// acknowledged one, a guess) is ignored without effect.
	Ack(ctx context.Context, recipient string, rows []uint64) (int, error)

	// Stats counts what the relay holds, for its metrics.
	Stats(ctx context.Context) (Stats, error)

	// Close releases the store. Calls after Close fail.
	Close() error
}

// Row is one envelope in a mailbox: the row the recipient acknowledges it by,
// and the envelope's bytes, which the caller must not modify.
type Row struct {
	ID       uint64
	Envelope []byte
}

// Stats is what the relay holds in all.
type Stats struct {
	Registrations int
	Envelopes     int   // in every mailbox
	Bytes         int64 // of those envelopes
}

// Limits bound what one address may keep on the relay. A zero field takes
// its default.
type Limits struct {
	// MailboxEnvelopes is the most envelopes one mailbox holds (10,000).
	MailboxEnvelopes int
	// MailboxBytes is the most envelope bytes one mailbox holds (64 MiB).
	MailboxBytes int64
	// OneTimePreKeys is the most one-time prekeys one address's pool holds
	// (1,000).
	OneTimePreKeys int
}

// Default limits.
const (
	DefaultMailboxEnvelopes = 10000
	DefaultMailboxBytes     = 64 << 20
	DefaultOneTimePreKeys   = 1000
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MailboxEnvelopes <= 0 {
		l.MailboxEnvelopes = DefaultMailboxEnvelopes
	}
	if l.MailboxBytes <= 0 {
		l.MailboxBytes = DefaultMailboxBytes
	}
	if l.OneTimePreKeys <= 0 {
		l.OneTimePreKeys = DefaultOneTimePreKeys
	}
	return l
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
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("relay store closed")
)
