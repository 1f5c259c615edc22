package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestLockOrder runs what takes a client's mutexes at once (sends both
// ways, stored first and pumped or not, syncs, commits, retries, prekey refreshes, policy changes, a running
// loop) with the lock-order checker on: no goroutine may take a mutex while
// it holds one at the same place in the order or later (lockorder.go). Run
// it under -race too.
func TestLockOrder(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	stop := engine.CheckLockOrder()
	defer func() {
		if stop != nil {
			stop()
		}
	}()

	// Bob's loop runs throughout, as in the chat.
	ctx, cancel := context.WithCancel(w.ctx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		_ = bob.c.Run(ctx)
	}()

	const rounds = 15
	var wg sync.WaitGroup
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				f(i)
			}
		}()
	}
	// Errors are expected (a commit of what another goroutine committed, a
	// retry of nothing): this is about the locks.
	for _, d := range []struct{ me, peer *device }{{alice, bob}, {bob, alice}} {
		c, peer := d.me.c, d.peer.addr
		run(func(int) { _, _ = c.Send(w.ctx, peer, []byte("hello")) })
		run(func(int) {
			_, _ = c.Enqueue(w.ctx, []engine.SendRequest{{Peer: peer, Body: []byte("stored first")}})
			_, _ = c.Pump(w.ctx)
		})
		run(func(int) { _, _ = c.Sync(w.ctx) })
		run(func(int) {
			msgs, _ := c.PendingInbound(w.ctx, engine.PageQuery{Limit: 10})
			for _, m := range msgs {
				_, _ = c.Commit(w.ctx, m.Sender, m.ID)
			}
		})
		run(func(int) { _, _ = c.Retry(w.ctx, peer) })
		run(func(int) { _, _ = c.RefreshPreKeysIfStale(w.ctx); _ = c.RefreshPreKeys(w.ctx) })
		run(func(i int) {
			p := c.Policy()
			p.AutoRetry = i%2 == 0
			c.SetPolicy(p)
		})
		run(func(int) {
			for {
				select {
				case <-c.Events():
				default:
					return
				}
			}
		})
	}
	wg.Wait()
	cancel()
	<-loopDone
	nested, violations := stop()
	stop = nil
	for _, v := range violations {
		t.Error(v)
	}
	t.Logf("nested: %s", strings.Join(nested, ", "))
	// The checker saw the nesting that matters; a checker that saw none
	// would pass anything.
	for _, want := range []string{"syncMu → sendMu", "pumpMu → sendMu", "sendMu → mu"} {
		if !strings.Contains(strings.Join(nested, ","), want) {
			t.Errorf("the checker never saw %s nested (saw %v)", want, nested)
		}
	}

	// And it catches a mutex taken against the order.
	stop = engine.CheckLockOrder()
	_ = alice.c.LockBackwards()
	_, violations = stop()
	stop = nil
	if len(violations) != 1 || !strings.HasPrefix(violations[0], "syncMu taken while eventMu is held") {
		t.Errorf("taking syncMu under eventMu: violations %q, want one", violations)
	}
}
