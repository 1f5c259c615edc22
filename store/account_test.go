package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

// TestCreateProfileMakesAccount: init makes the account key and generation
// 1 of the list naming this device, in the bootstrap's transaction, and
// the list verifies.
func TestCreateProfileMakesAccount(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	self := engine.MustParseAddress("alice/1")
	idKey, err := engine.CreateProfile(ctx, db, self, "ws://relay.example", nil, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := engine.LoadAccount(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Key == nil || acc.List.AccountKey != acc.Key.Public() || acc.List.User != "alice" || acc.List.Generation != 1 {
		t.Fatalf("account %+v: want a key and generation 1 of alice's list under it", acc.List)
	}
	if err := engine.VerifyDeviceList(acc.List, nil); err != nil {
		t.Fatal(err)
	}
	if !engine.ActiveDevice(acc.List, 1, idKey.SigningKey) || acc.List.Entries[0].Linked != 1700000000 {
		t.Fatalf("list %+v does not name alice/1 with its key, linked at init", acc.List.Entries)
	}
	if made, err := engine.EnsureAccount(ctx, db, nil, time.Now()); err != nil || made {
		t.Fatalf("EnsureAccount on a new profile = %v, %v; want nothing made", made, err)
	}
}

// TestEnsureAccountOldProfile: a profile bootstrapped without an account
// (as before accounts existed) gets one, once, at its first EnsureAccount.
func TestEnsureAccountOldProfile(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	self := engine.MustParseAddress("bob/3")
	id, err := engine.NewIdentity(engine.SystemRandom{})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := id.MarshalBinary()
	if _, err := db.Apply(ctx, engine.Bootstrap{Self: self, RelayURL: "ws://relay.example", Identity: rec}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.LoadAccount(ctx, db); !errors.Is(err, engine.ErrNoAccount) {
		t.Fatalf("LoadAccount before = %v, want ErrNoAccount", err)
	}
	made, err := engine.EnsureAccount(ctx, db, nil, time.Unix(1800000000, 0))
	if err != nil || !made {
		t.Fatalf("EnsureAccount = %v, %v; want an account made", made, err)
	}
	first, err := engine.LoadAccount(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.VerifyDeviceList(first.List, nil); err != nil || !engine.ActiveDevice(first.List, 3, id.Public().SigningKey) {
		t.Fatalf("list %+v (%v): want bob/3 active", first.List, err)
	}
	if made, err := engine.EnsureAccount(ctx, db, nil, time.Now()); err != nil || made {
		t.Fatalf("second EnsureAccount = %v, %v; want nothing made", made, err)
	}
	again, _ := engine.LoadAccount(ctx, db)
	if again.Key.Public() != first.Key.Public() {
		t.Fatal("the account key changed at the second open")
	}
}
