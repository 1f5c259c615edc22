package relaystore

import (
	"context"
	"crypto/rand"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

//go:embed schema.sql
var schema string

// FileName is the database file SQLite keeps in its directory.
const FileName = "relay.db"

// maxGroup is the most appends and acknowledgements one transaction
// commits together.
const maxGroup = 256

// SQLite is a Store in one SQLite file (WAL, synchronous=FULL): every append,
// acknowledgement, registration and bundle change is on disk before its call
// returns, so a relay killed at any moment restarts with every envelope it
// accepted, in order. Leases are kept in memory: after a restart every
// envelope is delivered again.
//
// Appends arriving together are committed in one transaction (group commit):
// one fsync for many senders, and each still returns only after its commit.
// Every other write a client can repeat at will (acknowledgements, accepted
// peers, block lists, bundles, one-time prekeys taken) joins the same
// commit (sqliteack.go). Its leases are the shared Leases table.
type SQLite struct {
	db      *sql.DB
	limits  Limits
	relayID [32]byte

	// sendMu guards closed: Append sends on appends under the read lock,
	// so once Close holds the write lock no request can still arrive.
	sendMu  sync.RWMutex
	closed  bool
	appends chan *appendReq
	stop    chan struct{}
	done    chan struct{}

	closeOnce sync.Once
	closeErr  error

	leases    Leases       // this process's: a lease is not durable
	counts    counts       // running totals for Stats (sqlitestats.go)
	stmts     sqliteStmts  // the append path's, prepared once (sqliteappend.go)
	relations sqliteRelMap // Relation's answers (sqlitepeers.go)
	commits   atomic.Int64 // transactions committed, each a sync: for tests
}

type appendReq struct {
	recipient string
	env       []byte // the whole envelope, or its head when shared is set
	copies    int
	from      Origin
	shared    *SharedPayload
	rows      []uint64
	err       error
	stored    int64 // the bytes its rows added to the file (a shared payload once)
	done      chan struct{}

	work groupWork // set: another write than an append (sqliteack.go)
}

var _ Store = (*SQLite)(nil)

// syncData makes SQLite commit with fdatasync(2) instead of fsync(2), once
// per process, as SQLite's own Linux builds do: the data and the size reach
// the disk, the file's times need not (a no-op where fdatasync is missing).
var syncData = sync.OnceFunc(func() { _, _ = sqlite.Fdatasync(true) })

// OpenSQLite opens or creates the relay database in dir (created if needed).
func OpenSQLite(ctx context.Context, dir string, l Limits) (*SQLite, error) {
	syncData()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("relaystore: create %s: %w", dir, err)
	}
	abs, err := filepath.Abs(filepath.Join(dir, FileName))
	if err != nil {
		return nil, fmt.Errorf("relaystore: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("relaystore: open %s: %w", abs, err)
	}
	// One connection: SQLite has one writer anyway, and the lease table and
	// the group committer rely on statements not interleaving across
	// connections.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &SQLite{db: db, limits: l.WithDefaults(),
		appends: make(chan *appendReq, maxGroup), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("relaystore: open %s: %w", abs, err)
	}
	go s.commitLoop()
	return s, nil
}

// dsn sets the pragmas of the connection: WAL, so that a commit is one
// append and one fsync of the log; synchronous=FULL, so that a commit that
// returned survives a power cut (NORMAL could lose the last ones, and the
// relay has already told their senders "accepted"); BEGIN IMMEDIATE for
// every transaction.
func dsn(path string) string {
	u := url.URL{Path: path}
	return "file:" + u.EscapedPath() +
		"?_pragma=busy_timeout(5000)" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)" +
		"&_txlock=immediate"
}

