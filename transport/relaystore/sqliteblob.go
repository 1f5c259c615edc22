package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/wire"
)

// BlobFileName is the database file the SQLite blob store keeps in the
// relay's data directory, beside FileName.
const BlobFileName = "blobs.db"

// blobSchemaVersion is stored in the blob database's PRAGMA user_version.
const blobSchemaVersion = 2

// blobSchema: one row per blob (kept, without its data, after it expired,
// so that a reader hears it expired) and one row per chunk as written. It
// is version 1; blobMigrations bring it to blobSchemaVersion.
const blobSchema = `
CREATE TABLE blobs (
	id      BLOB PRIMARY KEY,
	owner   TEXT NOT NULL,
	ip      TEXT NOT NULL,
	size    INTEGER NOT NULL,
	charge  INTEGER NOT NULL,
	held    INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	gone    INTEGER NOT NULL
) STRICT;
CREATE INDEX blobs_by_expiry ON blobs (gone, expires);
CREATE INDEX blobs_by_owner ON blobs (owner, gone);
CREATE INDEX blobs_by_ip ON blobs (ip, gone);
CREATE TABLE blob_chunks (
	blob   BLOB NOT NULL,
	offset INTEGER NOT NULL,
	data   BLOB NOT NULL
) STRICT;
CREATE UNIQUE INDEX blob_chunks_by_offset ON blob_chunks (blob, offset)`

// blobMigrations[v] brings a blob database of version v to v+1, in the
// transaction that opens it; ?1 is the time of the opening (Unix
// nanoseconds).
var blobMigrations = map[int]string{
	// When each blob was last written (its creation, at first), for the
	// lifetime of an idle upload: the blobs already held start their idle
	// time now. And each blob's chunk size, which the chunk rule fixes at
	// the first write: for the blobs already held, their first chunk's.
	1: `
ALTER TABLE blobs ADD COLUMN progress INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blobs ADD COLUMN chunk INTEGER NOT NULL DEFAULT 0;
UPDATE blobs SET progress = ?1;
UPDATE blobs SET chunk = coalesce((SELECT length(data) FROM blob_chunks WHERE blob = blobs.id AND offset = 0), 0);
CREATE INDEX blobs_by_progress ON blobs (gone, progress)`,
}

// SQLiteBlobs is a BlobStore in its own SQLite file (WAL,
// synchronous=FULL) in the relay's data directory: a chunk is on disk
// before its write is answered, so an upload resumes after a crash where
// the relay said it held. The file is apart from the relay database so that
// a large upload never holds that database's one writer, which the
// envelopes' group commit needs. The charges are running totals kept in
// memory (this process is the file's only writer), read once at opening.
type SQLiteBlobs struct {
	db     *sql.DB
	limits BlobLimits

	mu     sync.Mutex // guards closed
	closed bool

	// wmu is held across each write, from the quota check to the update
	// of usage after the commit.
	wmu   sync.Mutex
	usage blobUsage
}

// blobUsage is what the live blobs are charged and hold.
type blobUsage struct {
	byAddr, byIP  map[string]int64
	charged, held int64
	blobs         int
}

var _ BlobStore = (*SQLiteBlobs)(nil)

// OpenSQLiteBlobs opens or creates the blob database in dir (created if
// needed) with the limits l.
func OpenSQLiteBlobs(ctx context.Context, dir string, l BlobLimits) (*SQLiteBlobs, error) {
	syncData()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("relaystore: create %s: %w", dir, err)
	}
	abs, err := filepath.Abs(filepath.Join(dir, BlobFileName))
	if err != nil {
		return nil, fmt.Errorf("relaystore: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("relaystore: open %s: %w", abs, err)
	}
	db.SetMaxOpenConns(1) // one writer; statements never interleave
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &SQLiteBlobs{db: db, limits: l.WithDefaults()}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("relaystore: open %s: %w", abs, err)
	}
	return s, nil
}

func (s *SQLiteBlobs) init(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var version int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			return err
		}
		switch {
		case version > blobSchemaVersion:
			return fmt.Errorf("blob schema version %d is newer than this build's %d", version, blobSchemaVersion)
		case version == 0:
			for _, stmt := range strings.Split(blobSchema, ";") {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("create blob schema: %w", err)
				}
			}
			version = 1
		}
		for v := version; v < blobSchemaVersion; v++ {
			for _, stmt := range strings.Split(blobMigrations[v], ";") {
				stmt = strings.ReplaceAll(stmt, "?1", strconv.FormatInt(time.Now().UnixNano(), 10))
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migrate the blob schema to version %d: %w", v+1, err)
				}
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", blobSchemaVersion)); err != nil {
			return err
		}
		return s.loadUsage(ctx, tx)
	})
}

