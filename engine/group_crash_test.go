package engine_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestGroupCrashChild is the child of TestGroupCrashWindows: it runs one
// operation and kills itself with SIGKILL at the named point.
func TestGroupCrashChild(t *testing.T) {
	root := os.Getenv("PARLEY_GC_ROOT")
	if root == "" {
		t.Skip("only runs as a child of TestGroupCrashWindows")
	}
	point := os.Getenv("PARLEY_GC_POINT")
	hook := func(p string) error {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal ends the process
		}
		return nil
	}
	if err := (fpWorld{root: root}).do(os.Getenv("PARLEY_GC_DEV"), os.Getenv("PARLEY_GC_OP"), hook); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
}

// TestGroupCrashWindows kills a real process with SIGKILL in each crash
// window of a group send and a group receive; after a restart the fan-out
// is whole or absent, and every member ends with the message exactly once.
func TestGroupCrashWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	if os.Getenv("PARLEY_FP_GROUPS") == "0" {
		t.Skip("PARLEY_FP_GROUPS=0")
	}
	scenarios := map[string]fpScenario{}
	for _, sc := range groupScenarios() {
		scenarios[sc.name] = sc
	}
	windows := []struct {
		name, scenario, point string
		wantAfter             bool
	}{
		{"group send: before the store (nothing stored)", "group send", "group-send/before-plan", false},
		{"group send: inside the transaction (nothing stored)", "group send", "group-send/stmt-lane-insert-after", false},
		{"group send: after the store, before the pump (every lane pending, none encrypted)", "group send", "group-send/after-swap", true},
		{"group send: before the pump encrypts a lane (every lane pending)", "group send", "pump/before-crypto", true},
		{"group send: after the pump's commit of a lane (every lane pending)", "group send", "pump/after-swap", true},
		{"group send: after that, before its hand-off (every lane pending)", "group send", "pump/before-handoff", true},
		{"group receive: inside the transaction (processed again)", "group receive", "pairwise-receive/stmt-inbound-insert-after", false},
		{"group receive: after the commit (delivered again until committed)", "group receive", "pairwise-receive/after-persist", true},
		{"roster receive: after the commit, before the ACK (the retry brings it)", "roster receive", "handshake-receive/before-handoff", true},
	}
	for _, win := range windows {
		t.Run(win.name, func(t *testing.T) {
			sc := scenarios[win.scenario]
			w := sc.prepare(t, t.TempDir())
			pre := sc.signatures(t, w)
			cmd := exec.Command(os.Args[0], "-test.run=^TestGroupCrashChild$")
			cmd.Env = append(os.Environ(), "PARLEY_GC_ROOT="+w.root, "PARLEY_GC_POINT="+win.point,
				"PARLEY_GC_DEV="+sc.target.dev, "PARLEY_GC_OP="+sc.target.op)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("the child was not killed at %s: %v %s", win.point, err, out)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the child ended with %v at %s, want SIGKILL: %s", err, win.point, out)
			}
			now := sc.signatures(t, w)
			absent := sameSignatures(now, pre)
			if absent == win.wantAfter {
				t.Fatalf("after SIGKILL at %s the transition is absent=%v, want absent=%v", win.point, absent, !win.wantAfter)
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
