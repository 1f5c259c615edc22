package wire

import (
	"encoding/binary"
	"fmt"
)

// A device list names the devices of one person (an account): which device
// numbers exist, the keys of each and whether it is active or revoked. The
// account's Ed25519 key signs the whole list; each entry is countersigned by
// its device's own signing key, so that an entry cannot name keys whose
// holder did not agree to join the account. Lists form a chain: each names
// its generation and the digest of the list it follows (the engine computes
// digests and checks signatures and the chain rules; wire checks the layout).
//
// Layout (docs/wire-format.md), every integer big-endian:
//
//	u8  version (DeviceListVersion)
//	u8  user length, user (1 to MaxUserSize bytes, the user part of the
//	    account's addresses)
//	[32] account key (Ed25519)
//	u64 generation (1 or more)
//	[32] parent digest (all zero at generation 1, never all zero after)
//	u8  entry count (1 to MaxDeviceListEntries)
//	entries, device numbers strictly increasing, each:
//	    u32 device number (1 to 2^31-1)
//	    i64 linked (Unix seconds)
//	    u8  state (1 active, 2 revoked)
//	    [32] signing key (Ed25519)
//	    [32] DH key (X25519)
//	    [64] device signature (DeviceEntryMessage)
//	[64] account signature (over every byte before it, DeviceListBody)

// DeviceListVersion is the version byte of an encoded device list.
const DeviceListVersion = 1

const (
	// MaxDeviceListEntries is the most entries one list holds, revoked
	// ones included: device numbers are never reused, so a revoked entry
	// stays for good and this bounds the devices an account ever links.
	// Sixty-four is eight times the most active devices (the engine's
	// MaxDevicesPerAccount) and keeps a list under 10 KiB.
	MaxDeviceListEntries = 64

	deviceEntrySize = 4 + 8 + 1 + 32 + 32 + 64
	// MaxDeviceListSize is the largest encoded device list.
	MaxDeviceListSize = 1 + 1 + MaxUserSize + 32 + 8 + 32 + 1 + MaxDeviceListEntries*deviceEntrySize + 64

	maxDeviceNumber = 1<<31 - 1
)

// Signed-message labels of device lists.
const (
	labelDeviceEntry = "parley/v1/device-entry"
)

// DeviceState is an entry's state.
type DeviceState uint8

// Device states. A revoked device stays revoked: a later list may not make
// it active again (the engine's chain rules).
const (
	DeviceActive  DeviceState = 1
	DeviceRevoked DeviceState = 2
)

// String returns "active" or "revoked".
func (s DeviceState) String() string {
	switch s {
	case DeviceActive:
		return "active"
	case DeviceRevoked:
		return "revoked"
	}
	return fmt.Sprintf("device state %d", uint8(s))
}

func (s DeviceState) valid() bool { return s == DeviceActive || s == DeviceRevoked }

// DeviceEntry is one device of a list.
type DeviceEntry struct {
	Number     uint32 // the device part of its address
	Linked     int64  // Unix seconds, when it joined the account
	State      DeviceState
	SigningKey [32]byte // Ed25519, the key the device authenticates with
	DHKey      [32]byte // X25519, its identity DH key
	// Signature is the device's Ed25519 signature, by SigningKey, over
	// DeviceEntryMessage.
	Signature [64]byte
}

// DeviceList is a signed list of an account's devices.
type DeviceList struct {
	User       string
	AccountKey [32]byte // Ed25519
	Generation uint64
	Parent     [32]byte // digest of the list at Generation-1; zero at 1
	Entries    []DeviceEntry
	// Signature is the account key's Ed25519 signature over
	// DeviceListBody.
	Signature [64]byte
}

// DeviceEntryMessage is what a device signs to join an account: a label,
// the user, the account key, its number and its two keys. Neither the
// state, the linking time nor the generation is in it, so that the
// countersignature stays valid as later lists revoke the device or others
// join.
func DeviceEntryMessage(user string, account [32]byte, number uint32, signing, dh [32]byte) []byte {
	b := make([]byte, 0, len(labelDeviceEntry)+1+len(user)+32+4+64)
	b = append(b, labelDeviceEntry...)
	b = append(b, byte(len(user)))
	b = append(b, user...)
	b = append(b, account[:]...)
	b = binary.BigEndian.AppendUint32(b, number)
	b = append(b, signing[:]...)
	return append(b, dh[:]...)
}

