package e2e

import (
	"crypto/rand"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// linkWith links a new device of p into dir, with the new device's
// extra flags and device add's, and returns both commands' stdout.
func linkWith(t *testing.T, p *cliProfile, dir, relay string, newArgs, addArgs []string) (newOut, addOut string) {
	t.Helper()
	link := startLink(t, dir, relay, newArgs...)
	code := link.line(t, "code")
	res := make(chan runResult, 1)
	go func() { res <- p.run("", append([]string{"device", "add", code, "--yes"}, addArgs...)...) }()
	var lines []string
	for s := range link.lines {
		lines = append(lines, s)
	}
	if err := <-link.done; err != nil {
		t.Fatalf("parley link: %v (stderr %q)", err, link.stderr.String())
	}
	r := <-res
	if r.code != 0 {
		t.Fatalf("parley device add: exit %d, stderr %q", r.code, r.stderr)
	}
	return strings.Join(lines, "\n"), r.stdout
}

// TestCLILinkHistory: a new device linked with --history all starts with
// alice/1's history (each message once), a message received and
// undecided at the cut pending, and a message sent and still pending at
// the cut as a sent copy. The new device commits the undecided message
// and alice/1 follows without asking. A device linked with --history
// none starts with no message (its archive carries no history).
func TestCLILinkHistory(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.ok("contact", "Bob", "bob/1")
	for i := range 3 {
		bob.ok("send", "alice/1", "old "+strconv.Itoa(i))
	}
	alice.sync()
	alice.commitAll()
	alice.ok("send", "bob/1", "acknowledged out")
	bob.sync()
	bob.commitAll()
	alice.sync()
	// In flight at the cut: one received and undecided, one sent and
	// not acknowledged.
	staged := strings.TrimSpace(bob.ok("send", "alice/1", "undecided at the cut"))
	alice.sync()
	alice.ok("send", "bob/1", "pending at the cut")

	dir2 := filepath.Join(t.TempDir(), "alice_2")
	newOut, addOut := linkWith(t, alice, dir2, relay.url, nil, nil)
	if !strings.Contains(newOut, "address=alice/2") || !strings.Contains(newOut, "messages=5 ") {
		t.Fatalf("parley link printed %q, want messages=5 and address=alice/2", newOut)
	}
	if !strings.Contains(addOut, "history=all messages=5 ") {
		t.Fatalf("device add printed %q, want history=all messages=5 (four old, one pending)", addOut)
	}
	alice2 := &cliProfile{t: t, dir: dir2, addr: "alice/2"}
	in := historyBodies(alice2, "bob/1", "in")
	out := historyBodies(alice2, "bob/1", "out")
	slices.Sort(in)
	slices.Sort(out)
	if !slices.Equal(in, []string{"old 0", "old 1", "old 2"}) || !slices.Equal(out, []string{"acknowledged out", "pending at the cut"}) {
		t.Fatalf("alice/2's history with bob/1: in %v, out %v", in, out)
	}
	var pendingOut map[string]any
	for _, h := range alice2.jsonLines("history", "bob/1") {
		if h["body"] == "pending at the cut" {
			pendingOut = h
		}
	}
	if pendingOut["state"] != "copied" {
		t.Fatalf("the message pending at the cut shows on alice/2 as %v, want a sent copy (state copied)", pendingOut)
	}
	inbox := alice2.jsonLines("inbox")
	if len(inbox) != 1 || inbox[0]["id"] != staged {
		t.Fatalf("alice/2's pending messages %v, want the undecided %s", inbox, staged)
	}
	// Decided on the new device; the first device follows.
	if r := alice2.jsonLines("commit", "bob/1", staged); len(r) != 1 {
		t.Fatalf("commit on alice/2: %v", r)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(alice.jsonLines("inbox")) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("alice/1 still holds %v pending after alice/2 committed it", alice.jsonLines("inbox"))
		}
		alice.sync()
	}
	if got := historyBodies(alice, "bob/1", "in"); strings.Count(strings.Join(got, "\n"), "undecided at the cut") != 1 {
		t.Fatalf("alice/1's history from bob/1 %v, want the decided message once", got)
	}
	// A second import of the same history holds each message once: the
	// history import is over, so a link run again is refused and changes
	// nothing.
	if r := alice2.run("", "link", "--relay", relay.url, "--yes"); r.code == 0 {
		t.Fatalf("link into a linked profile whose history is in: exit 0")
	}
	if got := historyBodies(alice2, "bob/1", "in"); len(got) != 4 {
		t.Fatalf("alice/2's history from bob/1 after a link run again: %v", got)
	}

	dir3 := filepath.Join(t.TempDir(), "alice_3")
	newOut, addOut = linkWith(t, alice, dir3, relay.url, nil, []string{"--history", "none"})
	// The archive still goes, with what a device needs that is not
	// history (here alice's pin of bob/1 and her contact): no message.
	if !strings.Contains(newOut, "messages=0 ") || !strings.Contains(addOut, "history=none messages=0 ") {
		t.Fatalf("with --history none: link printed %q, device add %q", newOut, addOut)
	}
	alice3 := &cliProfile{t: t, dir: dir3, addr: "alice/3"}
	if got := alice3.jsonLines("history", "bob/1"); len(got) != 0 {
		t.Fatalf("alice/3 linked with --history none holds %v", got)
	}
}

