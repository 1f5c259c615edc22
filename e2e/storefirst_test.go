package e2e

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
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
	t.Parallel() // waits on processes most of the time; see TestTerminalScenarios
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

// TestCLISendWaitAndNoWait: send --no-wait exits 0 once the message is
// stored, with nothing on the network; a send whose relay never answers
// exits 3 after --wait, the message pending; once the relay answers again a
// retry hands both off and the peer receives each once.
func TestCLISendWaitAndNoWait(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.ok("send", "bob/1", "hello")
	alice.ok("relay-settings", "--url", "ws://"+blackhole(t))
	if r := alice.run("", "send", "--no-wait", "bob/1", "stored only"); r.code != 0 || len(strings.TrimSpace(r.stdout)) != 32 {
		t.Fatalf("send --no-wait: exit %d, stdout %q, stderr %q; want 0 and the ID", r.code, r.stdout, r.stderr)
	}
	if r := alice.run("", "send", "--wait", "1s", "bob/1", "waited"); r.code != 3 || !strings.Contains(r.stderr, "stays pending") {
		t.Fatalf("send --wait 1s to a relay that never answers: exit %d, stderr %q; want 3, pending", r.code, r.stderr)
	}
	var bodies []string
	for _, m := range alice.jsonLines("outbox") {
		bodies = append(bodies, fmt.Sprint(m["body"]))
	}
	if fmt.Sprint(bodies) != fmt.Sprint([]string{"hello", "stored only", "waited"}) {
		t.Fatalf("pending: %q", bodies)
	}
	alice.ok("relay-settings", "--url", relay.url)
	alice.ok("retry", "bob/1")
	bob.sync()
	got := map[string]int{}
	for _, m := range bob.jsonLines("inbox") {
		got[fmt.Sprint(m["body"])]++
	}
	if len(got) != 3 || got["hello"] != 1 || got["stored only"] != 1 || got["waited"] != 1 {
		t.Fatalf("bob's inbox: %v, want each of the three once", got)
	}
}

// TestTerminalKillAfterEnter: with the text saved as the draft, Enter and
// then SIGKILL at a sweep of delays (E2E_KILL_DELAYS, milliseconds, comma
// separated, overrides the default): every run ends with the text stored
// exactly once or kept as the draft, never both and never neither. The
// send clears the draft in the transaction that stores the text, and the
// draft saves run in order with the sends.
func TestTerminalKillAfterEnter(t *testing.T) {
	t.Parallel() // waits on processes most of the time; see TestTerminalScenarios
	delays := []int{0, 5, 10, 25, 50, 75, 100, 150, 200, 300}
	if s := os.Getenv("E2E_KILL_DELAYS"); s != "" {
		delays = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("E2E_KILL_DELAYS: %v", err)
			}
			delays = append(delays, n)
		}
	}
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	newProfile(t, relay, "bob/1")
	env := []string{"PARLEY_PROFILE=" + alice.dir, "PARLEY_PASSPHRASE=e2e passphrase"}
	open := func() *tmuxDemo {
		d := startTerminal(t, 160, 48, env, "tui", "--bell=false", "bob/1")
		d.waitFor("Composer → bob/1", 20*time.Second)
		return d
	}
	d := open()
	for i, delay := range delays {
		text := fmt.Sprintf("sweep-%d-%dms", i, delay)
		d.text(text)
		time.Sleep(1500 * time.Millisecond) // the tick saves the draft
		pid := d.panePID()
		if err := d.tmux("send-keys", "-t", d.session, "Enter").Run(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(delay) * time.Millisecond)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the TUI: %v", err)
		}
		d.tmux("kill-server").Run()
		stored := 0
		for _, m := range alice.jsonLines("outbox") {
			if m["body"] == text {
				stored++
			}
		}
		d = open()
		drafted := strings.Contains(d.screen(), "› "+text)
		t.Logf("kill %d ms after Enter: stored %d, draft %v", delay, stored, drafted)
		switch {
		case stored > 1:
			t.Fatalf("kill %d ms after Enter: %q stored %d times", delay, text, stored)
		case stored == 1 && drafted:
			t.Fatalf("kill %d ms after Enter: %q is stored and still the draft (the next Enter sends it twice)", delay, text)
		case stored == 0 && !drafted:
			t.Fatalf("kill %d ms after Enter: %q is neither stored nor the draft:\n%s", delay, text, d.screen())
		}
		if drafted {
			d.keys("Enter") // store it, so that the next text starts an empty composer
			d.waitFor("› write to bob/1", 10*time.Second)
		}
	}
}

// panePID returns the process ID of the program running in the session's
// pane (the parley process: env execs it).
func (d *tmuxDemo) panePID() int {
	d.t.Helper()
	out, err := d.tmux("display-message", "-p", "-t", d.session, "#{pane_pid}").Output()
	if err != nil {
		d.t.Fatalf("pane pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		d.t.Fatalf("pane pid %q: %v", out, err)
	}
	return pid
}
