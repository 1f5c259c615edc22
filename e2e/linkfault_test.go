package e2e

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// countBodies counts p's history with peer in direction by body.
func countBodies(p *cliProfile, peer, direction string) map[string]int {
	got := map[string]int{}
	for _, b := range historyBodies(p, peer, direction) {
		got[b]++
	}
	return got
}

// TestCLILinkInFlightToOldDevice: bob writes to alice (the person) while
// she has one device; the message is still on its way when alice links a
// second device, so it is neither in the archive nor a lane to the new
// device. alice/1 then receives and commits it before bob has heard of the
// new device. Afterwards the new device holds the message too, once, as
// decided on alice/1.
func TestCLILinkInFlightToOldDevice(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync()
	bob.sync() // publishes generation 1
	bob.ok("send", "alice", "before the link")
	alice.sync()
	alice.commitAll()
	bob.sync() // the ACK; bob holds alice's list of one device

	id := strings.TrimSpace(bob.ok("send", "alice", "in flight at the cut"))
	dir2 := filepath.Join(t.TempDir(), "alice_2")
	linkWith(t, alice, dir2, relay.url, nil, nil)
	alice2 := &cliProfile{t: t, dir: dir2, addr: "alice/2"}

	// alice/1 decides before bob hears of alice/2.
	if got := deliveries(alice.sync(), "delivery", id); len(got) != 1 {
		t.Fatalf("alice/1 got %q, want the message in flight once", got)
	}
	alice.ok("commit", "bob/1", id)
	alice2.sync() // registers alice/2 at the relay
	// bob's next sync takes alice/1's ACK; alice/2 then gets the message
	// on a lane bob adds, and applies alice/1's decision to it.
	for range 3 {
		bob.sync()
		alice2.sync()
		alice.sync()
		bob.run("", "retry", "alice/2")
		alice.run("", "retry", "alice/2")
	}
	for _, p := range []*cliProfile{alice, alice2} {
		if got := countBodies(p, "bob/1", "in"); got["in flight at the cut"] != 1 || got["before the link"] != 1 {
			t.Errorf("%s's history from bob/1: %v, want each message once", p.addr, got)
		}
		if in := p.jsonLines("inbox"); len(in) != 0 {
			t.Errorf("%s still holds %v pending", p.addr, in)
		}
	}
	if out := bob.jsonLines("outbox"); len(out) != 0 {
		t.Errorf("bob's outbox: %v", out)
	}
}

