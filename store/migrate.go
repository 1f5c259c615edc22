package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema step, applied in its own transaction.
type migration struct {
	version int    // the user_version after it: 1 for 0001_init.sql
	name    string // the file name, for errors
	sql     string
	// step, when set, runs after sql in the same transaction: a change
	// SQL cannot make because it reads sealed columns (goSteps).
	step func(ctx context.Context, tx *sql.Tx, s *sealer) error
}

// migrations are the embedded steps in order; a malformed set is a build
// mistake and panics at start-up (and in the tests).
var migrations = withSteps(mustLoadMigrations(migrationFiles, "migrations"), goSteps)

// goSteps are the Go parts of the embedded migrations, by version.
var goSteps = map[int]func(ctx context.Context, tx *sql.Tx, s *sealer) error{
	26: markHeldCopies,
}

// withSteps attaches steps to the migrations of their version.
func withSteps(ms []migration, steps map[int]func(ctx context.Context, tx *sql.Tx, s *sealer) error) []migration {
	for v, f := range steps {
		if v < 1 || v > len(ms) {
			panic(fmt.Sprintf("store: a Go step for migration %d, which does not exist", v))
		}
		ms[v-1].step = f
	}
	return ms
}

func mustLoadMigrations(fsys fs.FS, dir string) []migration {
	ms, err := loadMigrations(fsys, dir)
	if err != nil {
		panic(err)
	}
	return ms
}

// loadMigrations reads dir/NNNN_name.sql files and checks that their numbers
// run 1, 2, 3, ... without a gap or a repeat.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || len(num) != 4 || err != nil {
			return nil, fmt.Errorf("store: migration %s: want NNNN_name.sql", name)
		}
		if v != len(ms)+1 {
			return nil, fmt.Errorf("store: migration %s: want number %04d", name, len(ms)+1)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("store: no migrations in %s", dir)
	}
	return ms, nil
}

// schemaVersion returns the schema version kept in PRAGMA user_version.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", mapErr(err))
	}
	return v, nil
}

// migrate brings the database on conn up to the last of ms, one transaction
// per step, and fails without writing if the database is newer than ms.
// It has no storage key: a Go step that finds sealed rows to read fails
// (only an empty database, Create's, is migrated so).
func migrate(ctx context.Context, conn *sql.Conn, ms []migration) error {
	return migrateSealed(ctx, conn, ms, nil)
}

// migrateSealed is migrate with the profile's sealer, for the Go steps
// that read sealed columns.
func migrateSealed(ctx context.Context, conn *sql.Conn, ms []migration, seal *sealer) error {
	v, err := schemaVersion(ctx, conn)
	if err != nil {
		return err
	}
	if v > len(ms) {
		return fmt.Errorf("store: migrate schema: version %d, this build knows %d: %w", v, len(ms), errNewerSchema)
	}
	for _, m := range ms[v:] {
		if err := applyMigration(ctx, conn, m, seal); err != nil {
			return err
		}
	}
	return nil
}

// applyMigration runs one step in a BEGIN IMMEDIATE transaction together with
// the version bump, so a step is applied whole or not at all. Foreign keys
// are off during the step, as SQLite's table-rebuild procedure requires, and
// checked before the commit.
func applyMigration(ctx context.Context, conn *sql.Conn, m migration, seal *sealer) (err error) {
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return fmt.Errorf("store: apply migration %s: %w", m.name, mapErr(err))
	}
	defer func() {
		if _, ferr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON"); ferr != nil && err == nil {
			err = fmt.Errorf("store: apply migration %s: %w", m.name, mapErr(ferr))
		}
	}()

	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: apply migration %s: %w", m.name, mapErr(err))
	}
	defer tx.Rollback()
	// The version cannot move under the profile lock; check anyway, so a step
	// never runs twice.
	v, err := schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v != m.version-1 {
		return fmt.Errorf("store: apply migration %s: schema is at version %d", m.name, v)
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("store: apply migration %s: %w", m.name, mapErr(err))
	}
	if m.step != nil {
		if err := m.step(ctx, tx, seal); err != nil {
			return fmt.Errorf("store: apply migration %s: %w", m.name, err)
		}
	}
	var violations int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&violations); err != nil {
		return fmt.Errorf("store: apply migration %s: check foreign keys: %w", m.name, mapErr(err))
	}
	if violations > 0 {
		return fmt.Errorf("store: apply migration %s: %d foreign key violations", m.name, violations)
	}
	// PRAGMA takes no parameters; the version is our own integer.
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.version)); err != nil {
		return fmt.Errorf("store: apply migration %s: set version: %w", m.name, mapErr(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: apply migration %s: commit: %w", m.name, mapErr(err))
	}
	return nil
}

// querier is what *sql.DB, *sql.Conn and *sql.Tx share for reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
