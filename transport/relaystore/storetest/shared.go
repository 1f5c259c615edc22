package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
)

// sharedItems returns the items of one payload of size bytes to n
// mailboxes (member0/1 ...), each with a head of its own, sharing it.
func sharedItems(n, size int) ([]relaystore.AppendItem, *relaystore.SharedPayload) {
	p := &relaystore.SharedPayload{Payload: bytes.Repeat([]byte{0xab}, size)}
	items := make([]relaystore.AppendItem, n)
	for i := range items {
		items[i] = relaystore.AppendItem{Recipient: fmt.Sprintf("member%d/1", i), Env: []byte(fmt.Sprintf("head of %d:", i)),
			Copies: 1, From: alice, Shared: p}
	}
	return items, p
}

func heads(items []relaystore.AppendItem) int64 {
	var n int64
	for _, it := range items {
		n += int64(len(it.Env))
	}
	return n
}

// testSharedPayload: items that share a payload (a SubmitMulti's) are
// each stored and leased as their whole envelope, charged to every quota
// as a whole envelope (a mailbox whose room is one byte short refuses its
// item and stores nothing of it), and the store keeps either the payload
// once with the heads (Stats.Stored) or a whole envelope per mailbox; once
// every row is acknowledged or expired, nothing is kept.
func testSharedPayload(t *testing.T, open Open) {
	const size = 1000
	items, p := sharedItems(3, size)
	whole := int64(len(items[0].Env)) + size
	// member2's mailbox is one byte short of a whole envelope; a fourth
	// item goes to an unknown mailbox.
	l := relaystore.Limits{MailboxBytes: whole*2 - 1, SenderBytes: whole * 10}
	run(t, open, l, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		for _, it := range items {
			mustRegister(t, s, it.Recipient, key(1))
		}
		items = append(items, items[2], relaystore.AppendItem{Recipient: "nobody/1", Env: []byte("h"), Copies: 1, From: alice, Shared: p})
		got := s.AppendBatch(ctx, items)
		for i, r := range got {
			switch i {
			case 3:
				if !errors.Is(r.Err, relaystore.ErrMailboxFull) {
					t.Fatalf("item %d, past its mailbox's bytes: %v, want ErrMailboxFull", i, r.Err)
				}
			case 4:
				if !errors.Is(r.Err, relaystore.ErrNotRegistered) {
					t.Fatalf("item %d, to nobody: %v, want ErrNotRegistered", i, r.Err)
				}
			default:
				if r.Err != nil || len(r.Rows) != 1 {
					t.Fatalf("item %d: %v, %v; want one row", i, r.Rows, r.Err)
				}
			}
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		kept := heads(items[:3])
		if st.Envelopes != 3 || st.Bytes != 3*whole || (st.Stored != kept+size && st.Stored != st.Bytes) {
			t.Fatalf("Stats = %+v; want 3 envelopes of %d bytes, stored once (%d) or whole (%d)", st, 3*whole, kept+size, 3*whole)
		}
		now := time.Now()
		var leased []relaystore.Row
		for i, it := range items[:3] {
			rows, err := s.Lease(ctx, it.Recipient, "h", 10, now, now.Add(time.Minute))
			if err != nil || len(rows) != 1 || !bytes.Equal(rows[0].Envelope, it.Envelope()) {
				t.Fatalf("lease of item %d: %v, %v; want its whole envelope", i, rows, err)
			}
			leased = append(leased, rows[0])
		}
		if _, err := s.Ack(ctx, items[0].Recipient, []uint64{leased[0].ID}); err != nil {
			t.Fatal(err)
		}
		// The payload stays for the rows that point at it.
		rows, err := s.Lease(ctx, items[1].Recipient, "h2", 10, now.Add(2*time.Minute), now.Add(3*time.Minute))
		if err != nil || len(rows) != 1 || !bytes.Equal(rows[0].Envelope, items[1].Envelope()) {
			t.Fatalf("lease after another mailbox's ACK: %v, %v", rows, err)
		}
		if _, err := s.Ack(ctx, items[1].Recipient, []uint64{leased[1].ID}); err != nil {
			t.Fatal(err)
		}
		// The last goes by expiry.
		if gone, err := s.Expire(ctx, now.Add(time.Hour), now.Add(time.Hour), 10); err != nil || len(gone) != 1 {
			t.Fatalf("Expire: %v, %v; want the last row", gone, err)
		}
		if st, err := s.Stats(ctx); err != nil || st.Envelopes != 0 || st.Bytes != 0 || st.Stored != 0 {
			t.Fatalf("Stats after every row went: %+v, %v; want nothing kept", st, err)
		}
	})
}

