package transport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
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

// TestBlockSenderOnAnOldRelay: a relay that announces no features and
// answers kind 17 as a bad request (it cannot decode it) makes BlockSender
// return ErrSenderBlockUnsupported, with the relay's error kept.
func TestBlockSenderOnAnOldRelay(t *testing.T) {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		ch, _ := wire.EncodeRelay(0, wire.Challenge{Expires: time.Now().Add(time.Minute).Unix()})
		if ws.WriteMessage(websocket.BinaryMessage, ch) != nil {
			return
		}
		for first := true; ; first = false {
			_, data, err := ws.ReadMessage()
			if err != nil || len(data) < 6 {
				return
			}
			req := uint32(data[2])<<24 | uint32(data[3])<<16 | uint32(data[4])<<8 | uint32(data[5])
			var reply []byte
			if first {
				reply, _ = wire.EncodeRelay(req, wire.AuthOK{})
			} else {
				reply, _ = wire.EncodeRelay(req, wire.Error{Code: wire.ErrorBadRequest, Message: "malformed message: unknown relay kind"})
			}
			if ws.WriteMessage(websocket.BinaryMessage, reply) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), engine.MustParseAddress("bob/1"), id, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.BlockSender(ctx, engine.MustParseAddress("mallory/1"), true)
	var se *ServerError
	if !errors.Is(err, ErrSenderBlockUnsupported) || !errors.As(err, &se) {
		t.Fatalf("BlockSender: %v, want ErrSenderBlockUnsupported and the relay's error", err)
	}
}
