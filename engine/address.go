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

// AddressError says why a text is not a device address. It is an
// ErrInvalidAddress.
type AddressError struct {
	Input  string
	Reason string // one clause: "the user must be lowercase"
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("%v %q: %s", ErrInvalidAddress, e.Input, e.Reason)
}

// Unwrap makes an AddressError an ErrInvalidAddress.
func (e *AddressError) Unwrap() error { return ErrInvalidAddress }

// ParseAddress parses "user/device": user is 1 to 64 characters of a-z, 0-9,
// '.', '_' and '-'; device is a decimal number from 1 to 2^31-1 without
// leading zeros or a sign. A refusal is an *AddressError naming the first
// thing wrong.
func ParseAddress(s string) (Address, error) {
	bad := func(format string, args ...any) (Address, error) {
		return Address{}, &AddressError{Input: s, Reason: fmt.Sprintf(format, args...)}
	}
	user, dev, ok := strings.Cut(s, "/")
	if !ok {
		return bad("no device: write user/device, like %s/1", s)
	}
	if len(user) == 0 || len(user) > MaxUserLength {
		return bad("the user must be 1 to %d characters", MaxUserLength)
	}
	for _, c := range user {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		case c >= 'A' && c <= 'Z':
			return bad("the user must be lowercase (%s)", strings.ToLower(user))
		case c == ' ' || c == '\t':
			return bad("the user may not hold spaces")
		default:
			return bad("the user may hold only a-z, 0-9 and . _ - (not %q)", c)
		}
	}
	switch {
	case dev == "":
		return bad("no device number after the slash")
	case strings.Trim(dev, "0") == "":
		return bad("device numbers start at 1")
	case dev[0] == '0':
		return bad("the device number has a leading zero")
	case len(dev) > 10 || strings.Trim(dev, "0123456789") != "":
		return bad("the device must be a number from 1 to %d", MaxDevice)
	}
	n, err := strconv.ParseUint(dev, 10, 32)
	if err != nil || n > MaxDevice {
		return bad("the device must be a number from 1 to %d", MaxDevice)
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
