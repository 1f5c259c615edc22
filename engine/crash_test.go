package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/engine/enginetest"
	"github.com/parley-chat/parley/store"
)

// TestCrashWindows names every crash window of the reliability layer and
// kills a real child process with a hard exit inside it; after a restart
// nothing is lost and nothing enters a history twice. (The failpoint matrix
// covers every point; this test spells out the windows one by one.)
func TestCrashWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	scenarios := map[string]fpScenario{}
	for _, sc := range fpScenarios() {
		scenarios[sc.name] = sc
	}
	windows := []struct {
		name, scenario, point string
		// wantAfter: the transition is complete after the restart (true) or
		// absent (false).
		wantAfter bool
	}{
		{"send: before the commit (nothing stored, nothing sent)", "send on a session", "pairwise-send/before-persist", false},
		{"send: after the commit, before the hand-off (pending; a retry sends fresh ciphertext)", "send on a session", "pairwise-send/before-handoff", true},
		{"send: after the hand-off, before the ACK (pending; the recipient dedups)", "send on a session", "pairwise-send/after-swap", true},
		{"receive: inside the transaction (rolled back, processed again)", "pairwise receive", "pairwise-receive/stmt-inbound-insert-after", false},
		{"receive: after pending inbound was stored (delivered again until committed)", "pairwise receive", "pairwise-receive/after-persist", true},
		{"commit: after the commit, before the ACK (the sender's retry brings the ACK)", "commit", "commit/before-handoff", true},
	}
	for _, win := range windows {
		t.Run(win.name, func(t *testing.T) {
			sc := scenarios[win.scenario]
			w := sc.prepare(t, t.TempDir())
			pre := sc.signatures(t, w)
			cmd := exec.Command(os.Args[0], "-test.run=^TestFailpointChild$")
			cmd.Env = append(os.Environ(), "PARLEY_FP_ROOT="+w.root, "PARLEY_FP_POINT="+win.point,
				"PARLEY_FP_DEV="+sc.target.dev, "PARLEY_FP_OP="+sc.target.op)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != childExit {
				t.Fatalf("the child did not stop at %s: %v %s", win.point, err, out)
			}
			now := sc.signatures(t, w)
			absent := sameSignatures(now, pre)
			if absent == win.wantAfter {
				t.Fatalf("after a crash at %s the transition is absent=%v, want absent=%v", win.point, absent, !win.wantAfter)
			}
			if absent {
				if err := w.do(sc.target.dev, sc.target.op, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := sc.converge(t, w); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func sameSignatures(a, b map[string]signature) bool { return reflect.DeepEqual(a, b) }

// TestStateResyncAfterCrash: a visible transition that committed without its
// events being presented makes the next open ask for a resync; once the
// presentation caught up, it does not.
func TestStateResyncAfterCrash(t *testing.T) {
	ctx := context.Background()
	w := fpWorld{root: t.TempDir()}
	for _, d := range []string{"alice/1", "bob/1"} {
		if err := w.create(d); err != nil {
			t.Fatal(err)
		}
	}
	// The child exits after the send committed, before any event.
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailpointChild$")
	cmd.Env = append(os.Environ(), "PARLEY_FP_ROOT="+w.root, "PARLEY_FP_POINT=pairwise-send/after-persist",
		"PARLEY_FP_DEV=alice/1", "PARLEY_FP_OP=send:bob/1:hello")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("child did not stop: %s", out)
	}
	open := func() *engine.Client {
		st, err := store.Open(ctx, w.profile("alice/1"), passphrase, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := enginetest.OpenFileEndpoint(w.netFile(), engine.MustParseAddress("alice/1"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := engine.Open(ctx, engine.Config{Store: st, Relay: ep})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open()
	if !c.ResyncRequired() {
		t.Fatal("a commit whose event never reached the presentation did not ask for a resync")
	}
	select {
	case e := <-c.Events():
		if e.Kind != engine.EventResync || !errors.Is(e.Err, engine.ErrStateResyncRequired) {
			t.Fatalf("first event %+v, want a resync", e)
		}
	default:
		t.Fatal("no resync event")
	}
	if err := c.MarkPresented(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = open()
	defer c.Close()
	if c.ResyncRequired() {
		t.Fatal("a resync was asked for after the presentation caught up")
	}
}
