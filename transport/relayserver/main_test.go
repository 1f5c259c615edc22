package relayserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/parley-chat/parley/transport/relaystore"
	"go.uber.org/goleak"
)

// childEnv, when set to a directory, makes the test binary run a relay with
// its data there instead of the tests: the kill -9 test starts it as a
// child process and kills it. Set to childMemory, the relay keeps its data
// in memory (the flood tests measure its CPU apart from the attackers').
const childEnv = "PARLEY_TRANSPORT_RELAY_CHILD"

// childMemory is the value of childEnv for a relay in memory.
const childMemory = "memory"

// childLimitsEnv, when set, holds the child relay's Limits in JSON.
const childLimitsEnv = "PARLEY_TRANSPORT_RELAY_CHILD_LIMITS"

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
	var st relaystore.Store = relaystore.NewMemory(relaystore.Limits{})
	if dir != childMemory {
		var err error
		if st, err = relaystore.OpenSQLite(context.Background(), dir, relaystore.Limits{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	var lim Limits
	if j := os.Getenv(childLimitsEnv); j != "" {
		if err := json.Unmarshal([]byte(j), &lim); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	srv, err := New(st, Config{Limits: lim})
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