// TestCLILinkUnderFaults: a relay that drops and duplicates 20 % of the
// envelopes (--fault-drop, --fault-dup; the link's mailbox and the
// archive's blob are not envelopes). alice/1 and bob write to each other
// (as people: a lane per device), and alice/1 links alice/2 with
// --history all while messages are in flight both ways: some of bob's
// undecided on alice/1 at the cut, some still on their way, some of
// alice/1's unacknowledged, and bob writing during the ceremony. After
// the link all three write again, and syncs and retries run until
// nothing is pending. Each of alice's received messages is committed on
// one of her devices only (by its body's hash), and the other follows
// the decision. Afterwards every message is in every device's history
// exactly once, nothing is pending anywhere, and every message alice
// decided after the link shows on her other device as decided there.
// PARLEY_E2E_LINKFAULT_MESSAGES sets the messages each writer sends in
// each phase (default 3).
func TestCLILinkUnderFaults(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	n := envInt("PARLEY_E2E_LINKFAULT_MESSAGES", 3)
	seed := uint64(time.Now().UnixNano())
	t.Logf("fault seed %d", seed)
	relay := startRelay(t, "--device-lists", "--fault-drop", "0.2", "--fault-dup", "0.2", "--fault-seed", strconv.FormatUint(seed, 10))
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync()
	bob.sync() // publishes generation 1
	quick := func(p *cliProfile) { p.run("", "sync", "--wait", "100ms") }
	var fromBob, fromAlice []string
	send := func(p *cliProfile, to, body string) {
		// Exit 3 (kept pending) counts as sent: a retry delivers it.
		if r := p.run("", "send", to, body); r.code != 0 && r.code != 3 {
			t.Fatalf("%s: send %q: exit %d, stderr %q", p.addr, body, r.code, r.stderr)
		}
		if p == bob {
			fromBob = append(fromBob, body)
		} else {
			fromAlice = append(fromAlice, body)
		}
	}

	// Before the link: history, and messages in flight both ways.
	for i := range n {
		send(bob, "alice", fmt.Sprintf("bob before %d", i))
		send(alice, "bob", fmt.Sprintf("alice before %d", i))
	}
	quick(alice)
	quick(bob)
	bob.commitAll()
	if in := alice.jsonLines("inbox"); len(in) > 0 {
		// The first of them decided on alice/1, the rest undecided at
		// the cut.
		alice.ok("commit", in[0]["sender"].(string), in[0]["id"].(string))
	}
	send(bob, "alice", "bob just before the link") // on its way at the cut

	// The link, with bob writing while it runs.
	dir2 := filepath.Join(t.TempDir(), "alice_2")
	link := startLink(t, dir2, relay.url)
	code := link.line(t, "code")
	res := make(chan runResult, 1)
	go func() { res <- alice.run("", "device", "add", code, "--yes", "--history", "all") }()
	for i := range n {
		send(bob, "alice", fmt.Sprintf("bob during %d", i))
		quick(bob)
	}
	var lines []string
	for s := range link.lines {
		lines = append(lines, s)
	}
	if err := <-link.done; err != nil {
		t.Fatalf("parley link: %v (stderr %q)", err, link.stderr.String())
	}
	if r := <-res; r.code != 0 {
		t.Fatalf("parley device add: exit %d, stderr %q", r.code, r.stderr)
	}
	if !slices.Contains(lines, "address=alice/2") {
		t.Fatalf("parley link printed %q", lines)
	}
	alice2 := &cliProfile{t: t, dir: dir2, addr: "alice/2"}
	quick(alice2) // registers alice/2 at the relay

	// After the link: everyone writes.
	for i := range n {
		send(alice, "bob", fmt.Sprintf("alice/1 after %d", i))
		send(alice2, "bob", fmt.Sprintf("alice/2 after %d", i))
		send(bob, "alice", fmt.Sprintf("bob after %d", i))
	}

	// Converge: the relay still lossy. Each of alice's received messages
	// is decided by one device, the one its body's hash names.
	alices := []*cliProfile{alice, alice2}
	decider := func(body string) *cliProfile {
		h := fnv.New32a()
		h.Write([]byte(body))
		return alices[h.Sum32()%2]
	}
	decidedOn := map[string]string{} // body -> the device that committed it after the link
	devs := []*cliProfile{alice, alice2, bob}
	retries := map[*cliProfile][]string{alice: {"bob/1", "alice/2"}, alice2: {"bob/1", "alice/1"}, bob: {"alice/1", "alice/2"}}
	rounds := 0
	for ; rounds < 40; rounds++ {
		for _, d := range devs {
			quick(d)
		}
		for _, d := range devs {
			for _, m := range d.jsonLines("inbox") {
				body, _ := m["body"].(string)
				if d != bob && decider(body) != d {
					continue // the other device decides it
				}
				r := d.run("", "commit", m["sender"].(string), m["id"].(string))
				if r.code == 0 && d != bob {
					decidedOn[body] = d.addr
				}
			}
		}
		pending := 0
		for _, d := range devs {
			quick(d)
			pending += len(d.jsonLines("outbox")) + len(d.jsonLines("inbox"))
		}
		if pending == 0 {
			break
		}
		for _, d := range devs {
			for _, to := range retries[d] {
				d.run("", "retry", to)
			}
		}
	}
	for _, d := range devs {
		if out, in := d.jsonLines("outbox"), d.jsonLines("inbox"); len(out)+len(in) != 0 {
			t.Errorf("%s still has %d sent and %d received pending after %d rounds: %v %v", d.addr, len(out), len(in), rounds, out, in)
		}
	}
	once := func(p *cliProfile, peer, dir string, want []string) {
		got := countBodies(p, peer, dir)
		for _, b := range want {
			if got[b] != 1 {
				t.Errorf("%q is in %s's history with %s (%s) %d times, want exactly once", b, p.addr, peer, dir, got[b])
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s's history with %s (%s) holds %d messages, %d were sent: %v", p.addr, peer, dir, len(got), len(want), got)
		}
	}
	for _, a := range alices {
		once(a, "bob/1", "in", fromBob)
		once(a, "bob/1", "out", fromAlice)
		// Decided once: what one device committed after the link, the
		// other shows as decided there.
		for _, h := range a.jsonLines("history", "bob/1") {
			body, _ := h["body"].(string)
			if on, ok := decidedOn[body]; ok && on != a.addr && h["decided_on"] != on {
				t.Errorf("%s's row of %q: decided_on %v, want %s", a.addr, body, h["decided_on"], on)
			}
		}
	}
	once(bob, "alice/1", "in", fromAlice)
	once(bob, "alice/1", "out", fromBob)
	if !t.Failed() {
		t.Logf("link under faults: %d messages from bob, %d from alice's devices, %d convergence rounds, relay drop 20%% dup 20%%: every message once on every device, nothing pending", len(fromBob), len(fromAlice), rounds)
	}
}
