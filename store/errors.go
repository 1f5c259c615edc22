package store

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/parley-chat/parley/engine"
)

// errNewerSchema is returned when a profile's schema version is above the
// newest migration this build knows: a newer parley wrote it.
var errNewerSchema = engine.ErrProfileTooNew

// driverError is an SQLite failure that has no engine meaning. It keeps the
// driver's message and result code for logs and tests but not the driver's
// type, so nothing outside store can come to depend on it.
type driverError struct {
	code int
	msg  string
}

func (e *driverError) Error() string { return "sqlite: " + e.msg }

// Unwrap makes every driver failure an engine.ErrStorage: the engine leaves
// what it was doing to be done again rather than judging its input.
func (e *driverError) Unwrap() error { return engine.ErrStorage }

// mappedError is an SQLite failure that callers branch on: errors.Is matches
// the engine sentinel, the message keeps the driver's words.
type mappedError struct {
	sentinel error
	msg      string
}

func (e *mappedError) Error() string { return e.sentinel.Error() + ": sqlite: " + e.msg }
func (e *mappedError) Unwrap() error { return e.sentinel }

// mapErr turns an SQLite error into an engine error or an opaque one, and
// leaves every other error (context, engine, nil) as it is. Callers still
// wrap the result as "store: verb object: %w".
func mapErr(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	code := se.Code()
	if code == sqlite3.SQLITE_IOERR_SHMSIZE {
		// The shared-memory index of the write-ahead log could not
		// grow: the disk is full (ENOSPC on the -shm file).
		return &mappedError{engine.ErrStorageFull, se.Error()}
	}
	// Extended result codes are on in modernc.org/sqlite: the primary code is
	// the low byte (SQLITE_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT | 8<<8).
	switch code & 0xff {
	case sqlite3.SQLITE_FULL:
		return &mappedError{engine.ErrStorageFull, se.Error()}
	case sqlite3.SQLITE_CONSTRAINT:
		return &mappedError{engine.ErrConflict, se.Error()}
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		// Our own writers are serialised by the profile lock and one
		// connection, so a lock held past busy_timeout belongs to some other
		// program that has the database file open (an sqlite3 shell, a backup
		// tool).
		return &mappedError{engine.ErrProfileOpen, "database is locked by another program: " + se.Error()}
	}
	return &driverError{code: code, msg: se.Error()}
}
