package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxUserLength is the longest user part of a device address.
const MaxUserLength = 64

// MaxDevice is the largest device number.
const MaxDevice = 1<<31 - 1

// Address names one device: user/device. Everything keyed by a peer is keyed
// by its Address, never by the user alone.
type Address struct {
	User   string
	Device uint32
}

// ParseAddress parses "user/device": user is 1 to 64 characters of a-z, 0-9,
// '.', '_' and '-'; device is a decimal number from 1 to 2^31-1 without
// leading zeros or a sign.
func ParseAddress(s string) (Address, error) {
	user, dev, ok := strings.Cut(s, "/")
	if !ok {
		return Address{}, fmt.Errorf("%w %q: want user/device", ErrInvalidAddress, s)
	}
	if len(user) == 0 || len(user) > MaxUserLength {
		return Address{}, fmt.Errorf("%w %q: user must be 1 to %d characters", ErrInvalidAddress, s, MaxUserLength)
	}
	for i := 0; i < len(user); i++ {
		c := user[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return Address{}, fmt.Errorf("%w %q: user may hold only a-z 0-9 . _ -", ErrInvalidAddress, s)
		}
	}
	if len(dev) == 0 || len(dev) > 10 || dev[0] == '0' {
		return Address{}, fmt.Errorf("%w %q: device must be a number from 1 to %d", ErrInvalidAddress, s, MaxDevice)
	}
	for i := 0; i < len(dev); i++ {
		if dev[i] < '0' || dev[i] > '9' {
			return Address{}, fmt.Errorf("%w %q: device must be a number from 1 to %d", ErrInvalidAddress, s, MaxDevice)
		}
	}
	n, err := strconv.ParseUint(dev, 10, 32)
	if err != nil || n > MaxDevice {
		return Address{}, fmt.Errorf("%w %q: device must be a number from 1 to %d", ErrInvalidAddress, s, MaxDevice)
	}
	return Address{User: user, Device: uint32(n)}, nil
}

// MustParseAddress is ParseAddress for constants in tests and demos; it panics
// on a malformed address.
func MustParseAddress(s string) Address {
	a, err := ParseAddress(s)
	if err != nil {
		panic(err)
	}
	return a
}

// String returns the address as user/device.
func (a Address) String() string {
	return a.User + "/" + strconv.FormatUint(uint64(a.Device), 10)
}

// IsZero reports whether a is the zero Address.
func (a Address) IsZero() bool { return a.User == "" && a.Device == 0 }
