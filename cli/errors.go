package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/parley-chat/parley/engine"
)

// The one line a failed command prints: "parley COMMAND: " and the cause,
// naming the thing it is about (the file, the peer, the group) in the
// command's words. A command words what only it knows (no group NAME here,
// no request from PEER) with wordedf or a plain error; explain words what
// any command may meet: a full disk, a relay that cannot be reached.

// wordedError is an error a command worded for the person, whose cause
// stays reachable for the exit code (a message kept pending is exit 3).
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }

// wordedf words err as format says; err stays its cause.
func wordedf(err error, format string, a ...any) error {
	return &wordedError{msg: fmt.Sprintf(format, a...), err: err}
}

// explain is the line run prints for a command's error: a worded error as
// it is, a full disk as such (with the free space where it filled), a relay
// that cannot be reached with the relay and the cause, else the error.
func explain(env *cliEnv, err error) string {
	var w *wordedError
	if errors.As(err, &w) {
		return w.msg
	}
	if errors.Is(err, engine.ErrStorageFull) || errors.Is(err, syscall.ENOSPC) {
		return diskFull(env, err)
	}
	if s, ok := relayDown(env, err); ok {
		return s
	}
	return err.Error()
}

// diskFull says that a disk is full and how much is free on it: the disk
// of the file the error names, else the profile's.
func diskFull(env *cliEnv, err error) string {
	dir := env.profileDir
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(err, syscall.ENOSPC) {
		dir = filepath.Dir(pe.Path)
	}
	if dir == "" {
		return "disk full: free some space and run it again"
	}
	if free, ok := freeBytes(existingDir(dir)); ok {
		return fmt.Sprintf("disk full (%s free on %s): free some space and run it again", sizeText(free), dir)
	}
	return fmt.Sprintf("disk full on %s: free some space and run it again", dir)
}

// existingDir is dir, or its nearest parent that exists (a profile that
// init has not made yet).
func existingDir(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// sizeText is a number of bytes for a person: B, KiB, MiB, GiB or TiB,
// with one decimal below ten.
func sizeText(n uint64) string {
	const units = "KMGT"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %ciB", v, units[u])
	}
	return fmt.Sprintf("%.0f %ciB", v, units[u])
}

// relayDown words a relay that could not be reached at all (no
// connection): the relay's URL and the network's cause, once. Other
// failures to connect (a certificate, a pinned ID) keep their own words.
func relayDown(env *cliEnv, err error) (string, bool) {
	var op *net.OpError
	if !errors.Is(err, engine.ErrRelayUnreachable) || !errors.As(err, &op) {
		return "", false
	}
	relay := env.relayURL
	if relay == "" && op.Addr != nil {
		relay = "at " + op.Addr.String()
	}
	return fmt.Sprintf("relay %s unreachable (%s)", relay, rootCause(op.Err)), true
}

// rootCause is the innermost error's text ("connection refused" rather than
// "dial tcp 127.0.0.1:7777: connect: connection refused").
func rootCause(err error) string {
	if err == nil {
		return "no answer"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// pendingCause words why a message stays pending (exit 3) without its ID,
// which the command printed already.
func pendingCause(env *cliEnv, err error) string {
	var notSent *engine.MessageNotSentError
	if errors.As(err, &notSent) {
		err = notSent.Err
	}
	if s, ok := relayDown(env, err); ok {
		return s
	}
	return err.Error()
}
