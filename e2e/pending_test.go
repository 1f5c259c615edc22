package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
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

// TestCLIReadersBesideHolder: while another process holds the profile (a
// long sync, as a running TUI would), every command that only reads
// (history, inbox, outbox, trace, requests, quarantine, identity, safety-number,
// contact and group show|list without changes, relay-settings and
// request-settings without flags) reads it (exit 0), and a command that
// writes is refused (exit 4). The holder is not disturbed: once it ends,
// its profile opens as before.
func TestCLIReadersBesideHolder(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	first := strings.TrimSpace(alice.ok("send", "bob/1", "first"))
	id := strings.TrimSpace(alice.ok("send", "bob/1", "hello"))
	bob.sync()
	bob.ok("commit", "alice/1", first)
	bob.ok("contact", "Alice", "alice/1")
	bob.ok("group", "create", "pair", "alice/1")

	stop := holdProfile(t, bob)

	in := bob.jsonLines("inbox")
	if len(in) != 1 || in[0]["id"] != id || in[0]["body"] != "hello" {
		t.Fatalf("inbox beside the holder: %v", in)
	}
	if h := bob.jsonLines("history", "alice/1"); len(h) != 1 || h[0]["body"] != "first" {
		t.Fatalf("history beside the holder: %v, want the committed message", h)
	}
	bob.jsonLines("outbox")
	if tr := bob.jsonLines("trace", "alice/1", id); len(tr) != 1 || tr[0]["id"] != id {
		t.Fatalf("trace beside the holder: %v", tr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"requests"}, ""},
		{[]string{"quarantine"}, ""},
		{[]string{"identity"}, "address=bob/1 "},
		{[]string{"safety-number", "alice/1"}, "peer=alice/1 safety_number="},
		{[]string{"contact"}, "peer=alice/1 name=Alice"},
		{[]string{"group", "list"}, "name=pair"},
		{[]string{"group", "show", "pair"}, "name=pair"},
		{[]string{"relay-settings"}, "url=" + relay.url},
		{[]string{"request-settings"}, "accept_all=false"},
	} {
		r := bob.run("", c.args...)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) {
			t.Fatalf("parley %s beside the holder: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.want)
		}
	}
	for _, args := range [][]string{{"send", "alice/1", "no"}, {"commit", "alice/1", id}, {"contact", "Al", "alice/1"},
		{"group", "add", "pair", "carol/1"}, {"relay-settings", "--system-roots"}} {
		if r := bob.run("", args...); r.code != 4 || !strings.Contains(r.stderr, "open in another process") {
			t.Fatalf("%v beside the holder: exit %d %q, want 4", args, r.code, r.stderr)
		}
	}
	if err := stop(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("the holder: %v", err)
		}
	}
	bob.commitAll()
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 2 {
		t.Fatalf("bob's history after the holder ended %q", got)
	}
}

// holdProfile starts a process that holds p's profile (a long sync, as a
// running parley tui would) and returns once it does; stop ends it (also
// when the test ends) and returns how it ended. The holder is started
// again when it lost the race for the lock to the probe that asks whether
// it holds it yet (an abandon of nothing, which changes nothing).
func holdProfile(t *testing.T, p *cliProfile) (stop func() error) {
	t.Helper()
	var hold *exec.Cmd
	var held chan error
	start := func() {
		hold = exec.Command(parleyBin, "sync", "--wait", "120s")
		hold.Env = append(os.Environ(), "PARLEY_PROFILE="+p.dir, "PARLEY_PASSPHRASE=e2e passphrase")
		if err := hold.Start(); err != nil {
			t.Fatal(err)
		}
		held = make(chan error, 1)
		go func(c *exec.Cmd, ch chan error) { ch <- c.Wait() }(hold, held)
	}
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			hold.Process.Signal(syscall.SIGTERM)
			result = <-held
		})
		return result
	}
	start()
	t.Cleanup(func() { stop() })
	for try := 0; ; try++ {
		select {
		case <-held:
			start()
		default:
		}
		r := p.run("", "abandon", "alice/1", "00000000")
		if r.code == 4 {
			return stop
		}
		if r.code != 1 || try == 200 {
			t.Fatalf("abandon before the holder took the lock: exit %d %q", r.code, r.stderr)
		}
	}
}
