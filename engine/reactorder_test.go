package engine_test

import (
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestReactionApplies: the rule that orders one reactor's reactions (and
// removals) to one message.
func TestReactionApplies(t *testing.T) {
	for _, tt := range []struct {
		name          string
		order, stored uint32
		found, want   bool
	}{
		{"first reaction", 1, 0, false, true},
		{"newer wins", 2, 1, true, true},
		{"much newer wins", 9, 1, true, true},
		{"older ignored", 1, 2, true, false},
		{"same number ignored (a duplicate)", 2, 2, true, false},
		{"version 1 reaction where none", 0, 0, false, true},
		{"version 1 reaction over a version 1 one", 0, 0, true, false},
		{"version 1 reaction over a numbered one", 0, 1, true, false},
		{"numbered over a version 1 one", 1, 0, true, true},
	} {
		if got := engine.ReactionApplies(tt.order, tt.stored, tt.found); got != tt.want {
			t.Errorf("%s: ReactionApplies(%d, %d, %v) = %v, want %v", tt.name, tt.order, tt.stored, tt.found, got, tt.want)
		}
	}
}

// TestReactionOrder: a reaction the relay lost and the sender retried
// after a later one does not replace the later one, on either side; a
// removal is ordered the same way.
func TestReactionOrder(t *testing.T) {
	oneGoroutine(t)
	react := func(emoji string) engine.ActionRequest {
		return engine.ActionRequest{Content: wire.ContentReaction, Emoji: emoji}
	}
	for _, tt := range []struct {
		name   string
		second engine.ActionRequest
		want   []string
	}{
		{"changed", react(heart), []string{"alice/1 " + heart}},
		{"removed", engine.ActionRequest{Content: wire.ContentReaction, Remove: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, alice, bob, m := actionPair(t)
			first := react(thumbs)
			first.Target, tt.second.Target = m, m
			w.net.DropNext(alice.addr, bob.addr, 1)
			alice.act(bob, first)
			alice.act(bob, tt.second)
			bob.sync()
			alice.retry(bob)
			bob.sync()
			alice.sync()
			bob.sync()
			for _, d := range []struct {
				who  *device
				peer *device
			}{{alice, bob}, {bob, alice}} {
				if got := reactionsOf(d.who.entry(d.peer, m)); !slices.Equal(got, tt.want) {
					t.Fatalf("%s shows %v, want %v", d.who.addr, got, tt.want)
				}
			}
			if alice.pendingOut() != 0 || bob.pendingIn() != 0 {
				t.Fatalf("pending: alice %d out, bob %d in; want none", alice.pendingOut(), bob.pendingIn())
			}
		})
	}
}

// TestGroupReactionOrder is TestReactionOrder in a group: bob's first
// reaction to alice's message is lost on its way to alice and retried
// after his second reached her.
func TestGroupReactionOrder(t *testing.T) {
	oneGoroutine(t)
	for _, tt := range []struct {
		name   string
		second engine.ActionRequest
		want   []string
	}{
		{"changed", engine.ActionRequest{Content: wire.ContentReaction, Emoji: heart}, []string{"bob/1 " + heart}},
		{"removed", engine.ActionRequest{Content: wire.ContentReaction, Remove: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, g, alice, bob, carol, m := actionTrio(t)
			tt.second.Target = m
			w.net.DropNext(bob.addr, alice.addr, 1)
			bob.groupAct(g, engine.ActionRequest{Content: wire.ContentReaction, Target: m, Emoji: thumbs})
			bob.groupAct(g, tt.second)
			alice.sync()
			carol.sync()
			settleGroup(t, 8, alice, bob, carol)
			sameEntry(t, g, m, "lunch at noon", 0, false, tt.want, alice, bob, carol)
		})
	}
}