// loadUsage reads the running totals from the live blobs' rows.
func (s *SQLiteBlobs) loadUsage(ctx context.Context, tx *sql.Tx) error {
	u := blobUsage{byAddr: make(map[string]int64), byIP: make(map[string]int64)}
	rows, err := tx.QueryContext(ctx, "SELECT owner, ip, charge, held FROM blobs WHERE gone = 0")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var owner, ip string
		var charge, held int64
		if err := rows.Scan(&owner, &ip, &charge, &held); err != nil {
			return err
		}
		u.byAddr[owner] += charge
		if ip != "" {
			u.byIP[ip] += charge
		}
		u.charged += charge
		u.held += held
		u.blobs++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.usage = u
	return nil
}

// inTx runs fn in one BEGIN IMMEDIATE transaction.
func (s *SQLiteBlobs) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Close closes the database. Calls after Close fail with ErrClosed.
func (s *SQLiteBlobs) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// charge checks a further charge of delta bytes to from against the
// running totals; callers hold wmu.
func (s *SQLiteBlobs) charge(from BlobOwner, delta int64) error {
	return s.limits.QuotaError(s.usage.byAddr[from.Address], s.usage.byIP[from.IP], s.usage.charged, from, delta)
}

// charged applies a committed change of a blob's charge and of what it
// holds to the running totals; callers hold wmu.
func (s *SQLiteBlobs) charged(from BlobOwner, charge, held int64, blobs int) {
	u := &s.usage
	u.byAddr[from.Address] += charge
	if u.byAddr[from.Address] <= 0 {
		delete(u.byAddr, from.Address)
	}
	if from.IP != "" {
		u.byIP[from.IP] += charge
		if u.byIP[from.IP] <= 0 {
			delete(u.byIP, from.IP)
		}
	}
	u.charged += charge
	u.held += held
	u.blobs += blobs
}

