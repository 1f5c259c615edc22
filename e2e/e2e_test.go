package e2e

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// parleyBin is the parley binary TestMain builds from the module's main
// package, once for every test of the package.
var parleyBin string

// stampedVersion is the version TestMain stamps into parleyBin with the
// Makefile's own -ldflags (make -n build), so that TestCLIVersion checks
// that the Makefile's stamp reaches the binary; empty when that failed,
// and stampErr says why.
var (
	stampedVersion string
	stampErr       error
)

// e2eVersion is the version TestMain asks the Makefile to stamp.
const e2eVersion = "v0.0.0-e2e"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "parley-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parleyBin = filepath.Join(dir, "parley")
	args := []string{"build", "-o", parleyBin}
	if ldflags, err := makefileLDFlags(e2eVersion); err == nil {
		args = append(args, "-ldflags", ldflags)
		stampedVersion = e2eVersion
	} else {
		stampErr = err
	}
	build := exec.Command("go", append(args, "github.com/parley-chat/parley")...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build parley: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// relayProc is a `parley relay` child process.
type relayProc struct {
	cmd  *exec.Cmd
	url  string
	home string // XDG_DATA_HOME: where a relay without --data keeps its ID

	mu       sync.Mutex
	profiles []*cliProfile // made by newProfile: they accept each other
}

func startRelay(t *testing.T, args ...string) *relayProc {
	t.Helper()
	return startRelayAt(t, "127.0.0.1:0", t.TempDir(), args...)
}

// restartRelay starts a relay on the address r listened on, with r's ID, so
// that profiles made for r reach it and trust it.
func restartRelay(t *testing.T, r *relayProc, args ...string) *relayProc {
	t.Helper()
	return startRelayAt(t, strings.TrimPrefix(r.url, "ws://"), r.home, args...)
}

func startRelayAt(t *testing.T, listen, home string, args ...string) *relayProc {
	t.Helper()
	cmd := exec.Command(parleyBin, append([]string{"relay", "--listen", listen}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on ws://") && !strings.HasPrefix(line, "listening on wss://") {
		cmd.Process.Kill()
		t.Fatalf("relay's first line %q (%v), want \"listening on ws://HOST:PORT\" (or wss://)", line, err)
	}
	r := &relayProc{cmd: cmd, url: strings.TrimSpace(strings.TrimPrefix(line, "listening on ")), home: home}
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *relayProc) stop() {
	if r.cmd.ProcessState == nil {
		r.cmd.Process.Signal(syscall.SIGTERM)
		r.cmd.Wait()
	}
}

func (r *relayProc) kill() {
	r.cmd.Process.Kill()
	r.cmd.Wait()
}

// cliProfile is one CLI profile.
type cliProfile struct {
	t    *testing.T
	dir  string
	addr string
}

type runResult struct {
	stdout, stderr string
	code           int
}

func (p *cliProfile) run(stdin string, args ...string) runResult {
	p.t.Helper()
	return p.runWith(nil, stdin, args...)
}

// runWith runs a command of p with more environment (which wins over the
// profile's own).
func (p *cliProfile) runWith(env []string, stdin string, args ...string) runResult {
	p.t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Env = append(append(os.Environ(), "PARLEY_PROFILE="+p.dir, "PARLEY_PASSPHRASE=e2e passphrase"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return runResult{out.String(), errb.String(), code}
}

// ok runs a command that must succeed.
func (p *cliProfile) ok(args ...string) string {
	p.t.Helper()
	r := p.run("", args...)
	if r.code != 0 {
		p.t.Fatalf("parley %s (%s): exit %d, stderr %q", strings.Join(args, " "), p.addr, r.code, r.stderr)
	}
	return r.stdout
}

// jsonLines runs a command with --json and decodes its lines.
func (p *cliProfile) jsonLines(args ...string) []map[string]any {
	p.t.Helper()
	out := p.ok(append(args, "--json")...)
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			p.t.Fatalf("parley %s: line %q is not JSON: %v", args[0], line, err)
		}
		recs = append(recs, m)
	}
	return recs
}

// newProfile makes a profile at relay that accepts, and is accepted by,
// every profile newProfile made there before (message requests are for
// strangers; newStranger makes a profile that accepts nobody).
func newProfile(t *testing.T, relay *relayProc, addr string) *cliProfile {
	t.Helper()
	p := newStranger(t, relay, addr)
	relay.mu.Lock()
	defer relay.mu.Unlock()
	acquaint(p, relay.profiles...)
	relay.profiles = append(relay.profiles, p)
	return p
}

// cheapKDF are init's flags for a profile that opens in a millisecond
// instead of a few hundred: the suite runs thousands of commands, each of
// which derives the profile's key from its passphrase. Profiles made by
// init without them (TestCLIFlow's bob, the TLS and error tests) keep
// the default cost.
var cheapKDF = []string{"--kdf-memory", "1", "--kdf-passes", "1"}

// newStranger makes a profile at relay as parley init does, in request mode
// and accepting nobody.
func newStranger(t *testing.T, relay *relayProc, addr string) *cliProfile {
	t.Helper()
	p := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), strings.ReplaceAll(addr, "/", "_")), addr: addr}
	p.ok(append([]string{"init", "--address", addr, "--relay", relay.url}, cheapKDF...)...)
	return p
}

