package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/parley-chat/parley/engine"
)

// Files of a profile directory.
const (
	dbFile    = "parley.db"
	lockFile  = "parley.lock"
	newDBFile = "parley.db.new" // a profile being created; renamed to dbFile when complete
)

// Files lists the names of every file a profile directory may hold, for a
// caller that removes a profile.
func Files() []string {
	return []string{dbFile, dbFile + "-wal", dbFile + "-shm", newDBFile, newDBFile + "-wal", newDBFile + "-shm", lockFile}
}

// Options tune how a profile is created or opened.
type Options struct {
	// KDF sets the Argon2id parameters of a new profile; the zero value means
	// the defaults (time 3, memory 64 MiB, threads 2), and every real profile
	// uses them. Tests set a cheap value. Open ignores it: it reads the
	// parameters the profile was created with.
	KDF KDFParams
	// Failpoint, when set, is called at every named point of every
	// transition as "<plan kind>/<point>": before-begin, before and after
	// each statement (stmt-<name>-before, stmt-<name>-after), before-persist
	// and after-persist. An error aborts the transition there (after-persist:
	// it was durable already). Tests use it to inject errors and process
	// exits; production code leaves it nil.
	Failpoint engine.Failpoint
	// Now is the clock of the store (default time.Now), read once per
	// transaction for the times a plan does not carry.
	Now func() time.Time
	// ScrubDelay bounds how long the old version of a deleted or replaced
	// record may stay in the write-ahead log of an open profile (default
	// DefaultScrubDelay); see Scrub.
	ScrubDelay time.Duration
}

// DB is an open profile: its SQLite database, held by this process alone
// through the profile lock, and the storage key that seals its records.
type DB struct {
	dir  string
	lock *flock.Flock
	sql  *sql.DB
	seal *sealer
	// stmts are the prepared statements, the hot ones prepared at open on
	// the one connection, and shared by every transaction (see tx.stmt).
	stmts stmtCache
	// failpoint and now come from Options; read-only after open.
	failpoint engine.Failpoint
	now       func() time.Time

	closeMu sync.Mutex
	closed  atomic.Bool
	// readOnly is set for a store opened by OpenReader: no lock, no
	// writes, no checkpoints.
	readOnly bool

	// The batched scrub of the write-ahead log (scrub.go).
	scrubDelay    time.Duration
	scrubMu       sync.Mutex
	scrubStopping bool
	scrubTimer    *time.Timer
	scrubWG       sync.WaitGroup
	scrubs        atomic.Int64
	scrubFailures atomic.Int64

	// peopleHeld and personLanesHeld say whether any peer device list, or
	// any lane of a message to a person, may be stored (store/person.go):
	// until then a receive and an ACK skip their lookups, so that a
	// profile that never met a person with several devices pays nothing.
	// Set at open from the tables, and by the plans that store them.
	peopleHeld      atomic.Bool
	personLanesHeld atomic.Bool
	decisionsHeld   atomic.Bool // any kept decision may be stored
	// historyImported says whether a history may have been imported
	// (a restore or a link): Seen then also looks for a received message
	// in the history, where an import leaves it without a finalized record.
	historyImported atomic.Bool
}

// Create makes a new profile in dir (created 0700 if needed, tightened to
// 0700 if it exists; every file 0600) sealed under passphrase, and opens it. It fails with engine.ErrProfileExists if dir
// already holds a profile and with engine.ErrProfileOpen if another store
// holds dir. The database appears under its final name only once it is
// complete, so a crash during Create leaves no half-made profile.
func Create(ctx context.Context, dir string, passphrase []byte, opts Options) (*DB, error) {
	params := opts.KDF
	if params == (KDFParams{}) {
		params = defaultKDF
	}
	rec, err := newKDFRecord(params)
	if err != nil {
		return nil, fmt.Errorf("store: create profile %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("store: create profile %s: %w", dir, err)
	}
	lock, err := lockProfile(dir)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			_ = lock.Unlock()
		}
	}()

	path := filepath.Join(dir, dbFile)
	switch _, err := os.Lstat(path); {
	case err == nil:
		return nil, fmt.Errorf("store: create profile %s: %w", dir, engine.ErrProfileExists)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("store: create profile %s: %w", dir, err)
	}
	// No profile here yet: whatever the modes were, nothing of one can have
	// been read or swapped, so they are made private, writable or not.
	if err := secureProfile(dir, true); err != nil {
		return nil, err
	}

	key := make([]byte, storageKeySize)
	defer clear(key)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("store: create profile %s: make storage key: %w", dir, err)
	}
	wrapped := wrapStorageKey(rec.wrappingSealer(passphrase), key)
	if err := buildProfile(ctx, dir, rec, wrapped); err != nil {
		return nil, err
	}
	sqldb, err := openSQL(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	db, err := finishOpen(ctx, dir, lock, sqldb, key, opts)
	if err != nil {
		return nil, err
	}
	done = true
	return db, nil
}

