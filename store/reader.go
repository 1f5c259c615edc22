package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parley-chat/parley/engine"
)

// Readers. A profile has one writer, the process that holds its lock; the
// read-only commands (history, inbox, outbox, trace, requests...) may run
// beside it, as SQLite readers of the write-ahead log. A reader takes no
// lock (but on a full disk: openFullReader), never
// migrates, never writes (a write fails with engine.ErrProfileOpen, as a
// second writer's open would), never checkpoints, and holds one read
// transaction per statement: a page of a list is one SELECT. The writer's
// scrub never waits for a reader (scrub.go): it tries again after
// ScrubDelay, so the window in which a deleted record may stay in the log
// starts when the last reader's transaction ends.

// OpenReader opens the profile in dir for reading only, whether or not
// another process holds it. It fails with engine.ErrNoProfile if dir holds
// none and engine.ErrWrongPassphrase if the passphrase does not unwrap the
// storage key. A profile whose schema the holder has not migrated yet fails
// with engine.ErrProfileOpen: only the holder may migrate it. On a disk too
// full for SQLite's shared-memory index (engine.ErrStorageFull), a profile
// nobody holds is still read (openFullReader).
func OpenReader(ctx context.Context, dir string, passphrase []byte) (*DB, error) {
	db, err := openReader(ctx, dir, passphrase, false)
	if errors.Is(err, engine.ErrStorageFull) {
		if full, ferr := openFullReader(ctx, dir, passphrase); ferr == nil {
			return full, nil
		}
	}
	return db, err
}

// openFullReader reads a profile on a disk so full that SQLite cannot
// make the shared-memory index of the write-ahead log, which even a reader
// needs. It takes the profile's lock, so that no writer starts while it
// reads (one holding it already would have made the index), and reads the
// database file alone (immutable) when the log is empty, as a closed
// profile leaves it: then that file is the whole profile. The lock is held
// until Close. A log with content (a writer that was killed) is not read
// this way: the error stays engine.ErrStorageFull.
func openFullReader(ctx context.Context, dir string, passphrase []byte) (_ *DB, err error) {
	lock, err := lockProfile(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = lock.Unlock()
		}
	}()
	if fi, err := os.Stat(filepath.Join(dir, dbFile) + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("store: open profile %s for reading: its write-ahead log holds %d bytes: %w", dir, fi.Size(), engine.ErrStorageFull)
	}
	db, err := openReader(ctx, dir, passphrase, true)
	if err != nil {
		return nil, err
	}
	db.lock = lock
	return db, nil
}

// openReader opens the profile in dir for reading; immutable is
// openReadOnly's.
func openReader(ctx context.Context, dir string, passphrase []byte, immutable bool) (_ *DB, err error) {
	path := filepath.Join(dir, dbFile)
	if err := profileExists(dir, path); err != nil {
		return nil, err
	}
	if err := secureProfile(dir, false); err != nil {
		return nil, err
	}
	key, err := unlock(ctx, dir, path, passphrase, immutable)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	sqldb, err := openReadOnly(path, immutable)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s for reading: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = sqldb.Close()
		}
	}()
	v, err := schemaVersion(ctx, sqldb)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s for reading: %w", dir, err)
	}
	if v != len(migrations) {
		return nil, fmt.Errorf("store: open profile %s for reading: schema version %d, not yet migrated to %d: %w", dir, v, len(migrations), engine.ErrProfileOpen)
	}
	seal, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	return &DB{dir: dir, sql: sqldb, seal: seal, now: time.Now, readOnly: true, scrubDelay: DefaultScrubDelay}, nil
}

// ReadOnly reports whether the store was opened by OpenReader.
func (db *DB) ReadOnly() bool { return db.readOnly }

// errReadOnly is a write to a store opened for reading.
func (db *DB) errReadOnly(op string) error {
	return fmt.Errorf("store: %s: %w (opened for reading only; writes need the profile's lock)", op, engine.ErrProfileOpen)
}