func (s *SQLite) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this build's %d", version, schemaVersion)
	}
	if version > 0 && version < schemaVersion {
		if err := migrate(ctx, tx, version); err != nil {
			return err
		}
	}
	if version == 0 {
		// Comments go first: a semicolon in one must not split a statement.
		for _, stmt := range strings.Split(stripComments(schema), ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		// Rows start from the wall clock in nanoseconds (see NewMemory): a
		// relay whose data directory was wiped must not reuse row numbers
		// that clients may still acknowledge.
		if _, err := tx.ExecContext(ctx, "INSERT INTO sqlite_sequence (name, seq) VALUES ('envelopes', ?)", time.Now().UnixNano()); err != nil {
			return fmt.Errorf("seed rows: %w", err)
		}
		var id [32]byte
		rand.Read(id[:])
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('relay_id', ?)", id[:]); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
			return err
		}
	}
	var id []byte
	if err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'relay_id'").Scan(&id); err != nil {
		return fmt.Errorf("read relay id: %w", err)
	}
	if len(id) != 32 {
		return fmt.Errorf("relay id of %d bytes", len(id))
	}
	copy(s.relayID[:], id)
	if err := s.counts.load(ctx, tx); err != nil {
		return fmt.Errorf("count what is held: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return s.stmts.prepare(ctx, s.db)
}

func stripComments(sql string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// RelayID implements Store.
func (s *SQLite) RelayID(context.Context) ([32]byte, error) { return s.relayID, nil }

// inTx runs fn in one BEGIN IMMEDIATE transaction.
func (s *SQLite) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	select {
	case <-s.stop:
		return ErrClosed
	default:
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.commits.Add(1)
	return nil
}

// Register implements Store.
func (s *SQLite) Register(ctx context.Context, address string, key [32]byte, replace bool, ip string) (bool, error) {
	replaced, added := false, false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		replaced, added = false, false
		var old []byte
		err := tx.QueryRowContext(ctx, "SELECT signing_key FROM registrations WHERE address = ?", address).Scan(&old)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if ip != "" {
				var n int
				if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM registrations WHERE ip = ?", ip).Scan(&n); err != nil {
					return err
				}
				if n >= s.limits.RegistrationsPerIP {
					return ErrRegistrationQuota
				}
			}
			_, err = tx.ExecContext(ctx, "INSERT INTO registrations (address, signing_key, ip) VALUES (?, ?, ?)", address, key[:], ip)
			added = err == nil
			return err
		case err != nil:
			return err
		case string(old) == string(key[:]):
			return nil
		case !replace:
			return ErrAddressTaken
		}
		if _, err := tx.ExecContext(ctx, "UPDATE registrations SET signing_key = ? WHERE address = ?", key[:], address); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM bundles WHERE address = ?", address); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM one_time_prekeys WHERE address = ?", address); err != nil {
			return err
		}
		replaced = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("register %s: %w", address, err)
	}
	if added {
		s.counts.add(1, Usage{})
	}
	return replaced, nil
}

// Registered implements Store.
func (s *SQLite) Registered(ctx context.Context, address string) ([32]byte, error) {
	var k [32]byte
	var b []byte
	err := s.db.QueryRowContext(ctx, "SELECT signing_key FROM registrations WHERE address = ?", address).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return k, fmt.Errorf("%s: %w", address, ErrNotRegistered)
	} else if err != nil {
		return k, fmt.Errorf("look up %s: %w", address, err)
	}
	copy(k[:], b)
	return k, nil
}

// OneTimePreKeys implements Store.
func (s *SQLite) OneTimePreKeys(ctx context.Context, address string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM one_time_prekeys WHERE address = ?", address).Scan(&n); err != nil {
		return 0, fmt.Errorf("count one-time prekeys of %s: %w", address, err)
	}
	return n, nil
}

// Append implements Store. The request joins the next group commit.
func (s *SQLite) Append(ctx context.Context, recipient string, env []byte, copies int, from Origin) ([]uint64, error) {
	if copies < 1 {
		return nil, fmt.Errorf("append to %s: %d copies", recipient, copies)
	}
	r := &appendReq{recipient: recipient, env: env, copies: copies, from: from, done: make(chan struct{})}
	if err := s.groupCommit(ctx, r); err != nil {
		return nil, fmt.Errorf("append to %s: %w", recipient, err)
	}
	return r.rows, nil
}

