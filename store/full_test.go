package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/parley-chat/parley/engine"
)

// smallDisk mounts a tmpfs of size bytes at a new directory and unmounts it
// when the test ends; it skips the test where mounting is not allowed (not
// root, or no mount(8)).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s): the full-disk test needs root", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the disk is full and returns its
// path; removing it frees the space.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v, want ENOSPC", dir, err)
			}
			break
		}
	}
	// The last bytes: a write smaller than a page may still fit.
	for n := len(buf) / 2; n > 0; n /= 2 {
		_, _ = f.Write(buf[:n])
	}
	return path
}

// TestReaderOnFullDisk: on a disk too full for SQLite's shared-memory
// index, opening the profile for writing fails with ErrStorageFull and
// changes nothing, while OpenReader still reads it, holding the lock so
// that no writer starts meanwhile; once space is freed the profile opens
// as before, with everything in it.
func TestReaderOnFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(smallDisk(t, "2m"), "profile")
	db, err := Create(ctx, dir, testPassphrase, Options{KDF: testKDF})
	if err != nil {
		t.Fatal(err)
	}
	bob := engine.MustParseAddress("bob/1")
	if _, err := db.Apply(ctx, engine.SetContact{Peer: bob, Name: "Bob"}); err != nil {
		t.Fatal(err)
	}
	mustClose(t, db)
	before := dirDigest(t, dir)
	filler := fillDisk(t, filepath.Dir(dir))

	if _, err := Open(ctx, dir, testPassphrase, Options{}); !errors.Is(err, engine.ErrStorageFull) {
		t.Fatalf("Open on a full disk: %v, want ErrStorageFull", err)
	}
	r, err := OpenReader(ctx, dir, testPassphrase)
	if err != nil {
		t.Fatalf("OpenReader on a full disk: %v", err)
	}
	if got, err := r.Contacts(ctx); err != nil || got[bob] != "Bob" {
		t.Fatalf("contacts read on a full disk: %v, %v; want bob named Bob", got, err)
	}
	if _, err := Open(ctx, dir, testPassphrase, Options{}); !errors.Is(err, engine.ErrProfileOpen) {
		t.Fatalf("Open beside the full disk's reader: %v, want ErrProfileOpen (the reader holds the lock)", err)
	}
	mustClose(t, r)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if got := dirDigest(t, dir)[dbFile]; got != before[dbFile] {
		t.Fatalf("%s changed on the full disk", dbFile)
	}
	db = mustOpen(t, dir)
	if got, err := db.Contacts(ctx); err != nil || got[bob] != "Bob" {
		t.Fatalf("contacts after space was freed: %v, %v", got, err)
	}
	var ok string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity check: %q, %v", ok, err)
	}
}
