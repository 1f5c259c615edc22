package timeline

import (
	"context"
	"strings"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// TestOnDevice: a pending message the relay saw taken shows as on the
// peer's device, between "relay accepted" and "acknowledged".
func TestOnDevice(t *testing.T) {
	h := &history{entries: []engine.HistoryEntry{{Seq: 1, Peer: bob, Direction: engine.DirectionOut, ID: wire.LogicalID{1}, At: at,
		Body: []byte("out 1"), State: engine.SentPending}}}
	m := New(context.Background(), h, themes.MustGet("dark"))
	m.SetSize(70, 10)
	m = load(t, m, m.SetPeer(bob))
	m, cmd := m.Update(engine.Event{Kind: engine.EventSent, Peer: bob, ID: wire.LogicalID{1}})
	m = load(t, m, cmd)
	m, cmd = m.Update(engine.Event{Kind: engine.EventTaken, Peer: bob, ID: wire.LogicalID{1}})
	m = load(t, m, cmd)
	want := "on " + m.label(bob) + "'s device"
	if v := m.View(); !strings.Contains(v, want) || strings.Contains(v, "relay accepted") {
		t.Fatalf("want %q (and no longer \"relay accepted\") in:\n%s", want, v)
	}
}
