package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

// TestConcurrentChargesAddUp: 60 appends at once from one IP to 20
// mailboxes (their writes of the IP's count coalesced) leave the count at
// exactly 60: the next append passes the IP's quota of 60 no more, and once
// everything is acknowledged it passes again.
func TestConcurrentChargesAddUp(t *testing.T) {
	c := natstest.StartCluster(t, 1)
	ctx := context.Background()
	s, err := natsstore.Open(ctx, c.URLs(), natsstore.Options{Replicas: 1, Prefix: fmt.Sprintf("C%d_", next.Add(1)),
		Limits: relaystore.Limits{IPEnvelopes: 60}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const boxes, each = 20, 3
	for i := range boxes {
		if _, err := s.Register(ctx, fmt.Sprintf("r%d/1", i), [32]byte{byte(i + 1)}, false, ""); err != nil {
			t.Fatal(err)
		}
	}
	from := func(i int) relaystore.Origin {
		return relaystore.Origin{Address: fmt.Sprintf("s%d/1", i), IP: "192.0.2.9"}
	}
	errs := make(chan error, boxes*each)
	for i := range boxes * each {
		go func() {
			_, err := s.Append(ctx, fmt.Sprintf("r%d/1", i%boxes), []byte("x"), 1, from(i))
			errs <- err
		}()
	}
	for range boxes * each {
		if err := <-errs; err != nil {
			t.Fatalf("append within the quota: %v", err)
		}
	}
	if _, err := s.Append(ctx, "r0/1", []byte("x"), 1, from(999)); !errors.Is(err, relaystore.ErrIPQuota) {
		t.Fatalf("append past 60 from one IP: %v, want relaystore.ErrIPQuota", err)
	}
	for i := range boxes {
		to := fmt.Sprintf("r%d/1", i)
		now := time.Now()
		rows, err := s.Lease(ctx, to, "h", 10, now, now.Add(time.Minute))
		if err != nil || len(rows) != each {
			t.Fatalf("leased %d rows of %s (%v), want %d", len(rows), to, err, each)
		}
		var ids []uint64
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if removed, err := s.Ack(ctx, to, ids); err != nil || len(removed) != each {
			t.Fatalf("acknowledged %d rows of %s (%v), want %d", len(removed), to, err, each)
		}
	}
	if _, err := s.Append(ctx, "r0/1", []byte("x"), 1, from(999)); err != nil {
		t.Fatalf("append once everything was acknowledged: %v", err)
	}
}
