package demo

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/tui/eventlog"
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

// TestFaultRelayNoEnvelopeNews: the demo's relay announces no envelope news
// even over a connection that has it, so a loss it stages is retried on the
// demo's backoff rather than waited out as an envelope in a mailbox.
func TestFaultRelayNoEnvelopeNews(t *testing.T) {
	f := newFaultRelay(enginetest.NewNetwork().Endpoint(engine.MustParseAddress("bob/1")), engine.MustParseAddress("bob/1"), make(chan eventlog.Entry, 8), time.Now)
	if _, known := f.RelayFeatures(); known {
		t.Fatal("the demo's relay announced features")
	}
	if _, known := f.EnvelopeLifetime(); known {
		t.Fatal("the demo's relay announced a lifetime")
	}
}
