package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// reader walks an input from front to back for the strict decoders. The first
// failure sticks and later reads return zero values, so a decoder reads every
// field in order and checks r.err once at the end. Every read checks the
// remaining input before it slices or copies anything: a length field is never
// trusted before the bytes it announces are present, so a decoder allocates
// no more than its input.
type reader struct {
	b   []byte
	err error
}

// fail records err unless an earlier failure is already recorded.
func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// take returns the next n bytes without copying them, or nil after a failure.
func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%s: truncated: %w", field, ErrMalformed)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8(field string) uint8 {
	if p := r.take(1, field); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16(field string) uint16 {
	if p := r.take(2, field); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if p := r.take(4, field); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if p := r.take(8, field); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (r *reader) i64(field string) int64 { return int64(r.u64(field)) }

// array fills dst, a fixed-size field such as a key or a signature.
func (r *reader) array(dst []byte, field string) {
	copy(dst, r.take(len(dst), field))
}

// flag reads a presence byte: 0 or 1, anything else is malformed.
func (r *reader) flag(field string) bool {
	v := r.u8(field)
	if v > 1 {
		r.fail(fmt.Errorf("%s %d is neither 0 nor 1: %w", field, v, ErrMalformed))
	}
	return v == 1
}

// version reads the leading version byte. A wrong version is reported as
// ErrUnsupportedVersion, an empty input as ErrMalformed.
func (r *reader) version(want uint8) {
	if v := r.u8("version"); r.err == nil && v != want {
		r.err = fmt.Errorf("version %d: %w", v, ErrUnsupportedVersion)
	}
}

// versions reads a version byte that must be one of want
// (ErrUnsupportedVersion otherwise) and returns it.
func (r *reader) versions(want ...uint8) uint8 {
	v := r.u8("version")
	if r.err == nil && !slices.Contains(want, v) {
		r.err = fmt.Errorf("version %d: %w", v, ErrUnsupportedVersion)
	}
	return v
}

// address reads a u8 length and that many address bytes, checked by
// checkAddress. The string is a copy.
func (r *reader) address(field string) string {
	p := r.take(int(r.u8(field+" length")), field)
	if r.err != nil {
		return ""
	}
	if err := checkAddress(p); err != nil {
		r.fail(fmt.Errorf("%s: %w", field, err))
		return ""
	}
	return string(p)
}

// sized reads a u32 length in lo..hi and then that many bytes, without
// copying them. The bound is checked before the bytes are looked for.
func (r *reader) sized(field string, lo, hi int) []byte {
	n := r.u32(field + " length")
	if r.err != nil {
		return nil
	}
	if uint64(n) < uint64(lo) || uint64(n) > uint64(hi) {
		r.fail(fmt.Errorf("%s length %d outside %d..%d: %w", field, n, lo, hi, ErrMalformed))
		return nil
	}
	return r.take(int(n), field)
}

// end reports the first failure, or trailing bytes if every field was read.
func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes: %w", len(r.b), ErrMalformed)
	}
	return r.err
}
