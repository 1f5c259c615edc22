package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// scriptedRelay authenticates anyone and then pushes the given messages,
// raw, in order; it keeps the connection open until the test ends.
func scriptedRelay(t *testing.T, pushes ...[]byte) string {
	t.Helper()
	done := make(chan struct{})
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		write := func(b []byte) bool { return ws.WriteMessage(websocket.BinaryMessage, b) == nil }
		ch, _ := wire.EncodeRelay(0, wire.Challenge{Expires: time.Now().Add(time.Minute).Unix()})
		if !write(ch) {
			return
		}
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		req, _, err := wire.DecodeRelay(data)
		if err != nil {
			return
		}
		ok, _ := wire.EncodeRelay(req, wire.AuthOK{})
		if !write(ok) {
			return
		}
		for _, p := range pushes {
			if !write(p) {
				return
			}
		}
		<-done
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func mustEncodeRelay(t *testing.T, m wire.RelayMessage) []byte {
	t.Helper()
	b, err := wire.EncodeRelay(0, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFeaturesAndStatuses: the client keeps the relay's features and the
// statuses it pushes for EnvelopeStatuses, and skips a push of a kind it
// does not know instead of dropping the connection.
func TestFeaturesAndStatuses(t *testing.T) {
	taken := wire.EnvelopeStatus{EnvelopeID: wire.EnvelopeID{1}, State: wire.EnvelopeTaken}
	expired := wire.EnvelopeStatus{EnvelopeID: wire.EnvelopeID{2}, State: wire.EnvelopeExpired}
	url := scriptedRelay(t,
		mustEncodeRelay(t, wire.Features{Set: wire.FeatureEnvelopeStatus | wire.FeatureEnvelopeLifetime | 1<<7}),
		mustEncodeRelay(t, wire.EnvelopeLifetime{Lifetime: 48 * time.Hour}),
		mustEncodeRelay(t, taken),
		[]byte{wire.RelayVersion, 0xfe, 0, 0, 0, 0, 0xaa}, // a later relay's push
		mustEncodeRelay(t, expired),
	)
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, engine.MustParseAddress("alice/1"), id, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []wire.EnvelopeStatus
	for len(got) < 2 {
		got = append(got, c.EnvelopeStatuses()...)
		if len(got) >= 2 {
			break
		}
		select {
		case <-c.Wake():
		case <-ctx.Done():
			t.Fatalf("heard %v, want two statuses", got)
		}
	}
	if want := []wire.EnvelopeStatus{taken, expired}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if f, ok := c.RelayFeatures(); !ok || f != wire.FeatureEnvelopeStatus|wire.FeatureEnvelopeLifetime|1<<7 {
		t.Fatalf("RelayFeatures: %v, %v; want envelope status, envelope lifetime and bit 7", f, ok)
	}
	if d, ok := c.EnvelopeLifetime(); !ok || d != 48*time.Hour {
		t.Fatalf("EnvelopeLifetime: %v, %v; want the 48h announced", d, ok)
	}
	if s := c.State(); s.Conn != StateConnected {
		t.Fatalf("state %v after an unknown push, want connected", s)
	}
	if more := c.EnvelopeStatuses(); len(more) != 0 {
		t.Fatalf("statuses returned twice: %v", more)
	}
}