// acquaint makes p and each of others accept each other.
func acquaint(p *cliProfile, others ...*cliProfile) {
	p.t.Helper()
	if len(others) == 0 {
		return
	}
	args := []string{"accept"}
	for _, o := range others {
		args = append(args, o.addr)
		o.ok("accept", p.addr)
	}
	p.ok(args...)
}

func (p *cliProfile) sync() []map[string]any { return p.jsonLines("sync", "--wait", "300ms") }

func (p *cliProfile) commitAll() {
	for _, m := range p.jsonLines("inbox") {
		r := p.jsonLines("commit", m["sender"].(string), m["id"].(string))
		if len(r) != 1 {
			p.t.Fatalf("commit printed %v", r)
		}
	}
}

func kinds(recs []map[string]any) map[string]int {
	k := map[string]int{}
	for _, r := range recs {
		k[r["kind"].(string)]++
		if e, ok := r["error"].(string); ok {
			k[e]++
		}
	}
	return k
}

func historyBodies(p *cliProfile, peer, direction string) []string {
	var out []string
	for _, h := range p.jsonLines("history", peer) {
		if h["direction"] == direction {
			out = append(out, h["body"].(string))
		}
	}
	return out
}

func TestCLIRoundTrip(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	id := strings.TrimSpace(alice.ok("send", "bob/1", "hello bob"))
	if len(id) != 32 {
		t.Fatalf("send printed %q, want a 32-digit logical ID", id)
	}
	recs := bob.sync()
	if len(recs) != 1 || recs[0]["kind"] != "delivery" || recs[0]["id"] != id || recs[0]["body"] != "hello bob" || recs[0]["sender"] != "alice/1" {
		t.Fatalf("bob's sync: %v", recs)
	}
	if out := alice.jsonLines("outbox"); len(out) != 1 || out[0]["id"] != id {
		t.Fatalf("alice's outbox before the ACK: %v", out)
	}
	if r := bob.jsonLines("commit", "alice/1", id); len(r) != 1 || r[0]["ack_sent"] != true {
		t.Fatalf("commit: %v", r)
	}
	recs = alice.sync()
	if len(recs) != 1 || recs[0]["kind"] != "acknowledgement" || recs[0]["cleared"] != true {
		t.Fatalf("alice's sync: %v", recs)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("outbox after the ACK: %v", out)
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != "hello bob" {
		t.Fatalf("bob's history: %q", got)
	}
	// The body may come from stdin, and the safety numbers agree.
	bob.run("from stdin\n", "send", "alice/1", "-")
	if recs := alice.sync(); kinds(recs)["delivery"] != 1 || recs[0]["body"] != "from stdin\n" {
		t.Fatalf("stdin body: %v", recs)
	}
	sa := alice.jsonLines("safety-number", "bob/1")[0]["safety_number"]
	sb := bob.jsonLines("safety-number", "alice/1")[0]["safety_number"]
	if sa != sb || len(strings.ReplaceAll(sa.(string), " ", "")) != 60 {
		t.Fatalf("safety numbers %v / %v", sa, sb)
	}
}

func TestCLICollisionConverges(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	aliceID := alice.jsonLines("send", "bob/1", "from alice")[0]["id"].(string)
	bobID := bob.jsonLines("send", "alice/1", "from bob")[0]["id"].(string)
	var collisions int
	for round := 0; round < 6; round++ {
		collisions += kinds(alice.sync())["session_collision"] + kinds(bob.sync())["session_collision"]
		alice.commitAll()
		bob.commitAll()
		alice.sync()
		bob.sync()
		if len(alice.jsonLines("outbox"))+len(bob.jsonLines("outbox")) == 0 {
			break
		}
		alice.run("", "retry", "bob/1")
		bob.run("", "retry", "alice/1")
	}
	if collisions != 1 {
		t.Errorf("saw %d session collisions, want exactly 1", collisions)
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != "from alice" {
		t.Fatalf("bob's history %q", got)
	}
	if got := historyBodies(alice, "bob/1", "in"); len(got) != 1 || got[0] != "from bob" {
		t.Fatalf("alice's history %q", got)
	}
	if n := len(alice.jsonLines("outbox")) + len(bob.jsonLines("outbox")); n != 0 {
		t.Fatalf("%d messages still pending", n)
	}

	// parley trace: the message that lost the collision went out on two
	// initiations, the first as a PreKey message; both are acknowledged,
	// and the receiving side knows each as committed.
	lost := 0
	for _, c := range []struct {
		from, to *cliProfile
		id       string
	}{{alice, bob, aliceID}, {bob, alice, bobID}} {
		tr := c.from.jsonLines("trace", c.to.addr, c.id)
		if len(tr) != 1 {
			t.Fatalf("trace printed %d lines", len(tr))
		}
		r := tr[0]
		if r["peer"] != c.to.addr || r["id"] != c.id || r["direction"] != "out" || r["state"] != "acknowledged" {
			t.Fatalf("trace of %s's message: %v", c.from.addr, r)
		}
		attempts, _ := r["attempts"].([]any)
		inits := map[string]bool{}
		for i, a := range attempts {
			m := a.(map[string]any)
			if m["n"].(float64) != float64(i+1) || len(m["envelope"].(string)) != 32 || len(m["initiation"].(string)) != 64 {
				t.Fatalf("attempt %d: %v", i, m)
			}
			inits[m["initiation"].(string)] = true
		}
		if len(attempts) == 0 || attempts[0].(map[string]any)["type"] != "prekey" {
			t.Fatalf("the first attempt of %s's message is not a PreKey message: %v", c.from.addr, attempts)
		}
		if len(inits) >= 2 {
			lost++
		}
		in := c.to.jsonLines("trace", c.from.addr, c.id)[0]
		if in["direction"] != "in" || in["state"] != "committed" || in["finalized_at"] == nil {
			t.Fatalf("trace at the receiver: %v", in)
		}
	}
	if lost != 1 {
		t.Fatalf("%d messages went out on two initiations, want exactly the one that lost the collision", lost)
	}
	if out := alice.ok("trace", "bob/1", aliceID); !strings.Contains(out, "envelope") || !strings.Contains(out, "acknowledged") {
		t.Fatalf("trace as text: %q", out)
	}
}

// A relay that accepts and then loses envelopes (--fault-drop 1), restarted
// on the same data without faults: the lost envelope comes back through a
// retry, and so does a lost ACK.
func TestCLILostEnvelopeAndLostAck(t *testing.T) {
	data := t.TempDir()
	relay := startRelay(t, "--data", data)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	alice.ok("send", "bob/1", "first")
	bob.sync()
	bob.commitAll()
	alice.sync()
	relay.stop()

	lossy := restartRelay(t, relay, "--data", data, "--fault-drop", "1")
	id := strings.TrimSpace(alice.ok("send", "bob/1", "lost envelope"))
	if recs := bob.sync(); len(recs) != 0 {
		t.Fatalf("the dropped envelope arrived: %v", recs)
	}
	lossy.stop()

	relay = restartRelay(t, lossy, "--data", data)
	if ids := strings.Fields(alice.ok("retry", "bob/1")); len(ids) != 1 || ids[0] != id {
		t.Fatalf("retry handed off %v, want %s", ids, id)
	}
	if k := kinds(bob.sync()); k["delivery"] != 1 {
		t.Fatalf("after the retry bob got %v", k)
	}
	relay.stop()

	// The ACK of the commit is lost.
	lossy = restartRelay(t, relay, "--data", data, "--fault-drop", "1")
	bob.commitAll()
	lossy.stop()
	restartRelay(t, lossy, "--data", data)
	if recs := alice.sync(); len(recs) != 0 {
		t.Fatalf("the lost ACK arrived: %v", recs)
	}
	alice.ok("retry", "bob/1")
	if k := kinds(bob.sync()); k["already_committed"] != 1 {
		t.Fatalf("the retry after the commit: %v", k)
	}
	if k := kinds(alice.sync()); k["acknowledgement"] != 1 {
		t.Fatalf("the second ACK: %v", k)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("still pending: %v", out)
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 2 {
		t.Fatalf("bob's history %q, want each message once", got)
	}
}

func TestCLIErrorsAndExitCodes(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	newProfile(t, relay, "bob/1")

	// A second process that writes to an open profile: exit 4, one line
	// naming it (the read-only commands read beside it: TestCLIReadersBesideHolder).
	hold := exec.Command(parleyBin, "sync", "--wait", "20s")
	hold.Env = append(os.Environ(), "PARLEY_PROFILE="+alice.dir, "PARLEY_PASSPHRASE=e2e passphrase")
	var holdErr bytes.Buffer
	hold.Stderr = &holdErr
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // let it take the lock before probing
	deadline := time.Now().Add(15 * time.Second)
	var r runResult
	for time.Now().Before(deadline) {
		if r = alice.run("", "abandon", "alice/1", "00000000"); r.code == 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	hold.Process.Signal(syscall.SIGTERM)
	hold.Wait()
	if holdErr.Len() > 0 {
		t.Logf("holding process: %s", holdErr.String())
	}
	if r.code != 4 || !strings.Contains(r.stderr, "open in another process") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("second process: exit %d, stderr %q; want 4 and one line", r.code, r.stderr)
	}

	// Wrong passphrase.
	cmd := exec.Command(parleyBin, "outbox")
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+alice.dir, "PARLEY_PASSPHRASE=wrong")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "wrong passphrase") {
		t.Fatalf("wrong passphrase: %v %q", err, out)
	}

	// Refusals store nothing, and say why.
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"send", "Bob/1", "x"}, `"Bob/1" is not a device address: the user must be lowercase (bob)`},
		{[]string{"send", "bob", "x"}, "parley send: no group bob here"},
		{[]string{"send", "bob/0", "x"}, `"bob/0" is not a device address: device numbers start at 1`},
		{[]string{"send", "bo b/1", "x"}, `may not hold spaces`},
		{[]string{"send", "carol/1", "x"}, "parley send: carol/1 is not registered at the relay\n"},
	} {
		if r := alice.run("", tc.args...); r.code != 1 || !strings.Contains(r.stderr, tc.why) {
			t.Fatalf("%v: exit %d, %q; want 1 and %q", tc.args, r.code, r.stderr, tc.why)
		}
	}
	// init of an address another identity registered fails at once and
	// keeps nothing.
	taken := filepath.Join(t.TempDir(), "taken")
	cmd = exec.Command(parleyBin, "init", "--address", "bob/1", "--relay", relay.url)
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+taken, "PARLEY_PASSPHRASE=e2e passphrase")
	if out, err := cmd.CombinedOutput(); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "bob/1 is registered at the relay to another identity") {
		t.Fatalf("init of a taken address: %v %q", err, out)
	}
	if _, err := os.Stat(taken); !os.IsNotExist(err) {
		t.Fatalf("init of a taken address left %s: %v", taken, err)
	}
	if r := alice.run("", "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "parley ") {
		t.Fatalf("--version: exit %d %q", r.code, r.stdout)
	}
	big := strings.Repeat("x", 196609)
	if r := alice.run(big, "send", "bob/1", "-"); r.code != 1 || !strings.Contains(r.stderr, "too large") {
		t.Fatalf("oversized body: exit %d, %q", r.code, r.stderr)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Fatalf("a refused send stored %v", out)
	}
	// Usage errors exit 2.
	if r := alice.run("", "send", "bob/1"); r.code != 2 {
		t.Fatalf("missing operand: exit %d", r.code)
	}
	if r := alice.run("", "frobnicate"); r.code != 2 {
		t.Fatalf("unknown command: exit %d", r.code)
	}
	// init never overwrites.
	if r := alice.run("", "init", "--address", "alice/1", "--relay", relay.url); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("init over a profile: exit %d %q", r.code, r.stderr)
	}
	// With a session but no relay, a send is stored and stays pending: exit 3.
	// Without a session the bundle cannot be fetched: stored too, exit 3
	// (TestCLIFirstSendWithoutRelay follows it until it is delivered).
	alice.ok("send", "bob/1", "while the relay is up")
	relay.stop()
	r = alice.run("", "send", "bob/1", "nobody listens")
	if r.code != 3 || !strings.Contains(r.stderr, "stays pending") {
		t.Fatalf("send without a relay: exit %d %q, want 3", r.code, r.stderr)
	}
	if out := alice.jsonLines("outbox"); len(out) != 2 {
		t.Fatalf("outbox holds %d messages, want both pending", len(out))
	}
	if r := alice.run("", "send", "carol/1", "no bundle"); r.code != 3 || !strings.Contains(r.stderr, "stays pending") {
		t.Fatalf("send to a new peer without a relay: exit %d %q, want 3", r.code, r.stderr)
	}
	if out := alice.jsonLines("outbox"); len(out) != 3 {
		t.Fatalf("outbox holds %d messages, want the one without a session pending too", len(out))
	}
}

