package relayserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// The blob store end to end: transport.Conn's engine.BlobRelay against a
// real relay over real websockets.

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// upload writes data to id from offset in chunks of chunk bytes.
func upload(tb testing.TB, c *transport.Conn, id wire.BlobID, offset int64, data []byte, chunk int) {
	tb.Helper()
	for len(data) > 0 {
		n := min(chunk, len(data))
		if err := c.PutBlob(ctxT(tb), id, offset, data[:n]); err != nil {
			tb.Fatalf("put %d bytes at %d: %v", n, offset, err)
		}
		offset += int64(n)
		data = data[n:]
	}
}

func wantHeld(tb testing.TB, c *transport.Conn, id wire.BlobID, held, size int64) {
	tb.Helper()
	h, s, err := c.BlobHeld(ctxT(tb), id)
	if err != nil || h != held || s != size {
		tb.Fatalf("BlobHeld: %d of %d, %v; want %d of %d", h, s, err, held, size)
	}
}

// TestBlobUploadResumeDownload: alice uploads in chunks, loses her
// connection halfway, asks what the relay holds and resumes there; bob
// reads the blob by ranges once, and only once, it is complete.
func TestBlobUploadResumeDownload(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	// Over two chunks of the protocol, so that PutBlob and GetBlob split it.
	content := randomBytes(2*wire.MaxBlobChunk + 3000)
	ca := dial(t, r, alice)
	id, err := ca.CreateBlob(ctxT(t), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	// Features come before any reply on a connection.
	if f, ok := ca.RelayFeatures(); !ok || !f.Has(wire.FeatureBlobs) {
		t.Fatalf("features %v (known %v): want blobs", f, ok)
	}
	half := int64(wire.MaxBlobChunk) // the blob's chunk size, from its first write
	upload(t, ca, id, 0, content[:half], wire.MaxBlobChunk)
	cb := dial(t, r, bob)
	if _, err := cb.GetBlob(ctxT(t), id, 0, 10); !errors.Is(err, engine.ErrBlobIncomplete) {
		t.Fatalf("read of a half-uploaded blob: %v, want engine.ErrBlobIncomplete", err)
	}
	ca.Close()

	ca = dial(t, r, alice) // a new connection, as after a crash
	wantHeld(t, ca, id, half, int64(len(content)))
	if err := ca.PutBlob(ctxT(t), id, 0, content[:10]); !errors.Is(err, engine.ErrBlobOffset) {
		t.Fatalf("a write before what the relay holds: %v, want engine.ErrBlobOffset", err)
	}
	var refused *transport.BlobRefusedError
	if err := cb.PutBlob(ctxT(t), id, half, content[half:half+10]); !errors.As(err, &refused) || refused.Reason != wire.BlobNotOwner {
		t.Fatalf("bob writes alice's blob: %v, want a refusal for blob_not_owner", err)
	}
	if err := ca.PutBlob(ctxT(t), id, half, content[half:]); err != nil { // one call, several requests
		t.Fatal(err)
	}
	wantHeld(t, cb, id, int64(len(content)), int64(len(content)))

	got, err := cb.GetBlob(ctxT(t), id, 0, len(content)+100)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read of the whole blob: %d bytes, %v; want the %d uploaded", len(got), err, len(content))
	}
	ranges := []struct{ off, n int }{{0, 1}, {4095, 2}, {int(half) - 5, 10}, {int(half) + 5, wire.MaxBlobChunk}, {len(content) - 7, 100}, {len(content), 5}}
	for _, rg := range ranges {
		got, err := cb.GetBlob(ctxT(t), id, int64(rg.off), rg.n)
		want := content[min(rg.off, len(content)):min(rg.off+rg.n, len(content))]
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("read %d at %d: %d bytes, %v; want %d", rg.n, rg.off, len(got), err, len(want))
		}
	}
	if _, err := cb.GetBlob(ctxT(t), wire.BlobID{1}, 0, 1); !errors.Is(err, engine.ErrBlobNotFound) {
		t.Fatalf("read of an unknown blob: %v, want engine.ErrBlobNotFound", err)
	}
	r.waitMetric(t, `parley_relay_blob_refused_total{reason="not_owner"}`, 1)
	if got := r.metric(t, "parley_relay_blob_bytes_held"); got != float64(len(content)) {
		t.Errorf("parley_relay_blob_bytes_held %v, want %d", got, len(content))
	}
}

