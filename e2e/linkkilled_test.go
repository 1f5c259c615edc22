package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLILinkDeviceAddKilled: the holder's `parley device add` is killed
// with SIGKILL at a few points after the six digits (while it takes the
// new device into the list, writes and uploads the history, or sends the
// package; or after it finished, when it was quicker). Each run ends with
// the new device holding either the whole history once and an address,
// or nothing (its link fails and leaves no history); the holder's own
// history is unchanged; and a link started again completes with the whole
// history once. A killed ceremony's device number stays listed without a
// package (docs/reliability.md).
func TestCLILinkDeviceAddKilled(t *testing.T) {
	n := min(envInt("PARLEY_E2E_LINK_MESSAGES", 600), 1000)
	relay := startRelay(t, "--device-lists", "--device-list-joins")
	holder := seededHolder(t, relay, n)
	killed := 0
	for i, delay := range []time.Duration{0, 15 * time.Millisecond, 60 * time.Millisecond} {
		dir := filepath.Join(t.TempDir(), "alice_new")
		link := startLink(t, dir, relay.url)
		code := link.line(t, "code")
		add := exec.Command(parleyBin, "device", "add", code, "--yes")
		add.Env = append(os.Environ(), "PARLEY_PROFILE="+holder.dir, "PARLEY_PASSPHRASE=e2e passphrase")
		out, err := add.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := add.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), "check=") {
		}
		time.Sleep(delay)
		add.Process.Signal(syscall.SIGKILL)
		addErr := add.Wait()
		var linkErr error
		select {
		case linkErr = <-link.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("run %d: parley link did not end 60 s after device add was killed", i)
		}
		p := &cliProfile{t: t, dir: dir}
		if linkErr == nil {
			if got := checkOnce(t, p, n); got != n {
				t.Fatalf("run %d: the link ended well with %d of %d messages", i, got, n)
			}
			continue
		}
		killed++
		if addErr == nil {
			t.Fatalf("run %d: device add ended well but the link failed: %v (stderr %q)", i, linkErr, link.stderr.String())
		}
		// None of it: no profile, or one holding no history.
		if _, err := os.Stat(filepath.Join(dir, "parley.db")); err == nil {
			if got := historyBodies(p, "bob/1", "in"); len(got) != 0 {
				t.Fatalf("run %d: the failed link left %d messages", i, len(got))
			}
		}
		if got := checkOnce(t, holder, n); got != n {
			t.Fatalf("run %d: the holder's history holds %d of %d messages after the kill", i, got, n)
		}
	}
	t.Logf("device add killed before the new device had its package in %d of 3 runs", killed)
	// Started again, the link completes.
	dir := filepath.Join(t.TempDir(), "alice_again")
	link := startLink(t, dir, relay.url)
	code := link.line(t, "code")
	if r := holder.run("", "device", "add", code, "--yes"); r.code != 0 {
		t.Fatalf("device add again: exit %d, stderr %q", r.code, r.stderr)
	}
	if err := <-link.done; err != nil {
		t.Fatalf("link again: %v (stderr %q)", err, link.stderr.String())
	}
	if got := checkOnce(t, &cliProfile{t: t, dir: dir}, n); got != n {
		t.Fatalf("the link started again holds %d of %d messages", got, n)
	}
}