// A relay with --data killed with SIGKILL keeps every accepted envelope, in
// order.
func TestCLIRelayKillKeepsEnvelopes(t *testing.T) {
	data := t.TempDir()
	relay := startRelay(t, "--data", data)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	var sent []string
	for i := 0; i < 5; i++ {
		body := fmt.Sprintf("message %d", i)
		alice.ok("send", "bob/1", body)
		sent = append(sent, body)
	}
	relay.kill()
	restartRelay(t, relay, "--data", data)
	var got []string
	for _, r := range bob.sync() {
		if r["kind"] == "delivery" {
			got = append(got, r["body"].(string))
		}
	}
	if strings.Join(got, ",") != strings.Join(sent, ",") {
		t.Fatalf("after SIGKILL bob got %q, want %q in order", got, sent)
	}
}

// TestCLIInitOffline: a profile made while the relay is unreachable publishes
// its bundle with its first command that reaches the relay.
func TestCLIInitOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	offline := &relayProc{url: "ws://" + addr}
	alice, bob := newProfile(t, offline, "alice/1"), newProfile(t, offline, "bob/1")
	startRelayAt(t, addr, t.TempDir())
	alice.sync() // alice's bundle goes out
	if r := bob.run("", "send", "alice/1", "published late"); r.code != 0 {
		t.Fatalf("send after an offline init: exit %d %q", r.code, r.stderr)
	}
	if recs := alice.sync(); len(recs) != 1 || recs[0]["body"] != "published late" {
		t.Fatalf("alice got %v", recs)
	}
}

