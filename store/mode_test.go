package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/engine"
)

// modes returns the permission bits of dir and of every profile file in it.
func modes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	out["."] = fi.Mode().Perm()
	for _, name := range Files() {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			out[name] = fi.Mode().Perm()
		}
	}
	return out
}

// TestProfileFilesArePrivate: a profile made in an existing 0755 directory
// under a 022 umask is 0700 with 0600 files (the write-ahead log and shared
// memory too); one whose modes were loosened is tightened on open.
func TestProfileFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "profile")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := mustCreate(t, dir)
	if _, err := db.Apply(context.Background(), engine.Stage{Envelopes: []engine.StagedInput{{RelayRow: 1, Envelope: []byte("x")}}, At: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got := modes(t, dir)
		for _, name := range []string{dbFile, dbFile + "-wal", dbFile + "-shm", lockFile} {
			if _, ok := got[name]; !ok {
				t.Errorf("%s: %s is missing", when, name)
			}
		}
		for name, m := range got {
			want := fileMode
			if name == "." {
				want = dirMode
			}
			if m != want {
				t.Errorf("%s: %s is %04o, want %04o", when, name, m, want)
			}
		}
	}
	check("after create")
	mustClose(t, db)

	for _, p := range []string{dir, filepath.Join(dir, dbFile), filepath.Join(dir, lockFile)} {
		mode := fs.FileMode(0o644)
		if p == dir {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	db = mustOpen(t, dir)
	check("after open")
	mustClose(t, db)
}

// TestExposedProfileRefused: when the modes cannot be tightened (another
// user owns the files), open refuses with ErrProfileExposed, names the file
// and the fix, and changes nothing.
func TestExposedProfileRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profile")
	mustClose(t, mustCreate(t, dir))
	if err := os.Chmod(filepath.Join(dir, dbFile), 0o640); err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, dir)
	chmod = func(string, fs.FileMode) error { return fs.ErrPermission }
	defer func() { chmod = os.Chmod }()
	_, err := Open(context.Background(), dir, testPassphrase, Options{})
	if !errors.Is(err, engine.ErrProfileExposed) {
		t.Fatalf("Open = %v, want ErrProfileExposed", err)
	}
	for _, want := range []string{dbFile, "0640", "chmod 700 " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after := dirDigest(t, dir); len(after) != len(before) {
		t.Errorf("a refused open changed the profile's files: %v -> %v", before, after)
	}
}

// TestWritableProfileRefused: a profile that others could write to is not
// tidied away: open refuses it and says why.
func TestWritableProfileRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profile")
	mustClose(t, mustCreate(t, dir))
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dir, testPassphrase, Options{})
	if !errors.Is(err, engine.ErrProfileExposed) || !strings.Contains(err.Error(), "others could write") {
		t.Fatalf("Open of a 0777 profile = %v, want ErrProfileExposed naming the writable directory", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o777 {
		t.Fatalf("the refused open changed the mode to %04o", fi.Mode().Perm())
	}
}
