package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The demo in a real terminal: tmux runs `parley demo` at 160x48, keys are
// typed with send-keys and the screen is read with capture-pane.

type tmuxDemo struct {
	t       *testing.T
	session string
}

func startDemo(t *testing.T) *tmuxDemo {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing; .ci/run installs it")
		}
		t.Skip("tmux is not installed")
	}
	d := &tmuxDemo{t: t, session: fmt.Sprintf("parley-e2e-%d", time.Now().UnixNano())}
	// A tmux server needs a shell and a writable runtime directory.
	cmd := d.tmux("new-session", "-d", "-s", d.session, "-x", "160", "-y", "48",
		"env", "NO_COLOR=1", "HOME="+t.TempDir(), parleyBin, "demo")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	t.Cleanup(func() { d.tmux("kill-server").Run() })
	d.waitFor("relay connected", 20*time.Second)
	return d
}

// tmux runs a tmux command on the test's own server (-L), so that tests do
// not share one.
func (d *tmuxDemo) tmux(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-L", d.session}, args...)...)
}

// keys sends tmux key names (or literal text with -l when literal is set).
func (d *tmuxDemo) keys(keys ...string) {
	d.t.Helper()
	for _, k := range keys {
		if out, err := d.tmux("send-keys", "-t", d.session, k).CombinedOutput(); err != nil {
			d.t.Fatalf("send-keys %q: %v %s", k, err, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (d *tmuxDemo) text(s string) {
	d.t.Helper()
	if out, err := d.tmux("send-keys", "-t", d.session, "-l", s).CombinedOutput(); err != nil {
		d.t.Fatalf("send-keys: %v %s", err, out)
	}
	time.Sleep(100 * time.Millisecond)
}

func (d *tmuxDemo) screen() string {
	d.t.Helper()
	out, err := d.tmux("capture-pane", "-t", d.session, "-p").Output()
	if err != nil {
		d.t.Fatalf("capture-pane: %v", err)
	}
	return string(out)
}

// waitFor waits until the screen contains want.
func (d *tmuxDemo) waitFor(want string, timeout time.Duration) string {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := d.screen()
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the screen never showed %q:\n%s", want, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lines returns the screen's lines that contain every one of words.
func lines(screen string, words ...string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// half returns the left (alice) or right (bob) half of every line.
func half(screen string, right bool) string {
	var b strings.Builder
	for _, l := range strings.Split(screen, "\n") {
		r := []rune(l)
		if right {
			if len(r) > 80 {
				b.WriteString(string(r[80:]))
			}
		} else if len(r) > 80 {
			b.WriteString(string(r[:80]))
		} else {
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestTerminalDemoSendCommitAcknowledge(t *testing.T) {
	d := startDemo(t)
	// Focus starts in alice's composer, addressed to bob/1.
	d.text("hello bob from the terminal")
	d.keys("Enter")
	s := d.waitFor("1 pending received", 15*time.Second)
	if len(lines(half(s, true), "hello bob from the terminal")) == 0 {
		t.Fatalf("bob's side does not list the message:\n%s", s)
	}
	// bob commits it from his inbox: ctrl+o, alt+4, c.
	d.keys("C-o", "M-4", "c")
	s = d.waitFor("acknowledged", 15*time.Second)
	if got := lines(half(s, false), "hello bob from the terminal", "acknowledged"); len(got) != 1 {
		t.Fatalf("alice's message is not shown acknowledged once:\n%s", s)
	}
	d.keys("C-c")
}

func TestTerminalDemoCollision(t *testing.T) {
	d := startDemo(t)
	// Hold delivery to both, let both write first, release: a collision.
	d.keys("C-x", "H")
	d.text("from alice")
	d.keys("Enter")
	d.keys("C-o", "M-3")
	d.text("from bob")
	d.keys("Enter")
	d.keys("C-x", "H")
	d.waitFor("collision", 20*time.Second)
	// Commit everything and retry on both sides until both messages are
	// acknowledged.
	var s string
	for round := 0; round < 8; round++ {
		for side := 0; side < 2; side++ {
			d.keys("C-o", "M-4", "C", "C-r")
		}
		time.Sleep(time.Second)
		s = d.screen()
		if len(lines(half(s, false), "from alice", "acknowledged")) == 1 && len(lines(half(s, true), "from bob", "acknowledged")) == 1 {
			break
		}
	}
	left, right := half(s, false), half(s, true)
	if n := len(lines(right, "from alice", "delivered")); n != 1 {
		t.Fatalf("bob's timeline shows alice's message %d times, want once:\n%s", n, s)
	}
	if n := len(lines(left, "from bob", "delivered")); n != 1 {
		t.Fatalf("alice's timeline shows bob's message %d times, want once:\n%s", n, s)
	}
	if len(lines(left, "from alice", "acknowledged")) != 1 || len(lines(right, "from bob", "acknowledged")) != 1 {
		t.Fatalf("the messages are not both acknowledged:\n%s", s)
	}
	d.keys("C-c")
}
