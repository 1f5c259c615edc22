package cli

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/profile"
	"github.com/parley-chat/parley/store"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/wire"
)

// TestTUILinkingJoinsTheMailbox: the devices panel's way to the relay,
// as parley tui fills it, on a real relay on 127.0.0.1:0 that keeps
// device lists. A code naming another relay is refused before anything is
// joined; the new device's code (its side driven by the engine's link API
// over its own provisioning mailbox) is joined, the two sides show the
// same six digits, and the holder's Finish links alice/2, whose profile
// is made from the package.
func TestTUILinkingJoinsTheMailbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := relayserver.NewMemory(relayserver.Config{DeviceLists: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		if err := errors.Join(srv.Shutdown(sctx), <-served); err != nil {
			t.Errorf("stop the relay: %v", err)
		}
	})
	url := "ws://" + ln.Addr().String()
	opts := profile.Options{Passphrase: []byte("secret"), Connect: profile.ConnectNow,
		Store: store.Options{KDF: store.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}}}
	p, err := profile.Create(ctx, filepath.Join(t.TempDir(), "alice"), engine.MustParseAddress("alice/1"), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Client.PublishDeviceList(ctx); err != nil {
		t.Fatal(err)
	}
	linking := tuiLinking(p)

	n, err := engine.NewLinkNew(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := n.Code("ws://127.0.0.1:1", wire.MailboxID{})
	if _, err := linking.Join(ctx, elsewhere); err == nil || !strings.Contains(err.Error(), "uses the relay ws://127.0.0.1:1") {
		t.Fatalf("joining a code of another relay: %v, want a refusal naming it", err)
	}

	newBox, err := transport.OpenProvisioning(ctx, url, wire.MailboxID{}, transport.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer newBox.Close()
	if err := newBox.Send(ctx, n.Hello()); err != nil {
		t.Fatal(err)
	}
	code := n.Code(url, newBox.Mailbox())
	box, err := linking.Join(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	host, err := p.Client.BeginLink(ctx, code, box)
	if err != nil {
		t.Fatal(err)
	}
	offer, err := newBox.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check, o, err := n.TakeOffer(offer)
	if err != nil {
		t.Fatal(err)
	}
	if check != host.Check() {
		t.Fatalf("the screens show %s and %s", host.Check(), check)
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	if err := newBox.Send(ctx, n.Join(id)); err != nil {
		t.Fatal(err)
	}
	newSide := make(chan error, 1)
	go func() {
		msg, err := newBox.Receive(ctx)
		if err != nil {
			newSide <- err
			return
		}
		pkg, err := n.TakePackage(msg)
		if err != nil {
			newSide <- err
			return
		}
		if _, err := profile.CreateLinked(ctx, filepath.Join(t.TempDir(), "alice2"), url, id, o.Number, pkg, engine.HistoryChoice{Mode: engine.HistoryAll}, opts); err != nil {
			newSide <- err
			return
		}
		newSide <- newBox.Send(ctx, n.Done())
	}()
	res, err := host.Finish(ctx, engine.HistoryChoice{Mode: engine.HistoryAll}, linking.AcceptAll(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-newSide; err != nil {
		t.Fatalf("the new device's side: %v", err)
	}
	if res.Device != engine.MustParseAddress("alice/2") || res.List.Generation != 2 {
		t.Fatalf("linked %s at generation %d, want alice/2 at 2", res.Device, res.List.Generation)
	}
}
