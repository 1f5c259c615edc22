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
