package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
)

// testAppendBatch: AppendBatch answers each item as Append would on its
// own: an unknown recipient, a sender over its share and a full mailbox are
// refused item by item, the others are stored in the batch's order with
// increasing rows, and the quotas count exactly the stored ones.
func testAppendBatch(t *testing.T, open Open) {
	l := relaystore.Limits{MailboxEnvelopes: 4, SenderEnvelopes: 2}
	run(t, open, l, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		mustRegister(t, s, "bob/1", key(2))
		mustRegister(t, s, "carol/1", key(3))
		dave := relaystore.Origin{Address: "dave/1", IP: "192.0.2.4"}
		item := func(to string, from relaystore.Origin, env string) relaystore.AppendItem {
			return relaystore.AppendItem{Recipient: to, Env: []byte(env), Copies: 1, From: from}
		}
		items := []relaystore.AppendItem{
			item("bob/1", alice, "a0"),
			item("nobody/1", alice, "lost"),
			item("bob/1", alice, "a1"),
			item("carol/1", alice, "c0"),
			item("bob/1", alice, "a2"), // alice's third: over her share of bob's mailbox
			item("bob/1", dave, "d0"),
			item("bob/1", dave, "d1"),
			item("bob/1", dave, "d2"), // bob's fifth: his mailbox is full
			{Recipient: "bob/1", Env: []byte("none"), Copies: 0, From: dave},
		}
		wantErr := []error{nil, relaystore.ErrNotRegistered, nil, nil, relaystore.ErrSenderQuota, nil, nil, relaystore.ErrMailboxFull, nil}
		got := s.AppendBatch(ctx, items)
		if len(got) != len(items) {
			t.Fatalf("AppendBatch of %d items returned %d results", len(items), len(got))
		}
		var last uint64
		for i, r := range got {
			switch {
			case i == len(items)-1:
				if r.Err == nil || r.Rows != nil {
					t.Errorf("item %d of no copies: %v, %v; want an error and no rows", i, r.Rows, r.Err)
				}
			case wantErr[i] != nil:
				if !errors.Is(r.Err, wantErr[i]) || r.Rows != nil {
					t.Errorf("item %d (%s): %v, %v; want no rows and %v", i, items[i].Env, r.Rows, r.Err, wantErr[i])
				}
			case r.Err != nil || len(r.Rows) != 1:
				t.Errorf("item %d (%s): %v, %v; want one row", i, items[i].Env, r.Rows, r.Err)
			case items[i].Recipient == "bob/1" && r.Rows[0] <= last:
				t.Errorf("item %d (%s): row %d after row %d: the batch's order is lost", i, items[i].Env, r.Rows[0], last)
			case items[i].Recipient == "bob/1":
				last = r.Rows[0]
			}
		}
		now := time.Now()
		rows, err := s.Lease(ctx, "bob/1", "h", 10, now, now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var envs []string
		for _, r := range rows {
			envs = append(envs, string(r.Envelope))
		}
		if want := []string{"a0", "a1", "d0", "d1"}; !slices.Equal(envs, want) {
			t.Fatalf("bob's mailbox after the batch: %q, want %q", envs, want)
		}
		if st, err := s.Stats(ctx); err != nil || st.Envelopes != 5 {
			t.Fatalf("Stats after the batch: %+v, %v; want 5 envelopes", st, err)
		}
		// The refused items spent nothing: once one of alice's is taken,
		// her next fits, and then the mailbox is full again.
		if _, err := s.Ack(ctx, "bob/1", []uint64{rows[0].ID}); err != nil {
			t.Fatal(err)
		}
		again := s.AppendBatch(ctx, []relaystore.AppendItem{item("nobody/1", dave, "x"), item("bob/1", alice, "a3"), item("bob/1", alice, "a4")})
		if again[0].Err == nil || again[1].Err != nil || !errors.Is(again[2].Err, relaystore.ErrMailboxFull) {
			t.Fatalf("second batch: %+v; want unknown recipient, stored, mailbox full", again)
		}
		if got := s.AppendBatch(ctx, nil); len(got) != 0 {
			t.Fatalf("AppendBatch of nothing: %v", got)
		}
	})
}

// testAppendBatchLarge: a batch of the wire's largest count, to many
// mailboxes, is stored whole and in order in each.
func testAppendBatchLarge(t *testing.T, open Open) {
	run(t, open, relaystore.Limits{}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		for i := range 4 {
			mustRegister(t, s, fmt.Sprintf("r%d/1", i), key(byte(10+i)))
		}
		var items []relaystore.AppendItem
		for i := range 64 {
			items = append(items, relaystore.AppendItem{Recipient: fmt.Sprintf("r%d/1", i%4), Env: []byte(fmt.Sprint("e", i)), Copies: 1, From: alice})
		}
		for i, r := range s.AppendBatch(ctx, items) {
			if r.Err != nil || len(r.Rows) != 1 {
				t.Fatalf("item %d: %v, %v", i, r.Rows, r.Err)
			}
		}
		now := time.Now()
		for m := range 4 {
			rows, err := s.Lease(ctx, fmt.Sprintf("r%d/1", m), "h", 100, now, now.Add(time.Minute))
			if err != nil || len(rows) != 16 {
				t.Fatalf("mailbox %d: %d rows, %v; want 16", m, len(rows), err)
			}
			for j, r := range rows {
				if want := fmt.Sprint("e", m+4*j); string(r.Envelope) != want {
					t.Fatalf("mailbox %d row %d: %q, want %q", m, j, r.Envelope, want)
				}
			}
		}
	})
}
