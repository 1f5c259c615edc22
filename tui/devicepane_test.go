package tui

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"
	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/themes"
	"github.com/parley-chat/parley/wire"
)

// TestDevicesPanel: alt+8 lists the devices of alice's account (this one
// marked, holding the account key), says how a device is linked, refuses
// to remove this device, and removes alice/2 once asked and confirmed:
// the engine's list then revokes it and the panel shows it removed.
func TestDevicesPanel(t *testing.T) {
	ctx := context.Background()
	net := enginetest.NewNetwork()
	alice := openTestClient(t, net, demoAlice)
	acc, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.SetDeviceList(acc.List); err != nil {
		t.Fatal(err)
	}
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.AddDevice(ctx, engine.DeviceEntryFor(id, "alice", acc.Key.Public(), 2, testNow.Unix())); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	m := New(ctx, themes.MustGet("dark"), discard, fixedClock)
	m.AddPane(demoAlice, &Attachment{Client: alice, Events: alice.Events(), Done: done, State: func() string { return "connected" }},
		PaneOptions{ChatFirst: true, LinkCommand: "parley link --profile DIR --relay memory://"})
	var screen atomic.Pointer[string]
	tm := teatest.NewTestModel(t, screenProbe{Model: m, screen: &screen}, teatest.WithInitialTermSize(160, 30))
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		close(done)
	})
	r := &requestRun{t: t, tm: tm, screen: &screen}
	r.waitFor("relay connected")
	r.keys(alt('8'))
	r.waitFor("Devices", "2 active · list generation 2", "alice/1 · active", "this device, holds the account key", "alice/2 · active")
	r.keys(runes("l"))
	r.waitFor("to link a device: run parley link --profile DIR --relay memory:// on it")
	r.keys(runes("r"))
	r.waitFor("this device cannot remove itself")
	r.keys(runes("j"), runes("r"))
	r.waitFor("remove alice/2?")
	r.keys(runes("n"))
	r.waitFor("kept alice/2")
	r.keys(runes("r"))
	r.waitFor("remove alice/2?")
	r.keys(runes("y"))
	s := r.waitFor("removed alice/2 (device list generation 3)", "alice/2 · removed", "1 active · list generation 3")
	if strings.Contains(s, "alice/2 · active") {
		t.Fatalf("alice/2 still shows active:\n%s", s)
	}
	after, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := engine.ActiveAddresses(after.List); len(got) != 1 || got[0] != demoAlice || after.List.Entries[1].State != wire.DeviceRevoked {
		t.Fatalf("the account after the removal: %+v, want alice/2 revoked", after.List.Entries)
	}
}
