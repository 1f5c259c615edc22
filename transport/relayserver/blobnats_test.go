package relayserver

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
	"github.com/parley-chat/parley/wire"
)

// TestBlobAcrossNATSRelays: two relays on one JetStream cluster share one
// blob store. Alice uploads half a blob through one, resumes through the
// other, and bob downloads it through the first; the sweep of either
// expires it for both.
func TestBlobAcrossNATSRelays(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	clk := &clock{now: time.Now()}
	open := func() *testRelay {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := natsstore.OpenBlobs(ctx, st, 1, relaystore.BlobLimits{})
		if err != nil {
			st.Close()
			t.Fatal(err)
		}
		return startStoreRelay(t, "127.0.0.1:0", st, Config{Blobs: blobs, Now: clk.Now, Limits: Limits{BlobLifetime: time.Hour}})
	}
	ra, rb := open(), open()
	alice := newDevice(t, "alice/1")
	const chunk = wire.MinBlobChunk
	content := randomBytes(5*chunk + 1000)
	ca := dial(t, ra, alice)
	id, err := ca.CreateBlob(ctxT(t), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	upload(t, ca, id, 0, content[:2*chunk], chunk)
	ca.Close()
	ca = dial(t, rb, alice)
	wantHeld(t, ca, id, 2*chunk, int64(len(content)))
	upload(t, ca, id, 2*chunk, content[2*chunk:], chunk)
	cb := dial(t, ra, newDevice(t, "bob/1"))
	// The largest read, across five chunks.
	if got, err := cb.GetBlob(ctxT(t), id, chunk/2, wire.MaxBlobChunk); err != nil || !bytes.Equal(got, content[chunk/2:chunk/2+wire.MaxBlobChunk]) {
		t.Fatalf("bob reads a range through the other relay: %d bytes, %v", len(got), err)
	}
	clk.add(time.Hour)
	rb.srv.sweep(context.Background())
	if _, err := cb.GetBlob(ctxT(t), id, 0, 1); !errors.Is(err, engine.ErrBlobExpired) {
		t.Fatalf("read after the other relay's sweep: %v, want engine.ErrBlobExpired", err)
	}
	if got := rb.metric(t, "parley_relay_blobs"); got != 0 {
		t.Fatalf("parley_relay_blobs %v after the sweep, want 0", got)
	}
}
