package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofrs/flock"

	"github.com/parley-chat/parley/engine"
)

// Environment of TestHelperProcess.
const (
	helperModeEnv = "PARLEY_STORE_HELPER_MODE" // "hold" or "try"
	helperDirEnv  = "PARLEY_STORE_HELPER_DIR"
)

// Exit codes of TestHelperProcess in "try" mode.
const (
	helperOpened      = 0
	helperFailed      = 1
	helperProfileOpen = 4 // as parley's command line
)

// TestHelperProcess is not a test: the lock tests run the test binary again
// with it to open a profile from another process. In "hold" mode it opens
// the profile, prints "open" and keeps it open until its stdin closes; in
// "try" mode it opens and closes at once and reports by exit code.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		t.Skip("helper process for the lock tests")
	}
	db, err := Open(context.Background(), os.Getenv(helperDirEnv), testPassphrase, Options{})
	switch {
	case errors.Is(err, engine.ErrProfileOpen):
		fmt.Println(err)
		os.Exit(helperProfileOpen)
	case err != nil:
		fmt.Println(err)
		os.Exit(helperFailed)
	}
	if mode == "hold" {
		fmt.Println("open")
		io.Copy(io.Discard, os.Stdin)
	}
	if err := db.Close(); err != nil {
		fmt.Println(err)
		os.Exit(helperFailed)
	}
	os.Exit(helperOpened)
}

func helperCommand(mode, dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperDirEnv+"="+dir,
		// Under -race a process exiting with 0 sleeps a second for late
		// reports; the helper has none to wait for.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

// tryFromChild opens the profile in dir from another process and returns its
// exit code and output.
func tryFromChild(t *testing.T, dir string) (int, string) {
	t.Helper()
	out, err := helperCommand("try", dir).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("run helper: %v", err)
	return 0, ""
}

// holdInChild opens the profile in dir in another process and keeps it open
// until the returned function is called.
func holdInChild(t *testing.T, dir string) (release func()) {
	t.Helper()
	cmd := helperCommand("hold", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("helper said %q, %v; want \"open\"", line, err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
	t.Cleanup(release)
	return release
}

func wantProfileOpen(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, engine.ErrProfileOpen) {
		t.Fatalf("second open = %v, want ErrProfileOpen", err)
	}
	if want := fmt.Sprintf("profile %s is open in another process", dir); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func TestLockSameProcess(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "profile")
	db := mustCreate(t, dir)

	_, err := Open(ctx, dir, testPassphrase, Options{})
	wantProfileOpen(t, err, dir)
	_, err = Create(ctx, dir, testPassphrase, Options{KDF: testKDF})
	wantProfileOpen(t, err, dir)
	// A plain flock through another descriptor conflicts too.
	if ok, err := flock.New(filepath.Join(dir, lockFile)).TryLock(); ok || err != nil {
		t.Errorf("TryLock on a held profile = %v, %v; want false, nil", ok, err)
	}
	// The refused opens did not disturb the one that holds the profile.
	if err := withTx(t, db, func(ctx context.Context, w *tx) error { return w.putMeta(ctx, "x", []byte("y")) }); err != nil {
		t.Errorf("write after refused opens = %v", err)
	}
}

func TestLockSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mustClose(t, mustCreate(t, dir))
	for i := range 3 {
		db := mustOpen(t, dir)
		_, err := Open(ctx, dir, testPassphrase, Options{})
		wantProfileOpen(t, err, dir)
		if code, out := tryFromChild(t, dir); code != helperProfileOpen {
			t.Errorf("round %d: child open while held: exit %d (%s), want %d", i, code, out, helperProfileOpen)
		}
		mustClose(t, db)
	}
	if code, out := tryFromChild(t, dir); code != helperOpened {
		t.Errorf("child open after Close: exit %d (%s), want %d", code, out, helperOpened)
	}
}

func TestLockChildProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	t.Run("parent holds", func(t *testing.T) {
		db := mustCreate(t, dir)
		code, out := tryFromChild(t, dir)
		if code != helperProfileOpen {
			t.Fatalf("child open: exit %d (%s), want %d", code, out, helperProfileOpen)
		}
		if want := fmt.Sprintf("profile %s is open in another process", dir); !strings.Contains(out, want) {
			t.Errorf("child said %q, want it to say %q", out, want)
		}
		mustClose(t, db)
	})
	t.Run("child holds", func(t *testing.T) {
		release := holdInChild(t, dir)
		_, err := Open(ctx, dir, testPassphrase, Options{})
		wantProfileOpen(t, err, dir)
		release()
		mustClose(t, mustOpen(t, dir))
	})
	t.Run("child killed", func(t *testing.T) {
		cmd := helperCommand("hold", dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "open\n" {
			t.Fatalf("helper said %q, %v; want \"open\"", line, err)
		}
		cmd.Process.Kill()
		cmd.Wait()
		// The kernel dropped the dead process's lock.
		mustClose(t, mustOpen(t, dir))
	})
}