// TestCLIRelayPinned: a profile pins the ID of the first relay it
// authenticates to; a restarted relay without --data keeps its ID (in its ID
// file) and is still trusted; another relay at the same address is refused
// with one line that says how to accept it, and accepted on purpose with
// relay-settings --accept-new-id.
func TestCLIRelayPinned(t *testing.T) {
	relay := startRelay(t)
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	pinned := alice.jsonLines("relay-settings")
	if len(pinned) != 1 || len(pinned[0]["relay_id"].(string)) != 64 {
		t.Fatalf("relay-settings after init: %v, want a pinned 64-digit relay ID", pinned)
	}
	relay.stop()
	relay = restartRelay(t, relay)
	alice.ok("sync")
	relay.stop()
	other := startRelayAt(t, strings.TrimPrefix(relay.url, "ws://"), t.TempDir())
	r := alice.run("", "sync")
	if r.code != 1 || !strings.Contains(r.stderr, "not the pinned") || !strings.Contains(r.stderr, "relay-settings --accept-new-id") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("sync with another relay: exit %d %q, want exit 1 and one line naming the pin and the fix", r.code, r.stderr)
	}
	accepted := alice.jsonLines("relay-settings", "--accept-new-id")
	if len(accepted) != 1 || accepted[0]["relay_id"] == pinned[0]["relay_id"] {
		t.Fatalf("accept-new-id printed %v; the pin was %v", accepted, pinned[0]["relay_id"])
	}
	_ = other
	bob.ok("relay-settings", "--accept-new-id")
	bob.ok("send", "alice/1", "on the new relay")
	// A sync waits 300 ms for the relay's first delivery; on a loaded
	// machine the connection alone can take longer, so ask again.
	var recs []map[string]any
	for deadline := time.Now().Add(15 * time.Second); len(recs) == 0 && time.Now().Before(deadline); {
		recs = alice.sync()
	}
	if len(recs) != 1 || recs[0]["body"] != "on the new relay" {
		t.Fatalf("alice got %v on the accepted relay", recs)
	}
}