// TestCLILinkHistoryKilled: the new device's import of a history of
// PARLEY_E2E_LINK_MESSAGES messages (default 600), five records per
// transaction, killed with SIGKILL part way, then run again and killed
// later PARLEY_E2E_LINK_KILLS times (default 3): after each kill the
// history holds each message at most once, and parley link run again in
// the same directory completes it with each message exactly once.
func TestCLILinkHistoryKilled(t *testing.T) {
	n, kills := min(envInt("PARLEY_E2E_LINK_MESSAGES", 600), 1000), envInt("PARLEY_E2E_LINK_KILLS", 3)
	relay := startRelay(t, "--device-lists", "--device-list-joins")
	holder := seededHolder(t, relay, n)

	dir := filepath.Join(t.TempDir(), "alice_new")
	link := startLink(t, dir, relay.url, "--batch", "5")
	code := link.line(t, "code")
	res := make(chan runResult, 1)
	go func() { res <- holder.run("", "device", "add", code, "--yes") }()
	link.line(t, "check")
	// device add exits once the new device stored its package: the
	// import is under way then.
	if r := <-res; r.code != 0 {
		t.Fatalf("device add: exit %d, stderr %q", r.code, r.stderr)
	}
	p := &cliProfile{t: t, dir: dir, addr: "alice/3"}
	var killed bool
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
wait:
	for deadline := time.After(60 * time.Second); ; {
		select {
		case <-link.done:
			break wait // it finished first
		case <-deadline:
			t.Fatal("parley link neither imported nor ended in 60s")
		case <-tick.C:
			if importedSoFar(dir) {
				// The download is under way or done; the import
				// follows at once.
				time.Sleep(30 * time.Millisecond)
				link.cmd.Process.Signal(syscall.SIGKILL)
				killed = true
				<-link.done
				break wait
			}
		}
	}
	counts := []int{checkOnce(t, p, n)}
	if killed && counts[0] < n {
		// Opened part way, the profile says its history is not whole.
		if r := p.run("", "history", "bob/1"); r.code != 0 || !strings.Contains(r.stderr, "history import stopped part way; run parley link") {
			t.Fatalf("history after a killed import: exit %d, stderr %q; want the warning", r.code, r.stderr)
		}
	}
	// Runs again, each killed a little later, each going on from where
	// the one before stopped.
	args := []string{"link", "--relay", relay.url, "--yes", "--batch", "5"}
	for i := range kills {
		if !killed || counts[len(counts)-1] == n {
			break
		}
		killed = killAfterDelay(t, dir, args, time.Duration(i+1)*250*time.Millisecond)
		counts = append(counts, checkOnce(t, p, n))
	}
	t.Logf("history imported after each kill: %v of %d", counts, n)
	cmd := exec.Command(parleyBin, args...)
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+dir, "PARLEY_PASSPHRASE=e2e passphrase")
	outb, err := cmd.Output()
	if killed && counts[len(counts)-1] < n && (err != nil || !strings.Contains(string(outb), "address=alice/3")) {
		t.Fatalf("parley link run again: %v (stdout %q)", err, outb)
	}
	if got := checkOnce(t, p, n); got != n {
		t.Fatalf("after the kills and the rerun the history holds %d messages, want %d", got, n)
	}
}

// killAfterDelay runs parley args for the profile in dir and kills it
// with SIGKILL after delay; false when it ended first.
func killAfterDelay(t *testing.T, dir string, args []string, delay time.Duration) bool {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+dir, "PARLEY_PASSPHRASE=e2e passphrase")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("parley %s ended before its kill: %v (stderr %q)", args[0], err, stderr.String())
		}
		return false
	case <-time.After(delay):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return true
	}
}

