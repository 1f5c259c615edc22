package e2e

import (
	"strings"
	"testing"
)

// TestCLIFinalizeAgain: commit and discard are idempotent. Committing a
// committed message (or discarding a discarded one) says so (exit 0,
// already) and sends the ACK again; the other outcome is refused with the
// reason (exit 1); --after below 0 is a usage error (exit 2).
func TestCLIFinalizeAgain(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	kept := strings.TrimSpace(alice.ok("send", "bob/1", "kept"))
	dropped := strings.TrimSpace(alice.ok("send", "bob/1", "dropped"))
	bob.sync()
	bob.ok("commit", "alice/1", kept)
	bob.ok("discard", "alice/1", dropped)
	alice.sync()

	for _, c := range []struct {
		cmd, id, already, refuse, refused string
	}{
		{"commit", kept, "committed", "discard", "already_committed"},
		{"discard", dropped, "discarded", "commit", "already_discarded"},
	} {
		r := bob.jsonLines(c.cmd, "alice/1", c.id)
		if len(r) != 1 || r[0]["already"] != c.already || r[0]["ack_sent"] != true {
			t.Fatalf("%s of a message %s before: %v, want already %s and the ACK sent again", c.cmd, c.already, r, c.already)
		}
		if r := bob.run("", c.refuse, "alice/1", c.id); r.code != 1 || !strings.Contains(r.stderr, c.refused) {
			t.Fatalf("%s of a message %s before: exit %d %q, want 1 and %s", c.refuse, c.already, r.code, r.stderr, c.refused)
		}
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != "kept" {
		t.Fatalf("bob's history %q, want the committed message once", got)
	}
	// The ACKs sent again are repeats to alice: nothing was pending.
	if k := kinds(alice.sync()); k["acknowledgement"] != 2 || len(k) != 1 {
		t.Fatalf("alice got %v, want the two ACKs again", k)
	}
	for _, cmd := range []string{"inbox", "outbox"} {
		if r := bob.run("", cmd, "--after", "-1"); r.code != 2 || !strings.Contains(r.stderr, "--after") {
			t.Fatalf("%s --after -1: exit %d %q, want 2", cmd, r.code, r.stderr)
		}
	}
}
