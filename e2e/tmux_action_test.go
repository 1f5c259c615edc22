package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestTerminalActions: two terminals, alice's and bob's parley tui, each
// on their conversation. Bob replies to alice's message with r (the quote
// over his composer, then in both timelines), alice reacts to the reply
// with + and 1 (under it on bob's screen), and edits her message with e
// (bob's timeline shows the new text, edited); history --json agrees.
func TestTerminalActions(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	m := strings.TrimSpace(alice.ok("send", "bob/1", "lunch at noon"))
	bob.sync()
	bob.ok("commit", "alice/1", m)
	alice.sync()

	env := func(p *cliProfile) []string {
		return []string{"PARLEY_PROFILE=" + p.dir, "PARLEY_PASSPHRASE=e2e passphrase"}
	}
	at := startTerminal(t, 120, 36, env(alice), "tui", "--bell=false", "bob/1")
	bt := startTerminal(t, 120, 36, env(bob), "tui", "--bell=false", "alice/1")
	at.waitFor("relay connected", 20*time.Second)
	bt.waitFor("relay connected", 20*time.Second)
	bt.waitFor("lunch at noon", 10*time.Second)

	// Bob replies.
	bt.keys("M-2", "r")
	bt.waitFor("↪ replying to alice/1: “lunch at noon”", 10*time.Second)
	bt.text("see you there")
	bt.keys("Enter")
	bt.waitFor("↪ alice/1: “lunch at noon”", 10*time.Second)
	at.waitFor("see you there", 30*time.Second)
	at.waitFor("↪ you: “lunch at noon”", 10*time.Second)

	// Alice reacts to the reply, the newest message.
	at.keys("M-2", "+")
	at.waitFor("react[1👍]", 10*time.Second)
	at.keys("1")
	at.waitFor("👍 you", 10*time.Second)
	bt.waitFor("👍 alice/1", 30*time.Second)

	// Alice edits her message.
	at.keys("M-2", "e")
	at.waitFor("editing your message", 10*time.Second)
	at.keys("C-u")
	at.text("lunch at one")
	at.keys("Enter")
	at.waitFor("edited", 10*time.Second)
	s := bt.waitFor("lunch at one", 30*time.Second)
	if len(lines(s, "lunch at one", "edited")) == 0 {
		t.Fatalf("bob's timeline does not mark the edit:\n%s", s)
	}
	at.keys("C-c")
	bt.keys("C-c")

	h := historyEntry(bob, "alice/1", m)
	if h["body"] != "lunch at one" || h["edited"] != true {
		t.Fatalf("bob's history of the message: %v", h)
	}
	found := false
	for _, e := range alice.jsonLines("history", "bob/1") {
		if e["body"] == "see you there" {
			found = e["reply_to"] == m
			rs, _ := e["reactions"].([]any)
			if len(rs) != 1 {
				t.Fatalf("alice's history of the reply has reactions %v, want hers", e["reactions"])
			}
		}
	}
	if !found {
		t.Fatalf("alice's history has no reply to %s", m)
	}
}
