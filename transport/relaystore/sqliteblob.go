package relaystore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/wire"
)

// BlobFileName is the database file the SQLite blob store keeps in the
// relay's data directory, beside FileName.
const BlobFileName = "blobs.db"

// blobSchemaVersion is stored in the blob database's PRAGMA user_version;
// its migrations, when it has some, follow the relay database's
// (sqlitemigrate.go).
const blobSchemaVersion = 1

// blobSchema: one row per blob (kept, without its data, after it expired,
// so that a reader hears it expired) and one row per chunk as written.
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

// SQLiteBlobs is a BlobStore in its own SQLite file (WAL,
// synchronous=FULL) in the relay's data directory: a chunk is on disk
// before its write is answered, so an upload resumes after a crash where
// the relay said it held. The file is apart from the relay database so that
// a large upload never holds that database's one writer, which the
// envelopes' group commit needs.
type SQLiteBlobs struct {
	db     *sql.DB
	limits BlobLimits

	mu     sync.Mutex // guards closed
	closed bool
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
		case version == blobSchemaVersion:
			return nil
		}
		for _, stmt := range strings.Split(blobSchema, ";") {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create blob schema: %w", err)
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", blobSchemaVersion))
		return err
	})
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

// charged sums the live blobs' charges matching where.
func charged(ctx context.Context, tx *sql.Tx, where string, args ...any) (int64, error) {
	var n int64
	err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(charge), 0) FROM blobs WHERE gone = 0"+where, args...).Scan(&n)
	return n, err
}

// CreateBlob implements BlobStore.
func (s *SQLiteBlobs) CreateBlob(ctx context.Context, size int64, from BlobOwner, expires time.Time) (wire.BlobID, error) {
	id := NewBlobID()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		addr, err := charged(ctx, tx, " AND owner = ?", from.Address)
		if err != nil {
			return err
		}
		var ip int64
		if from.IP != "" {
			if ip, err = charged(ctx, tx, " AND ip = ?", from.IP); err != nil {
				return err
			}
		}
		total, err := charged(ctx, tx, "")
		if err != nil {
			return err
		}
		if err := s.limits.QuotaError(addr, ip, total, from, size); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO blobs (id, owner, ip, size, charge, held, expires, gone) VALUES (?, ?, ?, ?, ?, 0, ?, 0)`,
			id[:], from.Address, from.IP, size, s.limits.Charge(size), expires.UnixNano())
		return err
	})
	if err != nil {
		return wire.BlobID{}, fmt.Errorf("create blob: %w", err)
	}
	return id, nil
}

// sqlBlob is a blob's row.
type sqlBlob struct {
	owner      string
	size, held int64
	expires    time.Time
}

// find reads the live blob id, or why there is none.
func findBlob(ctx context.Context, tx *sql.Tx, id wire.BlobID, now time.Time) (sqlBlob, error) {
	var b sqlBlob
	var expires int64
	var gone bool
	err := tx.QueryRowContext(ctx, "SELECT owner, size, held, expires, gone FROM blobs WHERE id = ?", id[:]).
		Scan(&b.owner, &b.size, &b.held, &expires, &gone)
	if errors.Is(err, sql.ErrNoRows) {
		return b, ErrBlobNotFound
	}
	if err != nil {
		return b, err
	}
	b.expires = time.Unix(0, expires)
	return b, CheckBlob(b.expires, gone, now)
}

// BlobInfo implements BlobStore.
func (s *SQLiteBlobs) BlobInfo(ctx context.Context, id wire.BlobID, now time.Time) (BlobInfo, error) {
	var info BlobInfo
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b, err := findBlob(ctx, tx, id, now)
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
	var info BlobInfo
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b, err := findBlob(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if err := CheckPut(owner, b.owner, offset, b.held, b.size, len(data)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO blob_chunks (blob, offset, data) VALUES (?, ?, ?)", id[:], offset, data); err != nil {
			return err
		}
		held := offset + int64(len(data))
		if _, err := tx.ExecContext(ctx, "UPDATE blobs SET held = ? WHERE id = ? AND held = ?", held, id[:], offset); err != nil {
			return err
		}
		info = BlobInfo{Held: held, Size: b.size, Expires: b.expires}
		return nil
	})
	if err != nil {
		return BlobInfo{}, fmt.Errorf("put blob: %w", err)
	}
	return info, nil
}

// GetBlob implements BlobStore.
func (s *SQLiteBlobs) GetBlob(ctx context.Context, id wire.BlobID, offset int64, n int, now time.Time) ([]byte, error) {
	var out []byte
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b, err := findBlob(ctx, tx, id, now)
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
	n := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM blobs WHERE gone = 0 AND expires <= ? ORDER BY expires LIMIT ?", now.UnixNano(), max)
		if err != nil {
			return err
		}
		var ids [][]byte
		for rows.Next() {
			var id []byte
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
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
		n = len(ids)
		_, err = tx.ExecContext(ctx, "DELETE FROM blobs WHERE gone = 1 AND expires < ?", forget.UnixNano())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("expire blobs: %w", err)
	}
	return n, nil
}

// BlobStats implements BlobStore. It sums over the blobs' rows (not their
// chunks), of which the quotas allow few: at most TotalBytes/MinCharge live.
func (s *SQLiteBlobs) BlobStats(ctx context.Context) (BlobStats, error) {
	var st BlobStats
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(charge), 0), coalesce(sum(held), 0) FROM blobs WHERE gone = 0").
			Scan(&st.Blobs, &st.Charged, &st.Held)
	})
	if err != nil {
		return BlobStats{}, fmt.Errorf("blob stats: %w", err)
	}
	return st, nil
}
