package e2e

import (
	"strings"
	"testing"
)

// laneStates returns device -> state of the lanes of alice's history row
// with id in the conversation with peer.
func laneStates(t *testing.T, p *cliProfile, peer, id string) map[string]string {
	t.Helper()
	for _, r := range p.jsonLines("history", peer) {
		if r["id"] != id {
			continue
		}
		out := map[string]string{}
		lanes, _ := r["lanes"].([]any)
		for _, l := range lanes {
			m := l.(map[string]any)
			out[m["device"].(string)] = m["state"].(string)
		}
		return out
	}
	t.Fatalf("%s's history with %s has no message %s", p.addr, peer, id)
	return nil
}

// TestCLIPersonRemoveDevice: bob removes bob/2 from bob/1 (the account
// key's device). Neither bob/2 nor bob/1 itself can be removed from the
// wrong place; once removed, alice's pending lane to bob/2 ends removed on
// her next connection, her next send reaches bob/1 alone, and bob/2 is
// refused by the relay with one line saying it was removed.
func TestCLIPersonRemoveDevice(t *testing.T) {
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync()
	bob.sync()
	bob2 := linkDevice(t, relay, bob, "bob/2")
	bob2.ok("accept", "alice/1")
	bob2.sync()

	// A message whose lane to bob/2 stays pending: bob/2 never syncs again.
	id := strings.TrimSpace(alice.ok("send", "bob", "before"))
	if got := deliveries(bob.sync(), "delivery", id); len(got) != 1 {
		t.Fatalf("bob/1 got %q, want the message once", got)
	}
	bob.commitAll()
	alice.sync()
	if got := laneStates(t, alice, "bob/1", id); got["bob/1"] != "acknowledged" || got["bob/2"] != "pending" {
		t.Fatalf("alice's lanes before the removal: %v", got)
	}

	// Refusals: a linked device, the account key's device itself, an
	// unconfirmed removal.
	for _, c := range []struct {
		who   *cliProfile
		stdin string
		args  []string
		want  string
	}{
		{bob2, "", []string{"device", "remove", "bob/1", "--yes"}, "does not hold the account key"},
		{bob, "", []string{"device", "remove", "bob/1", "--yes"}, "cannot remove itself"},
		{bob, "no\n", []string{"device", "remove", "bob/2"}, "not confirmed"},
	} {
		r := c.who.run(c.stdin, c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
			t.Errorf("%s: parley %v: exit %d, stderr %q, want a refusal saying %q", c.who.addr, c.args, r.code, r.stderr, c.want)
		}
	}
	if got := bob.jsonLines("devices"); len(got) != 2 || got[1]["state"] != "active" {
		t.Fatalf("bob's devices after the refusals: %v", got)
	}

	rm := bob.jsonLines("device", "remove", "bob/2", "--yes")
	if len(rm) != 1 || rm[0]["removed"] != "bob/2" || rm[0]["generation"] != float64(3) {
		t.Fatalf("device remove printed %v, want bob/2 removed at generation 3", rm)
	}
	devs := bob.jsonLines("devices")
	if len(devs) != 2 || devs[1]["device"] != "bob/2" || devs[1]["state"] != "removed" || devs[0]["state"] != "active" {
		t.Fatalf("bob's devices after the removal: %v", devs)
	}

	// alice holds the new list on her next connection: the lane ends.
	alice.sync()
	if got := laneStates(t, alice, "bob/1", id); got["bob/1"] != "acknowledged" || got["bob/2"] != "removed" {
		t.Errorf("alice's lanes after the removal: %v, want bob/2 removed", got)
	}
	id2 := strings.TrimSpace(alice.ok("send", "bob", "after"))
	for _, m := range alice.jsonLines("outbox") {
		if m["recipient"] == "bob/2" {
			t.Errorf("alice's outbox holds a lane to the removed bob/2: %v", m)
		}
	}
	if got := deliveries(bob.sync(), "delivery", id2); len(got) != 1 {
		t.Errorf("bob/1 got %q, want the message sent after the removal once", got)
	}

	// bob/2 is refused, and says why.
	r := bob2.run("", "sync", "--wait", "300ms")
	if r.code == 0 || !strings.Contains(r.stderr, "bob/2 was removed from the devices of bob") {
		t.Errorf("bob/2's sync after its removal: exit %d, stdout %q, stderr %q, want a refusal saying it was removed", r.code, r.stdout, r.stderr)
	}
	r = bob2.run("", "send", "alice/1", "from a removed device")
	if r.code == 0 || !strings.Contains(r.stderr, "bob/2 was removed from the devices of bob") {
		t.Errorf("bob/2's send after its removal: exit %d, stdout %q, stderr %q, want a refusal saying it was removed", r.code, r.stdout, r.stderr)
	}
}
