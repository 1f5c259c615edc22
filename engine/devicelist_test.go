package engine_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// deviceKit holds an account key and device identities drawn from a fixed
// seed.
type deviceKit struct {
	t       *testing.T
	account *engine.AccountKey
	devices map[uint32]*engine.Identity
	rng     *rand.ChaCha8
}

func newDeviceKit(t *testing.T) *deviceKit {
	rng := rand.NewChaCha8([32]byte{33})
	acc, err := engine.NewAccountKey(rng)
	if err != nil {
		t.Fatal(err)
	}
	return &deviceKit{t: t, account: acc, devices: map[uint32]*engine.Identity{}, rng: rng}
}

func (k *deviceKit) entry(n uint32) wire.DeviceEntry {
	id, ok := k.devices[n]
	if !ok {
		var err error
		if id, err = engine.NewIdentity(k.rng); err != nil {
			k.t.Fatal(err)
		}
		k.devices[n] = id
	}
	return engine.DeviceEntryFor(id, "alice", k.account.Public(), n, 1700000000+int64(n))
}

// next signs the list after prev with entries.
func (k *deviceKit) next(prev *wire.DeviceList, entries ...wire.DeviceEntry) wire.DeviceList {
	l := wire.DeviceList{User: "alice", Generation: 1, Entries: entries}
	if prev != nil {
		d, err := engine.DeviceListDigest(*prev)
		if err != nil {
			k.t.Fatal(err)
		}
		l.Generation, l.Parent = prev.Generation+1, d
	}
	l, err := k.account.SignDeviceList(l)
	if err != nil {
		k.t.Fatal(err)
	}
	return l
}

func revoked(e wire.DeviceEntry) wire.DeviceEntry { e.State = wire.DeviceRevoked; return e }

func TestVerifyDeviceListAccepts(t *testing.T) {
	k := newDeviceKit(t)
	g1 := k.next(nil, k.entry(1))
	if err := engine.VerifyDeviceList(g1, nil); err != nil {
		t.Fatalf("generation 1: %v", err)
	}
	g2 := k.next(&g1, k.entry(1), k.entry(2))
	if err := engine.VerifyDeviceList(g2, &g1); err != nil {
		t.Fatalf("generation 2 adds device 2: %v", err)
	}
	g3 := k.next(&g2, k.entry(1), revoked(k.entry(2)), k.entry(3))
	if err := engine.VerifyDeviceList(g3, &g2); err != nil {
		t.Fatalf("generation 3 revokes 2 and adds 3: %v", err)
	}
	var eight []wire.DeviceEntry
	for n := uint32(1); n <= engine.MaxDevicesPerAccount; n++ {
		eight = append(eight, k.entry(n))
	}
	if err := engine.VerifyDeviceList(k.next(nil, eight...), nil); err != nil {
		t.Fatalf("%d active devices: %v", engine.MaxDevicesPerAccount, err)
	}
	id := k.devices[1]
	first, err := engine.FirstDeviceList(k.account, id, engine.MustParseAddress("alice/1"), 1700000001)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.VerifyDeviceList(first, nil); err != nil || !engine.ActiveDevice(first, 1, id.Public().SigningKey) {
		t.Fatalf("FirstDeviceList: %v", err)
	}
}

