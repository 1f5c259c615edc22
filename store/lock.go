package store

import (
	"fmt"
	"path/filepath"

	"github.com/gofrs/flock"

	"github.com/parley-chat/parley/engine"
)

// lockProfile takes the profile's one-writer lock: a non-blocking exclusive
// flock(2) on dir/parley.lock, held until the returned lock is released.
// flock belongs to the open file description, so a second lock through a new
// descriptor conflicts even inside this process; and it is a different kind
// of lock from SQLite's fcntl locks on the database, so neither disturbs the
// other.
func lockProfile(dir string) (*flock.Flock, error) {
	l := flock.New(filepath.Join(dir, lockFile))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("store: lock profile %s: %w", dir, err)
	}
	if !ok {
		return nil, &profileOpenError{dir: dir}
	}
	return l, nil
}

// profileOpenError names the profile that another store holds.
type profileOpenError struct{ dir string }

func (e *profileOpenError) Error() string {
	return fmt.Sprintf("profile %s is open in another process", e.dir)
}

func (e *profileOpenError) Unwrap() error { return engine.ErrProfileOpen }
