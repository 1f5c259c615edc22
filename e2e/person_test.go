package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkDevice links a new device to owner's account through the relay (as
// TestCLILinkSecondDevice does) and returns it as addr.
func linkDevice(t *testing.T, relay *relayProc, owner *cliProfile, addr string) *cliProfile {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.ReplaceAll(addr, "/", "_"))
	link := startLink(t, dir, relay.url)
	code := link.line(t, "code")
	res := make(chan runResult, 1)
	go func() { res <- owner.run("", "device", "add", code, "--yes") }()
	if got := link.line(t, "address"); got != addr {
		t.Fatalf("address=%s, want %s", got, addr)
	}
	if err := <-link.done; err != nil {
		t.Fatalf("parley link: %v (stderr %q)", err, link.stderr.String())
	}
	if r := <-res; r.code != 0 {
		t.Fatalf("parley device add: exit %d, stderr %q", r.code, r.stderr)
	}
	return &cliProfile{t: t, dir: dir, addr: addr}
}

// deliveries returns the bodies of sync records of kind with id.
func deliveries(recs []map[string]any, kind, id string) []string {
	var out []string
	for _, r := range recs {
		if r["kind"] == kind && r["id"] == id {
			out = append(out, r["body"].(string))
		}
	}
	return out
}

// TestCLIPersonTwoDevices: alice writes to bob, a person with two devices
// (bob/2 linked through the relay): `send bob` stores a lane per device,
// each device gets the message exactly once, both ACKs clear it, and
// alice's history shows one row with a lane per device. Then bob commits
// a message on bob/1 and bob/2 finalizes its copy as decided there. Then
// bob writes from bob/2: alice gets it once, and bob/1's history shows it
// as sent by bob (a sent copy), once.
func TestCLIPersonTwoDevices(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync()
	bob.sync() // publishes generation 1
	bob2 := linkDevice(t, relay, bob, "bob/2")
	bob2.ok("accept", "alice/1")
	bob2.sync() // registers bob/2 at the relay

	id := strings.TrimSpace(alice.ok("send", "bob", "to both devices"))
	if len(id) != 32 {
		t.Fatalf("send bob printed %q, want a logical ID", id)
	}
	for _, p := range []*cliProfile{bob, bob2} {
		if got := deliveries(p.sync(), "delivery", id); len(got) != 1 || got[0] != "to both devices" {
			t.Fatalf("%s's sync delivered %q, want the message once", p.addr, got)
		}
		p.commitAll()
		if got := historyBodies(p, "alice/1", "in"); len(got) != 1 || got[0] != "to both devices" {
			t.Errorf("%s's history with alice/1: %q, want the message once", p.addr, got)
		}
	}
	alice.sync() // both ACKs
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Errorf("alice's outbox after both ACKs: %v", out)
	}
	for _, who := range []string{"bob/1", "bob/2"} {
		rows := alice.jsonLines("history", who)
		if len(rows) != 1 {
			t.Fatalf("alice's history with %s: %d rows, want the one message (%v)", who, len(rows), rows)
		}
		lanes, _ := rows[0]["lanes"].([]any)
		if rows[0]["id"] != id || rows[0]["state"] != "acknowledged" || len(lanes) != 2 {
			t.Fatalf("alice's history row %v, want message %s acknowledged with two lanes", rows[0], id)
		}
		for i, want := range []string{"bob/1", "bob/2"} {
			l := lanes[i].(map[string]any)
			if l["device"] != want || l["state"] != "acknowledged" || l["copy"] != false {
				t.Errorf("lane %d: %v, want %s acknowledged", i, l, want)
			}
		}
	}
	// Nothing comes twice.
	for _, p := range []*cliProfile{bob, bob2} {
		if recs := p.sync(); len(deliveries(recs, "delivery", id)) != 0 {
			t.Errorf("%s's second sync: %v", p.addr, recs)
		}
	}

	// Both devices committed, and each told the other at once: their
	// first sessions collide, and retries settle it as for any pair.
	settleOwn(t, bob, bob2)

	// Decisions are the person's: bob commits on bob/1, and bob/2 shows
	// it committed without asking.
	id2 := strings.TrimSpace(alice.ok("send", "bob", "decide once"))
	if got := deliveries(bob2.sync(), "delivery", id2); len(got) != 1 {
		t.Fatalf("bob/2 got %q, want the message once", got)
	}
	if got := deliveries(bob.sync(), "delivery", id2); len(got) != 1 {
		t.Fatalf("bob/1 got %q, want the message once", got)
	}
	bob.ok("commit", "alice/1", id2) // tells bob/2
	var decided []map[string]any
	recs := settleOwn(t, bob, bob2)
	for _, r := range recs {
		if r["kind"] == "decided" && r["id"] == id2 {
			decided = append(decided, r)
		}
	}
	if len(decided) != 1 || decided[0]["outcome"] != "committed" || decided[0]["on"] != "bob/1" || decided[0]["sender"] != "alice/1" {
		t.Fatalf("bob/2's sync after bob/1's commit: %v, want one decided record (bob/1's outbox %v)", recs, bob.jsonLines("outbox"))
	}
	if in := bob2.jsonLines("inbox"); len(in) != 0 {
		t.Errorf("bob/2's inbox after the decision: %v", in)
	}
	var row map[string]any
	for _, r := range bob2.jsonLines("history", "alice/1") {
		if r["id"] == id2 {
			if row != nil {
				t.Fatalf("bob/2's history holds %s twice", id2)
			}
			row = r
		}
	}
	if row == nil || row["decided_on"] != "bob/1" || row["body"] != "decide once" {
		t.Errorf("bob/2's history row %v, want the message decided on bob/1", row)
	}
	alice.sync() // both devices' ACKs
	if out := alice.jsonLines("outbox"); len(out) != 0 {
		t.Errorf("alice's outbox after both devices finalized: %v", out)
	}
	// A decision before its message: bob commits on bob/1 before bob/2
	// heard of the message; bob/2's delivery says it was decided
	// elsewhere (no bell), and the decision finalizes it in the same sync.
	id3 := strings.TrimSpace(alice.ok("send", "bob", "decided before it came"))
	if got := deliveries(bob.sync(), "delivery", id3); len(got) != 1 {
		t.Fatalf("bob/1 got %q, want the message once", got)
	}
	bob.ok("commit", "alice/1", id3)
	recs = bob2.sync()
	var elsewhere, decidedHere int
	for _, r := range recs {
		switch {
		case r["kind"] == "delivery" && r["id"] == id3:
			if r["decided_elsewhere"] != true {
				t.Errorf("bob/2's delivery %v, want decided_elsewhere", r)
			}
			elsewhere++
		case r["kind"] == "decided" && r["id"] == id3:
			decidedHere++
		}
	}
	if elsewhere != 1 || decidedHere != 1 {
		t.Errorf("bob/2's sync: %v, want the delivery and its decision once each", recs)
	}
	for _, r := range recs {
		if r["kind"] == "delivery" && r["id"] == id2 {
			t.Errorf("bob/2 got %s again", id2)
		}
	}
	alice.sync()

	// bob writes from his second device: alice once, bob/1 a sent copy.
	reply := strings.TrimSpace(bob2.ok("send", "alice", "from the laptop"))
	if got := deliveries(alice.sync(), "delivery", reply); len(got) != 1 {
		t.Fatalf("alice got %q of bob/2's reply, want it once", got)
	}
	alice.commitAll()
	if got := deliveries(bob.sync(), "sent_copy", reply); len(got) != 1 || got[0] != "from the laptop" {
		t.Fatalf("bob/1 got %q as sent copies of its reply, want one", got)
	}
	var mine []map[string]any
	for _, r := range bob.jsonLines("history", "alice/1") {
		if r["direction"] == "out" {
			mine = append(mine, r)
		}
	}
	if len(mine) != 1 || mine[0]["id"] != reply || mine[0]["state"] != "copied" || mine[0]["body"] != "from the laptop" {
		t.Errorf("bob/1's own messages to alice: %v, want the copy of %s", mine, reply)
	}
	bob2.sync() // alice's ACK and bob/1's
	if out := bob2.jsonLines("outbox"); len(out) != 0 {
		t.Errorf("bob/2's outbox after the ACKs: %v", out)
	}
	if recs := bob.sync(); len(deliveries(recs, "sent_copy", reply)) != 0 {
		t.Errorf("bob/1's second sync: %v", recs)
	}

	// One safety number for the two people, from their accounts: the same
	// on bob's two devices and on alice's side with either of them.
	numbers := map[any]bool{}
	for _, r := range []map[string]any{alice.jsonLines("safety-number", "bob/1")[0], alice.jsonLines("safety-number", "bob/2")[0],
		bob.jsonLines("safety-number", "alice/1")[0], bob2.jsonLines("safety-number", "alice/1")[0]} {
		if r["basis"] != "accounts" {
			t.Errorf("safety number %v, want basis accounts", r)
		}
		numbers[r["safety_number"]] = true
	}
	if len(numbers) != 1 {
		t.Errorf("safety numbers %v, want one", numbers)
	}
}

// settleOwn runs syncs and retries between two devices of one person
// until neither has anything pending to the other (their lanes of
// decisions and copies), and returns what the second's syncs reported.
func settleOwn(t *testing.T, a, b *cliProfile) []map[string]any {
	t.Helper()
	var seen []map[string]any
	for round := 0; round < 8; round++ {
		ra := a.sync()
		rb := b.sync()
		seen = append(seen, rb...)
		if os.Getenv("PARLEY_E2E_DEBUG") != "" {
			t.Logf("round %d: %s %v; %s %v; outboxes %v %v", round, a.addr, ra, b.addr, rb, a.jsonLines("outbox"), b.jsonLines("outbox"))
		}
		pending := 0
		for _, p := range []*cliProfile{a, b} {
			for _, m := range p.jsonLines("outbox") {
				if r := m["recipient"].(string); r == a.addr || r == b.addr {
					pending++
				}
			}
		}
		if pending == 0 {
			return seen
		}
		a.run("", "retry", b.addr)
		b.run("", "retry", a.addr)
	}
	t.Fatalf("%s and %s still have lanes to each other after 8 rounds", a.addr, b.addr)
	return nil
}