// checkDeviceList checks what the layout requires of l.
func checkDeviceList(l *DeviceList) error {
	if err := checkUser(l.User); err != nil {
		return err
	}
	if l.Generation == 0 {
		return fmt.Errorf("generation 0: %w", ErrMalformed)
	}
	if (l.Generation == 1) != (l.Parent == [32]byte{}) {
		return fmt.Errorf("generation %d with a parent digest that is %s: %w", l.Generation, zeroOrNot(l.Parent), ErrMalformed)
	}
	if len(l.Entries) == 0 {
		return fmt.Errorf("no entries: %w", ErrMalformed)
	}
	if len(l.Entries) > MaxDeviceListEntries {
		return fmt.Errorf("%d entries over %d: %w", len(l.Entries), MaxDeviceListEntries, ErrMessageTooLarge)
	}
	var last uint32
	for i, e := range l.Entries {
		if e.Number == 0 || e.Number > maxDeviceNumber {
			return fmt.Errorf("entry %d: device number %d outside 1..%d: %w", i, e.Number, maxDeviceNumber, ErrMalformed)
		}
		if e.Number <= last {
			return fmt.Errorf("entry %d: device number %d after %d: %w", i, e.Number, last, ErrMalformed)
		}
		last = e.Number
		if !e.State.valid() {
			return fmt.Errorf("entry %d: unknown %s: %w", i, e.State, ErrMalformed)
		}
	}
	return nil
}

func zeroOrNot(d [32]byte) string {
	if d == [32]byte{} {
		return "zero"
	}
	return "not zero"
}

// checkUser checks a user part as CheckDeviceAddress does.
func checkUser(user string) error {
	if err := CheckDeviceAddress(user + "/1"); err != nil {
		return fmt.Errorf("user %q is not a user part of an address: %w", user, ErrMalformed)
	}
	return nil
}

// DeviceListBody returns the bytes of an encoded list before the account
// signature: what the account key signs. It checks what EncodeDeviceList
// checks.
func DeviceListBody(l DeviceList) ([]byte, error) {
	if err := checkDeviceList(&l); err != nil {
		return nil, fmt.Errorf("wire: encode device list: %w", err)
	}
	b := make([]byte, 0, 1+1+len(l.User)+32+8+32+1+len(l.Entries)*deviceEntrySize+64)
	b = append(b, DeviceListVersion, byte(len(l.User)))
	b = append(b, l.User...)
	b = append(b, l.AccountKey[:]...)
	b = binary.BigEndian.AppendUint64(b, l.Generation)
	b = append(b, l.Parent[:]...)
	b = append(b, byte(len(l.Entries)))
	for _, e := range l.Entries {
		b = binary.BigEndian.AppendUint32(b, e.Number)
		b = binary.BigEndian.AppendUint64(b, uint64(e.Linked))
		b = append(b, byte(e.State))
		b = append(b, e.SigningKey[:]...)
		b = append(b, e.DHKey[:]...)
		b = append(b, e.Signature[:]...)
	}
	return b, nil
}

// EncodeDeviceList returns l's bytes: DeviceListBody and the account
// signature. A user that is not a user part, generation 0, a parent digest
// zero after generation 1 or set at it, an unknown state, a device number
// out of range or not above the one before fail with ErrMalformed; no
// entries with ErrMalformed, more than MaxDeviceListEntries with
// ErrMessageTooLarge. Signatures are not checked here.
func EncodeDeviceList(l DeviceList) ([]byte, error) {
	b, err := DeviceListBody(l)
	if err != nil {
		return nil, err
	}
	return append(b, l.Signature[:]...), nil
}

// DecodeDeviceList parses an encoded list: input over MaxDeviceListSize is
// ErrMessageTooLarge, another version byte ErrUnsupportedVersion, and what
// EncodeDeviceList refuses, truncation or trailing bytes ErrMalformed.
func DecodeDeviceList(b []byte) (DeviceList, error) {
	if len(b) > MaxDeviceListSize {
		return DeviceList{}, fmt.Errorf("wire: decode device list: %d bytes over %d: %w", len(b), MaxDeviceListSize, ErrMessageTooLarge)
	}
	r := reader{b: b}
	r.version(DeviceListVersion)
	l := r.deviceList()
	if err := r.end(); err != nil {
		return DeviceList{}, fmt.Errorf("wire: decode device list: %w", err)
	}
	return l, nil
}

// deviceList reads a list after its version byte.
func (r *reader) deviceList() DeviceList {
	var l DeviceList
	l.User = string(r.take(int(r.u8("user length")), "user"))
	r.array(l.AccountKey[:], "account key")
	l.Generation = r.u64("generation")
	r.array(l.Parent[:], "parent digest")
	n := int(r.u8("entry count"))
	if r.err == nil && n > MaxDeviceListEntries {
		r.fail(fmt.Errorf("%d entries over %d: %w", n, MaxDeviceListEntries, ErrMalformed))
	}
	// Allocated once the entries' bytes are known to be present.
	entries := reader{b: r.take(n*deviceEntrySize, "entries")}
	if r.err == nil && n > 0 {
		l.Entries = make([]DeviceEntry, n)
		for i := range l.Entries {
			e := &l.Entries[i]
			e.Number = entries.u32("device number")
			e.Linked = entries.i64("linked")
			e.State = DeviceState(entries.u8("state"))
			entries.array(e.SigningKey[:], "signing key")
			entries.array(e.DHKey[:], "DH key")
			entries.array(e.Signature[:], "device signature")
		}
	}
	r.array(l.Signature[:], "account signature")
	if r.err == nil {
		if err := checkDeviceList(&l); err != nil {
			r.fail(err)
		}
	}
	if r.err != nil {
		return DeviceList{}
	}
	return l
}
