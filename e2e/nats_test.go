package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// Two relay processes on one 3-node JetStream cluster (the nodes run in the
// test process), with alice on one relay and bob on the other: a round trip,
// a collision and a lost ACK behave as on one relay.
func TestCLITwoRelaysOneCluster(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	c := natstest.StartCluster(t, 3)
	urls := strings.Join(c.URLs(), ",")
	ra := startRelay(t, "--nats", urls, "--nats-replicas", "3")
	rb := startRelay(t, "--nats", urls, "--nats-replicas", "3")
	alice, bob := newProfile(t, ra, "alice/1"), newProfile(t, rb, "bob/1")
	pinA, pinB := alice.jsonLines("relay-settings"), bob.jsonLines("relay-settings")
	if pinA[0]["relay_id"] != pinB[0]["relay_id"] {
		t.Fatalf("two relays on one cluster present two IDs: %v, %v", pinA, pinB)
	}

	// A collision across the two relays.
	alice.ok("send", "bob/1", "from alice")
	bob.ok("send", "alice/1", "from bob")
	collisions := 0
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
		t.Errorf("saw %d collisions, want 1", collisions)
	}
	if got := historyBodies(bob, "alice/1", "in"); len(got) != 1 || got[0] != "from alice" {
		t.Fatalf("bob's history %q", got)
	}

	// A lost ACK: bob's relay drops what it accepts while bob commits.
	alice.ok("send", "bob/1", "second")
	if k := kinds(bob.sync()); k["delivery"] != 1 {
		t.Fatalf("bob got %v", k)
	}
	rb.stop()
	lossy := restartRelay(t, rb, "--nats", urls, "--nats-replicas", "3", "--fault-drop", "1")
	bob.commitAll()
	lossy.stop()
	restartRelay(t, lossy, "--nats", urls, "--nats-replicas", "3")
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

// natsNodeEnv makes the test binary a NATS node (TestHelperNATSNode).
const natsNodeEnv = "PARLEY_TEST_NATS_NODE"

// TestHelperNATSNode runs one JetStream node until it is killed, when the
// test binary is started as one (startNATSNode).
func TestHelperNATSNode(t *testing.T) {
	spec := os.Getenv(natsNodeEnv)
	if spec == "" {
		t.Skip("only runs as a child of a test that kills NATS nodes")
	}
	var cfg struct {
		Node    natstest.Node
		Cluster []natstest.Node
	}
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := natstest.Start(cfg.Node, cfg.Cluster); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	select {}
}

// startNATSNode starts node of cluster as a process of its own.
func startNATSNode(t *testing.T, node natstest.Node, cluster []natstest.Node) *exec.Cmd {
	t.Helper()
	spec, _ := json.Marshal(map[string]any{"Node": node, "Cluster": cluster})
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperNATSNode$")
	cmd.Env = append(os.Environ(), natsNodeEnv+"="+string(spec))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("NATS node %s: %q, %v", node.Name, line, err)
	}
	return cmd
}

// TestSoakTwoRelaysNATS: two relays on a 3-node cluster with every stream
// replicated three times, both dropping and duplicating 20% of what they
// accept, alice on one and bob on the other, command-line processes killed
// at random; midway one relay and one NATS node are killed with SIGKILL
// (the relay comes back, the node does not). Afterwards every message is in
// its recipient's history exactly once and nothing is pending.
func TestSoakTwoRelaysNATS(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	if testing.Short() {
		t.Skip("the soak is long")
	}
	nodes, err := natstest.Plan(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	var procs []*exec.Cmd
	for _, n := range nodes {
		procs = append(procs, startNATSNode(t, n, nodes))
	}
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	relayArgs := func(salt uint64) []string {
		return []string{"--nats", strings.Join(urls, ","), "--nats-replicas", "3",
			"--fault-drop", "0.2", "--fault-dup", "0.2", "--fault-seed", strconv.FormatUint(seed+salt, 10)}
	}
	ra, rb := startRelay(t, relayArgs(1)...), startRelay(t, relayArgs(2)...)
	alice, bob := newProfile(t, ra, "alice/1"), newProfile(t, rb, "bob/1")
	devs := []*cliProfile{alice, bob}
	peerOf := map[*cliProfile]string{alice: "bob/1", bob: "alice/1"}
	sent := map[*cliProfile][]string{}
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
	const n = 16
	for i := 0; i < n; i++ {
		if i == n/2 {
			ra.kill()
			procs[2].Process.Kill()
			procs[2].Wait()
			ra = restartRelay(t, ra, relayArgs(3)...)
		}
		from := devs[rng.IntN(2)]
		body := fmt.Sprintf("%s #%d", from.addr, i)
		if r := from.run("", "send", peerOf[from], body); r.code == 0 || r.code == 3 {
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
		to := bob
		if from == bob {
			to = alice
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
		if len(got) != len(bodies) {
			t.Errorf("%s's history from %s holds %d messages, %d were sent", to.addr, from.addr, len(got), len(bodies))
		}
	}
	t.Logf("soak on two relays and NATS: %d messages, %d client processes killed, a relay and a NATS node killed, %d convergence rounds",
		len(sent[alice])+len(sent[bob]), kills, rounds)
}