// TestVerifyDeviceListRules breaks each rule once; the error names it.
func TestVerifyDeviceListRules(t *testing.T) {
	k := newDeviceKit(t)
	other, err := engine.NewAccountKey(rand.NewChaCha8([32]byte{34}))
	if err != nil {
		t.Fatal(err)
	}
	g1 := k.next(nil, k.entry(1), k.entry(2))
	g2 := k.next(&g1, k.entry(1), revoked(k.entry(2)))
	g2b := k.next(&g1, k.entry(1), k.entry(2), k.entry(4))
	var nine []wire.DeviceEntry
	for n := uint32(1); n <= engine.MaxDevicesPerAccount+1; n++ {
		nine = append(nine, k.entry(n))
	}
	for _, c := range []struct {
		name string
		l    wire.DeviceList
		prev *wire.DeviceList
		rule int // 0: ErrDeviceListStale
	}{
		{"account signature", func() wire.DeviceList { l := k.next(nil, k.entry(1)); l.Signature[0] ^= 1; return l }(), nil, 1},
		{"account key swapped", func() wire.DeviceList { l := k.next(nil, k.entry(1)); l.AccountKey = other.Public(); return l }(), nil, 1},
		{"device signature", func() wire.DeviceList {
			e := k.entry(1)
			e.Signature[3] ^= 1
			return k.next(nil, e)
		}(), nil, 2},
		{"device signed for another account", func() wire.DeviceList {
			e := engine.DeviceEntryFor(k.devices[1], "alice", other.Public(), 1, 1)
			return k.next(nil, e)
		}(), nil, 2},
		{"device signed as another number", func() wire.DeviceList {
			e := k.entry(1)
			e.Number = 5
			return k.next(nil, e)
		}(), nil, 2},
		{"no active device", k.next(nil, revoked(k.entry(1))), nil, 3},
		{"nine active devices", k.next(nil, nine...), nil, 3},
		{"one key twice", func() wire.DeviceList {
			e := engine.DeviceEntryFor(k.devices[1], "alice", k.account.Public(), 2, 1)
			return k.next(nil, k.entry(1), e)
		}(), nil, 4},
		{"first list at generation 2", func() wire.DeviceList {
			l := k.next(&g1, k.entry(1))
			return l
		}(), nil, 5},
		{"generation skipped", func() wire.DeviceList { l := k.next(&g2, k.entry(1), revoked(k.entry(2))); return l }(), &g1, 0},
		{"generation 1 again", k.next(nil, k.entry(1), k.entry(2)), &g1, 0},
		{"wrong parent", func() wire.DeviceList {
			l := wire.DeviceList{User: "alice", Generation: 2, Parent: [32]byte{1}, Entries: []wire.DeviceEntry{k.entry(1), k.entry(2)}}
			l, _ = k.account.SignDeviceList(l)
			return l
		}(), &g1, 0},
		{"account key changed", func() wire.DeviceList {
			d, _ := engine.DeviceListDigest(g1)
			l := wire.DeviceList{User: "alice", Generation: 2, Parent: d, Entries: []wire.DeviceEntry{engine.DeviceEntryFor(k.devices[1], "alice", other.Public(), 1, 1700000001)}}
			l, _ = other.SignDeviceList(l)
			return l
		}(), &g1, 6},
		{"device dropped", k.next(&g1, k.entry(1)), &g1, 7},
		{"revoked made active", k.next(&g2, k.entry(1), k.entry(2)), &g2, 7},
		{"linking time changed", func() wire.DeviceList {
			e := k.entry(2)
			e.Linked++
			return k.next(&g1, k.entry(1), e)
		}(), &g1, 7},
		// Generation 2 holds 1, 2 and 4; generation 3 adds 3 below 4.
		{"number below the top", k.next(&g2b, k.entry(1), k.entry(2), k.entry(3), k.entry(4)), &g2b, 8},
		{"new device revoked", k.next(&g1, k.entry(1), k.entry(2), revoked(k.entry(3))), &g1, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := engine.VerifyDeviceList(c.l, c.prev)
			if c.rule == 0 {
				if !errors.Is(err, engine.ErrDeviceListStale) {
					t.Fatalf("%v, want ErrDeviceListStale", err)
				}
				return
			}
			var le *engine.DeviceListError
			if !errors.As(err, &le) || le.Rule != c.rule || !errors.Is(err, engine.ErrDeviceListInvalid) {
				t.Fatalf("%v, want rule %d", err, c.rule)
			}
		})
	}
}

func TestAccountKeyRecord(t *testing.T) {
	k := newDeviceKit(t)
	b, _ := k.account.MarshalBinary()
	again, err := engine.UnmarshalAccountKey(b)
	if err != nil || again.Public() != k.account.Public() {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := engine.UnmarshalAccountKey(b[:31]); !errors.Is(err, engine.ErrStorage) {
		t.Fatalf("short record: %v", err)
	}
	l := k.next(nil, k.entry(1))
	d1, _ := engine.DeviceListDigest(l)
	l2 := k.next(nil, k.entry(1), k.entry(2))
	d2, _ := engine.DeviceListDigest(l2)
	if d1 == d2 || slices.Equal(d1[:], make([]byte, 32)) {
		t.Fatal("digests of two lists collide or are zero")
	}
}
