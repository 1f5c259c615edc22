package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parley-chat/parley/engine"
)

// A profile's directory is 0700 and its files 0600: the database is sealed,
// but its size, its times and its clear columns (addresses, sequence numbers)
// are nobody else's business, and a sealed record is still something an
// attacker with the passphrase would like to read. SQLite gives the -wal and
// -shm files the mode of the database file, so creating that 0600 covers
// them.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// chmod is os.Chmod; a test replaces it to see a refusal.
var chmod = os.Chmod

// secureProfile tightens dir to 0700 and every profile file in it to 0600
// when others can read them (profiles made by earlier versions took the
// umask). It refuses, with engine.ErrProfileExposed and a fix in the
// message, a profile that others could write to (its files may have been
// swapped: that is for the user to judge, not to tidy away) unless fresh is
// set (a profile being created, of which nothing is there yet), and one whose
// modes cannot be changed (another user owns it).
func secureProfile(dir string, fresh bool) error {
	paths := []string{dir}
	for _, name := range Files() {
		paths = append(paths, filepath.Join(dir, name))
	}
	for i, p := range paths {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && i > 0 {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: open profile %s: %w", dir, err)
		}
		want := fileMode
		if i == 0 {
			want = dirMode
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &exposedError{dir: dir, path: p, why: "is a symbolic link"}
		}
		if fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if fi.Mode().Perm()&0o022 != 0 && !fresh {
			return &exposedError{dir: dir, path: p, why: fmt.Sprintf("is %04o: others could write to it, so check the profile before you trust it", fi.Mode().Perm())}
		}
		if err := chmod(p, want); err != nil {
			return &exposedError{dir: dir, path: p, why: fmt.Sprintf("is %04o and could not be made %04o (%v)", fi.Mode().Perm(), want, err)}
		}
	}
	return nil
}

// exposedError is a profile others could read, with the command that fixes it.
type exposedError struct {
	dir, path, why string
}

func (e *exposedError) Error() string {
	return fmt.Sprintf("profile %s is not private: %s %s; fix with: chmod 700 %s && chmod 600 %s/*", e.dir, e.path, e.why, e.dir, e.dir)
}

func (e *exposedError) Unwrap() error { return engine.ErrProfileExposed }

// createPrivate makes an empty file at path with mode 0600 (it must not
// exist), so that SQLite, which opens what is there, and its -wal and -shm
// files never take the umask.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fileMode)
	if err != nil {
		return err
	}
	return f.Close()
}