// clock is a test clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestBlobExpires: past its lifetime a blob is refused as expired, before
// the sweep and after it, and the sweep frees its quota.
func TestBlobExpires(t *testing.T) {
	clk := &clock{now: time.Now()}
	r := startRelay(t, Config{Now: clk.Now, Limits: Limits{BlobLifetime: time.Hour,
		Blobs: relaystore.BlobLimits{TotalBytes: 100 << 10, MinCharge: 1, ReserveBytes: -1}}})
	alice := newDevice(t, "alice/1")
	c := dial(t, r, alice)
	id, err := c.CreateBlob(ctxT(t), 60<<10)
	if err != nil {
		t.Fatal(err)
	}
	upload(t, c, id, 0, randomBytes(60<<10), 60<<10)
	second, err := c.CreateBlob(ctxT(t), 60<<10)
	if err != nil {
		t.Fatal(err) // charged one byte
	}
	if err := c.PutBlob(ctxT(t), second, 0, randomBytes(60<<10)); !errors.Is(err, engine.ErrBlobQuota) {
		t.Fatalf("a second blob's bytes over the total: %v, want engine.ErrBlobQuota", err)
	}
	// The blob quotas are apart from the envelopes': mail still flows.
	mustSubmit(t, c, envelope(alice, alice, "a full blob store takes no mail away"))
	clk.add(time.Hour)
	if _, err := c.GetBlob(ctxT(t), id, 0, 10); !errors.Is(err, engine.ErrBlobExpired) {
		t.Fatalf("read at the end of the lifetime: %v, want engine.ErrBlobExpired", err)
	}
	r.srv.sweep(context.Background())
	if _, _, err := c.BlobHeld(ctxT(t), id); !errors.Is(err, engine.ErrBlobExpired) {
		t.Fatalf("stat after the sweep: %v, want engine.ErrBlobExpired", err)
	}
	if got := r.metric(t, "parley_relay_blobs_expired_total"); got != 2 {
		t.Fatalf("parley_relay_blobs_expired_total %v, want 2 (the second, refused, expired too)", got)
	}
	third, err := c.CreateBlob(ctxT(t), 60<<10)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutBlob(ctxT(t), third, 0, randomBytes(60<<10)); err != nil {
		t.Fatalf("a blob's bytes once the expired ones were swept: %v", err)
	}
}

// TestBlobQuotaVictim: two addresses from one IP exhaust its blob share by
// uploading, one of them its own share first; an address on another IP
// still uploads.
func TestBlobQuotaVictim(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{Blobs: relaystore.BlobLimits{
		MaxSize: 64 << 10, AddressBytes: 96 << 10, IPBytes: 128 << 10, TotalBytes: 1 << 20, MinCharge: 1}}})
	mallory := mustDialFrom(t, r, newDevice(t, "mallory/1"), "127.0.0.1")
	mallory2 := mustDialFrom(t, r, newDevice(t, "mallory/2"), "127.0.0.1")
	victim := mustDialFrom(t, r, newDevice(t, "victim/1"), "127.0.0.2")
	// fill creates a blob of size bytes and uploads it in one write.
	fill := func(c *transport.Conn, size int64) error {
		id, err := c.CreateBlob(ctxT(t), size)
		if err != nil {
			return err
		}
		return c.PutBlob(ctxT(t), id, 0, randomBytes(int(size)))
	}
	if _, err := mallory.CreateBlob(ctxT(t), 64<<10+1); !errors.Is(err, engine.ErrBlobQuota) {
		t.Fatalf("a blob over the largest: %v, want engine.ErrBlobQuota", err)
	}
	if err := fill(mallory, 64<<10); err != nil {
		t.Fatal(err)
	}
	if err := fill(mallory, 64<<10); !errors.Is(err, engine.ErrBlobQuota) {
		t.Fatalf("past the address's share: %v, want engine.ErrBlobQuota", err)
	}
	if err := fill(mallory2, 63<<10); err != nil {
		t.Fatal(err)
	}
	if err := fill(mallory2, 2<<10); !errors.Is(err, engine.ErrBlobQuota) {
		t.Fatalf("past the IP's share: %v, want engine.ErrBlobQuota", err)
	}
	content := randomBytes(64 << 10)
	id, err := victim.CreateBlob(ctxT(t), int64(len(content)))
	if err != nil {
		t.Fatalf("the victim on another IP: %v", err)
	}
	upload(t, victim, id, 0, content, wire.MinBlobChunk)
	if got, err := victim.GetBlob(ctxT(t), id, 0, len(content)); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the victim reads back %d bytes, %v", len(got), err)
	}
	for reason, want := range map[string]float64{"too_large": 1, "address_share": 1, "ip_share": 1, "store_full": 0} {
		if got := r.metric(t, `parley_relay_blob_refused_total{reason="`+reason+`"}`); got != want {
			t.Errorf("refusals for %s: %v, want %v", reason, got, want)
		}
	}
}