// AppendBatch implements Store: the whole batch joins the next group
// commit as one piece of work, so that it is one transaction and one sync
// however many items it has.
func (s *SQLite) AppendBatch(ctx context.Context, items []AppendItem) []AppendResult {
	out := make([]AppendResult, len(items))
	w := &batchWork{}
	var idx []int
	for i, it := range items {
		if it.Copies < 1 {
			out[i].Err = fmt.Errorf("append to %s: %d copies", it.Recipient, it.Copies)
			continue
		}
		w.reqs = append(w.reqs, &appendReq{recipient: it.Recipient, env: it.Env, copies: it.Copies, from: it.From, shared: it.Shared})
		idx = append(idx, i)
	}
	if len(w.reqs) == 0 {
		return out
	}
	err := s.commitWork(ctx, w)
	for j, r := range w.reqs {
		i := idx[j]
		switch {
		case err != nil:
			out[i].Err = fmt.Errorf("append to %s: %w", r.recipient, err)
		case r.err != nil:
			out[i].Err = fmt.Errorf("append to %s: %w", r.recipient, r.err)
		default:
			out[i].Rows = r.rows
		}
	}
	return out
}

// commitLoop commits queued appends in groups until Close.
func (s *SQLite) commitLoop() {
	defer close(s.done)
	for {
		var group []*appendReq
		select {
		case r := <-s.appends:
			group = append(group, r)
		case <-s.stop:
			s.failQueued()
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case r := <-s.appends:
				group = append(group, r)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

func (s *SQLite) failQueued() {
	for {
		select {
		case r := <-s.appends:
			r.err = ErrClosed
			close(r.done)
		default:
			return
		}
	}
}

// commitGroup appends every request of the group, and deletes the rows of
// every acknowledgement in it (sqliteack.go), in one transaction. A
// request refused on its own (unknown recipient, full mailbox) stores
// nothing and does not affect the others; a database error fails them all.
func (s *SQLite) commitGroup(group []*appendReq) {
	ctx := context.Background()
	err := func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, r := range group {
			r.rows, r.err, r.stored = nil, nil, 0
			var err error
			if r.work != nil {
				err = r.work.run(ctx, s, tx)
			} else {
				err = s.appendTx(ctx, tx, r, nil)
			}
			if refused(err) {
				r.err = err
			} else if err != nil {
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		s.commits.Add(1)
		return nil
	}()
	for _, r := range group {
		if err != nil {
			r.rows, r.err = nil, err
		}
		switch {
		case r.work != nil:
			r.work.done(s, r.err)
		case r.err == nil:
			s.counts.add(0, Usage{len(r.rows), int64(len(r.env)) * int64(len(r.rows))})
			s.counts.addStored(r.stored)
		}
		close(r.done)
	}
}

// Lease implements Store.
func (s *SQLite) Lease(ctx context.Context, recipient, holder string, max int, now, until time.Time) ([]Row, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []Row
	err := s.leases.Take(recipient, holder, now, until, func(held map[uint64]Lease, take func(uint64, Origin, int)) error {
		// Rows under a live lease are skipped, so ask for that many more.
		rows, err := s.db.QueryContext(ctx, `SELECT e.row, e.envelope, e.accepted, p.payload FROM envelopes e
			LEFT JOIN payloads p ON e.payload != 0 AND p.id = e.payload WHERE e.recipient = ? ORDER BY e.row LIMIT ?`, recipient, max+len(held))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() && len(out) < max {
			var r Row
			var id, accepted int64
			var shared []byte
			if err := rows.Scan(&id, &r.Envelope, &accepted, &shared); err != nil {
				return err
			}
			if shared != nil {
				// The head, then the payload kept once.
				r.Envelope = append(r.Envelope, shared...)
			}
			r.ID = uint64(id)
			if accepted > 0 {
				r.Accepted = time.Unix(0, accepted)
			}
			if _, ok := held[r.ID]; ok {
				continue
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range out {
			take(r.ID, Origin{}, 0)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lease from %s: %w", recipient, err)
	}
	return out, nil
}

// Release implements Store.
func (s *SQLite) Release(_ context.Context, recipient, holder string) error {
	s.leases.Release(recipient, holder)
	return nil
}

// Close implements Store: it fails appends still queued, waits for the
// group in flight and closes the database.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		s.sendMu.Lock()
		s.closed = true
		s.sendMu.Unlock()
		close(s.stop)
		<-s.done
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}