// writeTLS makes a private CA and a certificate it signs for 127.0.0.1, as
// PEM files in dir: ca.pem, cert.pem, key.pem.
func writeTLS(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "parley test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", leafDER), write("key.pem", "EC PRIVATE KEY", keyDER)
}

// TestCLIOverTLS: a relay serving wss:// with a certificate of a private
// CA; profiles made with --relay-ca talk through it; a profile without the
// CA cannot connect (the system roots do not know it), and accepts it
// later with relay-settings --ca.
func TestCLIOverTLS(t *testing.T) {
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTLS(t, dir)
	relay := startRelay(t, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(relay.url, "wss://127.0.0.1:") {
		t.Fatalf("relay URL %q, want wss://", relay.url)
	}
	alice := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "alice"), addr: "alice/1"}
	alice.ok("init", "--address", "alice/1", "--relay", relay.url, "--relay-ca", caFile)
	bob := &cliProfile{t: t, dir: filepath.Join(t.TempDir(), "bob"), addr: "bob/1"}
	r := bob.run("", "init", "--address", "bob/1", "--relay", relay.url)
	if r.code != 0 || !strings.Contains(r.stderr, "certificate") {
		t.Fatalf("init without the CA: exit %d %q; want a profile made offline, naming the certificate", r.code, r.stderr)
	}
	if r := bob.run("", "sync"); r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Fatalf("sync without the CA: exit %d %q, want exit 1 naming the certificate", r.code, r.stderr)
	}
	bob.ok("relay-settings", "--ca", caFile)
	acquaint(bob, alice)
	bob.sync() // publishes bob's bundle
	alice.ok("send", "bob/1", "over TLS")
	if recs := bob.sync(); len(recs) != 1 || recs[0]["body"] != "over TLS" {
		t.Fatalf("bob got %v", recs)
	}
}

