package wire

import (
	"fmt"
	"strings"
)

// MaxAddressSize is the longest device address on the wire: a user of 64
// characters, the slash and a device number of up to 10 digits.
const MaxAddressSize = 75

// checkAddress checks what wire knows of a device address: 1 to
// MaxAddressSize bytes, each printable ASCII other than space (0x21..0x7e).
// Parsing user and device is the engine's job.
func checkAddress[T string | []byte](a T) error {
	if len(a) < 1 || len(a) > MaxAddressSize {
		return fmt.Errorf("address length %d outside 1..%d: %w", len(a), MaxAddressSize, ErrMalformed)
	}
	for i := 0; i < len(a); i++ {
		if c := a[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("address byte %#02x at %d is not printable ASCII: %w", c, i, ErrMalformed)
		}
	}
	return nil
}

// MaxUserSize is the longest user part of a device address.
const MaxUserSize = 64

// CheckDeviceAddress checks that a is a canonical device address,
// "user/device": user is 1 to MaxUserSize characters of a-z, 0-9, '.', '_'
// and '-'; device is a decimal number from 1 to 2^31-1 with no leading zero.
// Every address a frame names (a roster's members and changes) must pass it,
// so that a peer cannot put into a profile an address that nothing else can
// parse. engine.ParseAddress accepts exactly these and says why it refuses.
func CheckDeviceAddress(a string) error {
	user, dev, ok := strings.Cut(a, "/")
	if !ok || len(user) < 1 || len(user) > MaxUserSize || len(dev) < 1 || len(dev) > 10 || dev[0] == '0' {
		return fmt.Errorf("address %q is not user/device: %w", a, ErrMalformed)
	}
	for i := 0; i < len(user); i++ {
		switch c := user[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return fmt.Errorf("address %q: user byte %#02x: %w", a, c, ErrMalformed)
		}
	}
	var n uint64
	for i := 0; i < len(dev); i++ {
		c := dev[i]
		if c < '0' || c > '9' {
			return fmt.Errorf("address %q: device is not a number: %w", a, ErrMalformed)
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<31-1 {
		return fmt.Errorf("address %q: device above 2^31-1: %w", a, ErrMalformed)
	}
	return nil
}

// appendAddress appends a checked address as u8 length and bytes.
func appendAddress(b []byte, a string) []byte {
	return append(append(b, byte(len(a))), a...)
}
