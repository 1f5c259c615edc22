package wire

import "fmt"

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

// appendAddress appends a checked address as u8 length and bytes.
func appendAddress(b []byte, a string) []byte {
	return append(append(b, byte(len(a))), a...)
}
