package engine_test

import (
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestGroupChainCumulativeAck: members that receive several chain messages
// in one pass acknowledge them in one cumulative ACK each, and the sender
// ends every named lane from it. A duplicated cumulative ACK ends nothing
// more; a lost one leaves that member's lanes pending, and the retry
// (pairwise) gets them acknowledged again, one ACK per message, as a lost
// per-message ACK is recovered. Every member reads every message once.
func TestGroupChainCumulativeAck(t *testing.T) {
	oneGoroutine(t)
	w := newWorld(t)
	alice, bob, carol, dave, erin := w.device("alice/1"), w.device("bob/1"), w.device("carol/1"), w.device("dave/1"), w.device("erin/1")
	all := []*device{alice, bob, carol, dave, erin}
	members := []*device{bob, carol, dave, erin}
	for _, d := range all {
		d.c.SetPolicy(engine.Policy{Commit: engine.CommitOnArrival})
	}
	info, _, err := alice.c.CreateGroup(w.ctx, "team", []engine.Address{bob.addr, carol.addr, dave.addr, erin.addr})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, 5, all...)
	g := info.ID
	send := func(body string) wire.LogicalID {
		t.Helper()
		res, err := alice.c.SendGroup(w.ctx, g, []byte(body))
		if err != nil || len(res.Unsent) != 0 {
			t.Fatalf("SendGroup(%s) = %v unsent, %v", body, res.Unsent, err)
		}
		return res.ID
	}
	send("zero") // announces the chain
	settle(t, 5, all...)

	bodies := []string{"a", "b", "c", "d", "e"}
	var ids []wire.LogicalID
	for _, b := range bodies {
		id := send(b)
		if typ := firstAttempt(t, alice, bob, id); typ != wire.EnvelopeChain {
			t.Fatalf("message %s went to bob as %v, want by the chain", b, typ)
		}
		ids = append(ids, id)
	}
	w.net.DuplicateNext(bob.addr, alice.addr, 1)
	w.net.DropNext(carol.addr, alice.addr, 1)
	for _, d := range members {
		res := d.sync()
		if n := count(res, engine.ResultDelivery); n != len(bodies) {
			t.Fatalf("%s received %d deliveries, want %d: %v", d.addr, n, len(bodies), res)
		}
		for _, r := range res {
			if r.Kind == engine.ResultDelivery && !r.AckSent {
				t.Fatalf("%s: the delivery of %x reports no ACK sent", d.addr, r.ID[:4])
			}
		}
	}
	res := alice.sync()
	acks := map[string]int{}
	for _, r := range res {
		if r.Kind != engine.ResultAcknowledgement {
			continue
		}
		acks[r.Sender.String()]++
		if r.Cleared && len(r.Acked) != len(ids) {
			t.Fatalf("%s's cumulative ACK ended %d lanes, want %d", r.Sender, len(r.Acked), len(ids))
		}
	}
	// One ACK envelope per member (bob's copy is refused as a duplicate
	// by the session, and ends nothing), carol's lost.
	if want := map[string]int{"bob/1": 1, "dave/1": 1, "erin/1": 1}; !reflect.DeepEqual(acks, want) {
		t.Fatalf("ACK envelopes by member %v, want %v", acks, want)
	}
	for _, id := range ids {
		got := alice.lanes(g, id)
		for _, d := range []*device{bob, dave, erin} {
			if got[d.addr.String()] != "acknowledged" {
				t.Fatalf("lanes of %x: %v, want %s acknowledged", id[:4], got, d.addr)
			}
		}
		if got["carol/1"] == "acknowledged" {
			t.Fatalf("carol's lane of %x ended without her ACK", id[:4])
		}
	}
	// The retry goes pairwise; carol's repeats are acknowledged again.
	if got := alice.retry(carol); len(got) != len(ids) {
		t.Fatalf("retry to carol sent %d messages, want %d", len(got), len(ids))
	}
	res = carol.sync()
	if n := count(res, engine.ResultAlreadyCommitted); n != len(ids) {
		t.Fatalf("carol: %d repeats of committed messages, want %d: %v", n, len(ids), res)
	}
	alice.sync()
	for _, id := range ids {
		if got := alice.lanes(g, id); got["carol/1"] != "acknowledged" {
			t.Fatalf("after the retry, lanes of %x: %v", id[:4], got)
		}
	}
	settle(t, 5, all...)
	want := []string{"alice/1:zero"}
	for _, b := range bodies {
		want = append(want, "alice/1:"+b)
	}
	for _, d := range members {
		if got := d.groupHistory(g); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s's group history %v, want %v", d.addr, got, want)
		}
	}
}
