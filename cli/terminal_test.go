package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// hostile is a body a stranger could send: an OSC 52 clipboard write, a
// screen clear, hidden text, a C1 CSI, DEL and a bidirectional override.
const hostile = "hi\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[8msecret\u009b31m\x7f\u202eevil\u2066x"

// rawControl reports the first control character (wire.IsControl) in s
// other than the newline that ends each line.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && wire.IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

func TestTextValueEscapesControls(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"space", "a b", `"a b"`},
		{"osc52", "\x1b]52;c;eA==\x07", `"\u001b]52;c;eA==\u0007"`},
		{"clear", "\x1b[2J", `"\u001b[2J"`},
		{"conceal", "\x1b[8m", `"\u001b[8m"`},
		{"c1 csi", "\u009b2J", `"\u009b2J"`},
		{"del", "a\x7fb", `"a\u007fb"`},
		{"bidi override", "abc\u202edef", `"abc\u202edef"`},
		{"bidi isolate", "\u2067x\u2069", `"\u2067x\u2069"`},
		{"emoji joiner kept", "👩\u200d💻", "👩\u200d💻"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := textValue(tt.in)
			if got != tt.want {
				t.Fatalf("textValue(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if strings.HasPrefix(got, `"`) {
				var back string
				if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in {
					t.Fatalf("%s decodes as %q (%v), want %q", got, back, err, tt.in)
				}
			}
		})
	}
}

func TestPrinterJSONEscapesControls(t *testing.T) {
	var b strings.Builder
	printer{&b, true}.record([]kv{{"body", hostile}})
	if r, bad := rawControl(b.String()); bad {
		t.Fatalf("JSON line %q holds %U raw", b.String(), r)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil || m["body"] != hostile {
		t.Fatalf("JSON line decodes as %q (%v), want the body unchanged", m["body"], err)
	}
}
