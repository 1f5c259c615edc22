package demo

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/wire"
)

// The demo's profiles in tests: package profile on a real relay on
// 127.0.0.1:0, as cli wires them.

var (
	demoPassphrase = []byte("parley demo")
	demoKDF        = store.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}
)

type testProfiles struct{ url string }

// startTestRelay runs a relay that lets a new identity take over an address
// until the test ends.
func startTestRelay(t testing.TB, now func() time.Time) testProfiles {
	t.Helper()
	srv, err := relayserver.NewMemory(relayserver.Config{AllowReregister: true, DeviceLists: true,
		Limits: relayserver.Limits{LeaseTimeout: 10 * time.Minute}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := errors.Join(srv.Shutdown(ctx), <-done); err != nil {
			t.Errorf("stop the relay: %v", err)
		}
	})
	return testProfiles{url: "ws://" + ln.Addr().String()}
}

func (tp testProfiles) options(o OpenOptions) profile.Options {
	return profile.Options{Passphrase: demoPassphrase, Connect: profile.ConnectNow, Wrap: o.Wrap, Engine: o.Engine,
		Transport: transport.ClientOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second},
		Store:     store.Options{KDF: demoKDF, Now: o.Engine.Now}}
}

func (tp testProfiles) Create(ctx context.Context, dir string, self engine.Address, o OpenOptions) (Profile, error) {
	p, err := profile.Create(ctx, dir, self, tp.url, tp.options(o))
	if err != nil {
		return nil, err
	}
	return testProfile{p}, nil
}

func (tp testProfiles) Open(ctx context.Context, dir string, o OpenOptions) (Profile, error) {
	p, err := profile.Open(ctx, dir, tp.options(o))
	if err != nil {
		return nil, err
	}
	return testProfile{p}, nil
}

type testProfile struct{ p *profile.Profile }

func (t testProfile) Engine() *engine.Client { return t.p.Client }
func (t testProfile) RelayState() string     { return t.p.RelayState().Conn.String() }
func (t testProfile) Close() error           { return t.p.Close() }

func (tp testProfiles) CreateLinked(ctx context.Context, dir string, id *engine.Identity, number uint32, pkg wire.LinkPackageData, o OpenOptions) (Profile, error) {
	if _, err := profile.CreateLinked(ctx, dir, tp.url, id, number, pkg, engine.HistoryChoice{Mode: engine.HistoryAll}, tp.options(o)); err != nil {
		return nil, err
	}
	return tp.Open(ctx, dir, o)
}
