package relaystore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// notifying is a store that is also a Notifier, as natsstore is.
type notifying struct{ *Memory }

func (notifying) Notify(context.Context, string, Signal) error { return nil }
func (notifying) Watch(string, func(Signal)) (func(), error)   { return func() {}, nil }

// mailbox leases every row of recipient and returns their envelopes.
func mailbox(t *testing.T, s Store, recipient string) []string {
	t.Helper()
	now := time.Now()
	rows, err := s.Lease(context.Background(), recipient, "test", 100, now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, string(r.Envelope))
	}
	return out
}

// TestWithFaults checks the decorator's meaning: a dropped envelope stores
// nothing and reports no error, unless its recipient is unknown; a duplicate
// sits right after its original; a duplicate over a quota is stored once;
// a shared store's Notifier shows through.
func TestWithFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("drop", func(t *testing.T) {
		s, err := WithFaults(NewMemory(Limits{}), Faults{Drop: 1, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "bob/1", []byte("a"), 1, alice); !errors.Is(err, ErrNotRegistered) {
			t.Fatalf("drop for an unknown recipient: got %v, want ErrNotRegistered", err)
		}
		if _, err := s.Register(ctx, "bob/1", key(2), false, ""); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Append(ctx, "bob/1", []byte("a"), 1, alice)
		if err != nil || len(rows) != 0 {
			t.Fatalf("drop: got rows %v, %v; want none and no error", rows, err)
		}
		if got := mailbox(t, s, "bob/1"); len(got) != 0 {
			t.Fatalf("a dropped envelope was stored: %v", got)
		}
		if d, u := s.(FaultCounter).FaultCounts(); d != 1 || u != 0 {
			t.Fatalf("counts %d dropped, %d duplicated; want 1, 0", d, u)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		s, err := WithFaults(NewMemory(Limits{MailboxEnvelopes: 5, SenderEnvelopes: 5}), Faults{Dup: 1, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Register(ctx, "bob/1", key(2), false, ""); err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{"a", "b", "c"} {
			if _, err := s.Append(ctx, "bob/1", []byte(e), 1, alice); err != nil {
				t.Fatalf("append %s: %v", e, err)
			}
		}
		// c did not fit twice (5 envelopes at most): it is stored once.
		if got, want := mailbox(t, s, "bob/1"), []string{"a", "a", "b", "b", "c"}; !slices.Equal(got, want) {
			t.Fatalf("mailbox %v, want %v", got, want)
		}
		if d, u := s.(FaultCounter).FaultCounts(); d != 0 || u != 2 {
			t.Fatalf("counts %d dropped, %d duplicated; want 0, 2", d, u)
		}
	})
	t.Run("notifier", func(t *testing.T) {
		s, err := WithFaults(notifying{NewMemory(Limits{})}, Faults{Drop: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(Notifier); !ok {
			t.Fatal("the decorator hides the store's Notifier")
		}
		plain, _ := WithFaults(NewMemory(Limits{}), Faults{Drop: 0.5})
		if _, ok := plain.(Notifier); ok {
			t.Fatal("the decorator made a Notifier of a store that is not one")
		}
	})
}
