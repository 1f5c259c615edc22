package store

import (
	"context"
	"fmt"
	"time"
)

// Deleted secrets do not linger. Every connection runs with
// secure_delete=ON, so SQLite overwrites with zeros what a statement deletes
// or replaces (a consumed prekey, a session record replaced by its next
// step, a finalized pending body) and the pages it frees. In WAL mode the
// old versions of those pages stay in the -wal file, though, until a
// checkpoint copies the new pages into the database and truncates the log.
// Doing that at every commit would cost most of the durable commit rate, so
// the store batches it: the first commit after a scrub schedules one
// TRUNCATE checkpoint ScrubDelay later, and Close runs a last one. What a
// transaction deleted is unreadable from the profile's files at most
// ScrubDelay (plus the checkpoint's own time) after it committed, and at
// once after Close.

// DefaultScrubDelay is how long a deleted secret may stay in the
// write-ahead log of an open profile.
const DefaultScrubDelay = time.Second

// scheduleScrub arms the scrub after a commit, once per ScrubDelay.
func (db *DB) scheduleScrub() {
	db.scrubMu.Lock()
	defer db.scrubMu.Unlock()
	if db.scrubTimer != nil || db.scrubStopping {
		return
	}
	db.scrubWG.Add(1)
	db.scrubTimer = time.AfterFunc(db.scrubDelay, func() {
		defer db.scrubWG.Done()
		db.scrubMu.Lock()
		db.scrubTimer = nil
		stopping := db.scrubStopping
		db.scrubMu.Unlock()
		if stopping {
			return
		}
		if err := db.Scrub(context.Background()); err != nil {
			// A busy log must not wait for the next commit, which may
			// never come: try again after the delay.
			db.scrubFailures.Add(1)
			db.scheduleScrub()
		}
	})
}

// stopScrub stops scheduling scrubs, cancels a scheduled one and waits for
// one that is running. Close calls it once, before its own last scrub.
func (db *DB) stopScrub() {
	db.scrubMu.Lock()
	db.scrubStopping = true
	if t := db.scrubTimer; t != nil && t.Stop() {
		db.scrubTimer = nil
		db.scrubWG.Done()
	}
	db.scrubMu.Unlock()
	db.scrubWG.Wait()
}

// Scrub checkpoints the write-ahead log into the database file and truncates
// it, so that no old version of a deleted or replaced record is left in
// either file.
func (db *DB) Scrub(ctx context.Context) error {
	if err := db.checkOpen("scrub"); err != nil {
		return err
	}
	if db.readOnly {
		return db.errReadOnly("scrub")
	}
	// The checkpoint runs without the busy timeout: a reader in another
	// process (OpenReader) holding a snapshot would otherwise stall the
	// writer's one connection for up to busy_timeout. Blocked, it reports
	// busy and scheduleScrub tries again after ScrubDelay.
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: scrub: %w", mapErr(err))
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return fmt.Errorf("store: scrub: %w", mapErr(err))
	}
	var busy, logFrames, done int
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done)
	if _, rerr := conn.ExecContext(context.Background(), "PRAGMA busy_timeout = 5000"); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("store: scrub: %w", mapErr(err))
	}
	if busy != 0 {
		return fmt.Errorf("store: scrub: checkpoint blocked")
	}
	db.scrubs.Add(1)
	return nil
}
