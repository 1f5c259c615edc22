package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// TestBlockSenderNeedsTheFeature: against a relay that announced features
// without FeatureSenderBlock, BlockSender sends nothing and returns
// ErrSenderBlockUnsupported, a typed error the engine keeps its record by.
// (transport/relayserver's TestBlockSender covers a relay that serves it.)
func TestBlockSenderNeedsTheFeature(t *testing.T) {
	url := scriptedRelay(t, mustEncodeRelay(t, wire.Features{Set: wire.FeatureEnvelopeStatus}))
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, engine.MustParseAddress("bob/1"), id, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		if _, ok := c.RelayFeatures(); ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the relay's features never arrived")
		case <-time.After(time.Millisecond):
		}
	}
	err = c.BlockSender(ctx, engine.MustParseAddress("mallory/1"), true)
	if !errors.Is(err, ErrSenderBlockUnsupported) {
		t.Fatalf("BlockSender: %v, want ErrSenderBlockUnsupported", err)
	}
}
