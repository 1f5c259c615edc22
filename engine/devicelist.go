package engine

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parley-chat/parley/engine/session"
	"github.com/parley-chat/parley/wire"
)

// Accounts and device lists (issue 33, first layer). A person is an
// account: an Ed25519 key made by `parley init` and kept on device 1, which
// signs the account's device list (wire.DeviceList). Only the list's rules
// live here; nothing yet sends to several devices of one person.

// MaxDevicesPerAccount is the most active devices one list names: enough
// for a phone, a laptop, a desktop and a few more, few enough that a
// message to a person costs a bounded number of lanes (the seed design's
// figure).
const MaxDevicesPerAccount = 8

// Labels of the account's signatures and digests.
const (
	labelDeviceList       = "parley/v1/device-list"
	labelDeviceListDigest = "parley/v1/device-list-digest"
)

// AccountKey is an account's private signing key.
type AccountKey struct {
	key ed25519.PrivateKey
}

// NewAccountKey makes an account key from 32 bytes of r.
func NewAccountKey(r io.Reader) (*AccountKey, error) {
	var seed [ed25519.SeedSize]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("generate account key: %w", err)
	}
	return &AccountKey{key: ed25519.NewKeyFromSeed(seed[:])}, nil
}

// UnmarshalAccountKey reads what MarshalBinary wrote: the 32-byte seed.
func UnmarshalAccountKey(b []byte) (*AccountKey, error) {
	if len(b) != ed25519.SeedSize {
		return nil, fmt.Errorf("account key record of %d bytes, want 32: %w", len(b), ErrStorage)
	}
	return &AccountKey{key: ed25519.NewKeyFromSeed(b)}, nil
}

// MarshalBinary returns the key's seed, a secret.
func (k *AccountKey) MarshalBinary() ([]byte, error) { return k.key.Seed(), nil }

// Public returns the account's public key.
func (k *AccountKey) Public() (p [32]byte) {
	copy(p[:], k.key.Public().(ed25519.PublicKey))
	return p
}

// deviceListMessage is what the account key signs.
func deviceListMessage(l wire.DeviceList) ([]byte, error) {
	body, err := wire.DeviceListBody(l)
	if err != nil {
		return nil, err
	}
	return append([]byte(labelDeviceList), body...), nil
}

// DeviceListDigest is the digest a list's successor names as its parent:
// SHA-256 over a label and the whole encoded list, signatures included.
func DeviceListDigest(l wire.DeviceList) ([32]byte, error) {
	b, err := wire.EncodeDeviceList(l)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	h.Write([]byte(labelDeviceListDigest))
	h.Write(b)
	return [32]byte(h.Sum(nil)), nil
}

// DeviceEntryFor returns the entry of device number of user in the account
// whose key is account, countersigned by the device's identity.
func DeviceEntryFor(id *Identity, user string, account [32]byte, number uint32, linked int64) wire.DeviceEntry {
	pub := id.Public()
	e := wire.DeviceEntry{Number: number, Linked: linked, State: wire.DeviceActive, SigningKey: pub.SigningKey, DHKey: pub.DHKey}
	copy(e.Signature[:], id.Sign(wire.DeviceEntryMessage(user, account, number, pub.SigningKey, pub.DHKey)))
	return e
}

// SignDeviceList sets l's account key and signs it with k.
func (k *AccountKey) SignDeviceList(l wire.DeviceList) (wire.DeviceList, error) {
	l.AccountKey = k.Public()
	msg, err := deviceListMessage(l)
	if err != nil {
		return wire.DeviceList{}, fmt.Errorf("sign device list: %w", err)
	}
	copy(l.Signature[:], ed25519.Sign(k.key, msg))
	return l, nil
}

// FirstDeviceList returns generation 1 of an account's list: the one
// device that made the account, with its identity.
func FirstDeviceList(k *AccountKey, id *Identity, self Address, linked int64) (wire.DeviceList, error) {
	e := DeviceEntryFor(id, self.User, k.Public(), self.Device, linked)
	return k.SignDeviceList(wire.DeviceList{User: self.User, Generation: 1, Entries: []wire.DeviceEntry{e}})
}

// ErrDeviceListInvalid is what every *DeviceListError is: a list that
// breaks a rule of VerifyDeviceList.
var ErrDeviceListInvalid = errors.New("invalid device list")

// ErrDeviceListStale means a list does not follow the one held: its
// generation is not the next, or it does not name the held list's digest.
var ErrDeviceListStale = errors.New("device list does not follow the one held")

// DeviceListError names the rule of VerifyDeviceList a list breaks. It is
// an ErrDeviceListInvalid.
type DeviceListError struct {
	Rule   int    // the rule's number in VerifyDeviceList's list
	Reason string // one clause
}

func (e *DeviceListError) Error() string {
	return fmt.Sprintf("%v (rule %d): %s", ErrDeviceListInvalid, e.Rule, e.Reason)
}

// Unwrap makes a DeviceListError an ErrDeviceListInvalid.
func (e *DeviceListError) Unwrap() error { return ErrDeviceListInvalid }

