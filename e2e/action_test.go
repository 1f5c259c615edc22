package e2e

import (
	"strings"
	"testing"
)

// historyEntry returns the history --json row of message id with peer.
func historyEntry(p *cliProfile, peer, id string) map[string]any {
	p.t.Helper()
	for _, h := range p.jsonLines("history", peer) {
		if h["id"] == id {
			return h
		}
	}
	p.t.Fatalf("%s's history with %s has no message %s", p.addr, peer, id)
	return nil
}

// TestCLIActions: react, edit, delete and send --reply-to each print the
// action's own ID; sync reports an action as what it does, naming its
// target; history --json shows reply_to, edited, reactions and deleted on
// both sides; the rules refuse with a reason (exit 1), an escape sequence
// is no emoji (exit 2), and an action whose target is not committed waits.
func TestCLIActions(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	m := strings.TrimSpace(alice.ok("send", "bob/1", "lunch at noon"))
	bob.sync()
	bob.ok("commit", "alice/1", m)
	alice.sync()

	react := strings.TrimSpace(bob.ok("react", "alice/1", m[:8], "\U0001F44D"))
	edit := strings.TrimSpace(alice.ok("edit", "bob/1", m, "lunch at one"))
	reply := strings.TrimSpace(bob.ok("send", "alice/1", "see you", "--reply-to", m))
	for _, id := range []string{react, edit, reply} {
		if len(id) != 32 || id == m {
			t.Fatalf("an action printed %q, want its own logical ID", id)
		}
	}

	got := alice.sync()
	var reacted map[string]any
	for _, r := range got {
		if r["kind"] == "reacted" {
			reacted = r
		}
	}
	if reacted == nil || reacted["id"] != react || reacted["target"] != m || reacted["emoji"] != "\U0001F44D" {
		t.Fatalf("alice's sync %v, want the reaction reported as reacted to %s", got, m)
	}
	alice.ok("commit", "bob/1", react)
	alice.ok("commit", "bob/1", reply)
	bob.sync()
	if r := bob.jsonLines("commit", "alice/1", edit); len(r) != 1 || r[0]["applied"] != "edited" || r[0]["target"] != m {
		t.Fatalf("bob commits the edit: %v", r)
	}
	for _, p := range []*cliProfile{alice, bob} {
		peer := map[*cliProfile]string{alice: "bob/1", bob: "alice/1"}[p]
		e := historyEntry(p, peer, m)
		rs, _ := e["reactions"].([]any)
		if e["body"] != "lunch at one" || e["edited"] != true || e["deleted"] != false || len(rs) != 1 ||
			rs[0].(map[string]any)["from"] != "bob/1" || rs[0].(map[string]any)["emoji"] != "\U0001F44D" {
			t.Fatalf("%s's history row of the message: %v", p.addr, e)
		}
		if e := historyEntry(p, peer, reply); e["reply_to"] != m || e["body"] != "see you" {
			t.Fatalf("%s's history row of the reply: %v", p.addr, e)
		}
	}

	// The rules, with nothing stored: a message of another, an escape
	// sequence, a group.
	if r := bob.run("", "edit", "alice/1", m, "mine"); r.code != 1 || !strings.Contains(r.stderr, "not_author") {
		t.Fatalf("bob edits alice's message: exit %d %q, want 1 and not_author", r.code, r.stderr)
	}
	if r := bob.run("", "react", "alice/1", m, "\x1b[2J"); r.code != 2 {
		t.Fatalf("an escape sequence as a reaction: exit %d %q, want 2", r.code, r.stderr)
	}

	// A delete for everyone: a tombstone on both sides, its reactions gone.
	alice.ok("delete", "bob/1", m)
	for _, r := range bob.sync() {
		if r["kind"] == "deleted" {
			bob.ok("commit", "alice/1", r["id"].(string))
		}
	}
	e := historyEntry(bob, "alice/1", m)
	if e["deleted"] != true || e["body"] != "" || len(e["reactions"].([]any)) != 0 {
		t.Fatalf("bob's row after the delete: %v", e)
	}
	alice.sync()
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("alice still has %v pending", out)
	}
}

// groupRow returns the history GROUP --json row of message id.
func groupRow(p *cliProfile, gid, id string) map[string]any {
	p.t.Helper()
	for _, h := range p.jsonLines("history", gid) {
		if h["id"] == id {
			return h
		}
	}
	p.t.Fatalf("%s's group history has no message %s", p.addr, id)
	return nil
}

// TestCLIGroupActions: react, edit, delete and send --reply-to take a
// GROUP; each prints the action's own ID; every member's history GROUP
// --json shows the reply, the edit, the reaction and the tombstone; a
// member's edit of another's message is refused (exit 1, not_author).
func TestCLIGroupActions(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t)
	alice, bob, carol := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1"), newProfile(t, relay, "carol/1")
	devs := []*cliProfile{alice, bob, carol}
	gid := alice.jsonLines("group", "create", "lunch", "bob/1", "carol/1")[0]["id"].(string)
	settle := func() {
		for range 6 {
			pending := 0
			for _, d := range devs {
				d.sync()
				for _, m := range d.jsonLines("inbox") {
					d.run("", "commit", m["sender"].(string), m["id"].(string))
				}
			}
			for _, d := range devs {
				d.sync()
				pending += len(d.jsonLines("outbox")) + len(d.jsonLines("inbox"))
			}
			if pending == 0 {
				return
			}
			for _, d := range devs {
				for _, p := range devs {
					if p != d {
						d.run("", "retry", p.addr)
					}
				}
			}
		}
		t.Fatal("the group did not settle")
	}
	settle()
	m := strings.TrimSpace(alice.ok("send", gid, "lunch at noon"))
	settle()

	react := strings.TrimSpace(bob.ok("react", gid, m[:8], "\U0001F44D"))
	edit := strings.TrimSpace(alice.ok("edit", gid, m, "lunch at one"))
	reply := strings.TrimSpace(carol.ok("send", gid, "see you", "--reply-to", m))
	for _, id := range []string{react, edit, reply} {
		if len(id) != 32 || id == m {
			t.Fatalf("an action printed %q, want its own logical ID", id)
		}
	}
	if r := bob.run("", "edit", gid, m, "mine"); r.code != 1 || !strings.Contains(r.stderr, "not_author") {
		t.Fatalf("bob edits alice's group message: exit %d %q, want 1 and not_author", r.code, r.stderr)
	}
	settle()
	for _, p := range devs {
		e := groupRow(p, gid, m)
		rs, _ := e["reactions"].([]any)
		if e["body"] != "lunch at one" || e["edited"] != true || e["deleted"] != false || len(rs) != 1 ||
			rs[0].(map[string]any)["from"] != "bob/1" || rs[0].(map[string]any)["emoji"] != "\U0001F44D" {
			t.Fatalf("%s's group row of the message: %v", p.addr, e)
		}
		if e := groupRow(p, gid, reply); e["reply_to"] != m || e["body"] != "see you" || e["sender"] != "carol/1" {
			t.Fatalf("%s's group row of the reply: %v", p.addr, e)
		}
		if n := len(p.jsonLines("history", gid)); n != 2 {
			t.Fatalf("%s's group history shows %d rows, want the message and the reply", p.addr, n)
		}
	}
	alice.ok("delete", gid, m)
	settle()
	for _, p := range devs {
		if e := groupRow(p, gid, m); e["deleted"] != true || e["body"] != "" || e["edited"] != false || len(e["reactions"].([]any)) != 0 {
			t.Fatalf("%s's group row after the delete: %v", p.addr, e)
		}
	}
}