// RunSharedOnce checks a backend that keeps a shared payload once: a
// payload of size bytes to members mailboxes keeps the payload once plus
// each mailbox's head, however many members, and the payload goes with
// the last row that points at it (acknowledged, or expired). What is kept
// is Stats.Stored, exactly.
func RunSharedOnce(t *testing.T, open Open, members, size int) {
	RunSharedOnceBy(t, open, members, size, Measure{Kept: func(t *testing.T, s relaystore.Store) int64 {
		st, err := s.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.Stored
	}})
}

// Measure is how RunSharedOnceBy reads what a backend keeps: Kept returns
// the bytes, and Overhead is the most the backend may keep per stored
// message (a head, a payload, its record of references) beyond the
// envelope's own bytes (0: exactly those, as Stats.Stored counts them).
type Measure struct {
	Kept     func(t *testing.T, s relaystore.Store) int64
	Overhead int64
}

// RunSharedOnceBy is RunSharedOnce with what is kept read by m, for a
// backend whose own figures count its storage's overhead (stream info):
// the payload once and each mailbox's head, within m.Overhead a message,
// and nothing once every row is gone. Each lease returns the whole
// envelope.
func RunSharedOnceBy(t *testing.T, open Open, members, size int, m Measure) {
	run(t, open, relaystore.Limits{}, func(t *testing.T, s relaystore.Store) {
		ctx := context.Background()
		items, _ := sharedItems(members, size)
		for _, it := range items {
			mustRegister(t, s, it.Recipient, key(1))
		}
		for i, r := range s.AppendBatch(ctx, items) {
			if r.Err != nil {
				t.Fatalf("item %d: %v", i, r.Err)
			}
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		within := func(what string, got, want int64, messages int) {
			t.Helper()
			if got < want || got > want+int64(messages)*m.Overhead {
				t.Fatalf("%s: %d bytes kept, want %d (the payload once and %d bytes of heads) plus at most %d a message for %d messages; charged %d",
					what, got, want, want-int64(size), m.Overhead, messages, st.Bytes)
			}
		}
		kept := m.Kept(t, s)
		// The messages: a head per mailbox, the payload, and a record.
		within(fmt.Sprintf("a payload of %d bytes to %d mailboxes", size, members), kept, int64(size)+heads(items), members+2)
		t.Logf("a payload of %d bytes to %d mailboxes: %d bytes kept (%.1f per mailbox over the payload), %d charged",
			size, members, kept, float64(kept-int64(size))/float64(members), int64(members)*int64(size)+heads(items))
		now := time.Now()
		for i, it := range items {
			rows, err := s.Lease(ctx, it.Recipient, "h", 1, now, now.Add(time.Minute))
			if err != nil || len(rows) != 1 || !bytes.Equal(rows[0].Envelope, it.Envelope()) {
				t.Fatalf("lease of %s: %v, %v; want its whole envelope", it.Recipient, rows, err)
			}
			if i == len(items)-1 {
				break // expired below
			}
			if _, err := s.Ack(ctx, it.Recipient, []uint64{rows[0].ID}); err != nil {
				t.Fatal(err)
			}
		}
		within("with one row left", m.Kept(t, s), int64(size)+int64(len(items[len(items)-1].Env)), 3)
		if _, err := s.Expire(ctx, now.Add(time.Hour), now.Add(time.Hour), 10); err != nil {
			t.Fatal(err)
		}
		if k := m.Kept(t, s); k != 0 {
			t.Fatalf("after the last row: %d bytes kept, want none", k)
		}
		if m.Overhead != 0 {
			return // its Stats are cached estimates
		}
		if st, err := s.Stats(ctx); err != nil || st.Bytes != 0 {
			t.Fatalf("after the last row: %+v, %v; want nothing charged", st, err)
		}
	})
}
