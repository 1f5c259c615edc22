package engine_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
)

// linkWithHistory links a new device to owner's account as `parley
// device add --history choice` and `parley link --history keep` do: the
// list naming it with the link's cut (LinkDevice), the package with the
// keyed archive uploaded to the world's blobs (LinkHistory), the new
// profile written from the package, and its history downloaded and
// imported (ImportLinkHistory). It returns the device and whether the
// package named an archive.
func (w *world) linkWithHistory(owner *device, choice, keep engine.HistoryChoice) (*device, bool) {
	w.t.Helper()
	return w.linkResumed(owner, choice, keep, keep)
}

// linkResumed is linkWithHistory for a link that stopped after its
// profile was written with keep and went on with `parley link --history
// resume` (the default, all, when the flag is left out).
func (w *world) linkResumed(owner *device, choice, keep, resume engine.HistoryChoice) (*device, bool) {
	t, ctx := w.t, w.ctx
	t.Helper()
	a, err := engine.LoadAccount(ctx, owner.st)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.net.SetDeviceList(a.List); err != nil {
		t.Fatal(err)
	}
	n := engine.NextDeviceNumber(a.List)
	d := &device{w: w, addr: engine.Address{User: owner.addr.User, Device: n}}
	id, err := engine.NewIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	list, err := owner.c.LinkDevice(ctx, engine.DeviceEntryFor(id, d.addr.User, a.Key.Public(), n, w.clock.Now().Unix()), choice)
	if err != nil {
		t.Fatalf("%s links %s: %v", owner.addr, d.addr, err)
	}
	pkg, err := owner.c.LinkPackage(ctx, list, false)
	if err != nil {
		t.Fatal(err)
	}
	if pkg.History, _, err = owner.c.LinkHistory(ctx, n, nil); errors.Is(err, engine.ErrArchiveLeftOut) {
		t.Logf("%s links %s without its archive: %v", owner.addr, d.addr, err)
	} else if err != nil {
		t.Fatalf("%s writes %s's history: %v", owner.addr, d.addr, err)
	}
	d.dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d-linked-%s", d.addr.User, n, time.Now().Format("150405.000000000")))
	st, err := store.Create(ctx, d.dir, passphrase, store.Options{KDF: store.KDFParams{Time: 1, MemoryKiB: 8, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CreateLinkedProfile(ctx, st, "fake://", id, n, pkg, keep, nil, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	d.open()
	t.Cleanup(func() {
		if d.c != nil {
			d.c.Close()
		}
	})
	if pkg.History != nil {
		if _, err := d.c.ImportLinkHistory(ctx, 0, resume, nil); err != nil {
			t.Fatalf("%s imports its history: %v", d.addr, err)
		}
	}
	return d, pkg.History != nil
}

// TestLinkedDeviceHoldsTheGroups: alice/1 is in a group with bob and
// carol, with messages in it and in a one-to-one conversation, ten days
// old. Whatever history a new device of alice's gets (none chosen on
// either side, the last day, or all), it holds the group as alice/1
// does: the same name, start, roster log and merged roster (whether a
// member's message reaches it is the group's fan-out to a member person's
// devices). It holds the group's messages, and the
// conversation's, only as the choice says. Before the change a link with
// --history none sent no archive, and the device held no group.
func TestLinkedDeviceHoldsTheGroups(t *testing.T) {
	w := newWorld(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	alice, bob, carol := w.device("alice/1"), w.device("bob/1"), w.device("carol/1")
	info, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr, carol.addr})
	if err != nil {
		t.Fatal(err)
	}
	g := info.ID
	settle(t, 5, alice, bob, carol)
	if _, err := bob.c.SendGroup(w.ctx, g, []byte("old group news")); err != nil {
		t.Fatal(err)
	}
	bob.enqueue(alice, "old one-to-one")
	settle(t, 5, alice, bob, carol)
	w.clock.Advance(10 * 24 * time.Hour)
	want, err := alice.c.Group(w.ctx, g)
	if err != nil {
		t.Fatal(err)
	}

	all, none := engine.HistoryChoice{Mode: engine.HistoryAll}, engine.HistoryChoice{Mode: engine.HistoryNone}
	day := engine.HistoryChoice{Mode: engine.HistorySince, Days: 1}
	for _, c := range []struct {
		name             string
		choice, keep     engine.HistoryChoice
		resume           engine.HistoryChoice
		wantGroupHistory []string
		wantOneToOne     []string
	}{
		{"device add --history none", none, all, all, nil, nil},
		{"link --history none", all, none, none, nil, nil},
		{"device add --history 1d", day, all, all, nil, nil},
		{"link --history 1d", all, day, day, nil, nil},
		{"all", all, all, all, []string{"bob/1:old group news"}, []string{"old one-to-one"}},
		// A link --history none stopped after its profile was written
		// and resumed without the flag keeps none: the profile recorded
		// the choice. Before the change it imported every message.
		{"link --history none, resumed without it", all, none, all, nil, nil},
		{"link --history 1d, resumed with none", all, day, none, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w.t = t
			d, archived := w.linkResumed(alice, c.choice, c.keep, c.resume)
			if !archived {
				t.Fatalf("%s's package named no archive: the groups did not go", d.addr)
			}
			got, err := d.c.Group(w.ctx, g)
			if err != nil {
				t.Fatalf("%s holds no group %x: %v", d.addr, g[:4], err)
			}
			if got.Name != want.Name || !reflect.DeepEqual(got.Roster, want.Roster) || !reflect.DeepEqual(got.Start, want.Start) ||
				len(got.Changes) != len(want.Changes) {
				t.Fatalf("%s's group: %+v\nwant alice/1's: %+v", d.addr, got, want)
			}
			if h := d.groupHistory(g); !reflect.DeepEqual(h, c.wantGroupHistory) {
				t.Errorf("%s's group history %q, want %q", d.addr, h, c.wantGroupHistory)
			}
			if h := d.received(bob); !reflect.DeepEqual(h, c.wantOneToOne) {
				t.Errorf("%s's history from bob/1 %q, want %q", d.addr, h, c.wantOneToOne)
			}
		})
	}
}

// TestLinkNoneWithoutABlobStore: over a relay with no blob store, a link
// with --history none still goes, without an archive (as before the
// archive carried the groups), rather than leave the listed device with
// no package.
func TestLinkNoneWithoutABlobStore(t *testing.T) {
	w := newWorld(t)
	alice, bob := w.device("alice/1"), w.device("bob/1")
	if _, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob)
	d, archived := w.linkWithHistory(alice, engine.HistoryChoice{Mode: engine.HistoryNone}, engine.HistoryChoice{Mode: engine.HistoryAll})
	if archived {
		t.Fatalf("%s's package named an archive with no blob store", d.addr)
	}
}

// TestLinkLeavesAnOpenRequest: a stranger's message waiting as a request
// on alice/1 (request mode) stays there: the link's archive does not
// carry it, so the new device (which holds no request row) does not list
// it as an ordinary pending delivery (before the change it did).
func TestLinkLeavesAnOpenRequest(t *testing.T) {
	w := newWorld(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs = blobs
	alice, carol := w.device("alice/1"), w.device("carol/1")
	alice.withRequests(nil)
	carol.send(alice, "hello stranger")
	if k := kindsOf(alice.sync()); k[engine.ResultRequest] != 1 {
		t.Fatalf("alice/1's sync: %v, want one request", k)
	}
	alice.reopen() // with the blob store; the request stays
	all := engine.HistoryChoice{Mode: engine.HistoryAll}
	d, _ := w.linkWithHistory(alice, all, all)
	if n := d.pendingIn(); n != 0 {
		t.Fatalf("%s holds %d pending deliveries: carol's request came as a message", d.addr, n)
	}
}

// TestLinkNoneGoesWithoutAnArchiveOverTheBound: alice's archive (her
// group, her pins) is over the files bound. A link with --history none
// goes without it (ErrArchiveLeftOut says why, and Finish lists the
// device with its package); a link with all or 1d fails, and its message
// advises by the mode chosen, never "none" to one who chose none.
func TestLinkNoneGoesWithoutAnArchiveOverTheBound(t *testing.T) {
	w := newWorld(t)
	blobs, err := enginetest.NewBlobs(filepath.Join(w.dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	w.blobs, w.maxFile = blobs, 64
	alice, bob := w.device("alice/1"), w.device("bob/1")
	if _, _, err := alice.c.CreateGroup(w.ctx, "friends", []engine.Address{bob.addr}); err != nil {
		t.Fatal(err)
	}
	settle(t, 5, alice, bob)
	none := engine.HistoryChoice{Mode: engine.HistoryNone}
	d, archived := w.linkWithHistory(alice, none, none)
	if archived {
		t.Fatalf("%s's package named an archive over the bound", d.addr)
	}
	_, _, err = alice.c.LinkHistory(w.ctx, d.addr.Device, nil)
	if !errors.Is(err, engine.ErrArchiveLeftOut) || !errors.Is(err, engine.ErrFileTooLarge) || strings.Contains(err.Error(), "or none") {
		t.Fatalf("none over the bound: %v; want ErrArchiveLeftOut for ErrFileTooLarge, advising no none", err)
	}
	for _, c := range []struct {
		choice engine.HistoryChoice
		advice string
	}{
		{engine.HistoryChoice{Mode: engine.HistoryAll}, "--history 30d or none"},
		{engine.HistoryChoice{Mode: engine.HistorySince, Days: 1}, "fewer days, or --history none"},
	} {
		a, err := engine.LoadAccount(w.ctx, alice.st)
		if err != nil {
			t.Fatal(err)
		}
		n := engine.NextDeviceNumber(a.List)
		id, err := engine.NewIdentity(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.c.LinkDevice(w.ctx, engine.DeviceEntryFor(id, a.List.User, a.Key.Public(), n, w.clock.Now().Unix()), c.choice); err != nil {
			t.Fatal(err)
		}
		_, _, err = alice.c.LinkHistory(w.ctx, n, nil)
		if !errors.Is(err, engine.ErrFileTooLarge) || errors.Is(err, engine.ErrArchiveLeftOut) || !strings.Contains(err.Error(), c.advice) {
			t.Errorf("%v over the bound: %v; want ErrFileTooLarge advising %q", c.choice, err, c.advice)
		}
	}
}
