package demo

import (
	"context"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/tui/eventlog"
	"github.com/parley-chat/parley/wire"
)

// TestFaultRelayBlocksAtTheRelay: a block the engine tells the demo's relay
// reaches the connection under it, and fails while the link is unplugged
// (then the engine tells it again later).
func TestFaultRelayBlocksAtTheRelay(t *testing.T) {
	inner := enginetest.NewBlocker(enginetest.NewNetwork().Endpoint(engine.MustParseAddress("bob/1")))
	f := newFaultRelay(inner, engine.MustParseAddress("bob/1"), make(chan eventlog.Entry, 8), time.Now)
	eve := engine.MustParseAddress("eve/1")
	if err := f.BlockSender(context.Background(), eve, true); err != nil || !inner.Blocked(eve) {
		t.Fatalf("BlockSender: %v, blocked at the relay %v; want the block to reach it", err, inner.Blocked(eve))
	}
	unplugged := true
	f.set(nil, &unplugged)
	if err := f.BlockSender(context.Background(), eve, false); err == nil || !inner.Blocked(eve) {
		t.Fatalf("BlockSender while unplugged: %v; want it refused and the relay unchanged", err)
	}
}

// TestFaultRelayHidesTheStatusFeature: the demo's relay passes the
// connection's features on without envelope status, so the engine retries
// the losses it stages on the demo's backoff.
func TestFaultRelayHidesTheStatusFeature(t *testing.T) {
	inner := newsRelay{enginetest.NewNetwork().Endpoint(engine.MustParseAddress("bob/1"))}
	f := newFaultRelay(inner, engine.MustParseAddress("bob/1"), make(chan eventlog.Entry, 8), time.Now)
	fs, known := f.RelayFeatures()
	if !known || fs.Has(wire.FeatureEnvelopeStatus) || !fs.Has(wire.FeatureSenderBlock) {
		t.Fatalf("features %v (known %v), want the connection's without envelope status", fs, known)
	}
}

// newsRelay announces envelope status and sender blocks.
type newsRelay struct{ *enginetest.Endpoint }

func (newsRelay) RelayFeatures() (wire.FeatureSet, bool) {
	return wire.FeatureEnvelopeStatus | wire.FeatureSenderBlock, true
}

// TestDemoOnDevice: once bob has answered alice (the relay then counts her
// as a sender bob accepts), a message of hers that bob's device took shows
// "on bob/1's device" in her timeline: the demo's relay passes the
// connection's envelope statuses on.
func TestDemoOnDevice(t *testing.T) {
	t.Parallel()
	d := startDemo(t, demoConfig{})
	d.waitFor("Composer → bob/1")
	d.send("first")
	d.waitFor("1 pending received", "relay accepted")
	d.key(tea.KeyCtrlO)
	d.alt('4')
	d.typeText("c")
	d.waitFor("acknowledged")
	d.key(tea.KeyCtrlO)
	d.alt('3')
	d.send("second")
	d.waitFor("'s device")
}
