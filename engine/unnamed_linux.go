package engine

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a file without a name in dir (O_TMPFILE): what is
// written to it is on the destination's file system, but nothing shows in
// dir, and a kill leaves nothing behind, until linkUnnamed names it. ok is
// false where the file system or kernel has no such files; the caller then
// writes the file at the end under a temporary name.
func openUnnamed(dir string) (f *os.File, ok bool) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)"), true
}

// linkUnnamed gives the file openUnnamed opened the name path; it fails
// with os.ErrExist when path is taken.
func linkUnnamed(f *os.File, path string) error {
	err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.EEXIST) {
		return os.ErrExist
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err}
	}
	return nil
}