// buildProfile writes a complete database under newDBFile (schema, KDF record,
// wrapped storage key), closes it and renames it to dbFile.
func buildProfile(ctx context.Context, dir string, rec kdfRecord, wrapped []byte) (err error) {
	tmp := filepath.Join(dir, newDBFile)
	removeDBFiles(tmp) // left by a Create that crashed; we hold the lock
	defer func() {
		if err != nil {
			removeDBFiles(tmp)
		}
	}()
	if err := createPrivate(tmp); err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, err)
	}

	sqldb, err := openSQL(ctx, tmp)
	if err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, err)
	}
	defer func() {
		if cerr := sqldb.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("store: create profile %s: close: %w", dir, mapErr(cerr))
		}
	}()
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, mapErr(err))
	}
	defer conn.Close()
	if err := migrate(ctx, conn, migrations); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, mapErr(err))
	}
	defer tx.Rollback()
	for _, kv := range []struct {
		k string
		v []byte
	}{
		{metaKDF, rec.encode()},
		{metaStorageKey, wrapped},
	} {
		if _, err := tx.ExecContext(ctx, sqlPutMeta, kv.k, kv.v); err != nil {
			return fmt.Errorf("store: create profile %s: write %s: %w", dir, kv.k, mapErr(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create profile %s: commit: %w", dir, mapErr(err))
	}
	// Move everything into the database file, so that the rename below
	// carries the whole profile and no -wal file is left behind.
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("store: create profile %s: checkpoint: %w", dir, mapErr(err))
	}
	if err := conn.Close(); err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, mapErr(err))
	}
	if err := sqldb.Close(); err != nil {
		return fmt.Errorf("store: create profile %s: close: %w", dir, mapErr(err))
	}
	if fi, err := os.Stat(tmp + "-wal"); err == nil && fi.Size() > 0 {
		return fmt.Errorf("store: create profile %s: write-ahead log left after close", dir)
	}
	_ = os.Remove(tmp + "-wal")
	_ = os.Remove(tmp + "-shm")
	if err := os.Rename(tmp, filepath.Join(dir, dbFile)); err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("store: create profile %s: %w", dir, err)
	}
	return nil
}

// Open opens the profile in dir with passphrase. It fails with
// engine.ErrNoProfile if dir holds none, engine.ErrProfileOpen if another
// store holds it, and engine.ErrWrongPassphrase if the passphrase does not
// unwrap the storage key; none of these writes anything. A profile that
// others can read is made private (0700, files 0600), or refused with
// engine.ErrProfileExposed when that fails. An older schema is migrated
// after the passphrase was checked.
func Open(ctx context.Context, dir string, passphrase []byte, opts Options) (*DB, error) {
	path := filepath.Join(dir, dbFile)
	if err := profileExists(dir, path); err != nil {
		return nil, err
	}
	lock, err := lockProfile(dir)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			_ = lock.Unlock()
		}
	}()
	if err := profileExists(dir, path); err != nil { // it may have gone before we held the lock
		return nil, err
	}
	if err := secureProfile(dir, false); err != nil {
		return nil, err
	}
	key, err := unlock(ctx, dir, path, passphrase, false)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	sqldb, err := openSQL(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	db, err := finishOpen(ctx, dir, lock, sqldb, key, opts)
	if err != nil {
		return nil, err
	}
	done = true
	return db, nil
}

