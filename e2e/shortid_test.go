package e2e

import (
	"strings"
	"testing"
)

// TestCLIShortIDs: the first 8 hex digits, as the TUI shows an ID, work in
// commit, discard, trace and abandon.
func TestCLIShortIDs(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	one := strings.TrimSpace(alice.ok("send", "bob/1", "one"))
	two := strings.TrimSpace(alice.ok("send", "bob/1", "two"))
	bob.sync()

	if r := bob.jsonLines("commit", "alice/1", one[:8]); len(r) != 1 {
		t.Fatalf("commit by short ID printed %v", r)
	}
	bob.ok("discard", "alice/1", two[:8])
	if in := bob.jsonLines("inbox"); len(in) != 0 {
		t.Fatalf("inbox after commit and discard by short ID: %v", in)
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != "one" {
		t.Fatalf("bob's history %q, want one", got)
	}
	tr := bob.jsonLines("trace", "alice/1", one[:8])
	if len(tr) != 1 || tr[0]["id"] != one {
		t.Fatalf("trace by short ID: %v, want %s", tr, one)
	}
	if r := bob.run("", "commit", "alice/1", "0000ffff"); r.code != 1 || !strings.Contains(r.stderr, "none of the pending messages from alice/1") {
		t.Fatalf("commit of an unknown prefix: exit %d %q", r.code, r.stderr)
	}

	alice.sync()
	three := strings.TrimSpace(alice.ok("send", "bob/1", "three"))
	alice.ok("abandon", "bob/1", three[:8])
	out := alice.jsonLines("outbox")
	for _, m := range out {
		if m["id"] == three {
			t.Fatalf("abandon by short ID left %s pending", three)
		}
	}
}