// TestCLIContacts names devices, lists and forgets the names, and refuses a
// bad name or a bad address without writing anything.
func TestCLIContacts(t *testing.T) {
	relay := startRelay(t)
	alice := newProfile(t, relay, "alice/1")
	alice.ok("contact", "Bob Jones", "bob/1")
	alice.ok("contact", "carol/2", "Carol") // the other order is understood
	alice.ok("contact", "Bob", "bob/1")     // renames
	got := alice.jsonLines("contact")
	if len(got) != 2 || got[0]["peer"] != "bob/1" || got[0]["name"] != "Bob" || got[1]["peer"] != "carol/2" || got[1]["name"] != "Carol" {
		t.Fatalf("contacts %v", got)
	}
	for _, args := range [][]string{
		{"contact", strings.Repeat("x", 65), "bob/1"},
		{"contact", "tab\there", "bob/1"},
		{"contact", "Bob", "Bob/1"},
		{"contact", "bob/1"},
		{"contact", "--remove", "bob/1", "Bob"},
	} {
		r := alice.run("", args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "parley contact: ") {
			t.Fatalf("parley %s: exit %d, stderr %q; want 2 and the cause", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	alice.ok("contact", "--remove", "bob/1")
	got = alice.jsonLines("contact")
	if len(got) != 1 || got[0]["peer"] != "carol/2" {
		t.Fatalf("after remove: %v", got)
	}
}

// TestCLIBench runs parley bench briefly with two pairs: every message sent
// is counted acknowledged, and the JSON says how much CPU each one took.
func TestCLIBench(t *testing.T) {
	cmd := exec.Command(parleyBin, "bench", "--duration", "500ms", "--pairs", "2", "--window", "8", "--json")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parley bench: %v", err)
	}
	var res struct {
		Messages   int     `json:"messages"`
		Pairs      int     `json:"pairs"`
		CPU        float64 `json:"cpu_us_per_msg"`
		MsgsPerSec float64 `json:"msgs_per_sec"`
		Seconds    float64 `json:"seconds"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("bench output %q: %v", out, err)
	}
	if res.Pairs != 2 || res.Messages < 16 || res.Seconds < 0.5 || res.CPU <= 0 || res.MsgsPerSec <= 0 {
		t.Fatalf("bench result %+v", res)
	}
}
