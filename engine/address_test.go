package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	good := []struct {
		in   string
		user string
		dev  uint32
	}{
		{"alice/1", "alice", 1},
		{"a/2147483647", "a", MaxDevice},
		{"x.y_z-0/42", "x.y_z-0", 42},
		{strings.Repeat("a", 64) + "/9", strings.Repeat("a", 64), 9},
	}
	for _, tt := range good {
		got, err := ParseAddress(tt.in)
		if err != nil || got.User != tt.user || got.Device != tt.dev {
			t.Errorf("ParseAddress(%q) = %+v, %v; want %s/%d", tt.in, got, err, tt.user, tt.dev)
		}
		if got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
	bad := []string{
		"", "alice", "alice/", "/1", "alice/0", "alice/01", "alice/-1", "alice/+1",
		"alice/2147483648", "alice/99999999999", "Alice/1", "al ice/1", "alice/1/2",
		"alice/1 ", " alice/1", "alïce/1", strings.Repeat("a", 65) + "/1", "alice/1a", "alice/0x1",
	}
	for _, in := range bad {
		if _, err := ParseAddress(in); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("ParseAddress(%q): got %v, want ErrInvalidAddress", in, err)
		}
	}
}

func FuzzParseAddress(f *testing.F) {
	f.Add("alice/1")      // valid
	f.Add("alice/01")     // leading zero
	f.Add("a/2147483648") // one over the largest device
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			if !a.IsZero() {
				t.Fatalf("error %v returned a value %+v", err, a)
			}
			return
		}
		if a.String() != s {
			t.Fatalf("%q parses but prints as %q", s, a.String())
		}
	})
}

// TestAddressReasons: a refusal names what is wrong in words a person can
// act on.
func TestAddressReasons(t *testing.T) {
	for in, want := range map[string]string{
		"Bob/1":   "must be lowercase (bob)",
		"bo b/1":  "may not hold spaces",
		"bob":     "no device",
		"bob/":    "no device number",
		"bob/0":   "start at 1",
		"bob/01":  "leading zero",
		"bob/x":   "must be a number",
		"bo*b/1":  "not '*'",
		"/1":      "1 to 64 characters",
		"bob/1/2": "must be a number",
	} {
		_, err := ParseAddress(in)
		var ae *AddressError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, want) || !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("ParseAddress(%q) = %v, want a reason with %q", in, err, want)
		}
	}
}
