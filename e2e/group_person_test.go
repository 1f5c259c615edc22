package e2e

import (
	"strings"
	"testing"
)

// TestCLIGroupPersonDevices drives a group across a person's devices from
// the command line: bob/2, linked to bob and no entry of the roster, gets
// the creation and alice's message; bob decides it on bob/1 and bob/2
// shows it decided there; bob/2 sends to the group, carol (who holds no
// list for bob) takes it once she has fetched bob's list, and bob/1 keeps
// it as bob's own; bob/2 cannot change the roster; once bob removes
// bob/2, alice's next message has no lane to it.
func TestCLIGroupPersonDevices(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t, "--device-lists")
	alice, bob, carol := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1"), newProfile(t, relay, "carol/1")
	for _, p := range []*cliProfile{alice, bob, carol} {
		p.sync() // publishes each account's list
	}
	bob2 := linkDevice(t, relay, bob, "bob/2")
	bob2.sync()

	created := alice.jsonLines("group", "create", "friends", "bob/1", "carol/1")
	if len(created) != 1 {
		t.Fatalf("group create: %v", created)
	}
	gid := created[0]["id"].(string)
	for _, p := range []*cliProfile{bob, bob2, carol} {
		recs := p.sync()
		if len(recs) == 0 || recs[0]["kind"] != "group_changed" || recs[0]["group"] != gid {
			t.Fatalf("%s's sync after the creation: %v", p.addr, recs)
		}
	}
	alice.sync()

	id := strings.TrimSpace(alice.ok("send", "friends", "hello all devices"))
	for _, p := range []*cliProfile{bob, bob2} {
		if got := deliveries(p.sync(), "delivery", id); len(got) != 1 || got[0] != "hello all devices" {
			t.Fatalf("%s's sync delivered %q, want alice's group message once", p.addr, got)
		}
	}
	bob.ok("commit", "alice/1", id) // tells bob/2
	var decided bool
	for range 4 {
		for _, r := range bob2.sync() {
			decided = decided || r["kind"] == "decided" && r["id"] == id && r["on"] == "bob/1"
		}
		if decided {
			break
		}
		bob.sync()
	}
	if !decided {
		t.Fatalf("bob/2 never heard bob/1's decision on %s (inbox %v)", id, bob2.jsonLines("inbox"))
	}
	if in := bob2.jsonLines("inbox"); len(in) != 0 {
		t.Fatalf("bob/2's inbox after bob/1's decision: %v", in)
	}
	alice.sync()
	h := alice.jsonLines("history", "friends")
	lanes, _ := h[0]["lanes"].(map[string]any)
	if lanes["bob/1"] != "acknowledged" || lanes["bob/2"] != "acknowledged" {
		t.Fatalf("alice's lanes of her message %v, want bob/1 and bob/2 acknowledged", lanes)
	}

	// bob/2 sends; carol holds no list for bob: her first round fetches
	// it, her next takes the message.
	laptop := strings.TrimSpace(bob2.ok("send", "friends", "from the laptop"))
	var got []string
	for range 3 {
		got = append(got, deliveries(carol.sync(), "delivery", laptop)...)
	}
	if len(got) != 1 || got[0] != "from the laptop" {
		t.Fatalf("carol's syncs delivered %q, want bob/2's message once", got)
	}
	if in := bob.sync(); len(deliveries(in, "delivery", laptop)) > 1 {
		t.Fatalf("bob/1 got its sibling's message twice: %v", in)
	}
	if in := bob.jsonLines("inbox"); len(in) != 0 {
		t.Fatalf("bob/1 is asked about its sibling's message: %v", in)
	}
	var own bool
	for _, r := range bob.jsonLines("history", gid) {
		own = own || r["id"] == laptop && r["body"] == "from the laptop"
	}
	if !own {
		t.Fatalf("bob/1's group history lacks bob/2's message: %v", bob.jsonLines("history", gid))
	}
	if r := bob2.run("", "group", "remove", "friends", "carol/1"); r.code == 0 || !strings.Contains(r.stderr, "bob/1") {
		t.Fatalf("bob/2's roster change: exit %d, stderr %q; want a refusal naming bob/1", r.code, r.stderr)
	}

	// bob removes bob/2; alice's next message goes to bob/1 alone.
	bob.ok("device", "remove", "bob/2", "--yes")
	alice.sync()
	after := strings.TrimSpace(alice.ok("send", "friends", "after the removal"))
	for _, r := range alice.jsonLines("history", "friends") {
		if r["id"] != after {
			continue
		}
		lanes, _ := r["lanes"].(map[string]any)
		if _, ok := lanes["bob/2"]; ok || lanes["bob/1"] == nil {
			t.Fatalf("alice's lanes after bob removed bob/2: %v, want bob/1 and none to bob/2", lanes)
		}
	}
}
