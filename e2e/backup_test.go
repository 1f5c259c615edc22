package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// Backup and restore (issue 34) as a person runs them: parley backup, then
// parley restore into a new directory, which becomes a new device of the
// same account holding the same history.

const backupPass = "PARLEY_BACKUP_PASSPHRASE=e2e backup passphrase"

// cheapArchive are backup's flags for a fast archive key.
var cheapArchive = []string{"--kdf-memory", "1", "--kdf-passes", "1"}

func restoreArgs(file, relay string) []string {
	return append([]string{"restore", file, "--relay", relay}, cheapKDF...)
}

// TestCLIBackupRestore: alice/1 backs up; the restore makes alice/2 with
// alice/1's history with bob, her contact name, her group and bob's pin,
// listed in its device list; a wrong
// passphrase, a cut or altered file are refused with one line and nothing
// written; restoring again changes nothing; alice/2 talks to bob.
func TestCLIBackupRestore(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.ok("contact", "Bob", "bob/1")
	// alice writes first, so that the two sessions do not collide.
	for i := range 3 {
		alice.ok("send", "bob/1", fmt.Sprintf("a%d", i))
	}
	for round := 0; round < 10 && len(historyBodies(bob, "alice/1", "in")) < 3; round++ {
		bob.sync()
		bob.commitAll()
	}
	for i := range 3 {
		bob.ok("send", "alice/1", fmt.Sprintf("b%d", i))
	}
	for round := 0; round < 10 && len(historyBodies(alice, "bob/1", "in")) < 3; round++ {
		alice.sync()
		alice.commitAll()
	}
	alice.ok("group", "create", "crew", "bob/1")
	alice.sync()

	file := filepath.Join(t.TempDir(), "alice.parley")
	r := alice.runWith([]string{backupPass}, "", append([]string{"backup", "--to", file}, cheapArchive...)...)
	if r.code != 0 {
		t.Fatalf("backup: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "messages=6 groups=1 bytes=") {
		t.Fatalf("backup printed %q, want messages=6 groups=1 bytes=...", r.stdout)
	}
	if fi, err := os.Stat(file); err != nil || r.stdout != fmt.Sprintf("messages=6 groups=1 bytes=%d\n", fi.Size()) {
		t.Fatalf("backup printed %q for a file of %v bytes (%v)", r.stdout, fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*partial*")); len(left) != 0 {
		t.Fatalf("backup left %v behind", left)
	}

	// Refusals: one line, nothing written.
	dir2 := filepath.Join(t.TempDir(), "alice_2")
	alice2 := &cliProfile{t: t, dir: dir2, addr: "alice/2"}
	raw, _ := os.ReadFile(file)
	cut := filepath.Join(t.TempDir(), "cut.parley")
	os.WriteFile(cut, raw[:len(raw)-10], 0o600)
	flipped := filepath.Join(t.TempDir(), "flipped.parley")
	alt := append([]byte(nil), raw...)
	alt[len(alt)/2] ^= 1
	os.WriteFile(flipped, alt, 0o600)
	newer := filepath.Join(t.TempDir(), "newer.parley")
	nv := append([]byte(nil), raw...)
	nv[8] = 2
	os.WriteFile(newer, nv, 0o600)
	for _, c := range []struct {
		name, file, env, want string
	}{
		{"wrong passphrase", file, "PARLEY_BACKUP_PASSPHRASE=not it", "wrong backup passphrase"},
		{"truncated", cut, backupPass, "truncated"},
		{"altered", flipped, backupPass, "damaged or altered"},
		{"newer", newer, backupPass, "newer format"},
	} {
		r := alice2.runWith([]string{c.env}, "", restoreArgs(c.file, relay.url)...)
		if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line saying %q", c.name, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(dir2); err == nil {
			t.Fatalf("%s: the restore wrote %s", c.name, dir2)
		}
	}

	r = alice2.runWith([]string{backupPass}, "", restoreArgs(file, relay.url)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "messages=6 groups=1 bytes=") {
		t.Fatalf("restore: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	devs := alice2.jsonLines("devices")
	if len(devs) != 2 || devs[1]["device"] != "alice/2" || devs[1]["this"] != true {
		t.Fatalf("the restored device lists %v, want alice/1 and alice/2 (this one)", devs)
	}
	for _, dir := range []string{"in", "out"} {
		want, got := historyBodies(alice, "bob/1", dir), historyBodies(alice2, "bob/1", dir)
		if strings.Join(got, ",") != strings.Join(want, ",") || len(got) != 3 {
			t.Errorf("history %s: restored %v, alice/1 %v", dir, got, want)
		}
	}
	// The restored entries say where they came from; alice/1's do not.
	for _, r := range alice2.jsonLines("history", "bob/1") {
		if r["imported"] != "restore" {
			t.Errorf("restored history row %v, want imported=restore", r)
		}
	}
	for _, r := range alice.jsonLines("history", "bob/1") {
		if _, ok := r["imported"]; ok {
			t.Errorf("alice/1's own history row %v says imported", r)
		}
	}
	if out := alice2.ok("contact"); !strings.Contains(out, "Bob") {
		t.Errorf("the restored contacts %q lack Bob", out)
	}
	if out := alice2.ok("group", "list"); !strings.Contains(out, "crew") {
		t.Errorf("the restored groups %q lack crew", out)
	}
	// bob's pin travelled: the restored device has a safety number with
	// him before any message (from the two devices' identities until
	// alice/2 holds bob's device list; docs/reliability.md, "Backup and
	// restore").
	if out := alice2.ok("safety-number", "bob/1"); !strings.Contains(out, "safety_number=") {
		t.Errorf("safety number with bob on the restored device: %q", out)
	}
	// Again: nothing changes, each message once.
	r = alice2.runWith([]string{backupPass}, "", restoreArgs(file, relay.url)...)
	if r.code != 0 || len(historyBodies(alice2, "bob/1", "in")) != 3 {
		t.Fatalf("restore again: exit %d, stderr %q, history %v", r.code, r.stderr, historyBodies(alice2, "bob/1", "in"))
	}
	// The restored device holds the account key: it backs up in turn.
	r = alice2.runWith([]string{backupPass}, "", append([]string{"backup", "--to", filepath.Join(t.TempDir(), "again.parley")}, cheapArchive...)...)
	if r.code != 0 {
		t.Fatalf("backup from the restored device: exit %d, stderr %q", r.code, r.stderr)
	}
	// It talks to bob as alice/2.
	bob.ok("accept", "alice/2")
	alice2.ok("send", "bob/1", "from the restored device")
	bob.sync()
	bob.commitAll()
	if got := historyBodies(bob, "alice/2", "in"); len(got) != 1 || got[0] != "from the restored device" {
		t.Errorf("bob got %v from alice/2", got)
	}
	// A device without the account key does not back up.
	r = bob.runWith([]string{backupPass}, "", "backup")
	if r.code != 2 {
		t.Errorf("backup without --to: exit %d, want 2", r.code)
	}
}

// syntheticArchive writes an archive of an account alice whose device 1
// exchanged n messages with bob/1, as a backup would: the account key
// signs a real list.
func syntheticArchive(t *testing.T, path string, n int) {
	t.Helper()
	key, err := engine.NewAccountKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := engine.FirstDeviceList(key, id, engine.MustParseAddress("alice/1"), time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := engine.NewArchiveWriter(f, []byte("e2e backup passphrase"), engine.ArchiveKDF{Passes: 1, MemoryKiB: 1024, Threads: 1}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := key.MarshalBinary()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Write(wire.ArchiveAccount{Key: [32]byte(seed), List: list, Device: 1}))
	must(w.Write(wire.ArchiveAccepted{Address: "bob/1", At: 1}))
	for i := range n {
		var mid wire.LogicalID
		rand.Read(mid[:])
		must(w.Write(wire.ArchiveMessage{Peer: "bob/1", Direction: 1, ID: mid, At: int64(i+1) * 1e9, Body: []byte("m" + strconv.Itoa(i))}))
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// envInt is a case count from the environment, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// checkOnce wants p's history from bob/1 to hold m0..m(n-1) each once, or
// nothing when partial is allowed and the restore had not begun; it
// returns how many it holds.
func checkOnce(t *testing.T, p *cliProfile, n int) int {
	t.Helper()
	seen := map[string]int{}
	got := historyBodies(p, "bob/1", "in")
	for _, b := range got {
		if seen[b]++; seen[b] > 1 {
			t.Fatalf("%s holds %s twice", p.dir, b)
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(b, "m")); err != nil || i >= n {
			t.Fatalf("%s holds %q, not a message of the archive", p.dir, b)
		}
	}
	return len(got)
}

// TestCLIRestoreKilled: restores of an archive of PARLEY_E2E_BACKUP_MESSAGES
// messages (default 1000, at most the 1000 a history page shows), stored five per transaction, killed with SIGKILL at PARLEY_E2E_BACKUP_KILLS
// moments (default 4) each leave no profile or a profile holding each
// message at most once; the run after them completes with every message
// exactly once. Then backups of that profile killed the same way leave no
// file at --to or a whole archive, never a part.
func TestCLIRestoreKilled(t *testing.T) {
	n, kills := min(envInt("PARLEY_E2E_BACKUP_MESSAGES", 1000), 1000), envInt("PARLEY_E2E_BACKUP_KILLS", 4)
	relay := startRelay(t)
	file := filepath.Join(t.TempDir(), "synthetic.parley")
	syntheticArchive(t, file, n)
	dir := filepath.Join(t.TempDir(), "alice_r")
	p := &cliProfile{t: t, dir: dir, addr: "alice/2"}

	killAfter := func(args []string, delay time.Duration) (killed bool) {
		cmd := exec.Command(parleyBin, args...)
		cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+dir, "PARLEY_PASSPHRASE=e2e passphrase", backupPass)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("parley %s ended before its kill: %v", args[0], err)
			}
			return false
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return true
		}
	}
	args := append(restoreArgs(file, relay.url), "--batch", "5")
	// A clean restore elsewhere times the window the kills land in.
	scratch := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "scratch"), addr: "alice/x"}
	start := time.Now()
	if r := scratch.runWith([]string{backupPass}, "", args...); r.code != 0 {
		t.Fatalf("a clean restore: exit %d, stderr %q", r.code, r.stderr)
	}
	window := time.Since(start)
	partial := 0
	for i := range kills {
		delay := window * time.Duration(i+1) / time.Duration(kills+1)
		if !killAfter(args, delay) {
			break // it finished first: later kills would too
		}
		if r := p.run("", "history", "bob/1", "--json"); r.code != 0 {
			if !strings.Contains(r.stderr, "no profile") {
				t.Fatalf("history after a killed restore: exit %d, stderr %q", r.code, r.stderr)
			}
			continue // killed before its profile was whole: none of it
		}
		if got := checkOnce(t, p, n); got > 0 && got < n {
			partial++
		}
	}
	t.Logf("a restore takes %v; %d of %d kills left a partial import", window, partial, kills)
	r := p.runWith([]string{backupPass}, "", args...)
	if r.code != 0 {
		t.Fatalf("the restore after the kills: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := checkOnce(t, p, n); got != n {
		t.Fatalf("after the kills the restored history holds %d messages, want %d", got, n)
	}

	to := filepath.Join(t.TempDir(), "backup.parley")
	start = time.Now()
	if r := scratch.runWith([]string{backupPass}, "", append([]string{"backup", "--to", to + ".timed"}, cheapArchive...)...); r.code != 0 {
		t.Fatalf("a clean backup: exit %d, stderr %q", r.code, r.stderr)
	}
	window = time.Since(start)
	for i := range kills {
		delay := window * time.Duration(i+1) / time.Duration(kills+1)
		killAfter(append([]string{"backup", "--to", to}, cheapArchive...), delay)
		if _, err := os.Stat(to); err != nil {
			continue // no file: the backup never finished
		}
		chk, err := checkArchivePath(to)
		if err != nil || chk.End.Messages != uint64(n) {
			t.Fatalf("after a killed backup %s is %+v, %v; want a whole archive of %d messages", to, chk.End, err, n)
		}
	}
	r = p.runWith([]string{backupPass}, "", append([]string{"backup", "--to", to}, cheapArchive...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, fmt.Sprintf("messages=%d groups=0 ", n)) {
		t.Fatalf("the backup after the kills: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if chk, err := checkArchivePath(to); err != nil || chk.End.Messages != uint64(n) {
		t.Fatalf("the backup: %+v, %v", chk.End, err)
	}
}

func checkArchivePath(path string) (engine.ArchiveCheck, error) {
	f, err := os.Open(path)
	if err != nil {
		return engine.ArchiveCheck{}, err
	}
	defer f.Close()
	return engine.CheckArchive(f, []byte("e2e backup passphrase"), engine.ArchiveKDF{})
}

// TestCLIRestoreDeviceLists: on a relay that keeps device lists and lets
// new devices join, the restore publishes the generation that adds it
// (compare-and-set), and the restored device then reaches the relay as a
// listed device and talks; alice/1 adopts the new list at its next sync.
func TestCLIRestoreDeviceLists(t *testing.T) {
	relay := startRelay(t, "--device-lists", "--device-list-joins")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync() // publishes generation 1
	alice.ok("send", "bob/1", "before the backup")
	file := filepath.Join(t.TempDir(), "alice.parley")
	if r := alice.runWith([]string{backupPass}, "", append([]string{"backup", "--to", file}, cheapArchive...)...); r.code != 0 {
		t.Fatalf("backup: exit %d, stderr %q", r.code, r.stderr)
	}
	alice2 := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "alice_2"), addr: "alice/2"}
	if r := alice2.runWith([]string{backupPass}, "", restoreArgs(file, relay.url)...); r.code != 0 {
		t.Fatalf("restore: exit %d, stderr %q", r.code, r.stderr)
	}
	devs := alice2.jsonLines("devices")
	if len(devs) != 2 || devs[1]["device"] != "alice/2" {
		t.Fatalf("the restored device lists %v, want alice/1 and alice/2", devs)
	}
	bob.ok("accept", "alice/2")
	alice2.ok("send", "bob/1", "after the restore")
	bob.sync()
	bob.commitAll()
	// bob holds alice's list (fetched when her message came), so her two
	// devices are one conversation: each message in it once.
	if got := historyBodies(bob, "alice/2", "in"); len(got) != 2 || got[0] == got[1] {
		t.Fatalf("bob's conversation with alice holds %v, want each of her two messages once", got)
	}
	alice.sync()
	if n := len(alice.jsonLines("devices")); n != 2 {
		t.Errorf("alice/1 lists %d devices after its sync, want 2 (the relay's list adopted)", n)
	}
}

// TestCLIRestoreAfterLink: a device linked after the backup moved the
// relay's list on; the restore's publish of the generation after the
// archive's is refused stale (compare-and-set), and the restore joins the
// relay's list instead, as the next number.
func TestCLIRestoreAfterLink(t *testing.T) {
	relay := startRelay(t, "--device-lists", "--device-list-joins")
	alice := newProfile(t, relay, "alice/1")
	alice.sync()
	file := filepath.Join(t.TempDir(), "alice.parley")
	if r := alice.runWith([]string{backupPass}, "", append([]string{"backup", "--to", file}, cheapArchive...)...); r.code != 0 {
		t.Fatalf("backup: exit %d, stderr %q", r.code, r.stderr)
	}
	dir2 := filepath.Join(t.TempDir(), "alice_2")
	link := startLink(t, dir2, relay.url)
	code := link.line(t, "code")
	res := make(chan runResult, 1)
	go func() { res <- alice.run("", "device", "add", code, "--yes") }()
	if addr := link.line(t, "address"); addr != "alice/2" {
		t.Fatalf("linked %s, want alice/2", addr)
	}
	if r := <-res; r.code != 0 {
		t.Fatalf("device add: exit %d, stderr %q", r.code, r.stderr)
	}
	if err := <-link.done; err != nil {
		t.Fatalf("parley link: %v (stderr %q)", err, link.stderr.String())
	}
	// A linked device does not hold the account key: it does not back up.
	alice2 := &cliProfile{t: t, dir: dir2, addr: "alice/2"}
	r := alice2.runWith([]string{backupPass}, "", append([]string{"backup", "--to", filepath.Join(t.TempDir(), "no.parley")}, cheapArchive...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "does not hold the account key") {
		t.Fatalf("backup on a linked device: exit %d, stderr %q", r.code, r.stderr)
	}
	alice3 := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "alice_3"), addr: "alice/3"}
	if r := alice3.runWith([]string{backupPass}, "", restoreArgs(file, relay.url)...); r.code != 0 {
		t.Fatalf("restore: exit %d, stderr %q", r.code, r.stderr)
	}
	devs := alice3.jsonLines("devices")
	if len(devs) != 3 || devs[2]["device"] != "alice/3" || devs[2]["this"] != true {
		t.Fatalf("the restored device lists %v, want alice/1, alice/2 and alice/3 (this one)", devs)
	}
}
