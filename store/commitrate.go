package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// CommitRate is the measured rate of single-row durable commits.
type CommitRate struct {
	Commits     int
	Seconds     float64
	PerSecond   float64
	Synchronous string // the synchronous setting measured, as SQLite names it
}

// MeasureCommitRate measures how many single-row transactions per second a
// SQLite database in dir commits with the pragmas every profile uses (WAL,
// synchronous=FULL), on the same disk: the limit that one commit per message
// would impose. It runs for about d and removes its file afterwards.
func MeasureCommitRate(ctx context.Context, dir string, d time.Duration) (CommitRate, error) {
	path := filepath.Join(dir, "commit-rate.db")
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}()
	db, err := openSQL(ctx, path)
	if err != nil {
		return CommitRate{}, fmt.Errorf("store: measure commit rate: %w", err)
	}
	defer db.Close()
	var sync int
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return CommitRate{}, mapErr(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)"); err != nil {
		return CommitRate{}, mapErr(err)
	}
	row := make([]byte, 256)
	start := time.Now()
	n := 0
	for time.Since(start) < d || n < 50 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return CommitRate{}, mapErr(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO t (v) VALUES (?)", row); err != nil {
			tx.Rollback()
			return CommitRate{}, mapErr(err)
		}
		if err := tx.Commit(); err != nil {
			return CommitRate{}, mapErr(err)
		}
		n++
	}
	secs := time.Since(start).Seconds()
	names := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
	return CommitRate{Commits: n, Seconds: secs, PerSecond: float64(n) / secs, Synchronous: names[sync]}, nil
}
