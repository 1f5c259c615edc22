package e2e

import (
	"strings"
	"testing"
)

// TestCLIGroup drives the group contract: create (ID and JSON), show, list,
// send to a group (and with --no-wait, stored only), sync with "group",
// outbox lanes, history with lanes, trace, add, remove and leave.
func TestCLIGroup(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t)
	alice, bob, carol := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1"), newProfile(t, relay, "carol/1")
	created := alice.jsonLines("group", "create", "friends", "bob/1", "carol/1")
	if len(created) != 1 || len(created[0]["id"].(string)) != 32 || created[0]["name"] != "friends" || created[0]["generation"] != 1.0 ||
		len(created[0]["members"].([]any)) != 3 {
		t.Fatalf("group create --json: %v", created)
	}
	gid := created[0]["id"].(string)
	for _, p := range []*cliProfile{bob, carol} {
		recs := p.sync()
		if len(recs) != 1 || recs[0]["kind"] != "group_changed" || recs[0]["group"] != gid || recs[0]["generation"] != 1.0 {
			t.Fatalf("%s's sync after the creation: %v", p.addr, recs)
		}
	}
	alice.sync() // the roster change's ACKs
	if show := bob.jsonLines("group", "show", "friends"); len(show) != 1 || show[0]["id"] != gid || len(show[0]["admins"].([]any)) != 1 {
		t.Fatalf("bob's group show: %v", show)
	}
	if list := carol.jsonLines("group", "list"); len(list) != 1 || list[0]["name"] != "friends" {
		t.Fatalf("carol's group list: %v", list)
	}

	id := strings.TrimSpace(alice.ok("send", "friends", "hello friends"))
	if len(id) != 32 {
		t.Fatalf("send GROUP printed %q", id)
	}
	out := alice.jsonLines("outbox")
	if len(out) != 2 || out[0]["group"] != gid || out[0]["id"] != id {
		t.Fatalf("alice's outbox: one row per lane with its group, got %v", out)
	}
	for _, p := range []*cliProfile{bob, carol} {
		recs := p.sync()
		if len(recs) != 1 || recs[0]["kind"] != "delivery" || recs[0]["group"] != gid || recs[0]["body"] != "hello friends" {
			t.Fatalf("%s's sync: %v", p.addr, recs)
		}
		p.commitAll()
		if got := historyBodies(p, "alice/1", "in"); len(got) != 0 {
			t.Fatalf("%s's one-to-one history holds the group message: %v", p.addr, got)
		}
		h := p.jsonLines("history", gid)
		if len(h) != 1 || h[0]["sender"] != "alice/1" || h[0]["body"] != "hello friends" {
			t.Fatalf("%s's group history: %v", p.addr, h)
		}
	}
	alice.sync()
	h := alice.jsonLines("history", "friends")
	lanes, _ := h[0]["lanes"].(map[string]any)
	if len(h) != 1 || lanes["bob/1"] != "acknowledged" || lanes["carol/1"] != "acknowledged" {
		t.Fatalf("alice's group history: %v", h)
	}
	if tr := alice.jsonLines("trace", "friends", id); len(tr) != 2 || len(tr[0]["attempts"].([]any)) != 1 {
		t.Fatalf("trace GROUP ID: %v", tr)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("outbox after the ACKs: %v", out)
	}

	// --no-wait stores the message with both lanes pending and nothing
	// encrypted; the next send's pump hands those lanes off first.
	stored := strings.TrimSpace(alice.ok("send", "--no-wait", "friends", "stored first"))
	if tr := alice.jsonLines("trace", "friends", stored); len(tr) != 2 {
		t.Fatalf("trace of a stored group message: %v", tr)
	} else if attempts, _ := tr[0]["attempts"].([]any); len(attempts) != 0 {
		t.Fatalf("a --no-wait group send encrypted a lane: %v", tr)
	}
	alice.ok("send", "friends", "sent after")
	for _, p := range []*cliProfile{bob, carol} {
		recs := p.sync()
		if len(recs) != 2 || recs[0]["body"] != "stored first" || recs[1]["body"] != "sent after" {
			t.Fatalf("%s's sync after a stored and a sent group message: %v", p.addr, recs)
		}
		p.commitAll()
	}
	alice.sync()

	// Remove carol; bob leaves; alice alone stays.
	if r := alice.jsonLines("group", "remove", "friends", "carol/1"); r[0]["generation"] != 2.0 || len(r[0]["members"].([]any)) != 2 {
		t.Fatalf("group remove: %v", r)
	}
	carol.sync()
	bob.sync()
	if r := bob.jsonLines("group", "leave", "friends"); len(r[0]["members"].([]any)) != 1 {
		t.Fatalf("group leave: %v", r)
	}
	alice.sync()
	if show := alice.jsonLines("group", "show", gid); show[0]["generation"] != 3.0 || len(show[0]["members"].([]any)) != 1 {
		t.Fatalf("alice's roster after the leave: %v", show)
	}
	if r := carol.run("", "send", "friends", "still here?"); r.code != 1 {
		t.Fatalf("a removed member's send: exit %d (%s), want 1", r.code, r.stderr)
	}
	if r := alice.run("", "group", "create", "a/b", "bob/1"); r.code != 2 {
		t.Fatalf("a group name with a slash: exit %d, want 2", r.code)
	}
}
