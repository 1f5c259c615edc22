package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/wire"
)

// History at link time (issue 34, engine/linkhistory.go): the cut a link
// records on the device holding the account key, the staged messages a
// link's archive carries, and the source of a linked device's import.

// kindImportSource seals import_progress.sealed_source; row key: the
// archive's ID.
const kindImportSource = "import-source"

const (
	sqlInsertLinkCut = "INSERT INTO link_cut (device, at, history, since) VALUES (?, ?, ?, ?)"
	sqlLinkCut       = "SELECT at, history, since FROM link_cut WHERE device = ?"
	// sqlArchiveStaged leaves out the messages of a stranger's open
	// request: the request stays on the device holding it (a linked
	// device has no request row, so they would be ordinary deliveries
	// there).
	sqlArchiveStaged = `SELECT sender, id, received_at, sealed_digest, sealed_frame FROM inbound
		WHERE sender NOT IN (SELECT peer FROM request) ORDER BY seq`
	// sqlImportStaged keeps a staged message pending here unless it is
	// pending or finalized here already (a decision heard first keeps
	// its own row, kept_decision, and applies once the message is here).
	sqlImportStaged = `INSERT INTO inbound (sender, id, received_at, sealed_digest, sealed_frame)
		SELECT ?1, ?2, ?3, ?4, ?5 WHERE NOT EXISTS (SELECT 1 FROM finalized WHERE sender = ?1 AND id = ?2)
		ON CONFLICT DO NOTHING`
	sqlImportStartSource = `INSERT INTO import_progress (archive, next, total, started_at, sealed_source) VALUES (?, ?, ?, ?, ?)`
	sqlImportSource      = "SELECT sealed_source FROM import_progress WHERE archive = ? AND sealed_source IS NOT NULL"
	sqlPendingLinkImport = `SELECT archive, sealed_source FROM import_progress WHERE done = 0 AND sealed_source IS NOT NULL
		ORDER BY started_at LIMIT 1`
)

// linkCut records a link's cut; a second cut for one device is a conflict
// (device numbers are never reused).
func (t *tx) linkCut(ctx context.Context, p engine.LinkCut) error {
	var since int64
	if p.History == engine.HistorySince {
		since = p.Since.UnixNano()
	}
	if _, err := t.runOne(ctx, "link-cut-insert", engine.ErrConflict, sqlInsertLinkCut, int64(p.Device), p.At.UnixNano(), int64(p.History), since); err != nil {
		return fmt.Errorf("record the cut of device %d: %w", p.Device, err)
	}
	return nil
}

func validateLinkCut(p engine.LinkCut) error {
	if p.Device < 1 || p.History > engine.HistorySince {
		return invalid("link cut of device %d, history %d", p.Device, p.History)
	}
	return checkTime("at", p.At)
}

// LinkCut returns the cut recorded when device was linked.
func (db *DB) LinkCut(ctx context.Context, device uint32) (engine.LinkCut, bool, error) {
	if err := db.checkOpen("read a link's cut"); err != nil {
		return engine.LinkCut{}, false, err
	}
	var at, history, since int64
	err := db.queryRow(ctx, sqlLinkCut, int64(device)).Scan(&at, &history, &since)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.LinkCut{}, false, nil
	case err != nil:
		return engine.LinkCut{}, false, db.readErr("read a link's cut", err)
	}
	c := engine.LinkCut{Device: device, At: time.Unix(0, at), History: engine.HistoryMode(history)}
	if c.History == engine.HistorySince {
		c.Since = time.Unix(0, since)
	}
	return c, true, nil
}

// LinkArchiveRecords is ArchiveRecords, then every staged received
// message, from one snapshot.
func (db *DB) LinkArchiveRecords(ctx context.Context, emit func(wire.ArchiveRecord) error) error {
	return db.archiveRecords(ctx, emit, true)
}

func (r archiveRead) staged() error {
	return r.each("staged messages", sqlArchiveStaged, func(rows *sql.Rows) error {
		var m wire.ArchiveStaged
		var id, digest, frame []byte
		if err := rows.Scan(&m.Sender, &id, &m.ReceivedAt, &digest, &frame); err != nil {
			return r.db.readErr("read staged messages", err)
		}
		m.ID = wire.LogicalID(id)
		sender, err := engine.ParseAddress(m.Sender)
		if err != nil {
			return fmt.Errorf("store: staged message from %q: %w", m.Sender, err)
		}
		key := messageKey(sender, m.ID)
		d, err := r.db.seal.open(kindInboundDigest, key, digest)
		if err != nil || len(d) != len(m.Digest) {
			return fmt.Errorf("store: staged message %x from %s: digest: %w", id, m.Sender, errors.Join(err, engine.ErrMalformedState))
		}
		copy(m.Digest[:], d)
		if m.Frame, err = r.db.seal.open(kindInboundFrame, key, frame); err != nil {
			return fmt.Errorf("store: staged message %x from %s: %w", id, m.Sender, err)
		}
		return r.emit(m)
	})
}

