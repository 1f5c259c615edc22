package wire

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestIsControl(t *testing.T) {
	tests := []struct {
		r    rune
		want bool
	}{
		{'a', false}, {' ', false}, {'é', false}, {'\u200d', false}, {'😀', false},
		{0x00, true}, {'\n', true}, {0x1b, true}, {0x7f, true}, {0x80, true}, {0x9b, true}, {0x9f, true},
		{0xa0, false}, {0x061c, true}, {0x200e, true}, {0x200f, true}, {0x2028, true}, {0x2029, true},
		{0x202a, true}, {0x202e, true}, {0x2066, true}, {0x2069, true}, {0x206a, false},
	}
	for _, tt := range tests {
		if got := IsControl(tt.r); got != tt.want {
			t.Errorf("IsControl(%U) = %v, want %v", tt.r, got, tt.want)
		}
	}
}

func TestEscapeControls(t *testing.T) {
	if got, want := EscapeControls("a\x1b[8mb\u202ec"), `a\u001b[8mb\u202ec`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got, want := EscapeControls("a\nb\x07", '\n'), "a\nb\\u0007"; got != want {
		t.Fatalf("with newline kept: got %q, want %q", got, want)
	}
}

// TestErrorRefusesControls: a relay's Error text holding a control
// character is refused both ways, so it cannot reach a terminal.
func TestErrorRefusesControls(t *testing.T) {
	for _, msg := range []string{
		"\x1b]52;c;cm0gLXJmIH4K\x07", // OSC 52: write the clipboard
		"\x1b[2J",                    // clear the screen
		"ok\x1b[8m hidden",           // conceal the rest of the line
		"abc\u202edef",               // bidirectional override
		"\u009b2J",                   // C1 CSI
		"a\nb",
	} {
		if _, err := EncodeRelay(1, Error{Code: ErrorBadRequest, Message: msg}); !errors.Is(err, ErrMalformed) {
			t.Errorf("encode %q: %v, want ErrMalformed", msg, err)
		}
		ok, err := EncodeRelay(1, Error{Code: ErrorBadRequest, Message: "x"})
		if err != nil {
			t.Fatal(err)
		}
		b := append(ok[:len(ok)-3:len(ok)-3], 0, 0)
		binary.BigEndian.PutUint16(b[len(b)-2:], uint16(len(msg)))
		b = append(b, msg...)
		if _, _, err := DecodeRelay(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("decode %q: %v, want ErrMalformed", msg, err)
		}
	}
	if _, err := EncodeRelay(1, Error{Code: ErrorBadRequest, Message: "bob/1 is registered to another identity"}); err != nil {
		t.Fatalf("a plain message: %v", err)
	}
}
