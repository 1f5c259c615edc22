package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestTerminalRequest: in a real terminal, a stranger's message shows in
// `parley tui` as a message request (the status bar counts it, the
// requests panel lists it) and not in the conversations; it reaches the
// conversation only after the accept key.
func TestTerminalRequest(t *testing.T) {
	relay := startRelay(t)
	bob := newStranger(t, relay, "bob/1") // parley init: request mode
	carol := newStranger(t, relay, "carol/1")
	bob.sync() // publishes bob's bundle
	carol.ok("send", "bob/1", "hello from a stranger")

	d := startTerminal(t, 120, 30, []string{"PARLEY_PROFILE=" + bob.dir, "PARLEY_PASSPHRASE=e2e passphrase"},
		"tui", "--bell=false")
	s := d.waitFor("1 request (alt+7)", 20*time.Second)
	if strings.Contains(s, "carol/1") || strings.Contains(s, "hello from a stranger") {
		t.Fatalf("the request shows outside the requests panel:\n%s", s)
	}
	if !strings.Contains(s, "none yet") {
		t.Fatalf("the conversations list is not empty:\n%s", s)
	}

	d.keys("M-7")
	s = d.waitFor(`carol/1 · 1 message · first seen`, 10*time.Second)
	if len(lines(s, "carol/1", `"hello from a stranger"`)) != 1 {
		t.Fatalf("the request's row has no preview:\n%s", s)
	}
	d.keys("a")
	d.waitFor("accepted carol/1: 1 message now in the conversation", 10*time.Second)
	d.keys("M-1")
	d.waitFor("Timeline · carol/1", 10*time.Second)
	s = d.waitFor("hello from a stranger", 10*time.Second)
	if strings.Contains(s, "request (alt+7)") {
		t.Fatalf("the status bar still counts a request after the accept:\n%s", s)
	}
	d.keys("C-c")
}
