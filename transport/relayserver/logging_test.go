package relayserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
)

// failingStore fails every append with an error that names the mailbox, as
// the backends' errors do.
type failingStore struct{ relaystore.Store }

func (f failingStore) Append(_ context.Context, recipient string, _ []byte, _ int, _ relaystore.Origin) ([]uint64, error) {
	return nil, fmt.Errorf("append to %s: %w", recipient, errors.New("disk on fire"))
}

func (f failingStore) AppendBatch(ctx context.Context, items []relaystore.AppendItem) []relaystore.AppendResult {
	out := make([]relaystore.AppendResult, len(items))
	for i, it := range items {
		out[i].Rows, out[i].Err = f.Append(ctx, it.Recipient, it.Env, it.Copies, it.From)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the relay's goroutines.
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

// TestLogsNameNoAddress (finding 7): the relay logs a storage failure
// (to the operator's stderr in parley relay) with its cause, and never the
// addresses involved.
func TestLogsNameNoAddress(t *testing.T) {
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := failingStore{relaystore.NewMemory(relaystore.Limits{})}
	r := startStoreRelay(t, "127.0.0.1:0", st, Config{Logger: log})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca := dial(t, r, alice)
	dial(t, r, bob)
	err := ca.Submit(ctxT(t), envelope(alice, bob, "hi"))
	var se *transport.ServerError
	if !errors.As(err, &se) {
		t.Fatalf("Submit: %v, want the relay's internal error", err)
	}
	logged := out.String()
	if !strings.Contains(logged, "disk on fire") {
		t.Fatalf("the failure's cause is not logged:\n%s", logged)
	}
	for _, a := range []string{"alice", "bob"} {
		if strings.Contains(logged, a) {
			t.Fatalf("the log names %s:\n%s", a, logged)
		}
	}
}
