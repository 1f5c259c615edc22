package relayserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// countingStore counts every call made to the store it wraps.
type countingStore struct {
	relaystore.Store
	calls, stats atomic.Int64
}

func (c *countingStore) RelayID(ctx context.Context) ([32]byte, error) {
	c.calls.Add(1)
	return c.Store.RelayID(ctx)
}

func (c *countingStore) Register(ctx context.Context, a string, k [32]byte, replace bool, ip string) (bool, error) {
	c.calls.Add(1)
	return c.Store.Register(ctx, a, k, replace, ip)
}

func (c *countingStore) Registered(ctx context.Context, a string) ([32]byte, error) {
	c.calls.Add(1)
	return c.Store.Registered(ctx, a)
}

func (c *countingStore) PutBundle(ctx context.Context, a string, k [32]byte, b wire.Bundle, otk []wire.OneTimePreKeyPublic) (int, error) {
	c.calls.Add(1)
	return c.Store.PutBundle(ctx, a, k, b, otk)
}

func (c *countingStore) TakeBundle(ctx context.Context, a string, oneTime bool) (wire.Bundle, int, error) {
	c.calls.Add(1)
	return c.Store.TakeBundle(ctx, a, oneTime)
}

func (c *countingStore) OneTimePreKeys(ctx context.Context, a string) (int, error) {
	c.calls.Add(1)
	return c.Store.OneTimePreKeys(ctx, a)
}

func (c *countingStore) Append(ctx context.Context, r string, env []byte, n int, from relaystore.Origin) ([]uint64, error) {
	c.calls.Add(1)
	return c.Store.Append(ctx, r, env, n, from)
}

func (c *countingStore) AppendBatch(ctx context.Context, items []relaystore.AppendItem) []relaystore.AppendResult {
	c.calls.Add(1)
	return c.Store.AppendBatch(ctx, items)
}

func (c *countingStore) Lease(ctx context.Context, r, h string, max int, now, until time.Time) ([]relaystore.Row, error) {
	c.calls.Add(1)
	return c.Store.Lease(ctx, r, h, max, now, until)
}

func (c *countingStore) Release(ctx context.Context, r, h string) error {
	c.calls.Add(1)
	return c.Store.Release(ctx, r, h)
}

func (c *countingStore) Ack(ctx context.Context, r string, rows []uint64) ([]relaystore.Removed, error) {
	c.calls.Add(1)
	return c.Store.Ack(ctx, r, rows)
}

func (c *countingStore) Expire(ctx context.Context, now, before time.Time, max int) ([]relaystore.Removed, error) {
	c.calls.Add(1)
	return c.Store.Expire(ctx, now, before, max)
}

func (c *countingStore) Stats(ctx context.Context) (relaystore.Stats, error) {
	c.calls.Add(1)
	c.stats.Add(1)
	return c.Store.Stats(ctx)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthzNeverTouchesTheStore (finding 3): a thousand /healthz requests
// from 127.0.0.2 make no call to the store (a store that counts its calls
// stands in for the million registrations), and /metrics makes at most one
// Stats call per scrape, which every backend answers from running totals.
func TestHealthzNeverTouchesTheStore(t *testing.T) {
	cs := &countingStore{Store: relaystore.NewMemory(relaystore.Limits{})}
	r := startStoreRelay(t, "127.0.0.1:0", cs, Config{Limits: Limits{SweepInterval: time.Hour, MaxSocketsPerIP: 2000}})
	before := cs.calls.Load()
	for range 1000 {
		holdHealthzOnce(t, r, "127.0.0.2")
	}
	if n := cs.calls.Load() - before; n != 0 {
		t.Fatalf("1000 /healthz made %d store calls, want 0", n)
	}
	for range 20 {
		if code, _ := get(t, "http://"+r.addr+"/metrics"); code != http.StatusOK {
			t.Fatalf("/metrics: %d", code)
		}
	}
	if n := cs.stats.Load(); n > 20 {
		t.Fatalf("20 scrapes made %d Stats calls, want at most 20", n)
	}
	// The client from 127.0.0.1 is served meanwhile.
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
	mustSubmit(t, ca, envelope(alice, bob, "hi"))
	receiveN(t, cb, 1)
}

// holdHealthzOnce asks /healthz on a connection of its own from ip.
func holdHealthzOnce(t *testing.T, r *testRelay, ip string) {
	t.Helper()
	c, ok := holdHealthz(t, r, ip)
	c.Close()
	if !ok {
		t.Fatal("/healthz did not answer 200")
	}
}

// TestAdminListener (finding 3): with SeparateAdmin (parley relay
// --admin-listen), /healthz and /metrics leave the relay's listener for the
// admin handler.
func TestAdminListener(t *testing.T) {
	r := startRelay(t, Config{SeparateAdmin: true})
	for _, p := range []string{"/healthz", "/metrics"} {
		if code, _ := get(t, "http://"+r.addr+p); code != http.StatusNotFound {
			t.Errorf("%s on the relay's listener: %d, want 404", p, code)
		}
	}
	admin := httptest.NewServer(r.srv.AdminHandler())
	defer admin.Close()
	if code, body := get(t, admin.URL+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz on the admin listener: %d %q", code, body)
	}
	if code, body := get(t, admin.URL+"/metrics"); code != http.StatusOK || !strings.Contains(body, "parley_relay_sockets") {
		t.Errorf("/metrics on the admin listener: %d", code)
	}
}
