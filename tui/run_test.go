package tui

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
)

// syncBuffer is an output the program writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func openTestClient(t *testing.T, net *enginetest.Network, addr engine.Address) *engine.Client {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), addr.User)
	st, err := store.Create(ctx, dir, demoPassphrase, store.Options{KDF: demoKDF, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CreateProfile(ctx, st, addr, "memory://", nil, testNow); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = store.Open(ctx, dir, demoPassphrase, store.Options{Now: fixedClock}); err != nil {
		t.Fatal(err)
	}
	c, err := engine.Open(ctx, engine.Config{Store: st, Relay: net.Endpoint(addr), Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRun: parley tui on one profile receives in the background (bob's
// message shows up pending), writes its log to the file asked for, and
// ctrl+c ends it with no error and no goroutine left.
func TestRun(t *testing.T) {
	net := enginetest.NewNetwork()
	alice := openTestClient(t, net, demoAlice)
	bob := openTestClient(t, net, demoBob)
	if err := alice.RefreshPreKeys(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Send(context.Background(), demoAlice, []byte("hi alice")); err != nil {
		t.Fatal(err)
	}
	in, keys := io.Pipe()
	out := &syncBuffer{}
	logFile := filepath.Join(t.TempDir(), "state", "parley.log")
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), alice, Options{
			Input: in, Output: out, NoAltScreen: true, LogFile: logFile, Now: fixedClock,
			ConnState: func() string { return "connected" }, Peer: "bob/1",
		})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "1 waiting") {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery never showed; output:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	keys.Write([]byte{0x03}) // ctrl+c
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run after ctrl+c: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl+c did not end Run")
	}
	keys.Close()
	b, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(b), "delivery") {
		t.Fatalf("log file: %v\n%s", err, b)
	}
	if strings.Contains(out.String(), "level=") {
		t.Fatal("a log record reached the screen")
	}
}

// TestRunContextEnds: cancelling the context ends Run cleanly.
func TestRunContextEnds(t *testing.T) {
	net := enginetest.NewNetwork()
	alice := openTestClient(t, net, demoAlice)
	in, keys := io.Pipe()
	defer keys.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, alice, Options{Input: in, Output: io.Discard, NoAltScreen: true, Logger: discard})
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end Run")
	}
}
