package store

import (
	"context"
	"fmt"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

const (
	kindUploadPath = "upload-path" // row key: salt

	sqlInsertUpload = `INSERT INTO upload (salt, recipient, sealed_path, size, mod_time, blob, id, chunk_size, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlDeleteUpload = "DELETE FROM upload WHERE salt = ?"
	sqlUploads      = `SELECT salt, recipient, sealed_path, size, mod_time, blob, id, chunk_size, created_at FROM upload
		WHERE ?1 = '' OR recipient = ?1 ORDER BY created_at`
)

func init() { sealedColumns["upload.sealed_path"] = kindUploadPath }

// uploadBegin records an upload before its first chunk.
func (t *tx) uploadBegin(ctx context.Context, p engine.UploadBegin) error {
	u := p.Upload
	if _, err := t.runOne(ctx, "upload-insert", engine.ErrConflict, sqlInsertUpload, u.Salt[:], u.To,
		t.db.seal.seal(kindUploadPath, u.Salt[:], []byte(u.Path)), u.Size, u.ModTime, u.Blob[:], u.ID[:], int64(u.ChunkSize),
		u.At.UnixNano()); err != nil {
		return fmt.Errorf("record the upload of %x: %w", u.ID[:], err)
	}
	return nil
}

// uploadEnd forgets an upload (nothing when it is gone already).
func (t *tx) uploadEnd(ctx context.Context, p engine.UploadEnd) error {
	if _, err := t.run(ctx, "upload-delete", sqlDeleteUpload, p.Salt[:]); err != nil {
		return fmt.Errorf("forget an upload: %w", err)
	}
	return nil
}

// Uploads lists the upload records of one recipient key (every record for
// ""), oldest first.
func (db *DB) Uploads(ctx context.Context, to string) ([]engine.Upload, error) {
	if err := db.checkOpen("read uploads"); err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, sqlUploads, to)
	if err != nil {
		return nil, db.readErr("read uploads", err)
	}
	defer rows.Close()
	var out []engine.Upload
	for rows.Next() {
		var u engine.Upload
		var salt, sealed, blob, id []byte
		var chunk, at int64
		if err := rows.Scan(&salt, &u.To, &sealed, &u.Size, &u.ModTime, &blob, &id, &chunk, &at); err != nil {
			return nil, db.readErr("read uploads", err)
		}
		copy(u.Salt[:], salt)
		copy(u.Blob[:], blob)
		copy(u.ID[:], id)
		u.ChunkSize, u.At = uint32(chunk), nsTime(at)
		path, err := db.seal.open(kindUploadPath, salt, sealed)
		if err != nil {
			return nil, fmt.Errorf("store: upload %x: %w", u.ID[:], err)
		}
		u.Path = string(path)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, db.readErr("read uploads", err)
	}
	return out, nil
}

func validateUploadBegin(p engine.UploadBegin) error {
	u := p.Upload
	switch {
	case u.To == "" || u.Path == "":
		return invalid("upload without a recipient or a path")
	case u.Size < 0 || u.ChunkSize == 0:
		return invalid("upload of %d bytes in chunks of %d", u.Size, u.ChunkSize)
	case u.Blob == (wire.BlobID{}):
		return invalid("upload without a blob")
	}
	return checkTime("at", u.At)
}
