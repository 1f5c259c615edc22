package timeline

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// personHistory is a conversation with a person of two devices: it also
// answers the lanes of its own messages.
type personHistory struct {
	*history
	lanes map[wire.LogicalID][]engine.LaneStatus
}

func (h *personHistory) PersonLanes(_ context.Context, _ engine.Address, id wire.LogicalID) ([]engine.LaneStatus, error) {
	return h.lanes[id], nil
}

// TestDeviceTicks: an own message to a person with two devices shows how
// many acknowledged it, "✓ 2/2 devices" once both did; a copy to this
// person's other device does not count; a received message committed on
// another device of this person says which.
func TestDeviceTicks(t *testing.T) {
	bob2, self2 := engine.MustParseAddress("bob/2"), engine.MustParseAddress("alice/2")
	on := self2
	h := &personHistory{history: &history{entries: []engine.HistoryEntry{
		{Seq: 1, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{1}, At: at, Body: []byte("to both"), State: engine.SentAcknowledged},
		{Seq: 2, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{2}, At: at, Body: []byte("half way"), State: engine.SentAcknowledged},
		{Seq: 3, Peer: bob, Direction: engine.DirectionIn, ID: wire.LogicalID{3}, At: at, Body: []byte("decided elsewhere"), DecidedOn: &on},
	}}, lanes: map[wire.LogicalID][]engine.LaneStatus{
		{1}: {{Recipient: bob, State: engine.LaneAcknowledged}, {Recipient: bob2, State: engine.LaneAcknowledged}, {Recipient: self2, Own: true, State: engine.LanePending}},
		{2}: {{Recipient: bob, State: engine.LaneAcknowledged}, {Recipient: bob2, State: engine.LanePending}},
	}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(90, 12)
	m = load(t, m, m.SetPeer(bob))
	v := m.View()
	for _, want := range []string{"✓ 2/2 devices", "acknowledged · 1/2 devices", "committed on alice/2"} {
		if !strings.Contains(v, want) {
			t.Errorf("want %q in:\n%s", want, v)
		}
	}
}

// TestPersonEventsReload: what happens on a lane to bob/2, or to a
// message from bob/2, reads bob's conversation again (bob/2 is of it
// when bob's list is held); carol's does not.
func TestPersonEventsReload(t *testing.T) {
	bob2, carol := engine.MustParseAddress("bob/2"), engine.MustParseAddress("carol/1")
	m := New(context.Background(), newHistory(2), themes.MustGet("dark"))
	m.SetSize(60, 10)
	m = load(t, m, m.SetPeer(bob))
	for _, k := range []engine.EventKind{engine.EventSent, engine.EventNotSent, engine.EventFinalized, engine.EventAbandoned} {
		if _, cmd := m.Update(engine.Event{Kind: k, Peer: bob2, ID: wire.LogicalID{9}}); cmd == nil {
			t.Errorf("event %v of bob/2 did not read bob's conversation again", k)
		}
		if _, cmd := m.Update(engine.Event{Kind: k, Peer: carol, ID: wire.LogicalID{9}}); cmd != nil {
			t.Errorf("event %v of carol/1 read bob's conversation again", k)
		}
	}
}

// TestSentCopyReloads: a sent copy from another device of this person
// (alice/2) to bob's conversation reads it again at once, as a delivery
// does: a copy committed on arrival (ResultSentCopy) and one the hold's
// pass committed once its target came (ResultApplied naming the
// conversation). A copy to carol's conversation does not. Before the fix
// the copy showed only after a key.
func TestSentCopyReloads(t *testing.T) {
	self2, carol := engine.MustParseAddress("alice/2"), engine.MustParseAddress("carol/1")
	bob2 := engine.MustParseAddress("bob/2")
	m := New(context.Background(), newHistory(2), themes.MustGet("dark"))
	m.SetSize(60, 10)
	m = load(t, m, m.SetPeer(bob))
	for _, k := range []engine.ResultKind{engine.ResultSentCopy, engine.ResultApplied} {
		for _, to := range []engine.Address{bob, bob2} {
			r := &engine.ReceiveResult{Kind: k, Sender: self2, ID: wire.LogicalID{9}, CopyTo: &to}
			if _, cmd := m.Update(engine.Event{Kind: engine.EventReceived, Peer: self2, Result: r}); cmd == nil {
				t.Errorf("%v from alice/2 to %s did not read bob's conversation again", k, to)
			}
		}
		r := &engine.ReceiveResult{Kind: k, Sender: self2, ID: wire.LogicalID{9}, CopyTo: &carol}
		if _, cmd := m.Update(engine.Event{Kind: engine.EventReceived, Peer: self2, Result: r}); cmd != nil {
			t.Errorf("%v from alice/2 to carol read bob's conversation again", k)
		}
	}
}
