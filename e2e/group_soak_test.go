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

// TestGroupSoak: three members of one group driven through the command
// line, over a relay that drops and duplicates 20% of the envelopes, with
// processes killed by SIGKILL at random moments. Afterwards every group
// message is in every member's group history exactly once and nothing is
// pending anywhere. GROUP_SOAK_MESSAGES sets the number of messages
// (default 12, like TestSoak).
func TestGroupSoak(t *testing.T) {
	t.Parallel() // waits on processes most of the time; see TestTerminalScenarios
	n := 12
	if s := os.Getenv("GROUP_SOAK_MESSAGES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("GROUP_SOAK_MESSAGES=%q", s)
		}
		n = v
	} else if testing.Short() {
		t.Skip("the soak is long")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	relay := startRelay(t, "--fault-drop", "0.2", "--fault-dup", "0.2", "--fault-seed", strconv.FormatUint(seed, 10))
	alice, bob, carol := newProfile(t, relay, "alice/1"), newProfile(t, relay, "bob/1"), newProfile(t, relay, "carol/1")
	devs := []*cliProfile{alice, bob, carol}
	gid := alice.jsonLines("group", "create", "soak", "bob/1", "carol/1")[0]["id"].(string)
	retryAll := func(d *cliProfile) {
		for _, p := range devs {
			if p != d {
				d.run("", "retry", p.addr)
			}
		}
	}
	// The members learn of the group before they send (a send from a
	// device without the roster is refused, exit 1).
	for round := 0; round < 40; round++ {
		ready := 0
		for _, d := range devs {
			d.sync()
			if d.run("", "group", "show", gid).code == 0 {
				ready++
			}
		}
		if ready == len(devs) {
			break
		}
		retryAll(alice)
	}
	kills := 0
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
	sent := map[string]string{} // body -> sender
	for i := 0; i < n; i++ {
		from := devs[rng.IntN(len(devs))]
		body := fmt.Sprintf("%s #%d", from.addr, i)
		r := from.run("", "send", gid, body)
		if r.code == 0 || r.code == 3 {
			sent[body] = from.addr
		} else {
			t.Fatalf("send to the group: exit %d: %s", r.code, r.stderr)
		}
		for _, d := range devs {
			if rng.IntN(2) == 0 {
				runMaybeKilled(d, "sync", "--wait", "100ms")
			}
			if rng.IntN(3) == 0 {
				for _, m := range d.jsonLines("inbox") {
					runMaybeKilled(d, "commit", m["sender"].(string), m["id"].(string))
				}
			}
			if rng.IntN(4) == 0 {
				runMaybeKilled(d, "retry", gid)
			}
		}
	}
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
			retryAll(d)
		}
	}
	for _, d := range devs {
		if out, in := d.jsonLines("outbox"), d.jsonLines("inbox"); len(out)+len(in) != 0 {
			t.Fatalf("%s still has %d lanes and %d received pending after %d rounds", d.addr, len(out), len(in), rounds)
		}
		got := map[string]int{}
		for _, h := range d.jsonLines("history", gid) {
			got[h["body"].(string)]++
			if sent[h["body"].(string)] != h["sender"] {
				t.Errorf("%s's history holds %q from %v, which it did not send", d.addr, h["body"], h["sender"])
			}
		}
		for body := range sent {
			if got[body] != 1 {
				t.Errorf("%q is in %s's group history %d times, want exactly once", body, d.addr, got[body])
			}
		}
		if len(got) != len(sent) {
			t.Errorf("%s's group history holds %d messages, %d were sent", d.addr, len(got), len(sent))
		}
	}
	msg := fmt.Sprintf("group soak: %d messages to 3 members, %d processes killed, %d convergence rounds, relay drop 20%% dup 20%%: every message in every member's history exactly once, nothing pending", len(sent), kills, rounds)
	t.Log(msg)
	fmt.Println(msg)
}
