package relayserver

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/wire"
)

func TestRoundTrip(t *testing.T) {
	r := startRelay(t, Config{})
	alice := newDevice(t, "alice/1").withBundle(t, 0)
	bob := newDevice(t, "bob/1").withBundle(t, 2)
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	ctx := ctxT(t)

	if err := cb.PublishPreKeys(ctx, bob.bundle, bob.oneTime); err != nil {
		t.Fatalf("PublishPreKeys: %v", err)
	}
	// Publishing the same one-time prekeys again adds nothing.
	if err := cb.PublishPreKeys(ctx, bob.bundle, bob.oneTime); err != nil {
		t.Fatalf("PublishPreKeys again: %v", err)
	}
	var handed []uint32
	for range 3 {
		b, err := ca.FetchBundle(ctx, bob.addr)
		if err != nil {
			t.Fatalf("FetchBundle: %v", err)
		}
		addr, key, err := engine.VerifyBundle(b, time.Now())
		if err != nil || addr != bob.addr || !key.Equal(bob.id.Public()) {
			t.Fatalf("fetched bundle: %v, %v, %v", addr, key.Fingerprint(), err)
		}
		if b.OneTimePreKey != nil {
			handed = append(handed, b.OneTimePreKey.ID)
		}
	}
	if want := []uint32{bob.oneTime[0].ID, bob.oneTime[1].ID}; !slices.Equal(handed, want) {
		t.Fatalf("one-time prekeys handed out: got %v, want %v (each once, then none)", handed, want)
	}
	var se *transport.ServerError
	_, err := ca.FetchBundle(ctx, engine.MustParseAddress("carol/1"))
	if !errors.As(err, &se) || se.Code != wire.ErrorNotFound || !errors.Is(err, engine.ErrPeerNotRegistered) {
		t.Fatalf("fetch an unpublished bundle: got %v, want not found", err)
	}
	if got, want := err.Error(), "carol/1 is not registered at the relay"; got != want {
		t.Fatalf("fetch an unpublished bundle: %q, want %q", got, want)
	}

	var want []string
	for i := range 5 {
		body := fmt.Sprintf("message %d", i)
		want = append(want, body)
		mustSubmit(t, ca, envelope(alice, bob, body))
	}
	got := receiveN(t, cb, 5)
	if !slices.Equal(payloads(t, got), want) {
		t.Fatalf("received %q, want %q in order", payloads(t, got), want)
	}
	if !slices.IsSorted(rowsOf(got)) {
		t.Fatalf("rows not increasing: %v", rowsOf(got))
	}
	if err := cb.Release(ctx, rowsOf(got)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	expectNothing(t, cb, 200*time.Millisecond)

	// Acknowledged rows stay gone after a reconnect.
	cb.Close()
	cb = dial(t, r, bob)
	expectNothing(t, cb, 200*time.Millisecond)

	for _, m := range []struct {
		series string
		want   float64
	}{
		{"parley_relay_envelopes_accepted_total", 5},
		{"parley_relay_envelopes_delivered_total", 5},
		{"parley_relay_envelopes_acknowledged_total", 5},
		{"parley_relay_mailbox_envelopes", 0},
		{"parley_relay_bundles_fetched_total", 3},
		{"parley_relay_one_time_prekeys_handed_out_total", 2},
		{"parley_relay_registrations", 2},
		{`parley_relay_connections{state="authenticated"}`, 2},
	} {
		if got := r.metric(t, m.series); got != m.want {
			t.Errorf("%s = %v, want %v", m.series, got, m.want)
		}
	}
}

// TestRedeliveryAfterReconnect checks that rows a device received but did not
// acknowledge come again, the same rows in the same order, on its next
// connection.
func TestRedeliveryAfterReconnect(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	for i := range 4 {
		mustSubmit(t, ca, envelope(alice, bob, fmt.Sprint(i)))
	}
	first := receiveN(t, cb, 4)
	if err := cb.Release(ctxT(t), rowsOf(first[:1])); err != nil {
		t.Fatal(err)
	}
	cb.Close()
	cb = dial(t, r, bob)
	again := receiveN(t, cb, 3)
	if !slices.Equal(rowsOf(again), rowsOf(first[1:])) {
		t.Fatalf("redelivered rows %v, want %v", rowsOf(again), rowsOf(first[1:]))
	}
	if err := cb.Release(ctxT(t), rowsOf(again)); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, cb, 100*time.Millisecond)
}

