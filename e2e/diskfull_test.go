package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallDisk mounts a tmpfs of size at a new directory and unmounts it when
// the test ends; it skips the test where mounting is not allowed (not
// root, or no mount(8)). CI runs as root.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s): the full-disk test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until its disk is full, and returns the
// file's path: removing it frees the space.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n := len(buf); n > 0; n /= 2 {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v, want ENOSPC", dir, err)
				}
				break
			}
		}
	}
	return path
}

// TestCLIDiskFull: bob's profile is on a disk that fills up. sync fails
// with one line saying the disk is full and how much is free where, and
// changes nothing; send fails the same way and stores nothing; the
// commands that only read still work. Once space is freed, the next sync
// receives what came meanwhile (the relay kept it), and every message is
// there exactly once.
func TestCLIDiskFull(t *testing.T) {
	disk := smallDisk(t, "4m")
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	bob := &cliProfile{t: t, dir: filepath.Join(disk, "bob"), addr: "bob/1"}
	bob.ok("init", "--address", "bob/1", "--relay", relay.url)
	acquaint(bob, alice)
	alice.ok("send", "bob/1", "before the disk filled")
	if k := kinds(bob.sync()); k["delivery"] != 1 {
		t.Fatalf("bob's first sync: %v", k)
	}

	filler := fillDisk(t, disk)
	alice.ok("send", "bob/1", "while the disk was full")
	for _, args := range [][]string{{"sync"}, {"send", "alice/1", "from a full disk"}, {"commit", "alice/1", "00000000"}} {
		r := bob.run("", args...)
		want := "parley " + args[0] + ": disk full (0 B free on " + bob.dir + "): free some space and run it again\n"
		if r.code != 1 || r.stderr != want || r.stdout != "" {
			t.Fatalf("parley %s on a full disk: exit %d, stdout %q, stderr %q; want exit 1 and %q", strings.Join(args, " "), r.code, r.stdout, r.stderr, want)
		}
	}
	if in := bob.jsonLines("inbox"); len(in) != 1 || in[0]["body"] != "before the disk filled" {
		t.Fatalf("bob's inbox on a full disk: %v, want the message received before", in)
	}
	for _, args := range [][]string{{"history", "alice/1"}, {"outbox"}, {"requests"}, {"identity"}, {"contact"}, {"safety-number", "alice/1"}} {
		if r := bob.run("", args...); r.code != 0 {
			t.Fatalf("parley %s on a full disk: exit %d %q, want it to read", strings.Join(args, " "), r.code, r.stderr)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if k := kinds(bob.sync()); k["delivery"] != 1 || len(k) != 1 {
		t.Fatalf("bob's sync once space was freed: %v, want the message sent while the disk was full", k)
	}
	bob.commitAll()
	alice.sync()
	if got := historyBodies(bob, "alice/1", "in"); strings.Join(got, "|") != "before the disk filled|while the disk was full" {
		t.Fatalf("bob's history %q, want each message once, in order", got)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("alice still has %v pending", out)
	}
	if out := bob.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("bob's send on the full disk stored %v", out)
	}
}
