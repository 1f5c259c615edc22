package e2e

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Crash tests of file transfers through the CLI: real parley processes, a
// real relay keeping its blobs in SQLite (--data), and a SIGKILL in the
// middle of an upload or a download. "The middle" is a condition, not a
// sleep: the clients reach the relay through gateProxy, which stops
// forwarding once a third of the transfer went through; the killed process
// is then blocked on a transfer it started and has not finished.

const (
	crashFileSize  = 4<<20 + 123 // bytes: 4 MiB and a short last chunk
	crashChunkSize = 16 << 10    // PARLEY_FILE_CHUNK_SIZE: 257 chunks
)

// fileChunkEnv names the upload's chunk size in the binary's environment
// (the same name in package cli).
const fileChunkEnv = "PARLEY_FILE_CHUNK_SIZE"

// gateProxy is a TCP proxy in front of the relay that counts the bytes it
// forwards each way since it was armed, and closes its gate (stops
// forwarding in both directions) once one direction passes a threshold.
type gateProxy struct {
	ln    net.Listener
	relay string

	mu        sync.Mutex
	up, down  int64 // client → relay, relay → client, since arm
	limitUp   int64 // close the gate past this many bytes up (0: never)
	limitDown int64
	open      chan struct{} // closed while the gate is open
	closedAt  chan struct{} // closed when the gate closes
}

func newGateProxy(t *testing.T, relayURL string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gateProxy{ln: ln, relay: strings.TrimPrefix(relayURL, "ws://"), open: make(chan struct{}), closedAt: make(chan struct{})}
	close(p.open)
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *gateProxy) url() string { return "ws://" + p.ln.Addr().String() }

// arm resets the counters and closes the gate once up (or down) bytes
// went through (0: no limit that way). It returns a channel closed when
// the gate closes.
func (p *gateProxy) arm(up, down int64) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up, p.down, p.limitUp, p.limitDown = 0, 0, up, down
	p.closedAt = make(chan struct{})
	return p.closedAt
}

// reopen opens the gate and disarms it; it returns the bytes forwarded
// each way since arm.
func (p *gateProxy) reopen() (up, down int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
	p.limitUp, p.limitDown = 0, 0
	return p.up, p.down
}

// counts returns the bytes forwarded each way since arm.
func (p *gateProxy) counts() (up, down int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up, p.down
}

func (p *gateProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("tcp", p.relay)
		if err != nil {
			c.Close()
			continue
		}
		go p.pipe(r, c, true)
		go p.pipe(c, r, false)
	}
}

// pipe copies src to dst through the gate, counting; up says which way.
func (p *gateProxy) pipe(dst, src net.Conn, up bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.open
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.count(up, int64(n))
		}
		if err != nil {
			return
		}
	}
}

// count adds n bytes forwarded one way and closes the gate past its limit.
func (p *gateProxy) count(up bool, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	passed := false
	if up {
		p.up += n
		passed = p.limitUp > 0 && p.up >= p.limitUp
	} else {
		p.down += n
		passed = p.limitDown > 0 && p.down >= p.limitDown
	}
	select {
	case <-p.open:
		if passed {
			p.open = make(chan struct{})
			close(p.closedAt)
		}
	default:
	}
}

// startKillable starts a parley command of p that the test will kill.
func startKillable(t *testing.T, p *cliProfile, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+p.dir, "PARLEY_PASSPHRASE=e2e passphrase",
		fileChunkEnv+"="+strconv.Itoa(crashChunkSize))
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// killAtGate waits until the gate closed (the transfer is a third done
// and blocked on the relay), then kills cmd with SIGKILL. A command that
// ends first (the gate never closed) fails the test.
func killAtGate(t *testing.T, cmd *exec.Cmd, gate <-chan struct{}) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-gate:
	case err := <-exited:
		t.Fatalf("%s ended (%v) before the transfer was a third done", strings.Join(cmd.Args[1:], " "), err)
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%s: the transfer never reached a third", strings.Join(cmd.Args[1:], " "))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("%s: %v, want killed by SIGKILL", strings.Join(cmd.Args[1:], " "), err)
	}
}