// CreateBlob implements BlobStore.
func (s *SQLiteBlobs) CreateBlob(ctx context.Context, size int64, from BlobOwner, now, expires time.Time) (wire.BlobID, error) {
	if err := s.limits.CheckSize(size); err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c := s.limits.Charge(0, 0)
	if err := s.charge(from, c); err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
	}
	id := NewBlobID()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, owner, ip, size, charge, held, expires, gone, progress, chunk)
			VALUES (?, ?, ?, ?, ?, 0, ?, 0, ?, 0)`,
			id[:], from.Address, from.IP, size, c, expires.UnixNano(), now.UnixNano())
		return err
	})
	if err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
	}
	s.charged(from, c, 0, 1)
	return id, nil
}

// sqlBlob is a blob's row.
type sqlBlob struct {
	owner                     BlobOwner
	size, held, charge, chunk int64
	expires, progress         time.Time
	gone                      bool
}

// findBlob reads the blob id, and fails when it is not live at now.
func (s *SQLiteBlobs) findBlob(ctx context.Context, tx *sql.Tx, id wire.BlobID, now time.Time) (sqlBlob, error) {
	var b sqlBlob
	var expires, progress int64
	err := tx.QueryRowContext(ctx, "SELECT owner, ip, size, held, charge, chunk, expires, progress, gone FROM blobs WHERE id = ?", id[:]).
		Scan(&b.owner.Address, &b.owner.IP, &b.size, &b.held, &b.charge, &b.chunk, &expires, &progress, &b.gone)
	if errors.Is(err, sql.ErrNoRows) {
		return b, ErrBlobNotFound
	}
	if err != nil {
		return b, err
	}
	b.expires, b.progress = time.Unix(0, expires), time.Unix(0, progress)
	return b, s.limits.CheckBlob(b.expires, b.progress, b.held, b.size, b.gone, now)
}

// BlobInfo implements BlobStore.
func (s *SQLiteBlobs) BlobInfo(ctx context.Context, id wire.BlobID, now time.Time) (BlobInfo, error) {
	var info BlobInfo
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b, err := s.findBlob(ctx, tx, id, now)
		info = BlobInfo{Held: b.held, Size: b.size, Expires: b.expires}
		return err
	})
	if err != nil {
		return BlobInfo{}, fmt.Errorf("blob info: %w", err)
	}
	return info, nil
}

// PutBlob implements BlobStore.
func (s *SQLiteBlobs) PutBlob(ctx context.Context, id wire.BlobID, owner string, offset int64, data []byte, now time.Time) (BlobInfo, error) {
	infos, err := s.PutBlobs(ctx, id, owner, offset, [][]byte{data}, now)
	if err != nil {
		return BlobInfo{}, err
	}
	return infos[0], nil
}

// PutBlobs implements BlobStore: one transaction, one fsync, for every
// chunk; a chunk refused ends the group, and those before it commit.
func (s *SQLiteBlobs) PutBlobs(ctx context.Context, id wire.BlobID, owner string, offset int64, chunks [][]byte, now time.Time) ([]BlobInfo, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var infos []BlobInfo
	var b sqlBlob
	var charge, written int64
	var refused error
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		infos, charge, written, refused = infos[:0], 0, 0, nil
		var err error
		if b, err = s.findBlob(ctx, tx, id, now); err != nil {
			return err
		}
		held, chunk, cur := b.held, b.chunk, b.charge
		at := offset
		for _, data := range chunks {
			c, err := s.limits.CheckPut(owner, b.owner.Address, at, held, b.size, chunk, len(data))
			if err != nil {
				refused = err
				break
			}
			next := s.limits.Charge(cur, at+int64(len(data)))
			if err := s.charge(b.owner, next-b.charge); err != nil {
				refused = err
				break
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO blob_chunks (blob, offset, data) VALUES (?, ?, ?)", id[:], at, data); err != nil {
				return err
			}
			held, chunk, cur = at+int64(len(data)), c, next
			at = held
			infos = append(infos, BlobInfo{Held: held, Size: b.size, Expires: b.expires})
		}
		if len(infos) == 0 {
			return refused
		}
		written, charge = held-b.held, cur
		_, err = tx.ExecContext(ctx, "UPDATE blobs SET held = ?, charge = ?, chunk = ?, progress = ? WHERE id = ? AND held = ?",
			held, charge, chunk, now.UnixNano(), id[:], b.held)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("put blob: %w", err)
	}
	s.charged(b.owner, charge-b.charge, written, 0)
	if refused != nil {
		return infos, fmt.Errorf("put blob: %w", refused)
	}
	return infos, nil
}

// GetBlob implements BlobStore: one query, whatever the chunks.
func (s *SQLiteBlobs) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error) {
	var out []byte
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b, err := s.findBlob(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if n, err = CheckGet(offset, n, b.held, b.size); err != nil || n == 0 {
			return err
		}
		// From the last chunk that starts at or before offset.
		rows, err := tx.QueryContext(ctx, `SELECT offset, data FROM blob_chunks WHERE blob = ?1 AND offset < ?3
			AND offset >= (SELECT max(offset) FROM blob_chunks WHERE blob = ?1 AND offset <= ?2) ORDER BY offset`,
			id[:], offset, offset+int64(n))
		if err != nil {
			return err
		}
		defer rows.Close()
		out = make([]byte, 0, n)
		for rows.Next() && len(out) < n {
			var at int64
			var data []byte
			if err := rows.Scan(&at, &data); err != nil {
				return err
			}
			c := data[offset-at:]
			c = c[:min(len(c), n-len(out))]
			out = append(out, c...)
			offset += int64(len(c))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(out) != n {
			return fmt.Errorf("%d bytes of the blob's chunks found, want %d", len(out), n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	return out, nil
}

// ExpireBlobs implements BlobStore.
func (s *SQLiteBlobs) ExpireBlobs(ctx context.Context, now, forget time.Time, max int) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var gone []sqlBlob
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		gone = gone[:0]
		rows, err := tx.QueryContext(ctx, `SELECT id, owner, ip, charge, held FROM blobs WHERE gone = 0 AND expires <= ?1
			UNION SELECT id, owner, ip, charge, held FROM blobs WHERE gone = 0 AND progress <= ?2 AND held < size
			LIMIT ?3`, now.UnixNano(), now.Add(-s.limits.IdleLifetime).UnixNano(), max)
		if err != nil {
			return err
		}
		var ids [][]byte
		for rows.Next() {
			var id []byte
			var b sqlBlob
			if err := rows.Scan(&id, &b.owner.Address, &b.owner.IP, &b.charge, &b.held); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			gone = append(gone, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, "DELETE FROM blob_chunks WHERE blob = ?", id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE blobs SET gone = 1, held = 0 WHERE id = ?", id); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM blobs WHERE gone = 1 AND expires < ?", forget.UnixNano())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("expire blobs: %w", err)
	}
	for _, b := range gone {
		s.charged(b.owner, -b.charge, -b.held, -1)
	}
	return len(gone), nil
}

// BlobStats implements BlobStore, from the running totals.
func (s *SQLiteBlobs) BlobStats(context.Context) (BlobStats, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return BlobStats{Blobs: s.usage.blobs, Charged: s.usage.charged, Held: s.usage.held}, nil
}
