package e2e

import (
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

// TestCLIHostileBodyEscaped: a body meant to drive bob's terminal reaches
// sync, inbox and history in text form with every control escaped, and
// unchanged in --json once decoded.
func TestCLIHostileBodyEscaped(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	alice.run(hostile, "send", "bob/1", "-")
	var out string
	for i := 0; i < 20 && !strings.Contains(out, "delivery"); i++ {
		out += bob.ok("sync", "--wait", "300ms")
	}
	if !strings.Contains(out, "delivery") {
		t.Fatalf("bob's sync never printed the delivery: %q", out)
	}
	for _, args := range [][]string{nil, {"inbox"}, {"history", "alice/1"}} {
		if len(args) == 2 {
			bob.commitAll() // history holds committed messages
		}
		if args != nil {
			out = bob.ok(args...)
		}
		if r, bad := rawControl(out); bad {
			t.Fatalf("parley %v printed %U raw: %q", args, r, out)
		}
		if !strings.Contains(out, `\u001b]52;`) || !strings.Contains(out, `\u202e`) {
			t.Fatalf("parley %v: want the escapes shown, got %q", args, out)
		}
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != hostile {
		t.Fatalf("bob's history in JSON: %q, want the body unchanged", got)
	}
}
