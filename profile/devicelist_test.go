package profile

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
)

// waitPublished runs sync rounds of p until its device list went out on the
// current connection, and returns the last attempt's error.
func waitPublished(t *testing.T, p *Profile) error {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.Client.Sync(ctx)
		ok, err := p.Client.DeviceListPublished()
		if ok || err != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeviceListPublishedOnConnect: a device connecting to a relay with
// --device-lists publishes generation 1 of its account's list, which the
// relay then hands to anyone; a relay without them is left alone.
func TestDeviceListPublishedOnConnect(t *testing.T) {
	ctx := context.Background()
	url := startTestRelay(t, relaystore.NewMemory(relaystore.Limits{}), relayserver.Config{DeviceLists: true})
	alice := newTestProfile(t, "alice/1", url, engine.Policy{})
	if err := waitPublished(t, alice); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if ok, _ := alice.Client.DeviceListPublished(); !ok {
		t.Fatal("the list was not published on the connection")
	}
	bob, _ := stranger(t, url, "bob/1")
	got, err := bob.FetchDeviceList(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	acc, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 || got.AccountKey != acc.List.AccountKey {
		t.Errorf("relay holds generation %d of key %x, want generation 1 of %x", got.Generation, got.AccountKey[:4], acc.List.AccountKey[:4])
	}

	plain := startTestRelay(t, relaystore.NewMemory(relaystore.Limits{}), relayserver.Config{})
	carol := newTestProfile(t, "carol/1", plain, engine.Policy{})
	if _, err := carol.Client.Sync(ctx); err != nil {
		t.Fatalf("sync with a relay that keeps no lists: %v", err)
	}
	if ok, err := carol.Client.DeviceListPublished(); ok || err != nil {
		t.Errorf("DeviceListPublished = %v, %v with a relay that keeps no lists; want false, nil", ok, err)
	}
}

// TestDeviceListNewerAdopted: the relay holds a later generation that the
// account signed (device 1 published it and crashed before storing it):
// the device takes it in its profile's place instead of failing.
func TestDeviceListNewerAdopted(t *testing.T) {
	ctx := context.Background()
	url := startTestRelay(t, relaystore.NewMemory(relaystore.Limits{}), relayserver.Config{DeviceLists: true})
	alice := newTestProfile(t, "alice/1", url, engine.Policy{})
	if err := waitPublished(t, alice); err != nil {
		t.Fatal(err)
	}
	acc, err := alice.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Generation 2: device 1 and a second device, published by hand.
	id2, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	next, err := engine.NextDeviceList(acc.Key, acc.List, engine.DeviceEntryFor(id2, "alice", acc.List.AccountKey, 2, time.Now().Unix()))
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.relay.PublishDeviceList(ctx, next); err != nil {
		t.Fatal(err)
	}
	// The relay now holds generation 2; a fresh connection publishes 1,
	// hears stale and adopts 2.
	alice.Close()
	again, err := Open(ctx, alice.Dir, Options{Passphrase: []byte("x"), Connect: ConnectNow})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := waitPublished(t, again); err != nil {
		t.Fatalf("publish after the relay moved on: %v", err)
	}
	got, err := again.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.List.Generation != 2 || len(got.List.Entries) != 2 {
		t.Errorf("profile holds generation %d with %d devices, want 2 with 2", got.List.Generation, len(got.List.Entries))
	}
	// A list not signed by the account is never adopted.
	forged := next
	forged.Generation = 3
	if engine.DecideAdoptDeviceList(got.List, forged, engine.MustParseAddress("alice/1"), got.List.Entries[0].SigningKey) {
		t.Error("a list with a broken account signature would be adopted")
	}
}
