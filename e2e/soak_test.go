package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestSoak: a relay that drops and duplicates 20% of the envelopes, two
// profiles driven through the command line, processes killed with SIGKILL
// at random moments. Afterwards every message is in its recipient's history
// exactly once and nothing is pending on either side. SOAK_MESSAGES sets the
// number of messages (make soak: 5000 on demand; the suite runs a short one).
func TestSoak(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	n := 12
	if s := os.Getenv("SOAK_MESSAGES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SOAK_MESSAGES=%q", s)
		}
		n = v
	} else if testing.Short() {
		t.Skip("the soak is long")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	relay := startRelay(t, "--fault-drop", "0.2", "--fault-dup", "0.2", "--fault-seed", strconv.FormatUint(seed, 10))
	alice, bob := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1")
	devs := []*cliProfile{alice, bob}
	peerOf := map[*cliProfile]string{alice: "bob/1", bob: "alice/1"}
	sent := map[*cliProfile][]string{}
	kills := 0

	// runMaybeKilled runs a command that may be killed with SIGKILL after a
	// random delay.
	runMaybeKilled := func(p *cliProfile, args ...string) {
		cmd := exec.Command(parleyBin, args...)
		cmd.Env = append(os.Environ(), "PARLEY_PROFILE="+p.dir, "PARLEY_PASSPHRASE=e2e passphrase")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 {
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			if cmd.Process.Kill() == nil {
				kills++
			}
		}
		cmd.Wait()
	}
	for i := 0; i < n; i++ {
		from := devs[rng.IntN(2)]
		body := fmt.Sprintf("%s #%d", from.addr, i)
		// Exit 3 (kept pending) counts as sent: a retry delivers it.
		r := from.run("", "send", peerOf[from], body)
		if r.code == 0 || r.code == 3 {
			sent[from] = append(sent[from], body)
		}
		for _, d := range devs {
			if rng.IntN(2) == 0 {
				runMaybeKilled(d, "sync", "--wait", "100ms")
			}
		}
		for _, d := range devs {
			if rng.IntN(3) == 0 {
				for _, m := range d.jsonLines("inbox") {
					runMaybeKilled(d, "commit", m["sender"].(string), m["id"].(string))
				}
			}
			if rng.IntN(4) == 0 {
				runMaybeKilled(d, "retry", peerOf[d])
			}
		}
	}
	// Converge: no more kills, the relay still lossy.
	rounds := 0
	for ; rounds < 40; rounds++ {
		pending := 0
		for _, d := range devs {
			d.sync()
			d.commitAll()
		}
		for _, d := range devs {
			d.sync()
			pending += len(d.jsonLines("outbox")) + len(d.jsonLines("inbox"))
		}
		if pending == 0 {
			break
		}
		for _, d := range devs {
			d.run("", "retry", peerOf[d])
		}
	}
	for _, d := range devs {
		if out, in := d.jsonLines("outbox"), d.jsonLines("inbox"); len(out)+len(in) != 0 {
			t.Fatalf("%s still has %d sent and %d received pending after %d rounds", d.addr, len(out), len(in), rounds)
		}
	}
	for from, bodies := range sent {
		to := devs[0]
		if from == devs[0] {
			to = devs[1]
		}
		got := map[string]int{}
		for _, b := range historyBodies(to, from.addr, "in") {
			got[b]++
		}
		for _, b := range bodies {
			if got[b] != 1 {
				t.Errorf("%q is in %s's history %d times, want exactly once", b, to.addr, got[b])
			}
		}
		// Sends are never killed, so nothing else may be there.
		if len(got) != len(bodies) {
			t.Errorf("%s's history from %s holds %d messages, %d were sent", to.addr, from.addr, len(got), len(bodies))
		}
	}
	total := len(sent[alice]) + len(sent[bob])
	msg := fmt.Sprintf("soak: %d messages, %d processes killed, %d convergence rounds, relay drop 20%% dup 20%%: every message delivered exactly once, nothing pending", total, kills, rounds)
	t.Log(msg)
	fmt.Println(msg)
}