func profileExists(dir, path string) error {
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: open profile %s: %w", dir, engine.ErrNoProfile)
	case err != nil:
		return fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	return nil
}

// unlock reads the KDF record and the wrapped storage key, runs the KDF and
// returns the storage key. It reads through a read-only connection: a
// read-write one would, on closing, checkpoint into the database file what a
// crashed process left in the write-ahead log, and a wrong passphrase must
// not write anything. immutable is openReadOnly's.
func unlock(ctx context.Context, dir, path string, passphrase []byte, immutable bool) (key []byte, err error) {
	sqldb, err := openReadOnly(path, immutable)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	defer func() {
		if cerr := sqldb.Close(); cerr != nil && err == nil {
			clear(key)
			key, err = nil, fmt.Errorf("store: open profile %s: close: %w", dir, mapErr(cerr))
		}
	}()
	v, err := schemaVersion(ctx, sqldb)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	switch {
	case v == 0:
		return nil, fmt.Errorf("store: open profile %s: %w: database has no schema", dir, engine.ErrMalformedState)
	case v > len(migrations):
		return nil, fmt.Errorf("store: open profile %s: schema version %d, this build knows %d: %w", dir, v, len(migrations), errNewerSchema)
	}
	kdfBytes, err := getMeta(ctx, sqldb, metaKDF)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	wrapped, err := getMeta(ctx, sqldb, metaStorageKey)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	if kdfBytes == nil || wrapped == nil {
		return nil, fmt.Errorf("store: open profile %s: %w: no storage key", dir, engine.ErrMalformedState)
	}
	rec, err := decodeKDFRecord(kdfBytes)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	key, err = unwrapStorageKey(rec.wrappingSealer(passphrase), wrapped)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, err)
	}
	return key, nil
}

// finishOpen makes the DB of a profile whose lock is held and whose storage
// key is known: it migrates the schema and prepares the hot statements. It
// closes sqldb on failure.
func finishOpen(ctx context.Context, dir string, lock *flock.Flock, sqldb *sql.DB, key []byte, opts Options) (_ *DB, err error) {
	defer func() {
		if err != nil {
			_ = sqldb.Close()
		}
	}()
	seal, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, mapErr(err))
	}
	err = migrateSealed(ctx, conn, migrations, seal)
	if cerr := conn.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: open profile %s: %w", dir, mapErr(cerr))
	}
	if err != nil {
		return nil, err
	}
	db := &DB{dir: dir, lock: lock, sql: sqldb, seal: seal, stmts: stmtCache{m: make(map[string]*sql.Stmt, len(hotStatements))},
		failpoint: opts.Failpoint, now: opts.Now, scrubDelay: opts.ScrubDelay}
	if db.now == nil {
		db.now = time.Now
	}
	if db.scrubDelay <= 0 {
		db.scrubDelay = DefaultScrubDelay
	}
	for _, q := range hotStatements {
		s, err := sqldb.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("store: open profile %s: prepare %q: %w", dir, q, mapErr(err))
		}
		db.stmts.m[q] = s
	}
	var people, lanes, decisions, imported bool
	if err := sqldb.QueryRowContext(ctx, sqlPeopleHeld).Scan(&people, &lanes, &decisions, &imported); err != nil {
		return nil, fmt.Errorf("store: open profile %s: %w", dir, mapErr(err))
	}
	db.peopleHeld.Store(people)
	db.personLanesHeld.Store(lanes)
	db.decisionsHeld.Store(decisions)
	db.historyImported.Store(imported)
	return db, nil
}

