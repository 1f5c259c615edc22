package engine_test

import (
	"context"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/wire"
)

// Group lanes in the outbox: a group message is stored with every lane
// pending, not yet encrypted, and the pump encrypts and hands off each lane.

// TestGroupSendWithTheRelayDown: with the relay out of reach, EnqueueGroup
// and SendGroup return at once with the message stored and every lane
// pending; once the relay is back the pump hands every lane off, in order,
// and each member receives each message once.
func TestGroupSendWithTheRelayDown(t *testing.T) {
	w := newWorld(t)
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "team", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob, carol)
	g := info.ID

	w.net.SetDown(alice.addr, true)
	start := time.Now()
	first, err := alice.c.EnqueueGroup(w.ctx, g, []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedAddrs(first.Unsent); !reflect.DeepEqual(got, []string{"bob/1", "carol/1"}) {
		t.Fatalf("EnqueueGroup's lanes not handed off: %v, want both", got)
	}
	second, err := alice.c.SendGroup(w.ctx, g, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("two group sends with the relay down took %v", took)
	}
	if got := sortedAddrs(second.Unsent); !reflect.DeepEqual(got, []string{"bob/1", "carol/1"}) {
		t.Fatalf("SendGroup with the relay down left %v unsent, want both lanes", got)
	}
	for _, id := range []wire.LogicalID{first.ID, second.ID} {
		if got := alice.lanes(g, id); got["bob/1"] != "pending" || got["carol/1"] != "pending" {
			t.Fatalf("lanes of %x with the relay down: %v, want both pending", id[:4], got)
		}
	}
	if got := alice.groupHistory(g); !reflect.DeepEqual(got, []string{"alice/1:one", "alice/1:two"}) {
		t.Fatalf("alice's group history %v: both stored", got)
	}

	w.net.SetDown(alice.addr, false)
	pumped, err := alice.c.Pump(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pumped) != 4 {
		t.Fatalf("the pump tried %d lanes, want 4: %+v", len(pumped), pumped)
	}
	for _, r := range pumped {
		if r.Err != nil {
			t.Fatalf("pump: lane to %s of %x: %v", r.Peer, r.ID[:4], r.Err)
		}
	}
	if again, err := alice.c.Pump(w.ctx); err != nil || len(again) != 0 {
		t.Fatalf("a second pump tried %d (%v): the lanes are handed off", len(again), err)
	}
	settle(t, 5, alice, bob, carol)
	for _, d := range []*device{bob, carol} {
		if got := d.groupHistory(g); !reflect.DeepEqual(got, []string{"alice/1:one", "alice/1:two"}) {
			t.Fatalf("%s's group history %v, want one and two once each, in order", d.addr, got)
		}
	}
	for _, id := range []wire.LogicalID{first.ID, second.ID} {
		if got, want := alice.lanes(g, id), map[string]string{"bob/1": "acknowledged", "carol/1": "acknowledged"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("lanes of %x: %v, want %v", id[:4], got, want)
		}
	}
}

func sortedAddrs(as []engine.Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	sort.Strings(out)
	return out
}

// TestGroupLaneStalledBundleDoesNotStopReceiving: a group whose lane to
// carol needs her bundle (alice never wrote to her) while that fetch never
// returns: the loop still receives, and the lane to bob is handed off.
func TestGroupLaneStalledBundleDoesNotStopReceiving(t *testing.T) {
	w := newWorld(t)
	var sr *stallRelay
	carolAddr := engine.MustParseAddress("carol/1")
	w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
		if a.String() != "alice/1" {
			return e
		}
		sr = &stallRelay{Endpoint: e, peer: carolAddr, entered: make(chan struct{}, 1), release: make(chan struct{})}
		return sr
	}
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	// Bob makes the group: alice has a session with bob, none with carol.
	info, _, err := bob.c.CreateGroup(w.ctx, "team", []engine.Address{alice.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, bob, alice, carol)
	if alice.hasSession(carol) {
		t.Fatal("alice has a session with carol: the lane would need no bundle")
	}

	ctx, cancel := context.WithCancel(w.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); alice.c.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	sent, err := alice.c.EnqueueGroup(ctx, info.ID, []byte("to the team"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sr.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the pump never fetched carol's bundle")
	}
	defer close(sr.release)
	before, err := alice.c.CountInbound(w.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	bob.send(alice, "from bob")
	alice.c.SyncNow()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := alice.c.CountInbound(w.ctx, nil); n > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's loop received nothing in 5s while a group lane's bundle fetch hangs")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Bob's lane went before carol's stalled: it was stored first.
	bob.sync()
	bob.commitAll()
	if got := bob.groupHistory(info.ID); !reflect.DeepEqual(got, []string{"alice/1:to the team"}) {
		t.Fatalf("bob's group history %v while carol's lane waits", got)
	}
	if got := alice.lanes(info.ID, sent.ID)["carol/1"]; got != "pending" {
		t.Fatalf("carol's lane is %q, want pending", got)
	}
}

// BenchmarkGroupSendLatency: what a group send costs the person who
// pressed Enter, to a group of four other members, with a relay that
// answers every hand-off after 50 ms: EnqueueGroup (one commit) against
// SendGroup (the commit, then the pump's pass for every lane).
func BenchmarkGroupSendLatency(b *testing.B) {
	for _, mode := range []string{"enqueue", "send"} {
		b.Run(mode, func(b *testing.B) {
			w := newWorld(b)
			w.relay = func(a engine.Address, e *enginetest.Endpoint) engine.Relay {
				if a.String() != "alice/1" {
					return e
				}
				return &delayRelay{Endpoint: e, delay: 50 * time.Millisecond}
			}
			alice := w.device("alice/1")
			var members []engine.Address
			var all []*device
			for _, name := range []string{"bob/1", "carol/1", "dave/1", "erin/1"} {
				d := w.device(name)
				members = append(members, d.addr)
				all = append(all, d)
			}
			info, _, err := alice.c.CreateGroup(w.ctx, "bench", members)
			if err != nil {
				b.Fatal(err)
			}
			settleB(b, append(all, alice))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if mode == "enqueue" {
					if _, err := alice.c.EnqueueGroup(w.ctx, info.ID, []byte("hello")); err != nil {
						b.Fatal(err)
					}
				} else if _, err := alice.c.SendGroup(w.ctx, info.ID, []byte("hello")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// settleB runs a few rounds of sync and commit on each device.
func settleB(b *testing.B, ds []*device) {
	b.Helper()
	for range 3 {
		for _, d := range ds {
			d.sync()
			d.commitAll()
		}
	}
}
