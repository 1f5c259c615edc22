package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linkProc is `parley link` running for a new device.
type linkProc struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
	done   chan error
}

func startLink(t *testing.T, dir, relay string, more ...string) *linkProc {
	t.Helper()
	cmd := exec.Command(parleyBin, append([]string{"link", "--relay", relay, "--yes"}, more...)...)
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+dir, "PARLEY_PASSPHRASE=e2e passphrase")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &linkProc{cmd: cmd, lines: make(chan string, 16), done: make(chan error, 1)}
	cmd.Stderr = &l.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		close(l.lines)
		l.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	return l
}

// line returns the next line the new device printed that starts with key=.
func (l *linkProc) line(t *testing.T, key string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s, ok := <-l.lines:
			if !ok {
				t.Fatalf("parley link ended before printing %s= (stderr %q)", key, l.stderr.String())
			}
			if v, found := strings.CutPrefix(s, key+"="); found {
				return v
			}
		case <-timeout:
			t.Fatalf("parley link printed no %s= in 30s", key)
		}
	}
}

// TestCLILinkSecondDevice: alice/1 links a second device through the
// relay: both print the same six digits, the new device prints its
// address and exits 0, alice/1 exits 0; both list two devices, the new
// device carries alice/1's contact names, and it talks to bob as alice/2.
func TestCLILinkSecondDevice(t *testing.T) {
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.ok("contact", "Bob", "bob/1")
	alice.sync() // publishes generation 1

	dir2 := filepath.Join(t.TempDir(), "alice_2")
	link := startLink(t, dir2, relay.url)
	code := link.line(t, "code")
	res := make(chan runResult, 1)
	go func() { res <- alice.run("", "device", "add", code, "--yes") }()
	check := link.line(t, "check")
	if len(check) != 6 {
		t.Fatalf("check=%q, want six digits", check)
	}
	addr := link.line(t, "address")
	if addr != "alice/2" {
		t.Fatalf("address=%s, want alice/2", addr)
	}
	if err := <-link.done; err != nil {
		t.Fatalf("parley link: %v (stderr %q)", err, link.stderr.String())
	}
	r := <-res
	if r.code != 0 {
		t.Fatalf("parley device add: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "check="+check) {
		t.Fatalf("device 1 printed %q, want check=%s as the new device did", r.stdout, check)
	}

	alice2 := &cliProfile{t: t, dir: dir2, addr: "alice/2"}
	for _, p := range []*cliProfile{alice, alice2} {
		if n := len(p.jsonLines("devices")); n != 2 {
			t.Errorf("%s lists %d devices, want 2", p.addr, n)
		}
	}
	if out := alice2.ok("contact"); !strings.Contains(out, "Bob") {
		t.Errorf("the new device's contacts %q lack alice/1's name for bob/1", out)
	}
	// The new device reaches the relay as alice/2 and talks.
	bob.ok("accept", "alice/2")
	alice2.ok("accept", "bob/1")
	alice2.ok("send", "bob/1", "from the second device")
	bob.sync()
	bob.commitAll()
	if got := historyBodies(bob, "alice/2", "in"); len(got) != 1 || got[0] != "from the second device" {
		t.Errorf("bob got %v from alice/2", got)
	}
}

// TestCLILinkUnconfirmed: a new device whose digits are not confirmed is
// not linked, and neither profile changes.
func TestCLILinkUnconfirmed(t *testing.T) {
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	alice.sync()
	dir2 := filepath.Join(t.TempDir(), "alice_2")
	link := startLink(t, dir2, relay.url)
	code := link.line(t, "code")
	r := alice.run("no\n", "device", "add", code)
	if r.code == 0 {
		t.Fatal("device add without confirmation exited 0")
	}
	<-link.done
	if n := len(alice.jsonLines("devices")); n != 1 {
		t.Errorf("alice lists %d devices after a refused link, want 1", n)
	}
	if _, err := os.Stat(dir2); err == nil {
		if entries, _ := os.ReadDir(dir2); len(entries) > 0 {
			t.Errorf("the new device's directory holds %d files after a refused link", len(entries))
		}
	}
}
