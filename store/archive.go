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

// Backups and restores (issue 34, engine/restore.go): the read model a
// backup writes its archive from, and the plans a restore stores one in.

var _ engine.ArchiveStore = (*DB)(nil)

const (
	sqlArchiveContacts = "SELECT address, sealed_name FROM contact ORDER BY address"
	sqlArchivePins     = "SELECT address, pinned_identity, pinned_at FROM peer ORDER BY address"
	sqlArchiveBlocked  = "SELECT address, at FROM blocked WHERE blocked = 1 ORDER BY address"
	sqlArchiveAccepted = "SELECT address, at FROM accepted_peer ORDER BY address"
	sqlArchiveGroups   = "SELECT id, name, created_at, start_change, snapshot, coalesce(vouchers, '') FROM grp ORDER BY id"
	sqlArchiveChanges  = "SELECT id, author, generation, at, frame FROM group_change WHERE grp = ? ORDER BY generation, id"
	sqlArchiveHistory  = `SELECT h.peer, h.direction, h.id, h.at, h.state, h.sealed_body,
		coalesce(x.action, 0), x.reply_to, coalesce(x.edits, 0), coalesce(x.deleted, 0), coalesce(h.sent_by, '')
		FROM history h LEFT JOIN message_extra x ON x.peer = h.peer AND x.direction = h.direction AND x.id = h.id
		ORDER BY h.seq`
	sqlArchiveGroupHistory = `SELECT h.grp, h.sender, h.id, h.at, h.sealed_body,
		coalesce(x.action, 0), x.reply_to, coalesce(x.edits, 0), coalesce(x.deleted, 0)
		FROM group_history h LEFT JOIN group_extra x ON x.grp = h.grp AND x.sender = h.sender AND x.id = h.id
		ORDER BY h.seq`

	sqlImportState   = "SELECT next, total, done, messages FROM import_progress WHERE archive = ?"
	sqlImportStart   = "INSERT INTO import_progress (archive, next, total, started_at) VALUES (?, ?, ?, ?)"
	sqlImportAdvance = `UPDATE import_progress SET next = ?1, done = ?2, messages = messages + ?3
		WHERE archive = ?4 AND next = ?5 AND total = ?6 AND done = 0`
	sqlImportContact = "INSERT INTO contact (address, sealed_name) VALUES (?, ?) ON CONFLICT (address) DO NOTHING"
	sqlImportGroup   = `INSERT INTO grp (id, name, created_at, start_change, snapshot, vouchers) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	sqlImportExtra = `INSERT INTO message_extra (peer, direction, id, action, reply_to, edits, deleted) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	sqlImportGroupExtra = `INSERT INTO group_extra (grp, sender, id, action, reply_to, edits, deleted) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	// sqlImportHistory and sqlImportGroupEntry are the history's inserts
	// with the archive that brought the entry (0023): an entry that is
	// there already keeps its row, unmarked.
	sqlImportHistory = `INSERT INTO history (peer, direction, id, at, state, sealed_body, imported, sent_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (peer, direction, id) DO NOTHING`
	sqlImportGroupEntry = `INSERT INTO group_history (grp, sender, id, at, sealed_body, imported) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
)

// ArchiveRecords calls emit with every record a backup holds after the
// account's, in the archive's kind order, read in one transaction so that
// the archive is one moment of the profile. emit must not use the store.
func (db *DB) ArchiveRecords(ctx context.Context, emit func(wire.ArchiveRecord) error) error {
	return db.archiveRecords(ctx, emit, false)
}

// archiveRecords is ArchiveRecords, with the staged messages last when
// staged (a link's archive).
func (db *DB) archiveRecords(ctx context.Context, emit func(wire.ArchiveRecord) error, staged bool) error {
	if err := db.checkOpen("read the archive"); err != nil {
		return err
	}
	t, err := db.sql.BeginTx(quiet(ctx), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return db.readErr("read the archive", err)
	}
	defer t.Rollback()
	r := archiveRead{db: db, t: t, ctx: ctx, emit: emit}
	steps := []func() error{r.contacts, r.pins, r.blocked, r.accepted, r.groups, r.history, r.groupHistory}
	if staged {
		steps = append(steps, r.staged)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// archiveRead is one backup's pass over the tables.
type archiveRead struct {
	db   *DB
	t    *sql.Tx
	ctx  context.Context
	emit func(wire.ArchiveRecord) error
}

// each runs query and calls row for every row; row's error stops it.
func (r archiveRead) each(what, query string, row func(*sql.Rows) error, args ...any) error {
	rows, err := r.t.QueryContext(quiet(r.ctx), query, args...)
	if err != nil {
		return r.db.readErr("read "+what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return r.db.readErr("read "+what, err)
	}
	return nil
}

func (r archiveRead) contacts() error {
	return r.each("contacts", sqlArchiveContacts, func(rows *sql.Rows) error {
		var addr string
		var sealed []byte
		if err := rows.Scan(&addr, &sealed); err != nil {
			return r.db.readErr("read contacts", err)
		}
		name, err := r.db.seal.open(kindContactName, []byte(addr), sealed)
		if err != nil {
			return fmt.Errorf("store: contact %s: %w", addr, err)
		}
		return r.emit(wire.ArchiveContact{Address: addr, Name: string(name)})
	})
}

func (r archiveRead) pins() error {
	return r.each("pins", sqlArchivePins, func(rows *sql.Rows) error {
		var p wire.ArchivePin
		if err := rows.Scan(&p.Address, &p.Identity, &p.PinnedAt); err != nil {
			return r.db.readErr("read pins", err)
		}
		return r.emit(p)
	})
}

func (r archiveRead) blocked() error {
	return r.each("blocked senders", sqlArchiveBlocked, func(rows *sql.Rows) error {
		var b wire.ArchiveBlocked
		if err := rows.Scan(&b.Address, &b.At); err != nil {
			return r.db.readErr("read blocked senders", err)
		}
		return r.emit(b)
	})
}

func (r archiveRead) accepted() error {
	return r.each("accepted peers", sqlArchiveAccepted, func(rows *sql.Rows) error {
		var a wire.ArchiveAccepted
		if err := rows.Scan(&a.Address, &a.At); err != nil {
			return r.db.readErr("read accepted peers", err)
		}
		return r.emit(a)
	})
}

func (r archiveRead) groups() error {
	var gs []wire.ArchiveGroup
	err := r.each("groups", sqlArchiveGroups, func(rows *sql.Rows) error {
		var g wire.ArchiveGroup
		var id, start, snapshot []byte
		if err := rows.Scan(&id, &g.Name, &g.CreatedAt, &start, &snapshot, &g.Vouchers); err != nil {
			return r.db.readErr("read groups", err)
		}
		g.ID = wire.GroupID(id)
		if len(start) == 16 {
			s := wire.LogicalID(start)
			g.Start = &s
		}
		if len(snapshot) > 0 {
			g.Snapshot = snapshot
		}
		gs = append(gs, g)
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range gs {
		err := r.each("roster changes", sqlArchiveChanges, func(rows *sql.Rows) error {
			var c wire.ArchiveChange
			var id []byte
			var gen int64
			if err := rows.Scan(&id, &c.Author, &gen, &c.At, &c.Frame); err != nil {
				return r.db.readErr("read roster changes", err)
			}
			c.ID, c.Generation = wire.LogicalID(id), uint64(gen)
			g.Changes = append(g.Changes, c)
			return nil
		}, g.ID[:])
		if err != nil {
			return err
		}
		if err := r.emit(g); err != nil {
			return err
		}
	}
	return nil
}

// extras fills a record's extras from the columns of message_extra or
// group_extra.
func extras(action int64, replyTo []byte, edits, deleted int64) wire.ArchiveExtras {
	x := wire.ArchiveExtras{Action: uint8(action), Edits: uint32(edits), Deleted: deleted == 1}
	if len(replyTo) == 16 {
		id := wire.LogicalID(replyTo)
		x.ReplyTo = &id
	}
	return x
}

func (r archiveRead) history() error {
	return r.each("history", sqlArchiveHistory, func(rows *sql.Rows) error {
		var m wire.ArchiveMessage
		var dir, state, action, edits, deleted int64
		var id, sealed, replyTo []byte
		var sentBy string
		if err := rows.Scan(&m.Peer, &dir, &id, &m.At, &state, &sealed, &action, &replyTo, &edits, &deleted, &sentBy); err != nil {
			return r.db.readErr("read history", err)
		}
		m.Direction, m.ID, m.State = uint8(dir), wire.LogicalID(id), uint8(state)
		if engine.Direction(dir) == engine.DirectionIn {
			// The device that sent a received entry travels with it
			// (record kind 11); a sent copy's sibling does not (its
			// entry on the new device names nobody).
			m.SentBy = receivedSentBy(m.Peer, sentBy)
		}
		m.Extras = extras(action, replyTo, edits, deleted)
		peer, err := engine.ParseAddress(m.Peer)
		if err != nil {
			return fmt.Errorf("store: history entry with %q: %w", m.Peer, err)
		}
		body, err := r.db.seal.open(kindHistoryBody, historyKey(peer, engine.Direction(dir), m.ID), sealed)
		if err != nil {
			return fmt.Errorf("store: history entry %x with %s: %w", id, m.Peer, err)
		}
		if len(body) > 0 {
			m.Body = body
		}
		return r.emit(m)
	})
}

func (r archiveRead) groupHistory() error {
	return r.each("group history", sqlArchiveGroupHistory, func(rows *sql.Rows) error {
		var m wire.ArchiveGroupMessage
		var action, edits, deleted int64
		var grp, id, sealed, replyTo []byte
		if err := rows.Scan(&grp, &m.Sender, &id, &m.At, &sealed, &action, &replyTo, &edits, &deleted); err != nil {
			return r.db.readErr("read group history", err)
		}
		m.Group, m.ID = wire.GroupID(grp), wire.LogicalID(id)
		m.Extras = extras(action, replyTo, edits, deleted)
		body, err := r.db.seal.open(kindGroupBody, groupBodyKey(m.Group, m.Sender, m.ID), sealed)
		if err != nil {
			return fmt.Errorf("store: group message %x: %w", id, err)
		}
		if len(body) > 0 {
			m.Body = body
		}
		return r.emit(m)
	})
}

// ImportState returns where the import of archive stands.
func (db *DB) ImportState(ctx context.Context, archive [16]byte) (engine.ImportState, bool, error) {
	if err := db.checkOpen("read the import's progress"); err != nil {
		return engine.ImportState{}, false, err
	}
	var next, total, done, messages int64
	err := db.queryRow(ctx, sqlImportState, archive[:]).Scan(&next, &total, &done, &messages)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.ImportState{}, false, nil
	case err != nil:
		return engine.ImportState{}, false, db.readErr("read the import's progress", err)
	}
	return engine.ImportState{Next: uint64(next), Total: uint64(total), Done: done == 1, Messages: uint64(messages)}, true, nil
}

// importStart records the import an archive starts; one must not be there.
func (t *tx) importStart(ctx context.Context, p engine.ImportStart) error {
	t.db.historyImported.Store(true)
	query, args := sqlImportStart, []any{p.Archive[:], int64(p.Next), int64(p.Total), p.At.UnixNano()}
	if p.Source != nil {
		query, args = sqlImportStartSource, append(args, t.db.seal.seal(kindImportSource, p.Archive[:], p.Source))
	}
	if _, err := t.runOne(ctx, "import-insert", engine.ErrConflict, query, args...); err != nil {
		return fmt.Errorf("start the import of archive %x: %w", p.Archive[:4], err)
	}
	return nil
}

// importRecords stores a batch of records and moves the import's progress
// from p.From to p.To, checked: a batch prepared from another progress
// (another process imported it meanwhile) is refused whole.
func (t *tx) importRecords(ctx context.Context, p engine.ImportRecords) (engine.Receipt, error) {
	var stored int64
	for _, rec := range p.Records {
		n, err := t.importRecord(ctx, p.Archive, rec)
		if err != nil {
			return engine.Receipt{}, err
		}
		stored += n
	}
	done := int64(0)
	if p.To == p.Total {
		done = 1
	}
	if _, err := t.runOne(ctx, "import-advance", engine.ErrConflict, sqlImportAdvance,
		int64(p.To), done, stored, p.Archive[:], int64(p.From), int64(p.Total)); err != nil {
		return engine.Receipt{}, fmt.Errorf("import records %d to %d (progress moved underneath?): %w", p.From, p.To, err)
	}
	return t.visible(ctx)
}

// importRecord stores one record of archive, keeping what is there; it
// returns the history entries it added (0 or 1), each marked as archive's.
func (t *tx) importRecord(ctx context.Context, archive [16]byte, rec wire.ArchiveRecord) (int64, error) {
	switch r := rec.(type) {
	case wire.ArchiveContact:
		_, err := t.run(ctx, "contact-import", sqlImportContact, r.Address, t.db.seal.seal(kindContactName, []byte(r.Address), []byte(r.Name)))
		return 0, err
	case wire.ArchivePin:
		_, err := t.run(ctx, "pin-import", sqlInsertPin, r.Address, r.Identity, r.PinnedAt)
		return 0, err
	case wire.ArchiveBlocked:
		return 0, t.importBlock(ctx, engine.ImportBlock{Peer: engine.MustParseAddress(r.Address), At: time.Unix(0, r.At)})
	case wire.ArchiveAccepted:
		_, err := t.run(ctx, "accepted-import", sqlInsertAccepted, r.Address, r.At)
		return 0, err
	case wire.ArchiveGroup:
		var start []byte
		if r.Start != nil {
			start = r.Start[:]
		}
		var vouchers any
		if r.Vouchers != "" {
			vouchers = r.Vouchers
		}
		if _, err := t.run(ctx, "group-import", sqlImportGroup, r.ID[:], r.Name, r.CreatedAt, start, r.Snapshot, vouchers); err != nil {
			return 0, fmt.Errorf("import group %x: %w", r.ID[:], err)
		}
		for _, c := range r.Changes {
			if _, err := t.run(ctx, "group-change-insert", sqlInsertChange, r.ID[:], c.ID[:], c.Author, int64(c.Generation), c.Frame, c.At); err != nil {
				return 0, fmt.Errorf("import roster change %x: %w", c.ID[:], err)
			}
		}
		return 0, nil
	case wire.ArchiveMessage:
		peer := engine.MustParseAddress(r.Peer)
		body := r.Body
		if body == nil {
			body = []byte{}
		}
		var sentBy any
		if r.SentBy != "" {
			sentBy = r.SentBy
		}
		n, err := t.run(ctx, "history-import", sqlImportHistory, r.Peer, int64(r.Direction), r.ID[:], r.At, int64(r.State),
			t.db.seal.seal(kindHistoryBody, historyKey(peer, engine.Direction(r.Direction), r.ID), body), archive[:], sentBy)
		if err != nil || !hasExtras(r.Extras) {
			return n, err
		}
		_, err = t.run(ctx, "extra-import", sqlImportExtra, r.Peer, int64(r.Direction), r.ID[:], int64(r.Extras.Action),
			optionalID(r.Extras.ReplyTo), int64(r.Extras.Edits), boolInt(r.Extras.Deleted))
		return n, err
	case wire.ArchiveGroupMessage:
		body := r.Body
		if body == nil {
			body = []byte{}
		}
		n, err := t.run(ctx, "group-history-import", sqlImportGroupEntry, r.Group[:], r.Sender, r.ID[:], r.At,
			t.db.seal.seal(kindGroupBody, groupBodyKey(r.Group, r.Sender, r.ID), body), archive[:])
		if err != nil || !hasExtras(r.Extras) {
			return n, err
		}
		_, err = t.run(ctx, "group-extra-import", sqlImportGroupExtra, r.Group[:], r.Sender, r.ID[:], int64(r.Extras.Action),
			optionalID(r.Extras.ReplyTo), int64(r.Extras.Edits), boolInt(r.Extras.Deleted))
		return n, err
	case wire.ArchiveStaged:
		return 0, t.importStaged(ctx, r)
	}
	// validate refuses every other record first.
	panic(fmt.Sprintf("store: import %T: unknown record", rec))
}

// receivedSentBy is what a received entry with peer says of the device
// that sent it, sentBy (history.sent_by): a canonical address of peer's
// person, else nothing ("").
func receivedSentBy(peer, sentBy string) string {
	p, err := engine.ParseAddress(peer)
	if err != nil || sentBy == "" {
		return ""
	}
	a, err := engine.ParseAddress(sentBy)
	if err != nil || a.String() != sentBy || a.User != p.User {
		return ""
	}
	return sentBy
}

func hasExtras(x wire.ArchiveExtras) bool { return x != (wire.ArchiveExtras{}) }

func optionalID(id *wire.LogicalID) any {
	if id == nil {
		return nil
	}
	return id[:]
}

func validateImportStart(p engine.ImportStart) error {
	if p.Total < 1 || p.Next > p.Total {
		return invalid("import start at record %d of %d", p.Next, p.Total)
	}
	return checkTime("at", p.At)
}

// validateImportRecords checks a batch: its range, and every record one
// the store takes (no account or end record, addresses canonical, pins that
// decode).
func validateImportRecords(p engine.ImportRecords) error {
	if p.From > p.To || p.To > p.Total || p.To-p.From < uint64(len(p.Records)) {
		return invalid("import batch %d to %d of %d with %d records", p.From, p.To, p.Total, len(p.Records))
	}
	for i, rec := range p.Records {
		var addrs []string
		switch r := rec.(type) {
		case wire.ArchiveContact:
			addrs = []string{r.Address}
		case wire.ArchivePin:
			if _, err := decodeIdentityKey(r.Identity); err != nil {
				return invalid("record %d: %v", i, err)
			}
			addrs = []string{r.Address}
		case wire.ArchiveBlocked:
			addrs = []string{r.Address}
		case wire.ArchiveAccepted:
			addrs = []string{r.Address}
		case wire.ArchiveGroup:
			for _, c := range r.Changes {
				addrs = append(addrs, c.Author)
			}
		case wire.ArchiveMessage:
			addrs = []string{r.Peer}
			if r.SentBy != "" {
				if receivedSentBy(r.Peer, r.SentBy) != r.SentBy {
					return invalid("record %d: message %x with %s sent by %s, a device of another person", i, r.ID[:], r.Peer, r.SentBy)
				}
				addrs = append(addrs, r.SentBy)
			}
		case wire.ArchiveGroupMessage:
			addrs = []string{r.Sender}
		case wire.ArchiveStaged:
			if _, err := engine.DecodeStoredFrame(r.Frame); err != nil {
				return invalid("record %d: staged frame: %v", i, err)
			}
			addrs = []string{r.Sender}
		default:
			return invalid("record %d: a %T is not imported", i, rec)
		}
		if _, err := wire.EncodeArchiveRecord(rec); err != nil {
			return invalid("record %d: %v", i, err)
		}
		for _, a := range addrs {
			if b, err := engine.ParseAddress(a); err != nil || b.String() != a {
				return fmt.Errorf("record %d: address %q: %w", i, a, engine.ErrInvalidAddress)
			}
		}
	}
	return nil
}
