package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCLIDecisionRacesItsMessageKilled: bob has two devices, and bob/1's
// decision on alice's message reaches bob/2 beside the message itself,
// before it or after it. bob/2's `parley sync`, which takes both, is
// killed with SIGKILL part way: at a fraction of the time an unkilled
// sync of the same work took to print its first record (by then it has
// staged, processed and finalized everything), from 90% of it on, so that
// the kill lands near the receive's transactions (the engine's failpoint
// matrix stops a process at each of their statements). After a sync run
// again, bob/2 holds the message once, committed and decided on bob/1,
// asks nothing, and every lane of the three devices has ended.
// PARLEY_E2E_RACE_ROUNDS (default 3) sets the rounds (the first measures
// the time, unkilled), PARLEY_E2E_RACE_MESSAGES (default 4) the messages
// of a round; rounds alternate the two orders and move the kill later.
func TestCLIDecisionRacesItsMessageKilled(t *testing.T) {
	t.Parallel() // waits on child processes most of the time
	relay := startRelay(t, "--device-lists")
	alice := newProfile(t, relay, "alice/1")
	bob := newProfile(t, relay, "bob/1")
	alice.sync()
	bob.sync()
	bob2 := linkDevice(t, relay, bob, "bob/2")
	bob2.ok("accept", "alice/1")
	bob2.sync()
	// alice takes bob's list with a first message both devices settle.
	alice.ok("send", "bob", "hello both")
	for _, p := range []*cliProfile{bob, bob2} {
		p.sync()
		p.commitAll()
	}
	settleOwn(t, bob, bob2)
	alice.sync()

	syncArgs := []string{"sync", "--json", "--wait", "300ms"}
	var took time.Duration
	var before, after int
	rounds := envInt("PARLEY_E2E_RACE_ROUNDS", 3)
	perRound := envInt("PARLEY_E2E_RACE_MESSAGES", 4)
	for i := 0; i < rounds; i++ {
		decisionFirst := i%2 == 0
		// Stored with a lane per device of bob, handed off one device at
		// a time so the test orders what reaches bob/2. Several messages
		// make the receive long enough for a kill to land inside it.
		bodies := map[string]string{}
		for k := 0; k < perRound; k++ {
			body := fmt.Sprintf("race %d.%d", i, k)
			bodies[strings.TrimSpace(alice.ok("send", "--no-wait", "bob", body))] = body
		}
		decide := func() {
			alice.ok("retry", "bob/1")
			recs := bob.sync()
			for id, body := range bodies {
				if got := deliveries(recs, "delivery", id); len(got) != 1 {
					t.Fatalf("round %d: bob/1 got %q, want %q once", i, got, body)
				}
			}
			bob.commitAll() // the decisions go to bob/2
		}
		if decisionFirst {
			decide()
			alice.ok("retry", "bob/2")
		} else {
			alice.ok("retry", "bob/2")
			decide()
		}
		var recs []map[string]any
		if took == 0 {
			// The first round is not killed: it measures the time.
			var lines []map[string]any
			took, lines = firstLineAfter(t, bob2.dir, syncArgs)
			recs = append(recs, lines...)
		} else {
			frac := 0.9 + 0.15*float64(i)/float64(rounds)
			killAfterDelay(t, bob2.dir, syncArgs, time.Duration(frac*float64(took)))
		}
		again := bob2.sync()
		switch {
		case i == 0:
		case len(again) == 0:
			after++ // killed after it printed what it took
		default:
			before++ // killed before it printed: the rerun finished it
		}
		if os.Getenv("PARLEY_E2E_DEBUG") != "" {
			t.Logf("round %d (decision first %t): bob/2's sync after the kill: %v", i, decisionFirst, again)
		}
		recs = append(recs, again...)
		recs = append(recs, settleOwn(t, bob, bob2)...)
		if in := bob2.jsonLines("inbox"); len(in) != 0 {
			t.Fatalf("round %d (decision first %t): bob/2 still asks about %v", i, decisionFirst, in)
		}
		hist := bob2.jsonLines("history", "alice/1")
		for id, body := range bodies {
			if got := deliveries(recs, "delivery", id); len(got) > 1 {
				t.Fatalf("round %d: bob/2 had %q delivered %d times", i, body, len(got))
			}
			var rows []map[string]any
			for _, r := range hist {
				if r["id"] == id {
					rows = append(rows, r)
				}
			}
			if len(rows) != 1 || rows[0]["body"] != body || rows[0]["decided_on"] != "bob/1" {
				t.Fatalf("round %d (decision first %t): bob/2's history rows for %q: %v, want one decided on bob/1", i, decisionFirst, body, rows)
			}
		}
		alice.sync()
		if out := alice.jsonLines("outbox"); len(out) != 0 {
			t.Fatalf("round %d: alice's outbox after both devices decided: %v", i, out)
		}
		for _, p := range []*cliProfile{bob, bob2} {
			if out := p.jsonLines("outbox"); len(out) != 0 {
				t.Fatalf("round %d: %s's outbox: %v", i, p.addr, out)
			}
		}
	}
	t.Logf("an unkilled sync printed its first record after %v; of %d kills, %d came before that point (the next sync finished the work), %d after it", took, rounds-1, before, after)
}

// firstLineAfter runs parley args for the profile in dir to its end and
// returns how long it took to print its first line, and its JSON lines.
func firstLineAfter(t *testing.T, dir string, args []string) (time.Duration, []map[string]any) {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+dir, "PARLEY_PASSPHRASE=e2e passphrase")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	var recs []map[string]any
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if took == 0 {
			took = time.Since(start)
		}
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("parley %s printed %q: %v", args[0], sc.Text(), err)
		}
		recs = append(recs, rec)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("parley %s: %v", args[0], err)
	}
	if took == 0 {
		t.Fatalf("parley %s printed nothing", args[0])
	}
	return took, recs
}
