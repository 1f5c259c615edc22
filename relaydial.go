package main

import (
	"context"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
)

// dialRelay connects and authenticates to the relay at url.
func dialRelay(ctx context.Context, url string, self engine.Address, id *engine.Identity) (relayConn, error) {
	return transport.Dial(ctx, url, self, id, transport.ClientOptions{})
}
