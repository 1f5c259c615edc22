package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// IsControl reports whether r is a character that a terminal may act on
// rather than show: the C0 controls, DEL, the C1 controls, the line and
// paragraph separators and the bidirectional controls (marks, embeddings,
// overrides and isolates). Text a peer or a relay sends can hold any of
// them: ESC starts the sequences that clear a screen, hide text or write to
// the clipboard (OSC 52), the single-byte C1 CSI does the same on terminals
// that read 8-bit controls, and a bidirectional override makes the rest of
// a line read backwards.
func IsControl(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// HasControl reports whether s holds a character IsControl names.
func HasControl(s string) bool {
	return strings.IndexFunc(s, IsControl) >= 0
}

// checkErrorText checks an Error message: UTF-8 without control
// characters, since it is meant for a person's terminal.
func checkErrorText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("message is not UTF-8: %w", ErrMalformed)
	}
	if HasControl(s) {
		return fmt.Errorf("message holds a control character: %w", ErrMalformed)
	}
	return nil
}

// EscapeControls returns s with each character IsControl names written as
// a \uXXXX escape, the form JSON strings also accept, and every other
// character unchanged; keep lists characters left as they are (a newline
// that the caller lays out itself, say).
func EscapeControls(s string, keep ...rune) string {
	if !HasControl(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if IsControl(r) && !containsRune(keep, r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func containsRune(rs []rune, r rune) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