// fileCrashSetup is a relay on --data, a gate in front of it, alice and
// bob behind the gate, and a random file of crashFileSize bytes.
func fileCrashSetup(t *testing.T) (gate *gateProxy, alice, bob *cliProfile, src string, data []byte) {
	t.Helper()
	relay := startRelay(t, "--data", t.TempDir())
	gate = newGateProxy(t, relay.url)
	proxied := &relayProc{url: gate.url()}
	alice = newProfile(t, proxied, "alice/1")
	bob = newProfile(t, proxied, "bob/1")
	data = make([]byte, crashFileSize)
	rand.NewChaCha8([32]byte{22}).Read(data)
	src = filepath.Join(t.TempDir(), "photo.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return gate, alice, bob, src, data
}

// runWithChunk runs a parley command of p with the test's chunk size.
func runWithChunk(t *testing.T, p *cliProfile, args ...string) runResult {
	t.Helper()
	t.Setenv(fileChunkEnv, strconv.Itoa(crashChunkSize))
	return p.run("", args...)
}

// checkExactlyOnce fetches (unless fetched is set) and checks the end
// state: the saved file is the original, bob holds exactly one message
// from alice in his history and nothing pending, alice's file left her
// outbox after bob's ACK, and no transfer state is left in either
// profile's files directory.
func checkExactlyOnce(t *testing.T, alice, bob *cliProfile, id, saved string, data []byte) {
	t.Helper()
	got, err := os.ReadFile(saved)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("saved file %s: SHA-256 differs from the original (%v)", saved, err)
	}
	if in := bob.jsonLines("inbox"); len(in) != 0 {
		t.Errorf("bob still has %v pending", in)
	}
	if h := historyIDs(bob, "alice/1", "in"); len(h) != 1 || h[0] != id {
		t.Errorf("bob's history from alice: %v, want exactly [%s]", h, id)
	}
	recs := alice.sync()
	if k := kinds(recs); k["acknowledgement"] != 1 || len(recs) != 1 {
		t.Errorf("alice's sync after the fetch: %v, want one acknowledgement", recs)
	}
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Errorf("alice still has %v pending", out)
	}
	if h := historyIDs(alice, "bob/1", "out"); len(h) != 1 || h[0] != id {
		t.Errorf("alice's history to bob: %v, want exactly [%s]", h, id)
	}
	if recs := bob.sync(); len(recs) != 0 {
		t.Errorf("bob's sync after all: %v, want nothing more", recs)
	}
	for _, p := range []*cliProfile{alice, bob} {
		left, _ := filepath.Glob(filepath.Join(p.dir, "files", "*"))
		if len(left) != 0 {
			t.Errorf("%s's files directory still holds %v", p.addr, left)
		}
	}
}

func historyIDs(p *cliProfile, peer, direction string) []string {
	var ids []string
	for _, h := range p.jsonLines("history", peer) {
		if h["direction"] == direction {
			ids = append(ids, h["id"].(string))
		}
	}
	return ids
}

// TestCLIFileSenderKilled: alice's send --file is killed with SIGKILL a
// third into its upload; the same send again resumes the upload (it puts
// less than the file) and sends one manifest, with no second message;
// bob fetches the original bytes.
func TestCLIFileSenderKilled(t *testing.T) {
	gate, alice, bob, src, data := fileCrashSetup(t)
	closed := gate.arm(crashFileSize/3, 0)
	send := startKillable(t, alice, "send", "bob/1", "--file", src)
	killAtGate(t, send, closed)
	gate.reopen()
	if recs := bob.sync(); len(recs) != 0 {
		t.Fatalf("bob's sync after the killed upload: %v, want nothing", recs)
	}
	gate.arm(0, 0)
	r := runWithChunk(t, alice, "send", "bob/1", "--file", src)
	if r.code != 0 {
		t.Fatalf("send --file again: exit %d, %q", r.code, r.stderr)
	}
	if up, _ := gate.counts(); up >= crashFileSize*5/6 {
		t.Errorf("the second send put %d bytes of a %d-byte file: the upload started over", up, crashFileSize)
	}
	id := strings.TrimSpace(r.stdout)
	recs := bob.sync()
	if len(recs) != 1 || recs[0]["kind"] != "delivery" || recs[0]["id"] != id {
		t.Fatalf("bob's sync: %v, want one delivery of %s", recs, id)
	}
	dir := t.TempDir()
	bob.ok("fetch", "alice/1", id, "--to", dir)
	checkExactlyOnce(t, alice, bob, id, filepath.Join(dir, "photo.bin"), data)
}

// TestCLIFileReceiverKilled: bob's fetch is killed with SIGKILL a third
// into its download; nothing is in the destination, the partial download
// is in his profile; fetch again resumes (it downloads less than the
// file), saves the original bytes and commits once.
func TestCLIFileReceiverKilled(t *testing.T) {
	gate, alice, bob, src, data := fileCrashSetup(t)
	r := runWithChunk(t, alice, "send", "bob/1", "--file", src)
	if r.code != 0 {
		t.Fatalf("send --file: exit %d, %q", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	if recs := bob.sync(); len(recs) != 1 || recs[0]["id"] != id {
		t.Fatalf("bob's sync: %v, want one delivery of %s", recs, id)
	}
	dir := t.TempDir()
	closed := gate.arm(0, crashFileSize/3)
	fetch := startKillable(t, bob, "fetch", "alice/1", id, "--to", dir)
	killAtGate(t, fetch, closed)
	gate.reopen()
	if saved, _ := os.ReadDir(dir); len(saved) != 0 {
		t.Fatalf("the killed fetch left %v in the destination", saved)
	}
	parts, _ := filepath.Glob(filepath.Join(bob.dir, "files", "fetch-*.part"))
	if len(parts) != 1 {
		t.Fatalf("partial downloads in bob's profile: %v, want one", parts)
	}
	if fi, err := os.Stat(parts[0]); err != nil || fi.Size() == 0 || fi.Size() >= crashFileSize {
		t.Fatalf("partial download %v (%v): want some of the file, not all", fi, err)
	}
	if in := bob.jsonLines("inbox"); len(in) != 1 {
		t.Fatalf("bob's inbox after the killed fetch: %v, want the file still pending", in)
	}
	gate.arm(0, 0)
	bob.ok("fetch", "alice/1", id, "--to", dir)
	if _, down := gate.counts(); down >= crashFileSize*5/6 {
		t.Errorf("the second fetch read %d bytes of a %d-byte file: the download started over", down, crashFileSize)
	}
	checkExactlyOnce(t, alice, bob, id, filepath.Join(dir, "photo.bin"), data)
}