// Close scrubs the write-ahead log (see Scrub), closes the database and then
// releases the profile lock. Calling it again does nothing.
func (db *DB) Close() error {
	db.closeMu.Lock()
	defer db.closeMu.Unlock()
	if db.closed.Load() {
		return nil
	}
	db.stopScrub()
	if db.readOnly {
		db.closed.Store(true)
		err := db.sql.Close()
		if err != nil {
			err = fmt.Errorf("store: close profile %s: %w", db.dir, mapErr(err))
		}
		if db.lock != nil { // a reader of a full disk (openFullReader)
			if uerr := db.lock.Unlock(); uerr != nil && err == nil {
				err = fmt.Errorf("store: unlock profile %s: %w", db.dir, uerr)
			}
		}
		return err
	}
	// Best effort: SQLite checkpoints and removes the log when its last
	// connection closes anyway; this makes the truncation explicit.
	_ = db.Scrub(context.Background())
	db.closed.Store(true)
	err := db.sql.Close() // also closes the prepared statements
	if err != nil {
		err = fmt.Errorf("store: close profile %s: %w", db.dir, mapErr(err))
	}
	// Only now, with SQLite's file handles closed, may another store open
	// the profile.
	if uerr := db.lock.Unlock(); uerr != nil && err == nil {
		err = fmt.Errorf("store: unlock profile %s: %w", db.dir, uerr)
	}
	return err
}

// dsn is the data source name of the database at path: a file: URI whose
// query sets the pragmas of every connection and makes BeginTx issue
// BEGIN IMMEDIATE (modernc.org/sqlite applies each _pragma as
// "PRAGMA <value>" when it opens a connection, busy_timeout first).
//
//   - journal_mode(WAL): readers do not block the writer, and a commit is one
//     append and one fsync of the log.
//   - synchronous(FULL): the log is synced at every commit, so a commit that
//     returned survives a power cut. NORMAL would lose the last commits,
//     which the reliability layer's crash windows do not allow.
//   - busy_timeout(5000): the profile lock keeps other parley processes out;
//     this covers a foreign program holding the file briefly.
//   - foreign_keys(1): the schema's references are enforced.
//   - secure_delete(ON): deleted content is overwritten with zeros (see
//     scrub.go for the write-ahead log).
func dsn(path string) string {
	u := url.URL{Path: path} // escapes '?', '#' and '%' in the path
	return "file:" + u.EscapedPath() +
		"?_pragma=busy_timeout(5000)" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)" +
		"&_pragma=foreign_keys(1)" +
		"&_pragma=secure_delete(ON)" +
		"&_txlock=immediate"
}

// syncData makes SQLite commit with fdatasync(2) instead of fsync(2), once
// per process. fdatasync writes the data and the metadata needed to read it
// back (the size) but not the file's times, which is what SQLite's own
// builds for Linux do; the pure-Go build keeps fsync unless asked. Where it
// is not available (macOS, Windows) commits keep fsync.
var syncData = sync.OnceFunc(func() { _, _ = sqlite.Fdatasync(true) })

// openSQL opens the database at path on one connection, so that all reads and
// writes of a store are serialised on it, and checks that WAL took effect.
func openSQL(ctx context.Context, path string) (*sql.DB, error) {
	syncData()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	sqldb, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, mapErr(err)
	}
	sqldb.SetMaxOpenConns(1)
	sqldb.SetMaxIdleConns(1)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)
	var mode string
	if err := sqldb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = sqldb.Close()
		return nil, mapErr(err)
	}
	if mode != "wal" {
		_ = sqldb.Close()
		return nil, fmt.Errorf("journal mode is %q, want wal (does the file system support shared memory?)", mode)
	}
	return sqldb, nil
}

// openReadOnly opens the database at path for reading only (SQLite's
// mode=ro URI parameter), on one connection. immutable reads the database
// file alone, with no write-ahead log and no shared memory (SQLite's
// immutable=1): for a profile nothing else can write whose log is empty
// (see openFullReader).
func openReadOnly(path string, immutable bool) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Path: abs}
	query := "?mode=ro&_pragma=busy_timeout(5000)"
	if immutable {
		query = "?mode=ro&immutable=1"
	}
	sqldb, err := sql.Open("sqlite", "file:"+u.EscapedPath()+query)
	if err != nil {
		return nil, mapErr(err)
	}
	sqldb.SetMaxOpenConns(1)
	return sqldb, nil
}

// removeDBFiles removes a database file and its SQLite companions.
func removeDBFiles(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suffix)
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
