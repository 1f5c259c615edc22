package main

import (
	"strings"
	"testing"
)

// TestCLIFirstSendWithoutRelay: a first message to a peer (no session yet)
// while the relay cannot be reached is kept pending (exit 3, listed by
// outbox), and once the relay is back a retry delivers it exactly once.
func TestCLIFirstSendWithoutRelay(t *testing.T) {
	data := t.TempDir()
	relay := startRelay(t, "--data", data)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	relay.stop()

	r := alice.run("", "send", "bob/1", "kept while offline")
	if r.code != 3 || !strings.Contains(r.stderr, "stays pending") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("first send without a relay: exit %d, stderr %q; want 3 and one line", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	out := alice.jsonLines("outbox")
	if len(out) != 1 || out[0]["id"] != id || out[0]["body"] != "kept while offline" {
		t.Fatalf("outbox %v, want the message %s", out, id)
	}
	if r := alice.run("", "retry", "bob/1"); r.code != 3 {
		t.Fatalf("retry without a relay: exit %d %q, want 3", r.code, r.stderr)
	}

	restartRelay(t, relay, "--data", data)
	if ids := strings.Fields(alice.ok("retry", "bob/1")); len(ids) != 1 || ids[0] != id {
		t.Fatalf("retry handed off %v, want %s", ids, id)
	}
	if k := kinds(bob.sync()); k["delivery"] != 1 || len(k) != 1 {
		t.Fatalf("bob got %v, want one delivery", k)
	}
	bob.commitAll()
	if k := kinds(alice.sync()); k["acknowledgement"] != 1 {
		t.Fatalf("alice got %v, want the ACK", k)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("still pending after the ACK: %v", out)
	}
	if k := kinds(bob.sync()); len(k) != 0 {
		t.Fatalf("bob got more: %v", k)
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != "kept while offline" {
		t.Fatalf("bob's history %q, want the message once", got)
	}
}
