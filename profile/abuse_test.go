package profile

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/wire"
)

// What a hostile client of the relay does to the devices on it, end to
// end: real relay on loopback, real profiles on disk.

func startTestRelay(t *testing.T, st relaystore.Store, cfg relayserver.Config) string {
	t.Helper()
	srv, err := relayserver.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "ws://" + ln.Addr().String()
}

func newTestProfile(t *testing.T, addr, url string, policy engine.Policy) *Profile {
	t.Helper()
	ctx := context.Background()
	p, err := Create(ctx, filepath.Join(t.TempDir(), "p"), engine.MustParseAddress(addr), url,
		Options{Passphrase: []byte("x"), Store: cheap, Connect: ConnectNow, Engine: engine.Config{Policy: policy}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Client.RefreshPreKeys(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// stranger is a raw client of the relay with an identity of its own.
func stranger(t *testing.T, url, addr string) (*transport.Conn, engine.Address) {
	t.Helper()
	a := engine.MustParseAddress(addr)
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, url, a, id, transport.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, a
}

// TestDrainedPoolIsToppedUp: strangers take one-time prekeys from a device's
// pool until it runs low; the relay tells the device, whose loop tops the
// pool up against the relay's count (it still holds every private half, so
// counting its own keys would never see the drain).
func TestDrainedPoolIsToppedUp(t *testing.T) {
	st := relaystore.NewMemory(relaystore.Limits{})
	url := startTestRelay(t, st, relayserver.Config{Limits: relayserver.Limits{TargetOneTimeBurst: 1000, FetchRate: -1, TargetFetchRate: -1}})
	victim := newTestProfile(t, "victim/1", url, engine.Policy{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go victim.Client.Run(ctx)
	pool := func() int {
		n, err := st.OneTimePreKeys(context.Background(), "victim/1")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := pool()
	if start != engine.OneTimePreKeyBatch {
		t.Fatalf("pool after publishing: %d", start)
	}
	c, _ := stranger(t, url, "drainer/1")
	for range start - engine.OneTimePreKeyLow + 5 {
		if _, err := c.FetchBundle(ctx, victim.Client.Self()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for pool() < engine.OneTimePreKeyLow {
		if time.Now().After(deadline) {
			t.Fatalf("the pool stayed at %d: the device did not top it up", pool())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dirSize is the total size of the files in dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestFloodKeepsTheProfileSmall: a stranger floods bob with 250 kB of junk
// per envelope, as much as the relay lets one sender put in his mailbox,
// twice. Alice's message still gets through; bob's quarantine keeps only
// its bound of the junk (saying so), and his profile stays well under 40
// MiB.
func TestFloodKeepsTheProfileSmall(t *testing.T) {
	// The relay's room for strangers is as large as the mailbox: this test
	// is about bob's client, and wants the whole sender's share of junk
	// (transport/relayserver's room_test.go tests the room).
	room := relaystore.Limits{StrangerBytes: relaystore.DefaultMailboxBytes, StrangerIPBytes: relaystore.DefaultMailboxBytes}
	url := startTestRelay(t, relaystore.NewMemory(room), relayserver.Config{Limits: relayserver.Limits{Limits: room, MessageRate: -1, ByteRate: -1}})
	bob := newTestProfile(t, "bob/1", url, engine.Policy{})
	alice := newTestProfile(t, "alice/1", url, engine.Policy{})
	mallory, addr := stranger(t, url, "mallory/1")
	ctx := context.Background()
	junk := make([]byte, 250<<10)
	evicted := 0
	for round := range 2 {
		sent := 0
		for {
			env := wire.Envelope{Type: wire.EnvelopeRatchet, Sender: addr.String(), Recipient: "bob/1", Payload: junk}
			rand.Read(env.ID[:])
			rand.Read(junk[:64])
			err := mallory.Submit(ctx, env)
			var re *transport.RefusedError
			if errors.As(err, &re) && re.Reason == wire.RefuseSenderQuota {
				break
			}
			if err != nil {
				t.Fatalf("flood %d, envelope %d: %v", round, sent, err)
			}
			sent++
		}
		if sent < 40 {
			t.Fatalf("the relay took only %d envelopes of junk", sent)
		}
		if _, err := alice.Client.Send(ctx, bob.Client.Self(), []byte(fmt.Sprintf("through the flood %d", round))); err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < sent+1 {
			res, err := bob.Client.Sync(ctx)
			if err != nil {
				t.Fatalf("bob syncs: %v", err)
			}
			got += len(res.Received)
			if len(res.Received) == 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	drain:
		for {
			select {
			case e := <-bob.Client.Events():
				if e.Kind == engine.EventQuarantineEvicted {
					evicted += e.Count
				}
			default:
				break drain
			}
		}
	}
	in, err := bob.Client.PendingInbound(ctx, engine.PageQuery{Limit: 10})
	if err != nil || len(in) != 2 {
		t.Fatalf("bob's pending: %d, %v; want alice's two messages", len(in), err)
	}
	if evicted == 0 {
		t.Fatal("no quarantine_evicted event: the quarantine kept every junk envelope")
	}
	if err := bob.st.Scrub(ctx); err != nil {
		t.Fatal(err)
	}
	if n := dirSize(t, bob.Dir); n > 20<<20 {
		t.Fatalf("bob's profile holds %d MiB after two floods, want well under 40", n>>20)
	} else {
		t.Logf("bob's profile after two floods of %d kB envelopes: %.1f MiB", len(junk)>>10, float64(n)/(1<<20))
	}
}
