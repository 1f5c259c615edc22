package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	d := startTerminal(t, 160, 48, nil, "demo")
	d.waitFor("relay connected", 20*time.Second)
	return d
}

// startTerminal runs parley with args in a tmux window of w x h cells, with
// env added to a fresh HOME.
func startTerminal(t *testing.T, w, h int, env []string, args ...string) *tmuxDemo {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing; .ci/run installs it")
		}
		t.Skip("tmux is not installed")
	}
	d := &tmuxDemo{t: t, session: fmt.Sprintf("parley-e2e-%d", time.Now().UnixNano())}
	// A tmux server needs a shell and a writable runtime directory.
	cmdline := append([]string{"new-session", "-d", "-s", d.session, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		"env", "NO_COLOR=1", "HOME=" + t.TempDir()}, env...)
	cmd := d.tmux(append(append(cmdline, parleyBin), args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	t.Cleanup(func() { d.tmux("kill-server").Run() })
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

// TestTerminalChat is `parley tui` used as a chat, in a real terminal:
// messages written while the relay was down are all listed and go out by
// themselves when it is back; text typed in one chunk stays text; an emoji
// with a skin tone leaves the screen intact; what arrives in the
// conversation in view is committed (on-read); the small layout works.
func TestTerminalChat(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.ok("send", "bob/1", "hello")
	bob.sync()
	bob.commitAll()
	alice.sync()
	relay.stop()
	for i := 1; i <= 7; i++ {
		if r := alice.run("", "send", "bob/1", fmt.Sprintf("msg-%d", i)); r.code != 3 {
			t.Fatalf("send with the relay down: exit %d (%q), want 3", r.code, r.stderr)
		}
	}
	relay = restartRelay(t, relay)

	settings := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(settings, []byte("[names]\n\"bob/1\" = \"Bobby\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startTerminal(t, 160, 48, []string{"PARLEY_PROFILE=" + alice.dir, "PARLEY_PASSPHRASE=e2e passphrase", "PARLEY_CONFIG=" + settings},
		"tui", "--bell=false", "bob/1")
	d.waitFor("Outbox · 7 pending sent", 20*time.Second)
	d.waitFor("Bobby · bob/1", 10*time.Second) // a name from the settings file
	rows := regexp.MustCompile(`bob/1 [0-9a-f]{8} msg-(\d)`)
	var s string
	for deadline := time.Now().Add(15 * time.Second); ; {
		s = d.screen()
		seen := map[string]bool{}
		for _, m := range rows.FindAllStringSubmatch(s, -1) {
			seen[m[1]] = true
		}
		if len(seen) == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outbox lists %d of 7 messages:\n%s", len(seen), s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Automatic retry sent them when the relay answered.
	got := map[string]bool{}
	for deadline := time.Now().Add(20 * time.Second); len(got) < 7; {
		bob.sync()
		for _, m := range bob.jsonLines("inbox") {
			got[fmt.Sprint(m["body"])] = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob received %v, want msg-1..msg-7", got)
		}
	}
	bob.commitAll()
	bob.sync()
	d.waitFor("Outbox · 0 pending sent", 20*time.Second)

	// One chunk of text with words that name keys.
	d.keys("M-3")
	typed := "qq enter ww home down tab zz"
	d.text(typed)
	d.keys("Enter")
	// An emoji with a skin tone.
	d.text("thumbs 👍🏽 up")
	d.keys("Enter")
	want := map[string]bool{typed: false, "thumbs 👍🏽 up": false}
	for deadline := time.Now().Add(20 * time.Second); !want[typed] || !want["thumbs 👍🏽 up"]; {
		bob.sync()
		for _, m := range bob.jsonLines("inbox") {
			want[fmt.Sprint(m["body"])] = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's inbox: %v; want both lines stored as typed", want)
		}
	}
	s = d.waitFor("thumbs", 10*time.Second)
	if len(lines(s, "thumbs", "up")) == 0 || strings.Count(s, "Conversations") != 1 || !strings.Contains(strings.SplitN(s, "\n", 2)[0], "alice/1") {
		t.Fatalf("the emoji damaged the screen:\n%s", s)
	}

	// bob writes; the conversation is in view, so alice's tui commits it.
	bob.commitAll()
	bob.ok("send", "alice/1", "ping from bob")
	d.waitFor("ping from bob", 20*time.Second)
	acked := false
	for deadline := time.Now().Add(20 * time.Second); !acked; {
		for _, r := range bob.sync() {
			acked = acked || r["kind"] == "acknowledgement"
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's tui never committed what it showed:\n%s", d.screen())
		}
	}

	// The relay goes away; a message written meanwhile goes out when it is
	// back, with no key pressed.
	relay.stop()
	d.waitFor("relay disconnected", 20*time.Second)
	d.text("written while away")
	d.keys("Enter")
	restartRelay(t, relay)
	d.waitFor("relay connected", 30*time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; {
		bob.sync()
		found := false
		for _, m := range bob.jsonLines("inbox") {
			found = found || m["body"] == "written while away"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message written while the relay was down never arrived:\n%s", d.screen())
		}
	}

	// The small layout: 80x24 still shows the conversation and the composer.
	if out, err := d.tmux("resize-window", "-t", d.session, "-x", "80", "-y", "24").CombinedOutput(); err != nil {
		t.Fatalf("resize-window: %v %s", err, out)
	}
	s = d.waitFor("alt+4/5", 10*time.Second)
	if len(lines(s, "written while away")) == 0 || !strings.Contains(s, "write to bob/1") {
		t.Fatalf("the 80x24 layout lost the conversation or the composer:\n%s", s)
	}
	d.keys("C-c")
}

// TestTerminalScenarios plays each guided scenario in a real terminal:
// ctrl+x and its digit, then space per step (each after the screen has
// shown the step and settled), to its exactly-once line with no loss and
// no duplicate.
func TestTerminalScenarios(t *testing.T) {
	for n, sc := range []struct {
		name  string
		steps int
		want  string
		// after, when set, is what each step shows once it is done,
		// waited for instead of a settled screen (the group matrix's age
		// changes every second).
		after []string
	}{
		{"collision", 7, "alice→bob 1 sent: 1 once · bob→alice 1 sent: 1 once", nil},
		{"lost envelope", 5, "alice→bob 1 sent: 1 once · bob→alice 0 sent", nil},
		{"lost ACK", 4, "alice→bob 1 sent: 1 once · bob→alice 0 sent", nil},
		{"crash between commit and event", 5, "alice→bob 1 sent: 1 once · bob→alice 0 sent", nil},
		{"identity change", 6, "alice→bob 0 sent: 0 once · bob→alice 1 sent: 1 once", nil},
		{"pruned message retried", 6, "alice→bob 1 sent: 1 once · bob→alice 0 sent", nil},
		{"group lane lost", 7, "#trio alice→bob 1 sent: 1 once · #trio alice→carol 1 sent: 1 once",
			[]string{"carol/1 joined", "# trio · 3", "Composer → #trio", "#trio alice→carol 1 sent: 0 once, 1 pending", "✓ 1/2", "✓ 2/2", "✓ 2/2"}},
		// The 20 MiB file's transfers move the bars: each step waits for
		// its result.
		{"file resumed after a kill", 6, "alice→bob 1 sent: 1 once · bob→alice 0 sent",
			[]string{"demo_file", "waiting · d download", "CRASHED", "reopened", "file_saved", "file_saved"}},
		// bob's laptop is linked by the command line's demo profiles
		// (cli's CreateLinked) on the demo's relay.
		{"second device mid-flight", 7, "alice→bob (2 devices) 2 sent: 2 once · bob→alice 0 sent", nil},
	} {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			// Each scenario has its own tmux server, demo and relay, and
			// spends most of its time waiting for a settled screen:
			// they run side by side (-parallel, two by default here).
			t.Parallel()
			d := startDemo(t)
			d.keys("C-x", fmt.Sprint(n+1))
			for i := 1; i <= sc.steps; i++ {
				d.waitFor(fmt.Sprintf("[%d %s · %d/%d]", n+1, sc.name, i, sc.steps), 20*time.Second)
				if sc.after != nil {
					d.waitFor(sc.after[i-1], 20*time.Second)
				} else {
					d.settle()
				}
				if i < sc.steps {
					d.keys("Space")
				}
			}
			s := d.waitFor(sc.want, 20*time.Second)
			if !strings.Contains(s, "no loss, no duplicate") || strings.Contains(s, "LOST") || strings.Contains(s, "DUPLICATED") {
				t.Fatalf("the verdict after %s:\n%s", sc.name, s)
			}
			d.keys("C-c")
		})
	}
}

// settle waits until the screen has not changed for a second.
func (d *tmuxDemo) settle() {
	d.t.Helper()
	last, since := d.screen(), time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Since(since) < time.Second; {
		if time.Now().After(deadline) {
			d.t.Fatal("the screen never settled")
		}
		time.Sleep(150 * time.Millisecond)
		if s := d.screen(); s != last {
			last, since = s, time.Now()
		}
	}
}