func listRule(rule int, format string, args ...any) error {
	return &DeviceListError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// VerifyDeviceList checks l, a list that wire decoded or encodes, against
// prev, the list it follows (nil for the account's first). A list is
// accepted only when:
//
//  1. the account key's signature over the list verifies;
//  2. every entry's signature, by its own signing key, over
//     wire.DeviceEntryMessage verifies;
//  3. at least one and at most MaxDevicesPerAccount entries are active;
//  4. no two entries share a signing key;
//  5. with no prev: the generation is 1 (and so the parent zero);
//  6. with prev: the generation is prev's plus one and the parent is
//     prev's digest, else ErrDeviceListStale; the user and the account key
//     are prev's;
//  7. with prev: every entry of prev is still there with the same keys
//     and linking time (device numbers are never dropped, so never reused);
//     a revoked one stays revoked;
//  8. with prev: every new entry's number is above every number of prev,
//     and is active.
//
// A broken rule is a *DeviceListError (an ErrDeviceListInvalid), except the
// chain mismatch of rule 6, which is ErrDeviceListStale.
func VerifyDeviceList(l wire.DeviceList, prev *wire.DeviceList) error {
	if err := verifyListAlone(l); err != nil {
		return err
	}
	if prev == nil {
		if l.Generation != 1 {
			return listRule(5, "generation %d without a previous list", l.Generation)
		}
		return nil
	}
	parent, err := DeviceListDigest(*prev)
	if err != nil {
		return fmt.Errorf("digest of the previous device list: %w", err)
	}
	if l.Generation != prev.Generation+1 || l.Parent != parent {
		return fmt.Errorf("generation %d after %d: %w", l.Generation, prev.Generation, ErrDeviceListStale)
	}
	return verifyListFollows(l, prev, true)
}

// verifyListAlone checks rules 1 to 4 of VerifyDeviceList: what a list
// must satisfy whatever it follows.
func verifyListAlone(l wire.DeviceList) error {
	msg, err := deviceListMessage(l)
	if err != nil {
		return listRule(1, "%v", err)
	}
	if !ed25519.Verify(l.AccountKey[:], msg, l.Signature[:]) {
		return listRule(1, "the account signature does not verify")
	}
	active := 0
	keys := make(map[[32]byte]bool, len(l.Entries))
	for _, e := range l.Entries {
		if !ed25519.Verify(e.SigningKey[:], wire.DeviceEntryMessage(l.User, l.AccountKey, e.Number, e.SigningKey, e.DHKey), e.Signature[:]) {
			return listRule(2, "the signature of device %d does not verify", e.Number)
		}
		if e.State == wire.DeviceActive {
			active++
		}
		if keys[e.SigningKey] {
			return listRule(4, "device %d shares its signing key with another", e.Number)
		}
		keys[e.SigningKey] = true
	}
	if active < 1 || active > MaxDevicesPerAccount {
		return listRule(3, "%d active devices, want 1 to %d", active, MaxDevicesPerAccount)
	}
	return nil
}

// verifyListFollows checks the second part of rule 6 and rules 7 and 8 of
// VerifyDeviceList: what l keeps of prev, a list of an earlier generation
// (the one before, or, for a peer's list, any earlier one held).
//
// successor is false for a list several generations after prev: a device
// linked and revoked in between is then new and revoked, which rule 8
// allows only there.
func verifyListFollows(l wire.DeviceList, prev *wire.DeviceList, successor bool) error {
	if l.User != prev.User || l.AccountKey != prev.AccountKey {
		return listRule(6, "the user or the account key changed")
	}
	at := make(map[uint32]wire.DeviceEntry, len(l.Entries))
	for _, e := range l.Entries {
		at[e.Number] = e
	}
	var top uint32
	for _, p := range prev.Entries {
		e, ok := at[p.Number]
		switch {
		case !ok:
			return listRule(7, "device %d was dropped", p.Number)
		case e.SigningKey != p.SigningKey || e.DHKey != p.DHKey || e.Linked != p.Linked:
			return listRule(7, "device %d changed its keys or linking time", p.Number)
		case p.State == wire.DeviceRevoked && e.State != wire.DeviceRevoked:
			return listRule(7, "revoked device %d is active again", p.Number)
		}
		top = max(top, p.Number)
	}
	for _, e := range l.Entries {
		if _, old := findEntry(prev, e.Number); old {
			continue
		}
		if e.Number <= top {
			return listRule(8, "new device %d is not above %d, the highest number used", e.Number, top)
		}
		if e.State != wire.DeviceActive && successor {
			return listRule(8, "new device %d is not active", e.Number)
		}
	}
	return nil
}

// findEntry returns the entry of device number in l.
func findEntry(l *wire.DeviceList, number uint32) (wire.DeviceEntry, bool) {
	for _, e := range l.Entries {
		if e.Number == number {
			return e, true
		}
	}
	return wire.DeviceEntry{}, false
}

// ActiveDevice reports whether l names device number as active with the
// signing key key: the test a relay holding l applies to a device that
// authenticates as one of the account's addresses.
func ActiveDevice(l wire.DeviceList, number uint32, key [32]byte) bool {
	e, ok := findEntry(&l, number)
	return ok && e.State == wire.DeviceActive && e.SigningKey == key
}

// newAccount makes an account key and generation 1 of its list, naming
// self, and returns the plan that stores them.
func newAccount(r Randomness, id *Identity, self Address, now time.Time) (CreateAccount, error) {
	k, err := NewAccountKey(r)
	if err != nil {
		return CreateAccount{}, err
	}
	l, err := FirstDeviceList(k, id, self, now.Unix())
	if err != nil {
		return CreateAccount{}, err
	}
	enc, err := wire.EncodeDeviceList(l)
	if err != nil {
		return CreateAccount{}, fmt.Errorf("encode device list: %w", err)
	}
	rec, _ := k.MarshalBinary()
	return CreateAccount{Key: rec, List: enc}, nil
}

// EnsureAccount gives a profile made before accounts existed its account:
// a new key and generation 1 of its list naming this device, stored in one
// transaction (CreateAccount). A profile that has one is left as it is. It
// reports whether it made one.
func EnsureAccount(ctx context.Context, st Store, r Randomness, now time.Time) (bool, error) {
	prof, err := st.Profile(ctx)
	if err != nil {
		return false, fmt.Errorf("read profile: %w", err)
	}
	if prof.DeviceList != nil {
		return false, nil
	}
	if r == nil {
		r = SystemRandom{}
	}
	id, err := session.UnmarshalIdentity(prof.Identity)
	if err != nil {
		return false, fmt.Errorf("read profile: %w", err)
	}
	p, err := newAccount(r, id, prof.Self, now)
	if err != nil {
		return false, err
	}
	if _, err := st.Apply(ctx, p); err != nil {
		return false, fmt.Errorf("create the account of %s: %w", prof.Self, err)
	}
	return true, nil
}

// Account is what a profile knows of its account.
type Account struct {
	Key  *AccountKey // nil on a device that does not hold it
	List wire.DeviceList
}

// LoadAccount reads the profile's account; ErrNoAccount when it has none
// yet (a profile made before accounts, opened read-only).
func LoadAccount(ctx context.Context, st Store) (Account, error) {
	prof, err := st.Profile(ctx)
	if err != nil {
		return Account{}, fmt.Errorf("read profile: %w", err)
	}
	if prof.DeviceList == nil {
		return Account{}, ErrNoAccount
	}
	var a Account
	if prof.AccountKey != nil {
		if a.Key, err = UnmarshalAccountKey(prof.AccountKey); err != nil {
			return Account{}, err
		}
	}
	if a.List, err = wire.DecodeDeviceList(prof.DeviceList); err != nil {
		return Account{}, fmt.Errorf("read device list: %w: %w", ErrMalformedState, err)
	}
	return a, nil
}

// ErrNoAccount means the profile has no account yet: it was made before
// accounts existed and has not been opened for writing since.
var ErrNoAccount = errors.New("profile has no account yet")

// NextDeviceNumber is the number a device joining l gets: one above every
// number l has used, revoked ones included (numbers are never reused).
func NextDeviceNumber(l wire.DeviceList) uint32 {
	var top uint32
	for _, e := range l.Entries {
		top = max(top, e.Number)
	}
	return top + 1
}

// NextDeviceList returns the generation after prev, which adds e (a
// countersigned entry, DeviceEntryFor), signed by k. It checks the result
// as the relay will (VerifyDeviceList), so that a full account
// (MaxDevicesPerAccount) or a bad entry fails here, before anything is
// published.
func NextDeviceList(k *AccountKey, prev wire.DeviceList, e wire.DeviceEntry) (wire.DeviceList, error) {
	if k == nil {
		return wire.DeviceList{}, ErrNotAccountHolder
	}
	parent, err := DeviceListDigest(prev)
	if err != nil {
		return wire.DeviceList{}, fmt.Errorf("next device list: %w", err)
	}
	next := wire.DeviceList{User: prev.User, Generation: prev.Generation + 1, Parent: parent,
		Entries: append(append([]wire.DeviceEntry(nil), prev.Entries...), e)}
	if next, err = k.SignDeviceList(next); err != nil {
		return wire.DeviceList{}, err
	}
	if err := VerifyDeviceList(next, &prev); err != nil {
		return wire.DeviceList{}, fmt.Errorf("next device list: %w", err)
	}
	return next, nil
}

// ErrNotAccountHolder means this device does not hold the account key: only
// the device that made the account (device 1) signs new lists.
var ErrNotAccountHolder = errors.New("this device does not hold the account key (link from the device that made the account)")

// Account returns this device's account: the device list it holds and,
// on the device that holds it, the account key; ErrNoAccount when the
// profile has none yet.
func (c *Client) Account(ctx context.Context) (Account, error) {
	return LoadAccount(ctx, c.store)
}
