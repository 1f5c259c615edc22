package e2e

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// blackhole is a relay address that takes connections and never answers:
// every call through it waits until its caller gives up.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c) // held open, never read or answered
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// TestTerminalStoreFirst: with a relay that takes the connection and never
// answers, five messages typed into the chat are all stored at once (the
// outbox lists the five: no send waits on the network before the next is
// stored), and ctrl+c quits without asking; the profile then holds the
// five pending, in the order typed.
func TestTerminalStoreFirst(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.ok("send", "bob/1", "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	alice.ok("relay-settings", "--url", "ws://"+blackhole(t))

	d := startTerminal(t, 160, 48, []string{"PARLEY_PROFILE=" + alice.dir, "PARLEY_PASSPHRASE=e2e passphrase"},
		"tui", "--bell=false", "bob/1")
	d.waitFor("Composer → bob/1", 20*time.Second)
	for i := 1; i <= 5; i++ {
		d.text(fmt.Sprintf("typed-%d", i))
		d.keys("Enter")
	}
	d.waitFor("Outbox · 5 pending sent", 20*time.Second)
	d.keys("C-c")
	for deadline := time.Now().Add(20 * time.Second); d.tmux("has-session", "-t", d.session).Run() == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("ctrl+c did not quit:\n%s", d.screen())
		}
		time.Sleep(200 * time.Millisecond)
	}
	var bodies []string
	for _, m := range alice.jsonLines("outbox") {
		bodies = append(bodies, fmt.Sprint(m["body"]))
	}
	want := []string{"typed-1", "typed-2", "typed-3", "typed-4", "typed-5"}
	if fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Fatalf("pending after quitting: %q, want %q in the order typed", bodies, want)
	}
}
