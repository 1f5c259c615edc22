package e2e

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/wire"
)

// ackCutter is a TCP proxy in front of a relay that, once armed, cuts the
// connection instead of forwarding the first AckRows relay message a client
// sends: the relay never hears that the batch was staged and delivers it
// again. It reads the client's websocket frames (after the HTTP upgrade) to
// find that message; everything else passes unchanged.
type ackCutter struct {
	t      *testing.T
	ln     net.Listener
	target string
	mu     sync.Mutex
	armed  bool
	cuts   int
}

func newAckCutter(t *testing.T, relayURL string) *ackCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ackCutter{t: t, ln: ln, target: strings.TrimPrefix(relayURL, "ws://")}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *ackCutter) url() string { return "ws://" + p.ln.Addr().String() }

func (p *ackCutter) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = true
}

func (p *ackCutter) cutCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// cut reports whether this AckRows is the one to cut, disarming.
func (p *ackCutter) cut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return false
	}
	p.armed = false
	p.cuts++
	return true
}

func (p *ackCutter) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *ackCutter) handle(client net.Conn) {
	defer client.Close()
	relay, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer relay.Close()
	go func() {
		io.Copy(client, relay)
		client.Close()
	}()
	r := bufio.NewReader(client)
	// The HTTP upgrade request, up to its empty line.
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(relay, line); err != nil {
			return
		}
		if line == "\r\n" {
			break
		}
	}
	for {
		frame, payload, err := readClientFrame(r)
		if err != nil {
			return
		}
		opcode := frame[0] & 0x0f
		if opcode == 2 && len(payload) >= 2 && wire.RelayKind(payload[1]) == wire.RelayAckRows && p.cut() {
			return // the deferred closes cut both sides
		}
		if _, err := relay.Write(frame); err != nil {
			return
		}
	}
}

// readClientFrame reads one websocket frame from a client (always masked)
// and returns its bytes as read and its unmasked payload.
func readClientFrame(r *bufio.Reader) (frame, payload []byte, err error) {
	var hdr bytes.Buffer
	head := make([]byte, 2)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, nil, err
	}
	hdr.Write(head)
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		b := make([]byte, 2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, nil, err
		}
		hdr.Write(b)
		n = uint64(binary.BigEndian.Uint16(b))
	case 127:
		b := make([]byte, 8)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, nil, err
		}
		hdr.Write(b)
		n = binary.BigEndian.Uint64(b)
	}
	var mask []byte
	if head[1]&0x80 != 0 {
		mask = make([]byte, 4)
		if _, err := io.ReadFull(r, mask); err != nil {
			return nil, nil, err
		}
		hdr.Write(mask)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, nil, err
	}
	payload = append([]byte(nil), body...)
	for i := range payload {
		if mask != nil {
			payload[i] ^= mask[i%4]
		}
	}
	return append(hdr.Bytes(), body...), payload, nil
}

// TestCLIRedeliveryAfterLostAck: bob's acknowledgement of a batch holding
// one message from each of two of alice's chains never reaches the relay,
// which delivers the batch again. The sync that lost it exits 0 with one
// warning line (SPEC §8's codes). The next sync reports both copies as
// duplicates; nothing asks alice for recovery; each message is in bob's
// history once.
func TestCLIRedeliveryAfterLostAck(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t)
	proxy := newAckCutter(t, relay.url)
	alice := newProfile(t, relay, "alice/1")
	bob := &cliProfile{t: t, dir: t.TempDir() + "/bob", addr: "bob/1"}
	bob.ok("init", "--address", "bob/1", "--relay", proxy.url())
	acquaint(bob, alice)

	// A round trip, then alice's second chain (p1), bob's reply with a new
	// key, p2 still on her second chain, and q1 on her third.
	alice.ok("send", "bob/1", "hello")
	bob.sync()
	bob.commitAll()
	bob.ok("send", "alice/1", "hi")
	alice.sync()
	alice.ok("send", "bob/1", "p1")
	bob.sync()
	bob.ok("send", "alice/1", "turn")
	alice.ok("send", "bob/1", "p2")
	alice.sync()
	alice.ok("send", "bob/1", "q1")

	proxy.arm()
	first := bob.run("", "sync", "--wait", "300ms", "--json")
	if proxy.cutCount() != 1 {
		t.Fatalf("the proxy cut %d acknowledgements, want 1 (sync: exit %d %q)", proxy.cutCount(), first.code, first.stderr)
	}
	if !strings.Contains(first.stdout, `"body":"p2"`) || !strings.Contains(first.stdout, `"body":"q1"`) {
		t.Fatalf("the first sync printed %q, want p2 and q1 delivered", first.stdout)
	}
	// Only the acknowledgement failed: exit 0, one warning line saying
	// what was kept.
	if first.code != 0 || strings.Count(first.stderr, "\n") != 1 || !strings.Contains(first.stderr, "warning") ||
		!strings.Contains(first.stderr, "kept on this device") {
		t.Fatalf("sync whose acknowledgement was cut: exit %d, stderr %q; want 0 and one warning line", first.code, first.stderr)
	}

	again := bob.sync()
	k := kinds(again)
	if k["duplicate_message"] != 2 || k["delivery"] != 0 || k["decryption_failed"] != 0 {
		t.Fatalf("the redelivery gave %v (%v), want two duplicate_message", k, again)
	}
	for _, r := range again {
		if r["recovery_requested"] != nil {
			t.Fatalf("the redelivery asked for recovery: %v", r)
		}
	}
	if k := kinds(alice.sync()); len(k) != 0 {
		t.Fatalf("alice got %v, want nothing (no recovery request)", k)
	}
	bob.commitAll()
	if got := historyBodies(bob, "alice/1", "in"); strings.Join(got, ",") != "q1,p2,p1,hello" && strings.Join(got, ",") != "hello,p1,p2,q1" {
		t.Fatalf("bob's history %q, want each message once", got)
	}
}