// TestLeaseTimeout checks that a row left unacknowledged on a live
// connection is delivered again once its lease runs out.
func TestLeaseTimeout(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{LeaseTimeout: 200 * time.Millisecond}})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	mustSubmit(t, ca, envelope(alice, bob, "once"))
	first := receiveN(t, cb, 1)
	start := time.Now()
	again := receiveN(t, cb, 1)
	if again[0].Row != first[0].Row {
		t.Fatalf("redelivered row %d, want %d", again[0].Row, first[0].Row)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("redelivered after %v, before the lease ran out", d)
	}
	if err := cb.Release(ctxT(t), rowsOf(first)); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, cb, 400*time.Millisecond)
}

// TestWindow checks that a connection holds at most Window unacknowledged
// rows, and that acknowledging makes room for the next page, in order.
func TestWindow(t *testing.T) {
	r := startRelay(t, Config{Limits: Limits{Window: 4, Page: 3}})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	for i := range 10 {
		mustSubmit(t, ca, envelope(alice, bob, fmt.Sprintf("%02d", i)))
	}
	var all []string
	for len(all) < 10 {
		got := receiveN(t, cb, min(4, 10-len(all)))
		expectNothing(t, cb, 100*time.Millisecond)
		all = append(all, payloads(t, got)...)
		if err := cb.Release(ctxT(t), rowsOf(got)); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.IsSorted(all) {
		t.Fatalf("delivered out of order: %v", all)
	}
}

// TestReconnect checks that a client reconnects by itself after the relay
// goes away, reports it on States, and gets its unacknowledged rows again.
func TestReconnect(t *testing.T) {
	dir := t.TempDir()
	r := startSQLiteRelay(t, dir, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	mustSubmit(t, ca, envelope(alice, bob, "before"))
	first := receiveN(t, cb, 1)

	r.stop()
	waitState(t, cb, transport.StateDisconnected)
	if err := cb.Submit(ctxT(t), envelope(bob, alice, "offline")); !errors.Is(err, transport.ErrNotConnected) && !errors.Is(err, transport.ErrConnectionLost) {
		t.Fatalf("Submit while the relay is down: got %v, want transport.ErrNotConnected", err)
	}

	startSQLiteRelayOn(t, r.addr, dir, Config{})
	waitState(t, cb, transport.StateConnected)
	again := receiveN(t, cb, 1)
	if again[0].Row != first[0].Row {
		t.Fatalf("after reconnecting got row %d, want %d again", again[0].Row, first[0].Row)
	}
	waitState(t, ca, transport.StateConnected)
	mustSubmit(t, ca, envelope(alice, bob, "after"))
	if got := payloads(t, receiveN(t, cb, 1)); got[0] != "after" {
		t.Fatalf("got %q, want \"after\"", got)
	}
}

// waitState waits until the client's current state is s. States only
// wakes it: the channel may still hold older reports.
func waitState(t *testing.T, c *transport.Conn, s transport.ConnState) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for c.State().Conn != s {
		select {
		case <-c.States():
		case <-time.After(20 * time.Millisecond):
		case <-timeout:
			t.Fatalf("state %v, want %v", c.State().Conn, s)
		}
	}
}

// TestClientClose checks that Close ends a Receive that waits and that calls
// after it fail with engine.ErrClosed.
func TestClientClose(t *testing.T) {
	r := startRelay(t, Config{})
	alice := newDevice(t, "alice/1")
	c := dial(t, r, alice)
	errc := make(chan error, 1)
	go func() {
		_, err := waitReceive(ctxT(t), c)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.Close()
	if err := <-errc; !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Receive during Close: got %v, want ErrClosed", err)
	}
	if err := c.Submit(ctxT(t), envelope(alice, alice, "x")); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Submit after Close: got %v, want ErrClosed", err)
	}
	if st := c.State(); st.Conn != transport.StateClosed {
		t.Fatalf("state after Close: %v", st.Conn)
	}
	var last transport.State
	for st := range c.States() {
		last = st
	}
	if last.Conn != transport.StateClosed {
		t.Fatalf("last state reported: %v, want closed", last.Conn)
	}
}

// TestSubmitBatch checks the pipelined hand-off: one result per envelope, in
// order, refusals included.
func TestSubmitBatch(t *testing.T) {
	r := startRelay(t, Config{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	var envs []wire.Envelope
	for i := range 10 {
		envs = append(envs, envelope(alice, bob, fmt.Sprint(i)))
	}
	envs[4] = envelope(bob, alice, "forged")
	errs := ca.SubmitBatch(ctxT(t), envs)
	for i, err := range errs {
		var re *transport.RefusedError
		switch {
		case i == 4 && (!errors.As(err, &re) || re.Reason != wire.RefuseWrongSender):
			t.Fatalf("envelope 4: got %v, want refused: wrong sender", err)
		case i != 4 && err != nil:
			t.Fatalf("envelope %d: %v", i, err)
		}
	}
	want := []string{"0", "1", "2", "3", "5", "6", "7", "8", "9"}
	if got := payloads(t, receiveN(t, cb, 9)); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}
