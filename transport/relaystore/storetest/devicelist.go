package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/parley-chat/parley/transport/relaystore"
)

// heldList is a list at generation gen whose digest is made from tag, so
// that two lists of one generation differ.
func heldList(gen uint64, parent [32]byte, tag byte) relaystore.HeldDeviceList {
	return relaystore.HeldDeviceList{Generation: gen, Parent: parent, Digest: [32]byte{byte(gen), tag},
		Encoded: []byte(fmt.Sprintf("list %d %d", gen, tag))}
}

// testDeviceLists: the chain moves forward only by compare-and-set.
func testDeviceLists(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		if _, err := s.DeviceList(ctx, "alice"); !errors.Is(err, relaystore.ErrNoDeviceList) {
			t.Fatalf("DeviceList of nobody = %v, want ErrNoDeviceList", err)
		}
		g1 := heldList(1, [32]byte{}, 0)
		stale := func(name string, l relaystore.HeldDeviceList) {
			t.Helper()
			if err := s.PutDeviceList(ctx, "alice", l, "192.0.2.1"); !errors.Is(err, relaystore.ErrDeviceListStale) {
				t.Fatalf("%s: %v, want ErrDeviceListStale", name, err)
			}
		}
		stale("generation 2 with none held", heldList(2, g1.Digest, 0))
		if err := s.PutDeviceList(ctx, "alice", g1, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
		stale("generation 1 again", heldList(1, [32]byte{}, 1))
		stale("generation 2 naming another parent", heldList(2, [32]byte{9}, 0))
		stale("generation 3 after 1", heldList(3, g1.Digest, 0))
		g2 := heldList(2, g1.Digest, 0)
		if err := s.PutDeviceList(ctx, "alice", g2, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
		got, err := s.DeviceList(ctx, "alice")
		if err != nil || got.Generation != 2 || got.Digest != g2.Digest || got.Parent != g1.Digest || string(got.Encoded) != string(g2.Encoded) {
			t.Fatalf("DeviceList = %+v, %v; want generation 2", got, err)
		}
		if _, err := s.DeviceList(ctx, "alicf"); !errors.Is(err, relaystore.ErrNoDeviceList) {
			t.Fatalf("DeviceList of another user = %v, want ErrNoDeviceList", err)
		}
		// Eight publishers race from generation 2: exactly one wins.
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { errs[i] = s.PutDeviceList(ctx, "alice", heldList(3, g2.Digest, byte(i+1)), "192.0.2.1") })
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("publishers %d and %d both stored generation 3", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, relaystore.ErrDeviceListStale):
				t.Fatalf("publisher %d: %v, want ErrDeviceListStale", i, err)
			}
		}
		got, err = s.DeviceList(ctx, "alice")
		if won < 0 || err != nil || got.Digest != heldList(3, g2.Digest, byte(won+1)).Digest {
			t.Fatalf("after the race: winner %d, held %+v, %v", won, got, err)
		}
	})
}

// testDeviceListQuota: one IP starts at most DeviceListsPerIP lists; past
// it, another IP (the victim) still starts its own, and the first IP's
// lists still move forward.
func testDeviceListQuota(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{DeviceListsPerIP: 3}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		const flooder, victim = "198.51.100.7", "203.0.113.9"
		for i := range 3 {
			if err := s.PutDeviceList(ctx, fmt.Sprint("sybil", i), heldList(1, [32]byte{}, 0), flooder); err != nil {
				t.Fatalf("list %d of the flooder: %v", i, err)
			}
		}
		if err := s.PutDeviceList(ctx, "sybil3", heldList(1, [32]byte{}, 0), flooder); !errors.Is(err, relaystore.ErrDeviceListQuota) {
			t.Fatalf("fourth list of the flooder: %v, want ErrDeviceListQuota", err)
		}
		if _, err := s.DeviceList(ctx, "sybil3"); !errors.Is(err, relaystore.ErrNoDeviceList) {
			t.Fatalf("the refused list is held: %v", err)
		}
		if err := s.PutDeviceList(ctx, "victim", heldList(1, [32]byte{}, 0), victim); err != nil {
			t.Fatalf("the victim's first list: %v", err)
		}
		if err := s.PutDeviceList(ctx, "sybil0", heldList(2, heldList(1, [32]byte{}, 0).Digest, 0), flooder); err != nil {
			t.Fatalf("a later generation from the flooder's IP: %v", err)
		}
	})
}