// TestBlobGetPaysItsBytes: a read pays the bytes it asks for to the
// connection's byte bucket, as if it had sent them, so that small requests
// cannot draw large replies for free.
func TestBlobGetPaysItsBytes(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{ByteRate: 1, ByteBurst: wire.MaxRelayMessageSize}})
	c := dial(t, r, newDevice(t, "alice/1"))
	id, err := c.CreateBlob(ctxT(t), 1000)
	if err != nil {
		t.Fatal(err)
	}
	upload(t, c, id, 0, randomBytes(1000), 1000)
	if _, err := c.GetBlob(ctxT(t), id, 0, 200_000); err != nil {
		t.Fatalf("a first read within the burst: %v", err)
	}
	// The client sends a request turned away as rate limited again until
	// its context ends, and then reports the relay's refusal.
	ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
	defer cancel()
	var se *transport.ServerError
	if _, err := c.GetBlob(ctx, id, 0, 200_000); !errors.As(err, &se) || se.Code != wire.ErrorRateLimited || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second read of 200,000 bytes past the burst: %v, want rate limited until the deadline", err)
	}
	if got := r.metric(t, `parley_relay_rate_limited_total{bucket="bytes"}`); got < 1 {
		t.Fatalf("byte bucket refusals %v, want at least 1", got)
	}
}

// TestNoBlobStore: a relay made by New without a blob store announces no
// blobs and turns blob requests down.
func TestNoBlobStore(t *testing.T) {
	r := startStoreRelay(t, "127.0.0.1:0", relaystore.NewMemory(relaystore.Limits{}), Config{})
	c := dial(t, r, newDevice(t, "alice/1"))
	var se *transport.ServerError
	if _, err := c.CreateBlob(ctxT(t), 10); !errors.As(err, &se) || se.Code != wire.ErrorBadRequest {
		t.Fatalf("CreateBlob: %v, want a bad request", err)
	}
	if f, ok := c.RelayFeatures(); !ok || f.Has(wire.FeatureBlobs) || !f.Has(wire.FeatureEnvelopeStatus) {
		t.Fatalf("features %v (known %v): want envelope status alone", f, ok)
	}
}

// TestBlobResumeAfterRelayRestart: on --data, what the relay said it held
// survives its restart, and the upload resumes there.
func TestBlobResumeAfterRelayRestart(t *testing.T) {
	dir := t.TempDir()
	openBlobs := func() *relaystore.SQLiteBlobs {
		b, err := relaystore.OpenSQLiteBlobs(context.Background(), dir, relaystore.BlobLimits{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	blobs := openBlobs()
	r := startSQLiteRelay(t, dir, Config{Blobs: blobs})
	alice := newDevice(t, "alice/1")
	content := randomBytes(3*wire.MinBlobChunk + 5000)
	c := dial(t, r, alice)
	id, err := c.CreateBlob(ctxT(t), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	held := 2 * wire.MinBlobChunk
	upload(t, c, id, 0, content[:held], wire.MinBlobChunk)
	c.Close()
	r.stop()
	blobs.Close()

	r = startSQLiteRelayOn(t, r.addr, dir, Config{Blobs: openBlobs()})
	c = dial(t, r, alice)
	wantHeld(t, c, id, int64(held), int64(len(content)))
	upload(t, c, id, int64(held), content[held:], wire.MinBlobChunk)
	if got, err := dial(t, r, newDevice(t, "bob/1")).GetBlob(ctxT(t), id, 0, len(content)); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("bob reads %d bytes, %v; want the %d uploaded", len(got), err, len(content))
	}
}

// TestBlobPutsWaitForTheByteBucket: an upload faster than the relay's byte
// bucket is slowed down to it, not failed: the client sends a put the relay
// turned away as rate limited again after a pause, and every byte arrives.
func TestBlobPutsWaitForTheByteBucket(t *testing.T) {
	// A burst of one message and 4 MiB/s: eight puts of the largest chunk
	// are over the bucket from the second on.
	r := startRelay(t, Config{Limits: Limits{ByteRate: 4 << 20, ByteBurst: 1}})
	alice := newDevice(t, "alice/1")
	content := randomBytes(8 * wire.MaxBlobChunk)
	c := dial(t, r, alice)
	id, err := c.CreateBlob(ctxT(t), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	upload(t, c, id, 0, content, wire.MaxBlobChunk)
	wantHeld(t, c, id, int64(len(content)), int64(len(content)))
	got, err := c.GetBlob(ctxT(t), id, 0, len(content))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the blob read back differs from what was put (%v)", err)
	}
	var m dto.Metric
	if err := r.srv.metrics.rateLimited.WithLabelValues(bucketBytes).Write(&m); err != nil || m.GetCounter().GetValue() == 0 {
		t.Fatalf("no message was rate limited: the test did not exercise the retry")
	}
}
