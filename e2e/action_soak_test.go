package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestActionSoak: messages, replies, reactions, edits and deletes for
// everyone, in a random (seeded) order, between alice and bob and in a
// group of alice, bob and carol, driven through the command line over a
// relay that drops and duplicates 20% of the envelopes. Afterwards, with
// everything synced, committed and retried until nothing is pending, every
// participant's history --json agrees row for row (bodies, edited flags,
// reactions, tombstones, quotes) and holds each message and each reply
// exactly once. ACTION_SOAK_OPS sets the number of operations (default 12).
//
// A person reacts to the same message again (half the time to one they
// already reacted to), and a quarter of the reactions take theirs back, so
// that a changed or removed reaction overtaken by a retry of the earlier
// one is exercised: the reactor's own order decides (docs/reliability.md).
func TestActionSoak(t *testing.T) {
	t.Parallel() // waits on child processes most of the time; see TestTerminalScenarios
	n := 12
	if s := os.Getenv("ACTION_SOAK_OPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("ACTION_SOAK_OPS=%q", s)
		}
		n = v
	} else if testing.Short() {
		t.Skip("the soak is long")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ACTION_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ACTION_SOAK_SEED=%q", s)
		}
		seed = v
	}
	t.Logf("seed %d (ACTION_SOAK_SEED=%d repeats the operations)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 3))
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
	// commitInbox commits what d holds; an action whose target is not
	// committed yet is refused (target pending) and committed in a later
	// round.
	commitInbox := func(d *cliProfile) {
		for _, m := range d.jsonLines("inbox") {
			d.run("", "commit", m["sender"].(string), m["id"].(string))
		}
	}
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

	type conv struct {
		name    string
		members []*cliProfile
	}
	pair := conv{"alice and bob", []*cliProfile{alice, bob}}
	group := conv{"the group", devs}
	// operand names the conversation for d: the other device, or the group.
	operand := func(c conv, d *cliProfile) string {
		if len(c.members) == 3 {
			return gid
		}
		if d == alice {
			return bob.addr
		}
		return alice.addr
	}
	own := func(c conv, d *cliProfile, row map[string]any) bool {
		if len(c.members) == 3 {
			return row["sender"] == d.addr
		}
		return row["direction"] == "out"
	}
	emojis := []string{"\U0001F44D", "\u2764\ufe0f", "\U0001F602"}
	reacted := map[string]bool{} // conversation, reactor, target
	done := map[string]int{}
	for i := 0; i < n; i++ {
		c := []conv{pair, group}[rng.IntN(2)]
		d := c.members[rng.IntN(len(c.members))]
		to := operand(c, d)
		var live, mine []map[string]any
		for _, row := range d.jsonLines("history", to) {
			if row["deleted"] == true {
				continue
			}
			live = append(live, row)
			if own(c, d, row) {
				mine = append(mine, row)
			}
		}
		op := []string{"message", "reply", "react", "edit", "delete"}[rng.IntN(5)]
		var args []string
		switch {
		case op == "reply" && len(live) > 0:
			args = []string{"send", to, fmt.Sprintf("reply #%d by %s", i, d.addr), "--reply-to", live[rng.IntN(len(live))]["id"].(string)}
		case op == "react" && len(live) > 0:
			var again []string // live messages d reacted to already
			for _, row := range live {
				if id := row["id"].(string); reacted[c.name+" "+d.addr+" "+id] {
					again = append(again, id)
				}
			}
			target := live[rng.IntN(len(live))]["id"].(string)
			if len(again) > 0 && rng.IntN(2) == 0 {
				target = again[rng.IntN(len(again))]
			}
			reacted[c.name+" "+d.addr+" "+target] = true
			if rng.IntN(4) == 0 {
				args = []string{"react", to, target, "--remove"}
			} else {
				args = []string{"react", to, target, emojis[rng.IntN(len(emojis))]}
			}
		case op == "edit" && len(mine) > 0:
			args = []string{"edit", to, mine[rng.IntN(len(mine))]["id"].(string), fmt.Sprintf("edit #%d by %s", i, d.addr)}
		case op == "delete" && len(mine) > 0:
			args = []string{"delete", to, mine[rng.IntN(len(mine))]["id"].(string)}
		default:
			op = "message"
		}
		if args == nil {
			args = []string{"send", to, fmt.Sprintf("message #%d by %s", i, d.addr)}
		}
		// Exit 3 (kept pending) counts as done: a retry delivers it.
		if r := d.run("", args...); r.code != 0 && r.code != 3 {
			t.Fatalf("%s: parley %s: exit %d: %s", d.addr, strings.Join(args, " "), r.code, r.stderr)
		}
		done[op+" in "+c.name]++
		for _, m := range c.members {
			if rng.IntN(2) == 0 {
				m.run("", "sync", "--wait", "100ms")
			}
			if rng.IntN(3) == 0 {
				commitInbox(m)
			}
		}
	}

	rounds := 0
	for ; rounds < 40; rounds++ {
		pending := 0
		for _, d := range devs {
			d.sync()
			commitInbox(d)
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
			t.Fatalf("%s still has %d sent and %d received pending after %d rounds: %v %v", d.addr, len(out), len(in), rounds, out, in)
		}
	}
	// rowsOf renders a conversation as d shows it: one line per message,
	// in ID order, with what every participant must agree on.
	rowsOf := func(c conv, d *cliProfile) []string {
		var rows []string
		seen := map[string]bool{}
		for _, row := range d.jsonLines("history", operand(c, d)) {
			id := row["id"].(string)
			if seen[id] {
				t.Errorf("%s shows %s twice in %s", d.addr, id, c.name)
			}
			seen[id] = true
			var rs []string
			for _, r := range row["reactions"].([]any) {
				r := r.(map[string]any)
				rs = append(rs, r["from"].(string)+":"+r["emoji"].(string))
			}
			slices.Sort(rs)
			author := row["sender"]
			if author == nil {
				author = map[bool]string{true: d.addr, false: operand(c, d)}[row["direction"] == "out"]
			}
			rows = append(rows, fmt.Sprintf("%s by %v: %q edited=%v deleted=%v reply_to=%v reactions=%v",
				id, author, row["body"], row["edited"], row["deleted"], row["reply_to"], rs))
		}
		slices.Sort(rows)
		return rows
	}
	for _, c := range []conv{pair, group} {
		want := rowsOf(c, c.members[0])
		for _, d := range c.members[1:] {
			if got := rowsOf(c, d); !slices.Equal(got, want) {
				t.Errorf("%s: %s shows\n  %s\n%s shows\n  %s", c.name, c.members[0].addr, strings.Join(want, "\n  "), d.addr, strings.Join(got, "\n  "))
			}
		}
	}
	var ops []string
	for k, v := range done {
		ops = append(ops, fmt.Sprintf("%d %s", v, k))
	}
	slices.Sort(ops)
	msg := fmt.Sprintf("action soak: %d operations (%s), %d convergence rounds, relay drop 20%% dup 20%%: every history agrees, nothing pending",
		n, strings.Join(ops, ", "), rounds)
	t.Log(msg)
	fmt.Println(msg)
}
