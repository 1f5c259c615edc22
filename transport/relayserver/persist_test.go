package relayserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
	"github.com/parley-chat/parley/transport/relaystore"
)

// TestSQLiteRestart checks that a relay stopped and started again on the
// same directory still holds every accepted envelope in order, the
// registrations and the one-time prekeys, and the same relay ID.
func TestSQLiteRestart(t *testing.T) {
	dir := t.TempDir()
	r := startSQLiteRelay(t, dir, Config{})
	id := r.srv.RelayID()
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1").withBundle(t, 2)
	ca, cb := dial(t, r, alice), dial(t, r, bob)
	if err := cb.PublishPreKeys(ctxT(t), bob.bundle, bob.oneTime); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.FetchBundle(ctxT(t), bob.addr); err != nil {
		t.Fatal(err)
	}
	cb.Close()
	var want []string
	for i := range 20 {
		body := fmt.Sprintf("%03d", i)
		mustSubmit(t, ca, envelope(alice, bob, body))
		want = append(want, body)
	}
	ca.Close()
	r.stop()

	r = startSQLiteRelay(t, dir, Config{})
	if r.srv.RelayID() != id {
		t.Fatal("relay ID changed across a restart")
	}
	impostor := newDevice(t, "bob/1")
	if _, err := transport.Dial(ctxT(t), r.url, impostor.addr, impostor.id, fastClient); err == nil {
		t.Fatal("the registration of bob/1 did not survive the restart")
	}
	cb = dial(t, r, bob)
	if got := payloads(t, receiveN(t, cb, 20)); !slices.Equal(got, want) {
		t.Fatalf("after restart: got %v, want %v", got, want)
	}
	b, err := dial(t, r, alice).FetchBundle(ctxT(t), bob.addr)
	if err != nil || b.OneTimePreKey == nil || b.OneTimePreKey.ID != bob.oneTime[1].ID {
		t.Fatalf("second one-time prekey after restart: %v, %v", b.OneTimePreKey, err)
	}
}

// TestSQLiteKill9 runs the relay in a child process, kills it with SIGKILL
// while a sender submits, and checks that the relay restarted on the same
// directory delivers every envelope it had accepted, in order.
func TestSQLiteKill9(t *testing.T) {
	dir := t.TempDir()
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("relay child: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("relay child's first line: %q", line)
	}
	child := &testRelay{url: url}

	dial(t, child, bob).Close() // registers bob
	ca := dialOpts(t, child, alice, transport.ClientOptions{MinBackoff: time.Hour})

	// alice submits one envelope at a time; the relay dies under her.
	var mu sync.Mutex
	var accepted []string
	var unknown string // submitted when the relay died: accepted or not
	var failed error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			body := fmt.Sprintf("%05d", i)
			err := ca.Submit(context.Background(), envelope(alice, bob, body))
			mu.Lock()
			if err != nil {
				unknown, failed = body, err
				mu.Unlock()
				return
			}
			accepted = append(accepted, body)
			mu.Unlock()
		}
	}()
	for n := 0; n < 50; {
		select {
		case <-done:
			t.Fatalf("submit failed before the kill, after %d accepted: %v", len(accepted), failed)
		case <-time.After(time.Millisecond):
		}
		mu.Lock()
		n = len(accepted)
		mu.Unlock()
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()
	<-done
	ca.Close()
	t.Logf("%d envelopes accepted before SIGKILL", len(accepted))

	r := startSQLiteRelay(t, dir, Config{})
	cb := dial(t, r, bob)
	// The envelope in flight at the kill may or may not have been stored,
	// and may arrive in the same batch as the accepted ones; nothing else
	// may follow.
	got := payloads(t, receiveAtLeast(t, cb, len(accepted)))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for {
		rest, err := waitReceive(ctx, cb)
		if errors.Is(err, context.DeadlineExceeded) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, payloads(t, rest)...)
	}
	if len(got) > len(accepted) && (len(got) > len(accepted)+1 || got[len(accepted)] != unknown) {
		t.Fatalf("after the accepted envelopes: %v (in flight at the kill: %q)", got[len(accepted):], unknown)
	}
	if !slices.Equal(got[:len(accepted)], accepted) {
		t.Fatalf("after SIGKILL the relay delivered %v, want the %d accepted, in order", got, len(accepted))
	}
}

// TestFaults checks that with a fixed seed, drops and duplicates happen at
// about the configured rate, the same way on every run, and that what is
// delivered keeps the sender's order.
func TestFaults(t *testing.T) {
	const n, p = 600, 0.2
	run := func() []string {
		st, err := relaystore.WithFaults(relaystore.NewMemory(relaystore.Limits{}), relaystore.Faults{Drop: p, Dup: p, Seed: 42})
		if err != nil {
			t.Fatal(err)
		}
		r := startStoreRelay(t, "127.0.0.1:0", st, Config{})
		alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
		ca, cb := dial(t, r, alice), dial(t, r, bob)
		for i := range n {
			mustSubmit(t, ca, envelope(alice, bob, fmt.Sprintf("%04d", i)))
		}
		dropped := int(r.metric(t, "parley_relay_fault_dropped_total"))
		duplicated := int(r.metric(t, "parley_relay_fault_duplicated_total"))
		want := n - dropped + duplicated
		var got []engine.Leased
		for len(got) < want {
			ls, err := waitReceive(ctxT(t), cb)
			if err != nil {
				t.Fatalf("received %d of %d: %v", len(got), want, err)
			}
			got = append(got, ls...)
			if err := cb.Release(ctxT(t), rowsOf(ls)); err != nil {
				t.Fatal(err)
			}
		}
		expectNothing(t, cb, 200*time.Millisecond)
		if len(got) != want {
			t.Fatalf("delivered %d, want %d (%d dropped, %d duplicated)", len(got), want, dropped, duplicated)
		}
		// Binomial(600, 0.2) has a standard deviation near 10; allow 5.
		if dropped < 70 || dropped > 170 {
			t.Fatalf("%d of %d dropped at p=%v", dropped, n, p)
		}
		if duplicated < 50 || duplicated > 150 {
			t.Fatalf("%d of %d duplicated at p=%v", duplicated, n-dropped, p)
		}
		body := payloads(t, got)
		if !slices.IsSorted(body) {
			t.Fatal("delivered out of order")
		}
		seen := map[string]int{}
		for _, b := range body {
			seen[b]++
			if seen[b] > 2 {
				t.Fatalf("%s delivered %d times", b, seen[b])
			}
		}
		t.Logf("%d submitted: %d dropped, %d duplicated, %d delivered", n, dropped, duplicated, len(got))
		return body
	}
	first, second := run(), run()
	if !slices.Equal(first, second) {
		t.Fatal("the same seed gave another sequence of faults")
	}
}

// TestFaultsOff checks that by default nothing is dropped or duplicated:
// zero probabilities leave the store as it was, and out-of-range ones are
// refused.
func TestFaultsOff(t *testing.T) {
	m := relaystore.NewMemory(relaystore.Limits{})
	st, err := relaystore.WithFaults(m, relaystore.Faults{Seed: 7})
	if err != nil || st != relaystore.Store(m) {
		t.Fatalf("zero probabilities: got %T, %v; want the store itself", st, err)
	}
	for _, f := range []relaystore.Faults{{Drop: -0.1}, {Dup: 1.5}} {
		if _, err := relaystore.WithFaults(m, f); err == nil {
			t.Fatalf("faults %+v accepted", f)
		}
	}
}
