package engine_test

import (
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestStatementsPerMessage counts the store's named statements (their
// failpoints) for a batch of messages from alice to bob, bob's loop with
// CommitOnArrival, and the ACKs back: the rows a message costs, which bound
// the client's CPU per message (docs/performance.md). It fails when a change
// adds a statement per message; -v prints the table.
func TestStatementsPerMessage(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	bob.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	// A session both ways first: what follows is steady state.
	bob.send(alice, "x")
	alice.sync()
	if _, err := alice.c.CommitRound(w.ctx, nil); err != nil {
		t.Fatal(err)
	}
	bob.sync()

	var mu sync.Mutex
	counts := map[string]int{}
	hook := func(p string) error {
		kind, rest, ok := strings.Cut(p, "/")
		if ok && strings.HasPrefix(rest, "stmt-") && strings.HasSuffix(rest, "-before") {
			mu.Lock()
			counts[kind+" "+strings.TrimSuffix(strings.TrimPrefix(rest, "stmt-"), "-before")]++
			mu.Unlock()
		}
		return nil
	}
	alice.fp.Store(hook)
	bob.fp.Store(hook)
	const n = 20
	reqs := make([]engine.SendRequest, n)
	for i := range reqs {
		reqs[i] = engine.SendRequest{Peer: bob.addr, Body: []byte("hello")}
	}
	if _, err := alice.c.SendBatch(w.ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.c.Sync(w.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.c.Sync(w.ctx); err != nil {
		t.Fatal(err)
	}
	alice.fp.Store(nil)
	bob.fp.Store(nil)
	if alice.pendingOut() != 0 || len(bob.received(alice)) != n {
		t.Fatalf("%d still pending at alice, bob has %d", alice.pendingOut(), len(bob.received(alice)))
	}

	var keys []string
	total := 0
	for k, c := range counts {
		keys = append(keys, k)
		total += c
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-40s %5.2f per message", k, float64(counts[k])/n)
	}
	per := float64(total) / n
	t.Logf("%-40s %5.2f per message", "all", per)
	// 11 written rows and the ACK's lane lookup per message, plus each
	// transaction's session, marker and past-chain writes shared by the
	// batch: 12.9 when this test was written.
	if per > 13.5 {
		t.Errorf("%.2f statements per message, want at most 13.5: a statement per message was added", per)
	}
	for _, k := range []string{"pairwise-receive inbound-insert", "commit inbound-delete"} {
		if counts[k] != 0 {
			t.Errorf("%s ran %d times: the loop's commit should go with the receive", k, counts[k])
		}
	}
}