// importStaged keeps a staged message of a link's archive pending here.
// A received action (a reaction, an edit, a delete) is marked as one, as
// its delivery marks it, so that it waits for its target here too.
func (t *tx) importStaged(ctx context.Context, r wire.ArchiveStaged) error {
	sender := engine.MustParseAddress(r.Sender)
	key := messageKey(sender, r.ID)
	n, err := t.run(ctx, "staged-import", sqlImportStaged, r.Sender, r.ID[:], r.ReceivedAt,
		t.db.seal.seal(kindInboundDigest, key, r.Digest[:]), t.db.seal.seal(kindInboundFrame, key, r.Frame))
	if err == nil && n == 1 {
		err = t.markInboundAction(ctx, sender, r.ID, r.Frame)
	}
	if err != nil {
		return fmt.Errorf("import staged message %x from %s: %w", r.ID[:], r.Sender, err)
	}
	return nil
}

// ImportSource returns the sealed source of the import of archive, opened.
func (db *DB) ImportSource(ctx context.Context, archive [16]byte) ([]byte, bool, error) {
	if err := db.checkOpen("read an import's source"); err != nil {
		return nil, false, err
	}
	var sealed []byte
	err := db.queryRow(ctx, sqlImportSource, archive[:]).Scan(&sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, db.readErr("read an import's source", err)
	}
	src, err := db.seal.open(kindImportSource, archive[:], sealed)
	if err != nil {
		return nil, false, fmt.Errorf("store: import source of %x: %w", archive[:4], err)
	}
	return src, true, nil
}

// PendingLinkImport returns the oldest unfinished import that has a
// source (a linked device's history).
func (db *DB) PendingLinkImport(ctx context.Context) ([16]byte, []byte, bool, error) {
	if err := db.checkOpen("read the history import"); err != nil {
		return [16]byte{}, nil, false, err
	}
	var archive, sealed []byte
	err := db.queryRow(ctx, sqlPendingLinkImport).Scan(&archive, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return [16]byte{}, nil, false, nil
	case err != nil:
		return [16]byte{}, nil, false, db.readErr("read the history import", err)
	}
	if len(archive) != 16 {
		return [16]byte{}, nil, false, fmt.Errorf("store: import of archive %x: %w", archive, engine.ErrMalformedState)
	}
	src, err := db.seal.open(kindImportSource, archive, sealed)
	if err != nil {
		return [16]byte{}, nil, false, fmt.Errorf("store: import source of %x: %w", archive[:4], err)
	}
	return [16]byte(archive), src, true, nil
}

// UnfinishedImport reports whether an import into this profile stopped
// part way, and whether it is a linked device's history (else a restore's).
func (db *DB) UnfinishedImport(ctx context.Context) (linked, ok bool, err error) {
	if err := db.checkOpen("read the import's progress"); err != nil {
		return false, false, err
	}
	var l int64
	err = db.queryRow(ctx, "SELECT sealed_source IS NOT NULL FROM import_progress WHERE done = 0 ORDER BY started_at LIMIT 1").Scan(&l)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, false, nil
	case err != nil:
		return false, false, db.readErr("read the import's progress", err)
	}
	return l == 1, true, nil
}

const sqlUnfinishedImport = `SELECT next, total, messages, sealed_source IS NOT NULL, started_at FROM import_progress
	WHERE done = 0 ORDER BY started_at LIMIT 1`

// UnfinishedImportProgress returns where the oldest import not done
// stands, and false when there is none.
func (db *DB) UnfinishedImportProgress(ctx context.Context) (engine.ImportProgress, bool, error) {
	if err := db.checkOpen("read the import's progress"); err != nil {
		return engine.ImportProgress{}, false, err
	}
	var next, total, messages, link, started int64
	err := db.queryRow(ctx, sqlUnfinishedImport).Scan(&next, &total, &messages, &link, &started)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.ImportProgress{}, false, nil
	case err != nil:
		return engine.ImportProgress{}, false, db.readErr("read the import's progress", err)
	}
	return engine.ImportProgress{Next: uint64(next), Total: uint64(total), Messages: uint64(messages), Link: link == 1,
		Started: nsTime(started)}, true, nil
}
