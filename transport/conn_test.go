package transport

import (
	"testing"

	"github.com/parley-chat/parley/engine"
)

// TestBadURL checks that a client refuses a relay URL it cannot dial
// before it tries to.
func TestBadURL(t *testing.T) {
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	alice := engine.MustParseAddress("alice/1")
	for _, u := range []string{"http://127.0.0.1:1", "127.0.0.1:1", "ws://[::1"} {
		if _, err := NewConn(u, alice, id, ClientOptions{}); err == nil {
			t.Errorf("NewConn(%q) accepted", u)
		}
	}
}
