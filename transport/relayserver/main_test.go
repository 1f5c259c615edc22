package relayserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/parley-chat/parley/transport/relaystore"
	"go.uber.org/goleak"
)

// childEnv, when set to a directory, makes the test binary run a relay with
// its data there instead of the tests: the kill -9 test starts it as a
// child process and kills it.
const childEnv = "PARLEY_TRANSPORT_RELAY_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		runRelayChild(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

// runRelayChild serves a relay on a free loopback port and prints its URL
// first, as `parley relay` does, until it is killed.
func runRelayChild(dir string) {
	st, err := relaystore.OpenSQLite(context.Background(), dir, relaystore.Limits{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := New(st, Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on ws://%s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
