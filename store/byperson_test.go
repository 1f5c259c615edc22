package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestReadsByPerson: once bob's device list is held, ConversationsByPerson
// folds bob/1 and bob/2 into bob's conversation (counts summed, the latest
// time, each device's row kept) and a page with Person reads both devices'
// pending messages, and no one else's: not bob-x's nor bob0's, whose
// addresses sort next to the range "bob/" to "bob0". Before the list is
// held, and without Person, every read stays by device.
func TestReadsByPerson(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	bob2, bobx, bob0 := engine.MustParseAddress("bob/2"), engine.MustParseAddress("bob-x/1"), engine.MustParseAddress("bob0/1")
	versions := map[engine.Address]uint64{}
	send := func(peer engine.Address, n byte) {
		p := sendPlan(t, peer, logicalID(n), fmt.Sprintf("to %s %d", peer, n), versions[peer])
		p.At = planAt.Add(time.Duration(n) * time.Second)
		f.apply(t, p)
		versions[peer]++
	}
	recv := func(peer engine.Address, n byte) {
		row := f.stage(t)
		e := deliver(t, logicalID(n), fmt.Sprintf("from %s %d", peer, n))
		e.At = planAt.Add(time.Duration(n) * time.Second)
		f.apply(t, receivePlan(row, peer, versions[peer], e))
		versions[peer]++
	}
	send(bob, 1)
	send(bob2, 2)
	recv(bob2, 3)
	send(bobx, 4)
	send(bob0, 5)
	recv(bob, 6)
	send(carol, 7)
	recv(bobx, 8)
	recv(bob0, 9)

	inbound := func(q engine.PageQuery) string {
		ms, err := f.db.PendingInbound(ctx, q)
		if err != nil {
			t.Fatalf("PendingInbound(%+v): %v", q, err)
		}
		var s []string
		for _, m := range ms {
			s = append(s, fmt.Sprintf("%s:%d", m.Sender, m.ID[0]))
		}
		return strings.Join(s, " ")
	}
	outbound := func(q engine.PageQuery) string {
		ms, err := f.db.PendingOutbound(ctx, q)
		if err != nil {
			t.Fatalf("PendingOutbound(%+v): %v", q, err)
		}
		var s []string
		for _, m := range ms {
			s = append(s, fmt.Sprintf("%s:%d", m.Recipient, m.ID[0]))
		}
		return strings.Join(s, " ")
	}
	rows := func() string {
		cs, err := f.db.ConversationsByPerson(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, c := range cs {
			r := fmt.Sprintf("%s in %d out %d at %d", c.Peer, c.PendingIn, c.PendingOut, c.LastAt.Sub(planAt)/time.Second)
			if c.Person() {
				var ds []string
				for _, d := range c.Devices {
					ds = append(ds, fmt.Sprintf("%s %d/%d", d.Peer, d.PendingIn, d.PendingOut))
				}
				r += " [" + strings.Join(ds, ", ") + "]"
			}
			s = append(s, r)
		}
		return strings.Join(s, "; ")
	}

	byDevice := "bob0/1 in 1 out 1 at 9; bob-x/1 in 1 out 1 at 8; carol/2 in 0 out 1 at 7; bob/1 in 1 out 1 at 6; bob/2 in 1 out 1 at 3"
	if got := rows(); got != byDevice {
		t.Errorf("ConversationsByPerson with no list held:\n got %s\nwant %s", got, byDevice)
	}
	if got, want := inbound(engine.PageQuery{Peer: &bob, Person: true}), "bob/1:6"; got != want {
		t.Errorf("PendingInbound(bob/1, person) with no list held = %q, want %q", got, want)
	}

	l, err := wire.EncodeDeviceList(wire.DeviceList{User: "bob", Generation: 1, AccountKey: [32]byte{1},
		Entries: []wire.DeviceEntry{{Number: 1, State: wire.DeviceActive}, {Number: 2, State: wire.DeviceActive}}})
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, engine.HoldPeerDeviceList{User: "bob", AccountKey: [32]byte{1}, Generation: 1, List: l, Conversation: bob, At: planAt})

	byPerson := "bob0/1 in 1 out 1 at 9; bob-x/1 in 1 out 1 at 8; carol/2 in 0 out 1 at 7; bob/1 in 2 out 2 at 6 [bob/1 1/1, bob/2 1/1]"
	if got := rows(); got != byPerson {
		t.Errorf("ConversationsByPerson with bob's list held:\n got %s\nwant %s", got, byPerson)
	}
	cs, err := f.db.Conversations(ctx)
	if err != nil || len(cs) != 5 {
		t.Errorf("Conversations = %+v, %v; want the 5 devices' rows still", cs, err)
	}
	for _, tt := range []struct {
		q       engine.PageQuery
		in, out string
	}{
		{engine.PageQuery{Peer: &bob, Person: true}, "bob/2:3 bob/1:6", "bob/1:1 bob/2:2"},
		{engine.PageQuery{Peer: &bob2, Person: true}, "bob/2:3 bob/1:6", "bob/1:1 bob/2:2"},
		{engine.PageQuery{Peer: &bob, Person: true, Limit: 1}, "bob/2:3", "bob/1:1"},
		{engine.PageQuery{Peer: &bob, Person: true, Requests: true}, "bob/2:3 bob/1:6", "bob/1:1 bob/2:2"},
		{engine.PageQuery{Peer: &bob}, "bob/1:6", "bob/1:1"},
		{engine.PageQuery{Peer: &bobx, Person: true}, "bob-x/1:8", "bob-x/1:4"},
		{engine.PageQuery{Peer: &bob0, Person: true}, "bob0/1:9", "bob0/1:5"},
	} {
		if got := inbound(tt.q); got != tt.in {
			t.Errorf("PendingInbound(%v person %v limit %d) = %q, want %q", tt.q.Peer, tt.q.Person, tt.q.Limit, got, tt.in)
		}
		if got := outbound(tt.q); got != tt.out {
			t.Errorf("PendingOutbound(%v person %v limit %d) = %q, want %q", tt.q.Peer, tt.q.Person, tt.q.Limit, got, tt.out)
		}
	}
}