// importedSoFar reports whether the new device's files directory holds
// the downloaded history: the import is under way.
func importedSoFar(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "files", "link-history.archive"))
	return err == nil
}

// seededHolder returns alice/2, holding the account key and a history of
// n messages from bob/1, without n sends: alice/1 is made and backed up,
// her archive is written again with the n messages added (the engine's
// archive writer, as syntheticArchive does) and restored as alice/2,
// which the relay lists on top of alice/1's list.
func seededHolder(t *testing.T, relay *relayProc, n int) *cliProfile {
	t.Helper()
	return seededHolderWith(t, relay, n, func(i int) (string, int64) { return "m" + strconv.Itoa(i), int64(i+1) * 1e9 })
}

// seededHolderWith is seededHolder with the body and time (Unix
// nanoseconds) of message i from msg.
func seededHolderWith(t *testing.T, relay *relayProc, n int, msg func(i int) (body string, at int64)) *cliProfile {
	t.Helper()
	alice := newProfile(t, relay, "alice/1")
	alice.sync() // publishes generation 1
	backup := filepath.Join(t.TempDir(), "alice.parley")
	if r := alice.runWith([]string{backupPass}, "", append([]string{"backup", "--to", backup}, cheapArchive...)...); r.code != 0 {
		t.Fatalf("backup: exit %d, stderr %q", r.code, r.stderr)
	}
	in, err := os.Open(backup)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ar, err := engine.OpenArchive(in, []byte("e2e backup passphrase"), engine.ArchiveKDF{})
	if err != nil {
		t.Fatal(err)
	}
	seeded := filepath.Join(t.TempDir(), "seeded.parley")
	out, err := os.Create(seeded)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := engine.NewArchiveWriter(out, []byte("e2e backup passphrase"), engine.ArchiveKDF{Passes: 1, MemoryKiB: 1024, Threads: 1}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := ar.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(wire.ArchiveAccepted{Address: "bob/1", At: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var id wire.LogicalID
		rand.Read(id[:])
		body, at := msg(i)
		if err := w.Write(wire.ArchiveMessage{Peer: "bob/1", Direction: 1, ID: id, At: at, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	holder := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "alice_holder"), addr: "alice/2"}
	if r := holder.runWith([]string{backupPass}, "", restoreArgs(seeded, relay.url)...); r.code != 0 {
		t.Fatalf("restore of the seeded archive: exit %d, stderr %q", r.code, r.stderr)
	}
	return holder
}

// TestCLILinkHistoryDays: a holder whose history from bob/1 has messages
// ten days old and one day old. Linked with `device add --history 7d`,
// the new device holds the recent ones only (device add counts only
// them); with `device add --history all` and `link --history 7d`, the
// new device narrows what came to the recent ones; with `link --history
// none`, it holds nothing.
func TestCLILinkHistoryDays(t *testing.T) {
	relay := startRelay(t, "--device-lists", "--device-list-joins")
	const n = 4
	now := time.Now()
	holder := seededHolderWith(t, relay, 2*n, func(i int) (string, int64) {
		if i%2 == 0 {
			return "old " + strconv.Itoa(i/2), now.Add(-10 * 24 * time.Hour).UnixNano()
		}
		return "new " + strconv.Itoa(i/2), now.Add(-24 * time.Hour).UnixNano()
	})
	recent := []string{"new 0", "new 1", "new 2", "new 3"}
	for _, c := range []struct {
		name            string
		addArgs, newArg []string
		want            []string
		addOut          string
	}{
		{"device add --history 7d", []string{"--history", "7d"}, nil, recent, "history=7d messages=4 "},
		{"link --history 7d", nil, []string{"--history", "7d"}, recent, "history=all messages=8 "},
		{"link --history none", nil, []string{"--history", "none"}, nil, "history=all messages=8 "},
	} {
		dir := filepath.Join(t.TempDir(), "alice_new")
		newOut, addOut := linkWith(t, holder, dir, relay.url, c.newArg, c.addArgs)
		if !strings.Contains(addOut, c.addOut) {
			t.Errorf("%s: device add printed %q, want %s", c.name, addOut, c.addOut)
		}
		addr := ""
		for _, l := range strings.Split(newOut, "\n") {
			if a, ok := strings.CutPrefix(l, "address="); ok {
				addr = a
			}
		}
		p := &cliProfile{t: t, dir: dir, addr: addr}
		got := historyBodies(p, "bob/1", "in")
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %s's history from bob/1 %v, want %v", c.name, addr, got, c.want)
		}
	}
}
